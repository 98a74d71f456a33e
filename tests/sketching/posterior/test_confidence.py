import math

import pytest
from botorch.exceptions.errors import InputDataError

from botorch_sketch.sketching.posterior.confidence import bkb_width


def test_theory_width_matches_the_safe_form_of_theorem_2():
    xi, lam, F, delta, eps, S, t, k2 = 0.3, 0.09, 2.0, 0.1, 0.5, 12.0, 100, 1.5
    alpha = (1 + eps) / (1 - eps)
    expected = (
        xi
        * math.sqrt(2 * (alpha * (1 + math.log(k2 * t + 1)) * S + math.log(1 / delta)))
        + (1 + 1 / math.sqrt(1 - eps)) * math.sqrt(lam) * F
    )
    got = bkb_width(S, t, xi, lam, rkhs_norm=F, delta=delta, kappa2=k2, epsilon=eps)
    assert got == pytest.approx(expected, rel=1e-12)


def test_authors_width_and_small_t_is_safe():
    got = bkb_width(5.0, 50, 0.2, 0.04, rkhs_norm=1.0, delta=0.5, form="authors")
    assert got == pytest.approx(
        0.2 + math.sqrt(0.04 * (math.log(50) * 5 + math.log(2)))
    )
    # t = 1 and t = 0 must not produce negative logs or NaN.
    for t in (0, 1):
        assert bkb_width(1.0, t, 0.2, 0.04) > 0
        assert bkb_width(1.0, t, 0.2, 0.04, form="authors") > 0


def test_width_grows_with_the_variance_sum_and_exact_is_narrower():
    assert bkb_width(10.0, 100, 0.2, 0.04) > bkb_width(5.0, 100, 0.2, 0.04)
    assert bkb_width(5.0, 100, 0.2, 0.04, epsilon=0.0) < bkb_width(5.0, 100, 0.2, 0.04)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 1.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"form": "x"}, "form"),
        ({"rkhs_norm": -1.0}, "rkhs_norm must be finite and non-negative"),
        ({"rkhs_norm": float("nan")}, "rkhs_norm must be finite and non-negative"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(InputDataError, match=match):
        bkb_width(1.0, 10, 0.1, 0.01, **kwargs)
