import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from helpers import sphere_normal_noise

from botorch_sketch.sketching.linear.ridge import OnlineRidge


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


def test_online_ridge_matches_direct_solve(tkwargs):
    X, y = sphere_normal_noise(300, 8, seed=4, **tkwargs)
    ridge = OnlineRidge(8, noise_var=0.5, **tkwargs)
    ridge.observe_batch(X, y)
    V = X.mT @ X + 0.5 * torch.eye(8, **tkwargs)
    torch.testing.assert_close(ridge.inverse, torch.linalg.inv(V))
    torch.testing.assert_close(ridge.theta, torch.linalg.solve(V, X.mT @ y))
    C = X[:5]
    torch.testing.assert_close(
        ridge.quadratic_forms(C), (C @ torch.linalg.solve(V, C.mT)).diagonal()
    )
    copy = ridge.clone()
    copy.observe(X[0], 1.0)
    torch.testing.assert_close(ridge.inverse, torch.linalg.inv(V))
    with pytest.raises(InputDataError):
        ridge.observe(torch.full((8,), float("nan"), **tkwargs), 0.0)
    with pytest.raises(BotorchTensorDimensionError):
        ridge.observe(torch.ones(3, **tkwargs), 0.0)


def test_ridge_is_the_weight_posterior_on_identity_features(tkwargs):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 4, generator=g, **tkwargs)
    y = torch.randn(20, generator=g, **tkwargs)
    ridge = OnlineRidge(4, noise_var=0.3, **tkwargs)
    other = ridge.clone()
    ridge.observe_batch(X, y)
    V = X.mT @ X + 0.3 * torch.eye(4, **tkwargs)
    torch.testing.assert_close(ridge.theta, torch.linalg.solve(V, X.mT @ y))
    torch.testing.assert_close(
        ridge.quadratic_forms(X), (X * torch.linalg.solve(V, X.mT).mT).sum(-1)
    )
    # The clone taken before did not follow.
    assert torch.equal(other.theta, torch.zeros(4, **tkwargs)) and other.n == 0
