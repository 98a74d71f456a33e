import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.sketching.ridge import OnlineRidge


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dim": 0}, "dim must be at least 1"),
        ({"noise_var": 0.0}, "noise_var must be finite and positive"),
        ({"noise_var": float("nan")}, "noise_var must be finite and positive"),
        ({"noise_var": float("inf")}, "noise_var must be finite and positive"),
    ],
)
def test_bad_configuration_is_named(kwargs, match):
    with pytest.raises(InputDataError, match=match):
        OnlineRidge(**{"dim": 3, **kwargs})


def test_observations_are_checked():
    ridge = OnlineRidge(dim=2)
    with pytest.raises(InputDataError, match="NaN"):
        ridge.observe(torch.tensor([float("nan"), 0.0], dtype=torch.double), 1.0)
