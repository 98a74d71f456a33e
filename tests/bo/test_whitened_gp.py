import math

import cma
import numpy as np
import pytest
import torch
from cma.fitness_models import LQModel

from botorch_sketch.bo.whitened_gp import (
    Trend,
    WhitenedResidualGP,
    _unit_matern,
    inverse_root,
    lq_features,
    search_metric,
    whiten,
)

pytestmark = pytest.mark.cpu_only  # cma's state is NumPy


def _matern52(r):
    s = math.sqrt(5.0) * r
    return (1.0 + s + s**2 / 3.0) * torch.exp(-s)


def _random_covariance(d, generator):
    A = torch.randn(d, d, generator=generator, dtype=torch.double)
    return A @ A.T + 0.1 * torch.eye(d, dtype=torch.double)


def test_the_whitened_kernel_is_the_mahalanobis_kernel():
    g = torch.Generator().manual_seed(0)
    d = 5
    sigma = 0.3
    scaling = torch.rand(d, generator=g, dtype=torch.double) + 0.5
    C = _random_covariance(d, g)
    covariance = sigma**2 * scaling[:, None] * C * scaling[None, :]
    mean = torch.rand(d, generator=g, dtype=torch.double)
    X = torch.rand(7, d, generator=g, dtype=torch.double)
    Z = torch.rand(4, d, generator=g, dtype=torch.double)
    U, V = (whiten(A, mean, inverse_root(covariance)) for A in (X, Z))
    model = WhitenedResidualGP.__new__(WhitenedResidualGP)
    model._kernel = _unit_matern(X)
    lengthscale = 1.7
    got = model._correlation(U, V, lengthscale)
    diff = X[:, None, :] - Z[None, :, :]
    r2 = (diff @ torch.linalg.inv(covariance) * diff).sum(-1)
    want = _matern52(r2.sqrt() / lengthscale)
    assert torch.allclose(got, want, atol=1e-10)


def test_search_metric_whitens_cma_es_distribution():
    es = cma.CMAEvolutionStrategy(
        np.full(4, 0.5), 0.2, {"seed": 3, "verbose": -9, "bounds": [0, 1]}
    )
    for _ in range(5):
        X = es.ask()
        es.tell(X, [float(np.sum((x - 0.2) ** 2 * [1, 10, 100, 1000])) for x in X])
    mean, root = search_metric(es)
    scaling = torch.as_tensor(np.broadcast_to(es.sigma_vec.scaling, 4).copy())
    covariance = es.sigma**2 * scaling[:, None] * torch.as_tensor(es.sm.C) * scaling
    # root is the symmetric inverse square root of sigma^2 C.
    assert torch.allclose(root @ covariance @ root, torch.eye(4, dtype=torch.double))
    assert torch.allclose(root, root.T)
    assert torch.allclose(mean, torch.as_tensor(es.result.xfavorite))


def test_lq_features_match_lqmodel():
    rng = np.random.default_rng(1)
    model = LQModel()
    for _ in range(60):
        x = rng.uniform(size=3)
        model.add_data_row(x, float(np.sum(x**2) + x[0] * x[1]))
    assert model.types == ["quadratic", "full"]
    X = torch.as_tensor(rng.uniform(size=(5, 3)))
    want = torch.as_tensor([model.eval(x) for x in X.numpy()])
    assert torch.allclose(Trend.of(model)(X), want, atol=1e-12)
    assert lq_features(X, []).shape == (5, 4)
    assert lq_features(X, ["quadratic"]).shape == (5, 7)


def test_with_a_quadratic_mean_an_exact_quadratic_is_fitted_to_round_off():
    g = torch.Generator().manual_seed(2)
    d = 4
    H = _random_covariance(d, g)
    centre = torch.rand(d, generator=g, dtype=torch.double)

    def f(X):
        diff = X - centre
        return 3.0 + (diff @ H * diff).sum(-1)

    X = torch.rand(80, d, generator=g, dtype=torch.double)
    Y = f(X)
    trend = LQModel()
    for x, y in zip(X.numpy(), Y.tolist(), strict=True):
        trend.add_data_row(x, y)
    assert "full" in trend.types
    model = WhitenedResidualGP(
        Trend.of(trend),
        X,
        Y,
        X.mean(0),
        torch.eye(d, dtype=torch.double) * 3,
        local_size=50,
    )
    Xt = torch.rand(20, d, generator=g, dtype=torch.double)
    mean, sd = model.predict(Xt)
    assert torch.allclose(mean, f(Xt), rtol=1e-8, atol=1e-8)
    assert bool((sd >= 0).all())


def test_the_residual_gp_adds_what_the_quadratic_misses():
    # A linear trend cannot fit a bump; the residual GP does, near its data.
    g = torch.Generator().manual_seed(4)
    d = 2
    X = torch.rand(40, d, generator=g, dtype=torch.double)

    def f(X):
        return torch.sin(6 * X).sum(-1)

    Y = f(X)
    trend = LQModel()
    trend.settings.disallowed_types = ("quadratic", "full")  # stays linear
    for x, y in zip(X.numpy(), Y.tolist(), strict=True):
        trend.add_data_row(x, y)
    assert trend.types == []
    root = torch.eye(d, dtype=torch.double) * 4
    model = WhitenedResidualGP(Trend.of(trend), X, Y, X.mean(0), root, local_size=40)
    Xt = torch.rand(30, d, generator=g, dtype=torch.double)
    gp_error = (model.predict(Xt)[0] - f(Xt)).abs().mean()
    trend_error = (Trend.of(trend)(Xt) - f(Xt)).abs().mean()
    assert gp_error < 0.3 * trend_error


def test_leave_one_out_means_are_the_refitted_gps():
    g = torch.Generator().manual_seed(5)
    d = 3
    X = torch.rand(30, d, generator=g, dtype=torch.double)
    Y = torch.cos(4 * X).sum(-1)
    trend = LQModel()
    trend.settings.disallowed_types = ("quadratic", "full")
    for x, y in zip(X.numpy(), Y.tolist(), strict=True):
        trend.add_data_row(x, y)
    root = torch.eye(d, dtype=torch.double) * 2
    model = WhitenedResidualGP(Trend.of(trend), X, Y, X.mean(0), root, local_size=30)
    loo = model.loo_means(X[:5], torch.arange(5))
    for i in range(5):
        keep = torch.arange(30) != i
        refit = WhitenedResidualGP(
            Trend.of(trend),
            X[keep],
            Y[keep],
            X.mean(0),
            root,
            local_size=30,
            hyperparameters=model.hyperparameters,
        )
        # The residuals' scale is refitted too: compare in the same units.
        refit.scale, refit.residual = (
            model.scale,
            (Y[keep][refit.index] - Trend.of(trend)(X[keep][refit.index]))
            / model.scale,
        )
        refit._alpha = torch.cholesky_solve(
            refit.residual[:, None], refit._cholesky
        ).squeeze(-1)
        assert torch.allclose(loo[i], refit.predict(X[i : i + 1])[0][0], atol=1e-8)


@pytest.mark.parametrize("samples", [12, 60])  # a diagonal, then a full quadratic
def test_the_qr_fit_and_its_optimum_equal_lqmodels(samples):
    rng = np.random.default_rng(3)
    model = LQModel()
    for _ in range(samples):
        x = rng.uniform(size=3)
        model.add_data_row(x, float(np.sum((x - 0.4) ** 2 * [1, 5, 9]) + x[0] * x[2]))
    fitted, own = Trend.fit(model), Trend.of(model)
    assert fitted.types == own.types and "quadratic" in own.types
    assert torch.allclose(fitted.coefficients, own.coefficients, atol=1e-8)
    assert torch.allclose(
        fitted.optimum(), torch.as_tensor(np.asarray(model.xopt)), atol=1e-8
    )
    assert Trend.fit(LQModel()).optimum() is None


def test_least_squares_is_exact_and_falls_back_to_the_minimum_norm_solution():
    from botorch_sketch.bo.whitened_gp import _least_squares

    g = torch.Generator().manual_seed(6)
    A = torch.randn(30, 5, generator=g, dtype=torch.double)
    b = torch.randn(30, generator=g, dtype=torch.double)
    assert torch.allclose(_least_squares(A, b), torch.linalg.pinv(A) @ b)
    assert torch.equal(_least_squares(A, b), _least_squares(A, b))
    A[:, 4] = A[:, 3]  # rank-deficient: the pseudo-inverse's answer
    assert torch.allclose(_least_squares(A, b), torch.linalg.pinv(A) @ b)
