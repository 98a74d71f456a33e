import functools
import inspect
import math
import warnings

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import (
    UnsupportedError,
)
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.sampling import SobolQMCNormalSampler
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import toy_data

from botorch_sketch import (
    FixedSelector,
    GreedyVarianceSelector,
    NystromGP,
    RidgeLeverageSampler,
    UniformSelector,
)
from botorch_sketch.models.nystrom import fitting


def _data(n=40, d=3, seed=0, noise_sd=0.1, dtype=torch.double, device=None):
    # Not the unit cube, and not centred.
    def f(X):
        return 5 + torch.sin(2 * X).sum(-1, keepdim=True)

    return toy_data(n, d, f, noise_sd, seed, 2.0, 5.0, dtype=dtype, device=device)


def _all_points(n):
    return FixedSelector(torch.arange(n))


def _pair(train_Yvar=None, input_transform=True, **tkwargs):
    """A fitted SingleTaskGP and a NystromGP with every point inducing."""
    X, Y = _data(**tkwargs)
    d = X.shape[-1]
    kw = {"train_Yvar": train_Yvar}

    def tf():
        return Normalize(d) if input_transform else None

    ref = SingleTaskGP(X, Y, input_transform=tf(), **kw)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(ref.likelihood, ref))
    model = NystromGP(X, Y, inducing=_all_points(len(X)), input_transform=tf(), **kw)
    model.load_state_dict(ref.state_dict())
    return ref, model, X, Y


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_all_points_inducing_equals_single_task_gp(fixed_noise, tkwargs):
    Yvar = torch.full((40, 1), 0.02, **tkwargs) if fixed_noise else None
    ref, model, X, _ = _pair(train_Yvar=Yvar, **tkwargs)
    Xt = 2 + 3 * torch.rand(4, 5, 3, **tkwargs)
    for observation_noise in (False, True):
        p_ref = ref.posterior(Xt, observation_noise=observation_noise)
        p = model.posterior(Xt, observation_noise=observation_noise)
        torch.testing.assert_close(p.mean, p_ref.mean, rtol=1e-6, atol=1e-8)
        torch.testing.assert_close(
            p.distribution.covariance_matrix,
            p_ref.distribution.covariance_matrix.to_dense()
            if hasattr(p_ref.distribution.covariance_matrix, "to_dense")
            else p_ref.distribution.covariance_matrix,
            rtol=1e-6,
            atol=1e-8,
        )
    assert p.mean.shape == (4, 5, 1)


def test_loss_equals_exact_marginal_likelihood(tkwargs):
    ref, model, X, Y = _pair(**tkwargs)
    ref.train()
    model.train()
    mll = ExactMarginalLogLikelihood(ref.likelihood, ref)
    exact = mll(ref(*ref.train_inputs), ref.train_targets)
    ours = -model.compute_custom_loss(
        ExactMarginalLogLikelihood(model.likelihood, model)
    )
    torch.testing.assert_close(ours, exact, rtol=1e-6, atol=1e-8)


def test_fit_matches_single_task_gp_when_every_point_is_inducing(tkwargs):
    X, Y = _data(**tkwargs)
    ref = SingleTaskGP(X, Y, input_transform=Normalize(3))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(ref.likelihood, ref))
    model = NystromGP(X, Y, inducing=_all_points(40), input_transform=Normalize(3))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    torch.testing.assert_close(
        model.covar_module.lengthscale, ref.covar_module.lengthscale, rtol=1e-3, atol=0
    )
    Xt = 2 + 3 * torch.rand(6, 3, **tkwargs)
    torch.testing.assert_close(
        model.posterior(Xt).mean, ref.posterior(Xt).mean, rtol=1e-3, atol=1e-4
    )


def test_default_rule_fits_and_reselects(tkwargs):
    X, Y = _data(n=200, noise_sd=0.3, **tkwargs)
    torch.manual_seed(0)
    model = NystromGP(X, Y, input_transform=Normalize(3))
    before = model.inducing_index.clone()
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    assert isinstance(model.inducing_rule, RidgeLeverageSampler)
    assert 0 < model.inducing_index.numel() < 200
    assert not torch.equal(before, model.inducing_index)  # re-chosen after fitting
    post = model.posterior(X[:5])
    assert torch.isfinite(post.variance).all() and (post.variance > 0).all()


def test_the_default_rules_cap_is_not_warned_of(tkwargs, monkeypatch):
    # InducingSetCapWarning "qbar scaled by 0.697 for this draw" three times in
    # the README's Ray example, of a cap (1024) the caller never set. Here the
    # default rule's cap is 2, so that it binds on 200 points.
    from botorch_sketch.models.nystrom import inducing as inducing_module
    from botorch_sketch.sketching import InducingSetCapWarning

    capped = functools.partial(RidgeLeverageSampler, max_size=2)
    monkeypatch.setattr(inducing_module, "RidgeLeverageSampler", capped)
    X, Y = _data(n=200, noise_sd=0.01, **tkwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = NystromGP(X, Y)
        model.select_inducing_points()
    assert model.inducing_rule.max_size == 2
    assert not [w for w in caught if issubclass(w.category, InducingSetCapWarning)]
    # A rule the caller passes warns when its cap binds.
    with pytest.warns(InducingSetCapWarning):
        NystromGP(
            X, Y, inducing=RidgeLeverageSampler(max_size=2)
        ).select_inducing_points()


@pytest.mark.parametrize("outcome_transform", [DEFAULT, None])
def test_nearly_constant_outcomes_are_warned_as_single_task_gp_warns(
    tkwargs, outcome_transform
):
    from botorch import settings
    from botorch.exceptions.warnings import InputDataWarning

    X, Y = _data(n=30, **tkwargs)
    flat = 3.0 + 1e-12 * torch.randn_like(Y)
    # SingleTaskGP warns of them; NystromGP did not.
    with pytest.warns(InputDataWarning, match="outcome observations"):
        SingleTaskGP(X, flat)
    with pytest.warns(InputDataWarning, match=r"train_Y is \(nearly\) constant"):
        NystromGP(X, flat, outcome_transform=outcome_transform)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NystromGP(X, Y, outcome_transform=outcome_transform)
        NystromGP(X[:1], flat[:1], outcome_transform=outcome_transform)
        # BoTorch's switch for SingleTaskGP's check turns this one off too.
        with settings.validate_input_scaling(False):
            NystromGP(X, flat, outcome_transform=outcome_transform)
    assert not [w for w in caught if "constant" in str(w.message)]


def test_construction_caps_adaptive_sets_but_not_fixed_size_rules(tkwargs):
    X, Y = _data(n=400, noise_sd=0.01, **tkwargs)
    gen = torch.Generator().manual_seed(0)
    model = NystromGP(X, Y, inducing=RidgeLeverageSampler(qbar=50, generator=gen))
    assert model.inducing_index.numel() == NystromGP.initial_max_inducing
    model.select_inducing_points()
    assert model.inducing_index.numel() > NystromGP.initial_max_inducing
    uniform = NystromGP(X, Y, inducing=UniformSelector(300))
    assert uniform.inducing_index.numel() == 300


def test_repeated_inputs_are_one_inducing_point(tkwargs):
    X, Y = _data(n=30, **tkwargs)
    X = torch.cat([X, X[:10]])
    Y = torch.cat([Y, Y[:10] + 0.01])
    model = NystromGP(X, Y, inducing=UniformSelector(100))
    assert model.inducing_index.numel() == 30
    assert model.inducing_points.unique(dim=0).shape[0] == 30


def test_fixed_inducing_inputs_follow_the_input_transform(tkwargs):
    X, Y = _data(**tkwargs)
    Z = X[:7] + 0.01
    model = NystromGP(X, Y, inducing=Z, input_transform=Normalize(3))
    expected = model.input_transform.preprocess_transform(Z)
    torch.testing.assert_close(model.inducing_points, expected)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    assert model.inducing_points.shape == (7, 3)


def test_posterior_transform_and_output_indices(tkwargs):
    _, model, _, _ = _pair(**tkwargs)
    Xt = 2 + 3 * torch.rand(3, 3, **tkwargs)
    weights = torch.tensor([2.0], **tkwargs)
    post = model.posterior(
        Xt, posterior_transform=ScalarizedPosteriorTransform(weights)
    )
    torch.testing.assert_close(post.mean, 2 * model.posterior(Xt).mean)
    model.posterior(Xt, output_indices=[0])
    with pytest.raises(UnsupportedError):
        model.posterior(Xt, output_indices=[1])


def test_observation_noise_tensor_is_added(tkwargs):
    _, model, _, _ = _pair(**tkwargs)
    Xt = 2 + 3 * torch.rand(2, 4, 3, **tkwargs)
    noise = torch.full((2, 4, 1), 0.3, **tkwargs)
    base = model.posterior(Xt).variance
    noisy = model.posterior(Xt, observation_noise=noise).variance
    std2 = model.outcome_transform.stdvs.pow(2)
    torch.testing.assert_close(noisy - base, 0.3 * std2.expand_as(base))


def test_condition_on_observations_equals_refitting_on_more_data(tkwargs):
    X, Y = _data(n=50, **tkwargs)
    Z = X[:12]
    full = NystromGP(X, Y, inducing=Z, input_transform=Normalize(3))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(full.likelihood, full))
    state = full.state_dict()
    part = NystromGP(X[:35], Y[:35], inducing=Z, input_transform=Normalize(3))
    part.load_state_dict(state)
    cond = part.condition_on_observations(X[35:], Y[35:])
    Xt = 2 + 3 * torch.rand(6, 3, **tkwargs)
    p_full, p_cond = full.posterior(Xt), cond.posterior(Xt)
    torch.testing.assert_close(p_cond.mean, p_full.mean, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(p_cond.variance, p_full.variance, rtol=1e-8, atol=1e-10)
    # the observations join the data, so a cache rebuild gives the same answer
    assert cond.train_X.shape[0] == 50
    cond.train()
    torch.testing.assert_close(cond.posterior(Xt).mean, p_full.mean)
    # the original model is untouched
    assert part.train_X.shape[0] == 35


def test_fantasize_broadcasts_and_fantasies_are_frozen(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(
        X, Y, inducing=UniformSelector(15, torch.Generator().manual_seed(0))
    )
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([5]))
    Xf = 2 + 3 * torch.rand(4, 2, 3, **tkwargs)
    fantasy = model.fantasize(Xf, sampler)
    assert fantasy.batch_shape == (5, 4)
    post = fantasy.posterior(2 + 3 * torch.rand(4, 7, 3, **tkwargs))
    assert post.mean.shape == (5, 4, 7, 1)
    # variance at the fantasy points drops below the prior-conditioned one
    before = model.posterior(Xf).variance
    after = fantasy.posterior(Xf).variance
    assert (after <= before.unsqueeze(0) + 1e-10).all()
    with pytest.raises(UnsupportedError):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(fantasy.likelihood, fantasy))


def test_fixed_noise_fantasize_and_condition(tkwargs):
    X, Y = _data(**tkwargs)
    Yvar = torch.full_like(Y, 0.05)
    model = NystromGP(X, Y, Yvar, inducing=UniformSelector(20))
    fantasy = model.fantasize(
        X[:2], SobolQMCNormalSampler(sample_shape=torch.Size([3]))
    )
    assert fantasy.batch_shape == (3,)
    with pytest.raises(UnsupportedError, match="noise"):
        model.condition_on_observations(X[:2], Y[:2])
    cond = model.condition_on_observations(
        X[:2], Y[:2], noise=torch.full_like(Y[:2], 0.1)
    )
    assert cond.train_Yvar.shape == (42, 1)


def test_state_dict_loads_into_a_model_on_fewer_points(tkwargs):
    # Ax's cross-validation loads a full-data state into fold models.
    X, Y = _data(n=60, **tkwargs)
    full = NystromGP(X, Y, input_transform=Normalize(3))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(full.likelihood, full))
    fold = NystromGP(X[:45], Y[:45], input_transform=Normalize(3))
    fold.load_state_dict(full.state_dict())
    torch.testing.assert_close(
        fold.covar_module.lengthscale, full.covar_module.lengthscale
    )
    torch.testing.assert_close(
        fold.outcome_transform.means, full.outcome_transform.means
    )
    torch.testing.assert_close(fold.train_targets, full.train_targets[:45])
    assert fold.posterior(X[45:]).mean.shape == (15, 1)
    assert all(v.shape[0] != 60 for v in full.state_dict().values() if v.dim())


def test_constructor_is_ax_compatible(tkwargs):
    args = inspect.getfullargspec(NystromGP).args
    for name in (
        "train_X",
        "train_Y",
        "train_Yvar",
        "inducing",
        "covar_module",
        "mean_module",
        "likelihood",
        "outcome_transform",
        "input_transform",
    ):
        assert name in args
    X, Y = _data(**tkwargs)
    data = SupervisedDataset(X, Y, feature_names=["a", "b", "c"], outcome_names=["y"])
    rule = UniformSelector(5)
    inputs = NystromGP.construct_inputs(
        data, inducing=rule, categorical_features=[], fidelity_features=None
    )
    assert inputs["inducing"] is rule and torch.equal(inputs["train_X"], X)
    with pytest.raises(UnsupportedError, match="categorical_features"):
        NystromGP.construct_inputs(data, categorical_features=[0])


def test_to_moves_data_and_drops_the_cache(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y, inducing=UniformSelector(10))
    model.posterior(X[:2])
    model = model.float()
    assert model.train_X.dtype == torch.float32
    assert model.inducing_index.dtype == torch.long
    assert model.posterior(X[:2].float()).mean.dtype == torch.float32


def test_float32_end_to_end(tkwargs):
    X, Y = _data(n=80, dtype=torch.float32, device=tkwargs["device"])
    model = NystromGP(X, Y, input_transform=Normalize(3))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    post = model.posterior(X[:10])
    assert post.mean.dtype == torch.float32
    assert torch.isfinite(post.variance).all() and (post.variance >= 0).all()
    assert (post.mean - Y[:10]).abs().mean() < 0.5


def test_variance_stays_at_the_prior_far_from_the_data(tkwargs):
    # Paper 000, Fig. 1 (recipe in notes/bkb.md): f drawn from a GP on [0, 1],
    # data only in [0, 0.5]; beyond, the DTC variance is the prior variance.
    from gpytorch.kernels import RBFKernel, ScaleKernel

    g = torch.Generator().manual_seed(0)
    grid = torch.linspace(0, 1, 400, **tkwargs).unsqueeze(-1)
    kernel = ScaleKernel(RBFKernel()).to(**tkwargs)
    kernel.base_kernel.lengthscale = 1 / math.sqrt(200)
    with torch.no_grad():
        K = kernel(grid).to_dense() + 1e-8 * torch.eye(400, **tkwargs)
        w = torch.randn(400, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
        f = torch.linalg.cholesky(K) @ w
    for t in (6, 63, 215):
        idx = torch.randint(0, 200, (t,), generator=g).to(tkwargs["device"])
        eps = torch.randn(t, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
        X, Y = grid[idx], (f[idx] + 0.1 * eps)[:, None]
        model = NystromGP(
            X,
            Y,
            inducing=RidgeLeverageSampler(qbar=2, generator=g),
            covar_module=kernel,
            outcome_transform=None,
        )
        model.likelihood.noise = 0.01
        model.select_inducing_points()
        far = model.posterior(grid[grid.squeeze(-1) > 0.75].unsqueeze(-2))
        near = model.posterior(X.unsqueeze(-2))
        assert far.variance.min() > 0.99 * kernel.outputscale
        assert near.variance.mean() < 0.5 * kernel.outputscale
        assert model.inducing_index.numel() <= t
        inside = (
            f[:, None] - model.posterior(grid.unsqueeze(-2)).mean.squeeze(-1)
        ).abs()
        sd = model.posterior(grid.unsqueeze(-2)).variance.sqrt().squeeze(-1)
        assert (inside <= 4 * sd + 0.3).float().mean() > 0.97


def test_greedy_rule_in_the_model(tkwargs):
    X, Y = _data(n=100, noise_sd=0.3, **tkwargs)
    model = NystromGP(
        X,
        Y,
        inducing=GreedyVarianceSelector(20, tolerance=None),
        input_transform=Normalize(3),
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    assert model.inducing_index.numel() == 20


def test_fixed_selector_indices_are_training_rows(tkwargs):
    # The rows of _data are not in torch.unique's sorted order, so reading the
    # indices as positions among the sorted distinct inputs picks other rows.
    X, Y = _data(**tkwargs)
    by_rows = NystromGP(X, Y, inducing=FixedSelector(torch.tensor([0, 1, 2])))
    by_inputs = NystromGP(X, Y, inducing=X[:3].clone())
    assert by_rows.inducing_index.tolist() == [0, 1, 2]
    Xt = 2 + 3 * torch.rand(5, 3, **tkwargs)
    p_rows, p_inputs = by_rows.posterior(Xt), by_inputs.posterior(Xt)
    torch.testing.assert_close(p_rows.mean, p_inputs.mean)
    torch.testing.assert_close(p_rows.variance, p_inputs.variance)
    # A row repeating an earlier given row's input adds nothing.
    X_rep = torch.cat([X, X[:1]])
    Y_rep = torch.cat([Y, Y[:1]])
    model = NystromGP(X_rep, Y_rep, inducing=FixedSelector([40, 5, 0]))
    assert model.inducing_index.tolist() == [40, 5]


def test_fixed_selector_rows_survive_fitting_on_a_subset(tkwargs):
    X, Y = _data(n=60, **tkwargs)
    model = NystromGP(X, Y, inducing=FixedSelector([50, 55, 3]), fit_subset_size=20)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    assert model.inducing_index.tolist() == [50, 55, 3]


def test_zero_observed_noise_works_like_single_task_gp(tkwargs):
    # gpytorch raises fixed noise to settings.min_fixed_noise; NystromGP lost
    # that when it set the outcome-transformed noise, and factorised zeros.
    Yvar = torch.zeros(40, 1, **tkwargs)
    ref, model, _, _ = _pair(train_Yvar=Yvar, **tkwargs)
    assert float(model.likelihood.noise.min()) > 0
    Xt = 2 + 3 * torch.rand(6, 3, **tkwargs)
    p_ref, p = ref.posterior(Xt), model.posterior(Xt)
    torch.testing.assert_close(p.mean, p_ref.mean, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(p.variance, p_ref.variance, rtol=1e-3, atol=1e-6)
    # New observations with zero noise are floored the same way.
    cond = model.condition_on_observations(
        Xt[:2], p.mean[:2].detach(), noise=torch.zeros(2, 1, **tkwargs)
    )
    assert bool(torch.isfinite(cond.posterior(Xt).mean).all())


def test_standardize_default_and_none(tkwargs):
    X, Y = _data(**tkwargs)
    assert isinstance(NystromGP(X, Y).outcome_transform, Standardize)
    assert not hasattr(NystromGP(X, Y, outcome_transform=None), "outcome_transform")


def test_posterior_over_a_large_batch_of_single_points(tkwargs):
    # Acquisition functions evaluate b x 1 x d raw samples. The batch must be
    # folded into one block (expanding the m x m factor per point would need
    # 50,000 x 256 x 256 doubles, 26 GB), and agree with the joint posterior.
    g = torch.Generator().manual_seed(0)
    X = torch.rand(400, 3, generator=g, dtype=torch.double).to(**tkwargs)
    Y = X.sum(-1, keepdim=True).sin()
    model = NystromGP(X, Y, inducing=X[:256].clone()).eval()
    cand = torch.rand(50_000, 3, generator=g, dtype=torch.double).to(**tkwargs)
    with torch.no_grad():
        batched = model.posterior(cand.unsqueeze(-2))
        joint = model.posterior(cand[:50])
    assert batched.mean.shape == (50_000, 1, 1)
    assert torch.allclose(batched.mean[:50].reshape(-1), joint.mean.reshape(-1))
    assert torch.allclose(
        batched.variance[:50].reshape(-1), joint.variance.reshape(-1), atol=1e-12
    )


def test_fitting_on_a_subset_shares_the_hyperparameters_and_keeps_all_data(tkwargs):
    g = torch.Generator().manual_seed(3)
    X = torch.rand(1000, 2, generator=g, dtype=torch.double).to(**tkwargs)
    Y = (6 * X).sin().sum(-1, keepdim=True) + 0.1 * torch.randn(
        1000, 1, generator=g, dtype=torch.double
    ).to(**tkwargs)

    def fitted(subset):
        model = NystromGP(X, Y, input_transform=Normalize(2))
        model.fit_subset_size = subset
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    full, sub = fitted(None), fitted(300)
    ls_full = full.covar_module.lengthscale.detach()
    ls_sub = sub.covar_module.lengthscale.detach()
    assert torch.allclose(ls_sub, ls_full, rtol=0.3)
    noise_ratio = float(sub.likelihood.noise / full.likelihood.noise)
    assert 0.7 < noise_ratio < 1.4
    # The transforms were fitted on all the data and left alone.
    assert torch.allclose(sub.outcome_transform.means, full.outcome_transform.means)
    # The inducing points come from the subset; the posterior conditions on
    # every point, not on the subset.
    assert bool(torch.isin(sub.inducing_index, fitting.rule_rows(sub)).all())
    _, stats = sub._embedding_and_statistics()
    assert float(stats.num_data) == 1000
    Xt = torch.rand(200, 2, generator=g, dtype=torch.double).to(**tkwargs)
    with torch.no_grad():
        diff = sub.posterior(Xt).mean - full.posterior(Xt).mean
    assert float(diff.abs().max()) < 0.1


def test_fitting_on_a_subset_with_known_noise_is_refused(tkwargs):
    X = torch.rand(50, 2, **tkwargs)
    model = NystromGP(X, X.sum(-1, keepdim=True), torch.full((50, 1), 0.01, **tkwargs))
    model.fit_subset_size = 20
    with pytest.raises(UnsupportedError, match="fit_subset_size"):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))


def test_acquisition_evaluations_reuse_the_posterior_state(monkeypatch, tkwargs):
    # Acquisition functions call model.to(X) on every evaluation: that must not
    # throw away the O(n m^2) statistics unless it changes dtype or device.
    from botorch.acquisition import LogExpectedImprovement

    X = torch.rand(300, 2, **tkwargs)
    Y = X.sum(-1, keepdim=True).sin()
    model = NystromGP(X, Y).eval()
    calls = []
    original = NystromGP._embedding_and_statistics
    monkeypatch.setattr(
        NystromGP,
        "_embedding_and_statistics",
        lambda self: calls.append(1) or original(self),
    )
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    Xt = torch.rand(4, 1, 2, **tkwargs, requires_grad=True)
    for _ in range(3):
        acqf(Xt).sum().backward()
    assert len(calls) == 1
    model.to(torch.float)
    model.posterior(Xt.detach().float())
    assert len(calls) == 2 and model.train_X.dtype == torch.float
    assert model.train_X.device == X.device


def _fit_keeping_global_state(model):
    # Fits and reads a posterior; returns whether torch's global random
    # states (the CPU's, and CUDA's where there is one) are unchanged.
    def states():
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
        return [torch.get_rng_state(), *cuda]

    before = states()
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.posterior(model.train_X[:3])
    after = states()
    return len(before) == len(after) and all(
        torch.equal(a, b) for a, b in zip(before, after, strict=True)
    )


def _small_fit_options(model, options):
    # The default fitting path at n = 900 with smaller subsets, for speed.
    for name, value in options.items():
        setattr(model, name, value)
    return model


@pytest.mark.parametrize(
    "n, options, exact",
    [
        (40, {}, True),  # one exact fit, then the rule once
        # The automatic subset: the rule among 300 rows, an exact fit on 100.
        (900, {"automatic_fit_subset_size": 300, "exact_fit_size": 100}, False),
    ],
)
def test_fitting_draws_nothing_from_the_global_generator(n, options, exact, tkwargs):
    # SingleTaskGP's fit draws no random number; a seeded script that swaps in
    # NystromGP must see the same random numbers after the fit.
    import warnings

    from botorch_sketch.models.nystrom_gp import ExactRegimeWarning

    X, Y = _data(n=n, d=2, **tkwargs)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        model = _small_fit_options(NystromGP(X, Y), options)
        assert _fit_keeping_global_state(model)
    assert model.is_exact == exact
    # Two identical builds under one seed are one model.
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        again = _small_fit_options(NystromGP(X, Y), options)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(again.likelihood, again))
    assert torch.equal(again.inducing_index, model.inducing_index)
    Xt = X[:5] + 0.01
    torch.testing.assert_close(again.posterior(Xt).mean, model.posterior(Xt).mean)
    torch.testing.assert_close(
        again.posterior(Xt).variance, model.posterior(Xt).variance
    )


def test_select_inducing_points_draws_nothing_from_the_global_generator(tkwargs):
    X, Y = _data(n=300, d=2, **tkwargs)
    rule = RidgeLeverageSampler(qbar=1.0)
    model = NystromGP(X, Y, inducing=rule)
    state = torch.get_rng_state()
    model.select_inducing_points()
    first = model.inducing_index.clone()
    model.select_inducing_points()
    assert torch.equal(state, torch.get_rng_state())
    # Each selection draws afresh from the model's own stream, and the rule
    # given keeps no generator of the model's.
    assert not torch.equal(first, model.inducing_index)
    assert rule.generator is None
    # A rule's own generator is still the one it draws from.
    seeded = NystromGP(
        X, Y, inducing=RidgeLeverageSampler(generator=torch.Generator().manual_seed(5))
    )
    other = NystromGP(
        X, Y, inducing=RidgeLeverageSampler(generator=torch.Generator().manual_seed(6))
    )
    assert not torch.equal(seeded.inducing_index, other.inducing_index)
