"""NystromGP.condition_on_observations goes through the bandits' WeightPosterior."""

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.means import ZeroMean
from helpers import rbf_kernel, sine_sum, toy_data

from botorch_sketch import NystromGP
from botorch_sketch.sketching.online import IncrementalNystrom
from botorch_sketch.sketching.posterior import WeightPosterior


def _data(n, d=2, seed=0, **tkwargs):
    return toy_data(n, d, sine_sum(6), 0.1, seed, **tkwargs)


def _model(X, Y, inducing, **tkwargs):
    model = NystromGP(
        X,
        Y,
        inducing=inducing,
        covar_module=rbf_kernel(0.25, outputscale=1.5, frozen=False, **tkwargs),
        input_transform=Normalize(X.shape[-1]),
    )
    model.likelihood.noise = 0.02
    return model.eval()


def test_chained_one_point_conditioning_matches_the_model_on_all_data(tkwargs):
    X, Y = _data(250, **tkwargs)
    Z = X[:20]
    full = _model(X, Y, Z, **tkwargs)
    model = _model(X[:50], Y[:50], Z, **tkwargs)
    model.load_state_dict(full.state_dict())
    for i in range(50, 250):
        model = model.condition_on_observations(X[i : i + 1], Y[i : i + 1])
    # The state after 200 Woodbury steps, not a refactorisation.
    assert isinstance(model.posterior_state()[1], WeightPosterior)
    Xt = torch.rand(30, 2, **tkwargs)
    p, q = model.posterior(Xt), full.posterior(Xt)
    torch.testing.assert_close(p.mean, q.mean, rtol=0, atol=1e-8)
    torch.testing.assert_close(p.variance, q.variance, rtol=0, atol=1e-8)
    torch.testing.assert_close(
        p.distribution.covariance_matrix,
        q.distribution.covariance_matrix,
        rtol=0,
        atol=1e-8,
    )
    assert model.train_X.shape[0] == 250


def test_fantasies_are_batched_woodbury_steps_matching_refitted_models(tkwargs):
    X, Y = _data(60, seed=1, **tkwargs)
    Z = X[:15]
    model = _model(X, Y, Z, **tkwargs)
    Xf = torch.rand(4, 2, 2, **tkwargs)  # 4 batches of q = 2 points
    Yf = torch.randn(3, 4, 2, 1, **tkwargs)  # 3 fantasies of each
    fantasy = model.condition_on_observations(Xf, Yf)
    assert fantasy.batch_shape == (3, 4)
    # One m x m matrix and a 4 x 2 x m downdate, shared by the 3 fantasies.
    state = fantasy.posterior_state()[1]
    assert state._base.shape == (15, 15)
    assert state._downdate.shape == (4, 2, 15)
    Xt = torch.rand(4, 5, 2, **tkwargs)
    post = fantasy.posterior(Xt)
    for i in range(3):
        for j in range(4):
            ref = _model(torch.cat([X, Xf[j]]), torch.cat([Y, Yf[i, j]]), Z, **tkwargs)
            ref.load_state_dict(model.state_dict())
            p = ref.posterior(Xt[j])
            torch.testing.assert_close(post.mean[i, j], p.mean, rtol=0, atol=1e-9)
            torch.testing.assert_close(
                post.variance[i, j], p.variance, rtol=0, atol=1e-9
            )


def test_more_points_than_inducing_refactorise_to_the_same_posterior(tkwargs):
    X, Y = _data(200, seed=2, **tkwargs)
    Z = X[:10]
    full = _model(X, Y, Z, **tkwargs)
    part = _model(X[:40], Y[:40], Z, **tkwargs)
    part.load_state_dict(full.state_dict())
    cond = part.condition_on_observations(X[40:], Y[40:])  # 160 > 10: refactorise
    Xt = torch.rand(20, 2, **tkwargs)
    torch.testing.assert_close(
        cond.posterior(Xt).variance, full.posterior(Xt).variance, rtol=0, atol=1e-10
    )


def test_the_gp_and_the_bandit_model_share_one_online_posterior(tkwargs):
    # A NystromGP with zero mean, no transforms and fixed noise, conditioned one
    # point at a time, and the bandits' IncrementalNystrom on the same fixed
    # dictionary, observing the same points, hold the same posterior.
    X, Y = _data(120, seed=3, **tkwargs)
    lam = 0.05
    kernel = rbf_kernel(0.25, outputscale=1.5, **tkwargs)
    online = IncrementalNystrom(kernel, lam, 2, rule="none", **tkwargs)
    for i in range(12):
        online.observe(X[i], Y[i])
    online.rebuild(torch.arange(12))
    model = NystromGP(
        X[:12],
        Y[:12],
        inducing=X[:12],
        covar_module=kernel,
        mean_module=ZeroMean(),
        outcome_transform=None,
    ).eval()
    model.likelihood.noise = lam
    for i in range(12, 120):
        online.observe(X[i], Y[i])
        model = model.condition_on_observations(X[i : i + 1], Y[i : i + 1])
    Xt = torch.rand(25, 2, **tkwargs)
    mean, var = online.mean_and_variance(Xt)
    post = model.posterior(Xt.unsqueeze(-2))
    torch.testing.assert_close(post.mean.reshape(-1), mean, rtol=0, atol=1e-9)
    torch.testing.assert_close(post.variance.reshape(-1), var, rtol=0, atol=1e-9)


def test_a_conditioned_model_is_differentiable_in_the_new_inputs(tkwargs):
    # Conditioning ran under no_grad: qKnowledgeGradient's gradient in the
    # candidate was exactly 0 (optimize_acqf returned its starting point) and
    # qNegIntegratedPosteriorVariance failed inside autograd.
    from botorch.acquisition import qKnowledgeGradient
    from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance

    X, Y = _data(120, **tkwargs)
    model = _model(X, Y, X[:30], **tkwargs)
    # Fantasies: batched conditioning, as the look-ahead acquisitions use it.
    x = torch.rand(2, 3, 2, **tkwargs).requires_grad_(True)
    conditioned = model.condition_on_observations(x, torch.zeros(4, 2, 3, 1, **tkwargs))
    conditioned.posterior(torch.rand(5, 2, **tkwargs)).variance.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    torch.manual_seed(0)
    kg = qKnowledgeGradient(model, num_fantasies=4)
    candidates = torch.rand(2, 5, 2, **tkwargs).requires_grad_(True)
    kg(candidates).sum().backward()
    assert float(candidates.grad[:, 0].abs().sum()) > 0  # the actual candidate
    nipv = qNegIntegratedPosteriorVariance(
        model, mc_points=torch.rand(16, 2, **tkwargs)
    )
    point = torch.rand(1, 1, 2, **tkwargs).requires_grad_(True)
    nipv(point).sum().backward()
    assert float(point.grad.abs().sum()) > 0


def test_chained_conditioning_on_plain_data_keeps_no_graph(tkwargs):
    # Hyperparameters require grad; a loop's observations do not: the chain
    # must not hold a graph of every step (memory and time grew with it).
    X, Y = _data(80, **tkwargs)
    model = _model(X[:40], Y[:40], X[:20], **tkwargs)
    for i in range(40, 45):
        model = model.condition_on_observations(X[i : i + 1], Y[i : i + 1])
    _, online = model.posterior_state()
    assert not online.weights64.requires_grad
    assert not online.weight_covariance.requires_grad


def _fantasies(X, Y, Yvar, Xf, Xff):
    # One fantasy and a fantasy of it, of NystromGP and of SingleTaskGP.
    ours = NystromGP(X, Y, Yvar, inducing=X[:10], input_transform=Normalize(2))
    ref = SingleTaskGP(X, Y, Yvar, input_transform=Normalize(2))
    out = []
    for model in (ours, ref):
        model.eval()
        fantasy = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=0))
        if Xff is not None:
            sampler = SobolQMCNormalSampler(torch.Size([2]), seed=1)
            fantasy = fantasy.fantasize(Xff, sampler)
        out.append(fantasy)
    return out


def _assert_same_layout(fantasy, ref):
    assert fantasy.batch_shape == ref.batch_shape
    assert fantasy.train_inputs[0].shape == ref.train_inputs[0].shape
    torch.testing.assert_close(fantasy.train_inputs[0], ref.train_inputs[0])
    assert fantasy.likelihood.noise.shape == ref.likelihood.noise.shape
    torch.testing.assert_close(fantasy.likelihood.noise, ref.likelihood.noise)


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_fantasy_model_lays_out_inputs_and_noise_as_single_task_gp(
    fixed_noise, tkwargs
):
    # train_inputs held the training inputs alone (30 x 2, not 5 x 4 x 32 x 2),
    # and a fixed-noise likelihood the training noise alone (30, not 4 x 32).
    X, Y = _data(30, **tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    Xf = torch.rand(4, 2, 2, **tkwargs)
    fantasy, ref = _fantasies(X, Y, Yvar, Xf, None)
    _assert_same_layout(fantasy, ref)
    # Its own state, rebuilt, reads the training rows' noise alone.
    Xt = torch.rand(4, 3, 2, **tkwargs)
    mean = fantasy.posterior(Xt).mean
    fantasy.train()
    torch.testing.assert_close(fantasy.posterior(Xt).mean, mean)


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_a_fantasy_of_a_fantasy_is_laid_out_as_single_task_gps(fixed_noise, tkwargs):
    # It failed: deepcopy met the first fantasies' statistics, which carry the
    # sampler's graph.
    X, Y = _data(30, **tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    Xf, Xff = torch.rand(4, 2, 2, **tkwargs), torch.rand(5, 4, 1, 2, **tkwargs)
    fantasy, ref = _fantasies(X, Y, Yvar, Xf, Xff)
    assert fantasy.batch_shape == (2, 5, 4)
    _assert_same_layout(fantasy, ref)


def _fantasy_targets(t, fixed_noise, transform, nested, **tkwargs):
    # NystromGP and SingleTaskGP fantasised with the same inputs and seeded
    # samplers. Every input, the fantasies' too, is inducing, so the two
    # posteriors (and the fantasised observations) agree at every level.
    X, _ = _data(12, **tkwargs)
    Y = torch.cat([torch.sin(5 * X[:, :1]), X.sum(-1, keepdim=True)], -1)[:, :t]
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    g = torch.Generator().manual_seed(3)
    Xf = torch.rand(4, 2, 2, generator=g, dtype=X.dtype).to(X)
    Xff = torch.rand(5, 4, 1, 2, generator=g, dtype=X.dtype).to(X)
    Z = torch.cat([X, Xf.reshape(-1, 2), Xff.reshape(-1, 2)])
    kwargs = {} if transform else {"outcome_transform": None}
    ours = NystromGP(X, Y, Yvar, inducing=Z, input_transform=Normalize(2), **kwargs)
    ref = SingleTaskGP(X, Y, Yvar, input_transform=Normalize(2), **kwargs)
    out = []
    for model in (ours, ref):
        model.eval()
        fantasy = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=0))
        if nested:
            sampler = SobolQMCNormalSampler(torch.Size([2]), seed=1)
            fantasy = fantasy.fantasize(Xff, sampler)
        out.append(fantasy)
    return out


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("transform", [True, False])
@pytest.mark.parametrize("fixed_noise", [False, True])
@pytest.mark.parametrize("t", [1, 2])
def test_a_fantasy_models_train_targets_are_single_task_gps(
    t, fixed_noise, transform, nested, tkwargs
):
    # train_targets held the training rows alone (12, or 2 x 12), where
    # SingleTaskGP's fantasy model has 5 x 4 x 14 (5 x 4 x 2 x 14): the
    # transformed training targets, expanded, then the fantasised observations.
    fantasy, ref = _fantasy_targets(t, fixed_noise, transform, nested, **tkwargs)
    batch = (2, 5, 4) if nested else (5, 4)
    n = 12 + 2 + (1 if nested else 0)
    assert fantasy.batch_shape == ref.batch_shape == batch
    expected = (*batch, n) if t == 1 else (*batch, t, n)
    assert fantasy.train_targets.shape == ref.train_targets.shape == expected
    torch.testing.assert_close(
        fantasy.train_targets, ref.train_targets, rtol=1e-6, atol=1e-6
    )
    # The training rows exactly, as the model stores them.
    torch.testing.assert_close(
        fantasy.train_targets[..., :12], ref.train_targets[..., :12], rtol=0, atol=0
    )


def test_a_fantasy_keeps_its_algebra_on_the_training_targets(tkwargs):
    # Its posterior state, rebuilt from scratch, reads the n training targets
    # alone (the fantasies enter through their statistics), and moving it keeps
    # the layout.
    fantasy, _ = _fantasy_targets(1, False, True, True, **tkwargs)
    Xt = torch.rand(2, 5, 4, 3, 2, **tkwargs)
    mean = fantasy.posterior(Xt).mean
    fantasy.train()
    torch.testing.assert_close(fantasy.posterior(Xt).mean, mean)
    targets = fantasy.train_targets
    fantasy.to(torch.float64)
    torch.testing.assert_close(fantasy.train_targets, targets, rtol=0, atol=0)
