import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.sketching.ridge import OnlineRidge


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dim": 0}, "dim must be at least 1"),
        ({"ridge": 0.0}, "ridge must be finite and positive"),
        ({"ridge": float("nan")}, "ridge must be finite and positive"),
        ({"ridge": float("inf")}, "ridge must be finite and positive"),
    ],
)
def test_bad_configuration_is_named(kwargs, match):
    with pytest.raises(InputDataError, match=match):
        OnlineRidge(**{"dim": 3, **kwargs})


def test_observations_are_checked():
    ridge = OnlineRidge(dim=2)
    with pytest.raises(InputDataError, match="NaN"):
        ridge.observe(torch.tensor([float("nan"), 0.0], dtype=torch.double), 1.0)
