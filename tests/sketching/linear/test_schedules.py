import pytest
from botorch.exceptions.errors import InputDataError

from botorch_sketch.sketching.linear.schedules import (
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    PowerRidge,
)


def test_schedules():
    assert HarmonicStep(4.0)(4) == pytest.approx(4 / 32)
    assert OffsetHarmonicStep(100)(50) == pytest.approx(1 / 150)
    assert InverseRidge(3.0)(6) == pytest.approx(0.5)
    assert PowerRidge(0.6, 2.0)(32) == pytest.approx(2 * 32**-0.4)
    for bad in (lambda: HarmonicStep(0), lambda: PowerRidge(1.0), lambda: Constant(-1)):
        with pytest.raises(InputDataError):
            bad()
