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


def test_a_batch_is_checked_once_and_equals_row_by_row_observations():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 3, generator=g, dtype=torch.double)
    Y = torch.randn(5, generator=g, dtype=torch.double)
    batch, rows = OnlineRidge(dim=3), OnlineRidge(dim=3)
    batch.observe_batch(X, Y)
    for x, y in zip(X, Y, strict=True):
        rows.observe(x, y)
    assert batch.n == rows.n == 5
    torch.testing.assert_close(batch.theta, rows.theta, rtol=0, atol=1e-14)
    torch.testing.assert_close(batch.inverse, rows.inverse, rtol=0, atol=1e-14)
    bad = X.clone()
    bad[3, 1] = float("inf")
    for args, match in (
        ((bad, Y), "NaN or infinite"),
        ((X, Y[:4]), "Expected k x 3 features for k targets"),
        ((X[:, :2], Y), "Expected k x 3 features for k targets"),
    ):
        with pytest.raises(InputDataError, match=match):
            batch.observe_batch(*args)
    # A refused batch leaves the solver as it was: no row of it is absorbed.
    assert batch.n == 5
    torch.testing.assert_close(batch.theta, rows.theta, rtol=0, atol=1e-14)
