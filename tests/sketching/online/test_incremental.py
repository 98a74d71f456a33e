import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from helpers import exact_gp_posterior, rbf_kernel, toy_data

from botorch_sketch.sketching import DTCStatistics, NystromEmbedding, WeightPosterior
from botorch_sketch.sketching.online.incremental import IncrementalNystrom
from botorch_sketch.sketching.rules.kors import KORS


def _data(n, d, seed, **tkwargs):
    def f(X):
        return torch.sin(6 * X.sum(-1, keepdim=True))

    X, Y, Xt = toy_data(n, d, f, noise_sd=0.1, seed=seed, num_test=64, **tkwargs)
    return X, Y.squeeze(-1), Xt


def test_every_point_in_dictionary_is_the_exact_posterior(tkwargs):
    # K is well conditioned here (cond ~ 2e5), so 1e-8 is a fair tolerance.
    k, lam = rbf_kernel(0.05, outputscale=1.2, ard_num_dims=2), 0.3
    X, y, Xt = _data(200, 2, 0, **tkwargs)
    model = IncrementalNystrom(k, lam, 2, rule="all")
    for i in range(200):
        assert model.observe(X[i], y[i])
    assert model.dictionary_size == 200
    mean, var = model.mean_and_variance(Xt)
    exact_mean, exact_var = exact_gp_posterior(k, X, y, lam, Xt)
    assert torch.allclose(mean, exact_mean, atol=1e-8, rtol=0)
    assert torch.allclose(var, exact_var, atol=1e-8, rtol=0)


def test_thousand_updates_with_insertions_match_from_scratch(tkwargs):
    # A dictionary with cond(K_ZZ) ~ 5e10: the drift of the updates is then
    # ~1e-13 (with cond ~ 1e17, from near-duplicate admissions, it is ~1e-8).
    k, lam = rbf_kernel(0.1, outputscale=1.2, ard_num_dims=2), 0.5
    X, y, Xt = _data(1000, 2, 1, **tkwargs)
    rule = KORS(mu=lam, gamma=1.0, generator=torch.Generator().manual_seed(0))
    # No refactorisation: the recursive updates alone must stay accurate.
    model = IncrementalNystrom(k, lam, 2, rule=rule, refactorise_every=10**6)
    inserted = [model.observe(X[i], y[i]) for i in range(1000)]
    m = model.dictionary_size
    assert 10 < m < 1000 and sum(inserted) == m
    assert any(inserted[500:])  # insertions late, with much data along them
    noise = torch.full_like(y, lam)
    mean, var = model.mean_and_variance(Xt)
    # From scratch on the model's embedding: the drift of the recursive
    # Woodbury and bordering updates alone.
    emb = model.embedding
    post = WeightPosterior(DTCStatistics.from_data(emb, X, y, noise))
    Z = emb(Xt)
    assert torch.allclose(mean, post.mean(Z), atol=1e-8, rtol=0)
    ref_var = post.variance(Z, emb.residual_variance(Xt, Z))
    assert torch.allclose(var, ref_var, atol=1e-8, rtol=0)
    # From scratch with a fresh eigendecomposition of the same dictionary: the
    # dictionary is ill conditioned (KORS admits near neighbours), so the fresh
    # pseudo-inverse root drops directions and agrees only to ~1e-8 in the mean.
    emb = NystromEmbedding(k, X[model.dictionary])
    post = WeightPosterior(DTCStatistics.from_data(emb, X, y, noise))
    assert torch.allclose(mean, post.mean(emb(Xt)), atol=1e-6, rtol=0)
    # The variances of the observations agree with a direct evaluation.
    _, var_obs = model.mean_and_variance(X[:50])
    assert torch.allclose(model.observed_variance()[:50], var_obs, atol=1e-10)
    # A refactorisation changes nothing beyond rounding.
    model.refactorise()
    mean2, _ = model.mean_and_variance(Xt)
    assert torch.allclose(mean, mean2, atol=1e-9, rtol=0)


def test_dictionary_grows_like_effective_dimension(tkwargs):
    k, lam = rbf_kernel(0.2, outputscale=1.2, ard_num_dims=2), 1.0
    X, y, _ = _data(2000, 2, 2, **tkwargs)
    rule = KORS(mu=lam, gamma=0.5, generator=torch.Generator().manual_seed(1))
    model = IncrementalNystrom(k, lam, 2, rule=rule)
    sizes = []
    for i in range(2000):
        model.observe(X[i], y[i])
        if i + 1 in (500, 2000):
            sizes.append(model.dictionary_size)
    K = k(X).to_dense()
    evals = torch.linalg.eigvalsh(K)
    d_eff = float((evals / (evals + lam)).sum())
    # Linear growth would quadruple the size from t = 500 to 2000.
    assert sizes[1] < 2 * sizes[0]
    assert d_eff < sizes[1] < 4 * d_eff
    assert sizes[1] < 2000 / 10


def test_rebuild_and_validation(tkwargs):
    k, lam = rbf_kernel(0.1, outputscale=1.2, ard_num_dims=2), 0.3
    X, y, Xt = _data(60, 2, 3, **tkwargs)
    model = IncrementalNystrom(k, lam, 2, rule="none")
    for i in range(60):
        assert not model.observe(X[i], y[i])
    assert model.dictionary_size == 0
    mean, var = model.mean_and_variance(Xt)
    assert torch.all(mean == 0) and torch.allclose(var, torch.full_like(var, 1.2))
    idx = torch.tensor([3, 10, 20, 40])
    model.rebuild(idx)
    emb = NystromEmbedding(k, X[idx])
    post = WeightPosterior(DTCStatistics.from_data(emb, X, y, torch.full_like(y, lam)))
    mean, _ = model.mean_and_variance(Xt)
    assert torch.allclose(mean, post.mean(emb(Xt)), atol=1e-10)
    with pytest.raises(InputDataError):
        model.rebuild(torch.tensor([60]))
    with pytest.raises(BotorchTensorDimensionError):
        model.mean_and_variance(torch.rand(3, 5, **tkwargs))
    with pytest.raises(InputDataError):
        model.observe(X[0], torch.tensor(float("nan")))
    with pytest.raises(InputDataError):
        IncrementalNystrom(k, 0.0, 2)


def test_a_kernel_as_gpytorch_makes_it_is_observed_without_a_graph(tkwargs):
    # Hyperparameters that require grad (every new gpytorch kernel) failed in
    # an ``out=`` product deep inside ``observe``; reads keep their graph in X.
    from gpytorch.kernels import RBFKernel

    k = RBFKernel().to(**tkwargs)
    frozen = RBFKernel().to(**tkwargs).requires_grad_(False)
    X, y, Xt = _data(30, 2, 1, **tkwargs)
    models = [IncrementalNystrom(kernel, 0.1, 2) for kernel in (k, frozen)]
    for model in models:
        for i in range(30):
            model.observe(X[i], y[i])
        model.refactorise()
    assert not models[0].posterior.weights64.requires_grad
    a, b = (model.mean_and_variance(Xt) for model in models)
    torch.testing.assert_close(a[0], b[0])
    x = Xt[:3].clone().requires_grad_(True)
    models[1].mean_and_variance(x)[0].sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dim": 2.5}, "dim must be an integer"),
        ({"dim": True}, "dim must be an integer"),
        ({"noise_var": True}, "noise_var must be finite and positive"),
        ({"noise_var": float("nan")}, "noise_var must be finite and positive"),
        ({"refactorise_every": float("nan")}, "refactorise_every must be an integer"),
        ({"refactorise_every": 0}, "refactorise_every must be an integer"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    # NaN passed ``< 1`` checks and True was taken as a noise variance of 1.
    k = rbf_kernel(0.3)
    with pytest.raises(InputDataError, match=match):
        IncrementalNystrom(**{"kernel": k, "noise_var": 0.1, "dim": 2, **kwargs})
