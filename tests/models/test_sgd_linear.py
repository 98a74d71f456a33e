import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.kernels import RBFKernel

from botorch_sketch.models.sgd_linear import SGDLinearModel
from botorch_sketch.sketching.embedding import RandomFourierFeatures
from botorch_sketch.sketching.linear import Constant


def _linear_data(n, d, seed, dtype=torch.double, device=None):
    # Drawn on the CPU (where the generator lives), then moved: the same data on
    # every device.
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=dtype)
    X = X / X.norm(dim=-1, keepdim=True)
    w = torch.randn(d, generator=g, dtype=dtype)
    Y = (X @ w + 0.1 * torch.randn(n, generator=g, dtype=dtype)).unsqueeze(-1)
    return X.to(device), Y.to(device), w.to(device)


def test_exact_variance_is_the_bayesian_linear_posterior(tkwargs):
    X, Y, _ = _linear_data(400, 4, seed=0, **tkwargs)
    model = SGDLinearModel(
        X, Y, noise_var=0.01, generator=torch.Generator().manual_seed(0)
    )
    V = X.mT @ X + 0.01 * torch.eye(4, **tkwargs)
    X_test = torch.randn(2, 3, 4, **tkwargs)
    post = model.posterior(X_test)
    assert isinstance(post, GPyTorchPosterior)
    assert post.mean.shape == (2, 3, 1) and post.variance.shape == (2, 3, 1)
    cov = post.distribution.covariance_matrix
    expected = 0.01 * X_test @ torch.linalg.solve(V, X_test.mT)
    torch.testing.assert_close(cov, expected, atol=1e-9, rtol=1e-6)
    # the SGD mean tracks the posterior mean V^{-1} X^T y
    exact_w = torch.linalg.solve(V, X.mT @ Y.squeeze(-1))
    assert (model.weights - exact_w).norm() < 0.15 * exact_w.norm()
    noisy = model.posterior(X_test, observation_noise=True)
    torch.testing.assert_close(
        noisy.variance - post.variance, torch.full_like(post.variance, 0.01)
    )


@pytest.mark.parametrize("scale", [10.0, 1e6])
def test_features_beyond_unit_norm_scale_the_step(scale, tkwargs):
    # The schedules assume ||phi|| <= 1: 10 X gave weights near 1e32 and 1e6 X a
    # NaN mean. The mean must track the posterior mean on any scale.
    X, Y, _ = _linear_data(200, 4, seed=0, **tkwargs)
    X = scale * X
    model = SGDLinearModel(
        X, Y, noise_var=0.01, generator=torch.Generator().manual_seed(0)
    )
    V = X.mT @ X + 0.01 * torch.eye(4, **tkwargs)
    exact_w = torch.linalg.solve(V, X.mT @ Y.squeeze(-1))
    assert (model.weights - exact_w).norm() < 0.15 * exact_w.norm()
    assert bool(torch.isfinite(model.posterior(X[:3]).mean).all())


def test_tracked_variance_matches_exact_on_the_arms(tkwargs):
    X, Y, _ = _linear_data(2000, 3, seed=1, **tkwargs)
    arms = X[:6]
    kw = dict(noise_var=0.05, generator=torch.Generator().manual_seed(1))
    tracked = SGDLinearModel(X, Y, variance="tracked", arms=arms, **kw)
    exact = SGDLinearModel(X, Y, **kw)
    v_t = tracked.posterior(arms.unsqueeze(1)).variance
    v_e = exact.posterior(arms.unsqueeze(1)).variance
    assert torch.allclose(v_t, v_e, rtol=0.3)
    with pytest.raises(UnsupportedError, match="arm set"):
        tracked.posterior(torch.rand(1, 3, **tkwargs) + 2)
    # works in discrete acquisition optimisation over the arms
    acqf = UpperConfidenceBound(tracked, beta=4.0)
    x, _ = optimize_acqf_discrete(acqf, q=1, choices=arms)
    assert (x - arms).abs().sum(-1).min() < 1e-12


def test_optimize_acqf_with_ucb_on_random_fourier_features(tkwargs):
    g = torch.Generator().manual_seed(2)
    kernel = RBFKernel().to(**tkwargs)
    kernel.lengthscale = 0.3
    features = RandomFourierFeatures(kernel, 2, 200, generator=g, **tkwargs)
    X = torch.rand(40, 2, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    model = SGDLinearModel(X, Y, feature_map=features, noise_var=0.01, generator=g)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], **tkwargs)
    acqf = UpperConfidenceBound(model, beta=4.0)
    x, value = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=64)
    assert x.shape == (1, 2) and bool(((x >= 0) & (x <= 1)).all())
    grid = torch.rand(256, 1, 2, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    assert float(value) >= float(acqf(grid).max()) - 1e-6


def test_condition_on_observations_leaves_the_model_unchanged(tkwargs):
    X, Y, _ = _linear_data(50, 3, seed=3, **tkwargs)
    model = SGDLinearModel(X[:40], Y[:40], generator=torch.Generator().manual_seed(3))
    before = model.posterior(X[:5]).mean.clone()
    cond = model.condition_on_observations(X[40:], Y[40:])
    assert cond.num_observations == 50 and model.num_observations == 40
    torch.testing.assert_close(model.posterior(X[:5]).mean, before)
    streamed = SGDLinearModel(X, Y, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(cond.exact.inverse, streamed.exact.inverse)
    torch.testing.assert_close(cond.exact.theta, streamed.exact.theta)
    # the history is shared, not copied
    assert cond.solver._parent is model.solver and cond.solver._n_parent == 40


def test_polyak_averaging_and_constant_step(tkwargs):
    X, Y, _ = _linear_data(300, 3, seed=4, **tkwargs)
    model = SGDLinearModel(
        X,
        Y,
        step=Constant(0.1),
        averaging=True,
        generator=torch.Generator().manual_seed(0),
    )
    assert model.weights is model.solver.average


def test_bad_input(tkwargs):
    X, Y, _ = _linear_data(10, 3, seed=5, **tkwargs)
    with pytest.raises(InputDataError, match="NaN"):
        SGDLinearModel(X, Y.clone().fill_(float("nan")))
    with pytest.raises(InputDataError):
        SGDLinearModel(X, Y, noise_var=0.0)
    for bad in (float("nan"), True, torch.tensor([0.1, 0.2])):
        with pytest.raises(InputDataError, match="noise_var must be finite"):
            SGDLinearModel(X, Y, noise_var=bad)
    with pytest.raises(InputDataError, match="arm set"):
        SGDLinearModel(X, Y, variance="tracked")
    model = SGDLinearModel(X, Y)
    with pytest.raises(UnsupportedError):
        model.update(X.unsqueeze(0).expand(2, -1, -1), Y.unsqueeze(0).expand(2, -1, -1))
    empty = SGDLinearModel(X[:0], Y[:0])
    assert float(empty.posterior(X[:2]).mean.abs().max()) == 0.0


@pytest.mark.parametrize("scale, dtype", [(1.0, torch.float), (1e4, torch.double)])
def test_more_points_than_features_sample_without_a_factorisation_error(
    scale, dtype, tkwargs
):
    # q > d makes the posterior covariance rank-deficient: a dense covariance
    # was factorised at once by torch's MultivariateNormal and failed in
    # float32, or with large features, where the fixed jitter was too small.
    g = torch.Generator().manual_seed(0)  # on the CPU, then moved
    kw = {"dtype": dtype, "device": tkwargs["device"]}
    X = (scale * torch.rand(50, 2, generator=g, dtype=dtype)).to(**kw)
    noise = 0.1 * torch.randn(50, 1, generator=g, dtype=dtype).to(**kw)
    Y = X.sum(-1, keepdim=True) + noise
    model = SGDLinearModel(X, Y, generator=torch.Generator().manual_seed(1))
    test = (scale * torch.rand(6, 2, generator=g, dtype=dtype)).to(**kw)
    posterior = model.posterior(test)
    samples = posterior.rsample(torch.Size([64]))
    assert samples.shape == (64, 6, 1) and bool(torch.isfinite(samples).all())
    # The samples are of the model's mean: within a few widths of it.
    sd = posterior.variance.sqrt().clamp_min(1e-3 * scale)
    assert bool(((samples.mean(0) - posterior.mean).abs() < 5 * sd).all())
