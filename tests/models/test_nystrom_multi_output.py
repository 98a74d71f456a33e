import warnings

import pytest
import torch
from botorch.acquisition.multi_objective.joint_entropy_search import (
    qLowerBoundMultiObjectiveJointEntropySearch,
)
from botorch.acquisition.multi_objective.logei import (
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.acquisition.multi_objective.utils import (
    compute_sample_box_decomposition,
    random_search_optimizer,
    sample_optimal_points,
)
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.models.transforms.outcome import ChainedOutcomeTransform, Log
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.sampling.pathwise import draw_matheron_paths, get_matheron_path_model
from botorch.test_functions.multi_objective import BraninCurrin
from botorch.utils.datasets import SupervisedDataset
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import toy_data

from botorch_sketch import (
    FixedSelector,
    GreedyVarianceSelector,
    NystromGP,
    RidgeLeverageSampler,
)
from botorch_sketch.models import MultiOutputNystromGP
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


def _data(n=40, d=3, t=2, seed=0, dtype=torch.double, device=None):
    # Outcomes of different scales and smoothness, so that per-outcome
    # hyperparameters and standardisation matter.
    def f(X):
        columns = [torch.sin(2 * X).sum(-1), 10 * torch.cos(X[:, 0]) + X[:, 1] ** 2]
        columns += [X.sum(-1) - 7 for _ in range(t - 2)]
        return torch.stack(columns[:t], -1)

    return toy_data(n, d, f, 0.1, seed, 2.0, 5.0, dtype=dtype, device=device)


def _outcome_state(model, ref):
    # The multi-output model's state with each outcome's hyperparameters taken
    # from the ref's batch over outcomes (SingleTaskGP's batched modules).
    ref_state = ref.state_dict()
    state = {}
    for key, value in model.state_dict().items():
        if key.startswith("outcome_models."):
            _, j, name = key.split(".", 2)
            if name not in ref_state:
                continue  # the outcome's inducing set: the rule chooses it
            source = ref_state[name]
            if source.shape != value.shape:
                source = source[int(j)].reshape(value.shape)
            state[key] = source
        else:
            state[key] = ref_state[key]
    return state


def _pair(train_Yvar=None, **tkwargs):
    """A fitted 2-output SingleTaskGP and a NystromGP with every point inducing."""
    X, Y = _data(**tkwargs)
    kw = {"train_Yvar": train_Yvar}
    ref = SingleTaskGP(X, Y, input_transform=Normalize(3), **kw)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(ref.likelihood, ref))
    model = MultiOutputNystromGP(
        X,
        Y,
        inducing=FixedSelector(torch.arange(len(X))),
        input_transform=Normalize(3),
        **kw,
    )
    model.load_state_dict(_outcome_state(model, ref))
    return ref, model, X, Y


def test_n_by_t_data_build_a_multi_output_model(tkwargs):
    X, Y = _data(t=3, **tkwargs)
    # NystromGP(X, Y) of t columns builds it, as SingleTaskGP models t outputs.
    assert type(NystromGP(X, Y)) is MultiOutputNystromGP
    model = MultiOutputNystromGP(X, Y)
    assert not isinstance(model, NystromGP)
    assert model.num_outputs == 3 and len(model.outcome_models) == 3
    assert all(
        type(m) is NystromGP and m.num_outputs == 1 for m in model.outcome_models
    )
    # Standardize(m=3) by default, as SingleTaskGP; the outcomes see its image.
    assert isinstance(model.outcome_transform, Standardize)
    torch.testing.assert_close(model.train_targets.mean(-1), torch.zeros(3, **tkwargs))
    assert model.likelihood.noise.shape == (3, 1)
    # Each outcome owns its modules: fitting one moves no other.
    kernels = {id(m.covar_module) for m in model.outcome_models}
    assert len(kernels) == 3
    # One outcome builds the single-output model.
    assert type(NystromGP(X, Y[:, :1])) is NystromGP


def _nystrom_and_single_task_gp(X, Y, train_Yvar=None, outcome_transform=None):
    # ``NystromGP(X, Y)`` of several columns with every point inducing, and a
    # SingleTaskGP of as many outputs whose hyperparameters it takes (set
    # apart per output, not fitted: fits take seconds).
    def options():
        kwargs = {"input_transform": Normalize(3)}
        if outcome_transform is not None:
            kwargs["outcome_transform"] = outcome_transform()
        return kwargs

    ref = SingleTaskGP(X, Y, train_Yvar, **options())
    ref.covar_module.lengthscale = torch.tensor([[[0.3, 0.5, 0.7]], [[0.6, 0.4, 1.0]]])
    if train_Yvar is None:
        ref.likelihood.noise = torch.tensor([[0.01], [0.03]])
    every = FixedSelector(torch.arange(len(X)))
    model = NystromGP(X, Y, train_Yvar, inducing=every, **options())
    model.load_state_dict(_outcome_state(model, ref))
    return model, ref


def test_nystrom_gp_of_several_columns_is_single_task_gps_model(tkwargs):
    # NystromGP(X, Y) refused n x t observations; SingleTaskGP models them as
    # independent outputs on shared inputs.
    X, Y = _data(**tkwargs)
    model, ref = _nystrom_and_single_task_gp(X, Y)
    assert model.num_outputs == 2 and model.batch_shape == ref.batch_shape
    Xt = 2 + 3 * torch.rand(4, 5, 3, **tkwargs)
    p, p_ref = model.posterior(Xt), ref.posterior(Xt)
    assert p.mean.shape == (4, 5, 2)
    torch.testing.assert_close(p.mean, p_ref.mean, rtol=0, atol=1e-8)
    torch.testing.assert_close(
        p.distribution.covariance_matrix,
        p_ref.distribution.covariance_matrix,
        rtol=0,
        atol=1e-8,
    )
    # subset_output, as SingleTaskGP's.
    one, one_ref = model.subset_output([1]), ref.subset_output([1])
    assert one.num_outputs == 1
    torch.testing.assert_close(
        one.posterior(Xt).mean, one_ref.posterior(Xt).mean, rtol=0, atol=1e-8
    )
    # The data laid out as SingleTaskGP's: t x n x d inputs, t x n targets.
    pairs = [
        (model.train_inputs[0], ref.train_inputs[0]),
        (model.train_targets, ref.train_targets),
    ]
    for ours, theirs in pairs:
        assert ours.shape == theirs.shape
        torch.testing.assert_close(ours, theirs)
    assert model.likelihood.noise.shape == ref.likelihood.noise.shape


@pytest.mark.parametrize(
    "outcome_transform",
    [
        lambda: Standardize(m=2),
        lambda: ChainedOutcomeTransform(log=Log(), standardize=Standardize(m=2)),
    ],
    ids=["standardize", "log-standardize"],
)
def test_nystrom_gp_of_several_columns_takes_outcome_transforms(
    outcome_transform, tkwargs
):
    X, Y = _data(**tkwargs)
    Y = Y - Y.min(0).values + 1.0  # positive, for Log
    model, ref = _nystrom_and_single_task_gp(X, Y, outcome_transform=outcome_transform)
    assert type(model) is MultiOutputNystromGP
    Xt = 2 + 3 * torch.rand(6, 3, **tkwargs)
    p, p_ref = model.posterior(Xt), ref.posterior(Xt)
    torch.testing.assert_close(p.mean, p_ref.mean, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(p.variance, p_ref.variance, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_fantasies_of_several_outputs_are_laid_out_as_single_task_gps(
    fixed_noise, tkwargs
):
    X, Y = _data(**tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    model, ref = _nystrom_and_single_task_gp(X, Y, train_Yvar=Yvar)
    Xf = 2 + 3 * torch.rand(4, 2, 3, **tkwargs)
    Xff = 2 + 3 * torch.rand(5, 4, 1, 3, **tkwargs)
    layouts = []
    for m in (model, ref):
        fantasy = m.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=0))
        sampler = SobolQMCNormalSampler(torch.Size([2]), seed=1)
        chained = fantasy.fantasize(Xff, sampler)
        layouts.append(
            [(f.train_inputs[0], f.likelihood.noise) for f in (fantasy, chained)]
        )
    for (inputs, noise), (inputs_ref, noise_ref) in zip(*layouts, strict=True):
        # 5 x 4 x 2 x 42 x 3, then 2 x 5 x 4 x 2 x 43 x 3; noise 2 x 1 or
        # 4 x 2 x 42, then 5 x 4 x 2 x 43.
        assert inputs.shape == inputs_ref.shape
        torch.testing.assert_close(inputs, inputs_ref)
        assert noise.shape == noise_ref.shape
        torch.testing.assert_close(noise, noise_ref)


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_each_outcome_equals_single_task_gp_with_every_point_inducing(
    fixed_noise, tkwargs
):
    Yvar = torch.full((40, 2), 0.02, **tkwargs) if fixed_noise else None
    ref, model, X, _ = _pair(train_Yvar=Yvar, **tkwargs)
    Xt = 2 + 3 * torch.rand(4, 5, 3, **tkwargs)
    for observation_noise in (False, True):
        p_ref = ref.posterior(Xt, observation_noise=observation_noise)
        p = model.posterior(Xt, observation_noise=observation_noise)
        assert isinstance(p.distribution, MultitaskMultivariateNormal)
        assert p.mean.shape == (4, 5, 2)
        torch.testing.assert_close(p.mean, p_ref.mean, rtol=0, atol=1e-8)
        torch.testing.assert_close(
            p.distribution.covariance_matrix,
            p_ref.distribution.covariance_matrix,
            rtol=0,
            atol=1e-8,
        )


def test_outcome_j_equals_single_output_model_on_column_j(tkwargs):
    X, Y = _data(n=80, **tkwargs)
    model = MultiOutputNystromGP(X, Y, inducing=GreedyVarianceSelector(25))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    Xt = 2 + 3 * torch.rand(7, 3, **tkwargs)
    p = model.posterior(Xt)
    lengthscales = []
    for j, outcome in enumerate(model.outcome_models):
        single = NystromGP(X, Y[:, j : j + 1], inducing=outcome.inducing_points)
        for name in ("covar_module", "mean_module", "likelihood"):
            getattr(single, name).load_state_dict(getattr(outcome, name).state_dict())
        single.eval()
        q = single.posterior(Xt)
        torch.testing.assert_close(p.mean[..., j], q.mean[..., 0], rtol=0, atol=1e-10)
        cov = p.distribution.covariance_matrix[j * 7 : (j + 1) * 7, j * 7 : (j + 1) * 7]
        torch.testing.assert_close(cov, q.covariance_matrix, rtol=0, atol=1e-10)
        lengthscales.append(outcome.covar_module.lengthscale)
        # Its own inducing set, chosen at its own hyperparameters.
        assert outcome.inducing_index.numel() <= 25
    # The outcomes were fitted separately, to different hyperparameters.
    assert not torch.allclose(lengthscales[0], lengthscales[1], rtol=0.05)
    # Independent outcomes: the cross-covariance is zero.
    assert p.distribution.covariance_matrix[:7, 7:].abs().max() == 0


def test_fit_equals_fitting_each_column_alone(tkwargs):
    X, Y = _data(n=50, **tkwargs)
    model = MultiOutputNystromGP(X, Y, inducing=GreedyVarianceSelector(20))
    singles = [
        NystromGP(X, Y[:, j : j + 1], inducing=GreedyVarianceSelector(20))
        for j in range(2)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        mll = fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        for single in singles:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(single.likelihood, single))
    assert not mll.training
    for outcome, single in zip(model.outcome_models, singles, strict=True):
        torch.testing.assert_close(
            outcome.covar_module.lengthscale, single.covar_module.lengthscale
        )
        torch.testing.assert_close(outcome.likelihood.noise, single.likelihood.noise)
        assert torch.equal(outcome.inducing_index, single.inducing_index)
    lml = model.log_marginal_likelihood()
    assert lml.shape == (2,)
    torch.testing.assert_close(
        lml, torch.stack([s.log_marginal_likelihood() for s in singles])
    )
    loss = model.compute_custom_loss()
    torch.testing.assert_close(loss, sum(s.compute_custom_loss() for s in singles))


def test_posterior_options(tkwargs):
    _, model, X, _ = _pair(**tkwargs)
    Xt = 2 + 3 * torch.rand(3, 4, 3, **tkwargs)
    full = model.posterior(Xt)
    # One outcome: its own normal, q x 1, on the original scale.
    one = model.posterior(Xt, output_indices=[1])
    assert isinstance(one.distribution, MultivariateNormal)
    assert one.mean.shape == (3, 4, 1)
    torch.testing.assert_close(one.mean[..., 0], full.mean[..., 1])
    torch.testing.assert_close(one.variance[..., 0], full.variance[..., 1])
    # A tensor of observation noise (transformed units) adds per outcome.
    noise = torch.tensor([0.1, 0.2], **tkwargs).expand(3, 4, 2)
    noisy = model.posterior(Xt, observation_noise=noise)
    stdvs = model.outcome_transform.stdvs.squeeze(0)
    torch.testing.assert_close(noisy.variance, full.variance + noise * stdvs**2)
    with pytest.raises(BotorchTensorDimensionError, match="observation_noise"):
        model.posterior(Xt, observation_noise=noise[..., :1])
    with pytest.raises(UnsupportedError, match="output_indices"):
        model.posterior(Xt, output_indices=[2])
    # A posterior transform sees the t outcomes.
    weights = torch.tensor([1.0, -2.0], **tkwargs)
    scalar = model.posterior(
        Xt, posterior_transform=ScalarizedPosteriorTransform(weights)
    )
    torch.testing.assert_close(scalar.mean[..., 0], full.mean @ weights)


def test_subset_output(tkwargs):
    X, Y = _data(t=3, **tkwargs)
    model = MultiOutputNystromGP(X, Y, inducing=GreedyVarianceSelector(15))
    Xt = 2 + 3 * torch.rand(5, 3, **tkwargs)
    full = model.posterior(Xt)
    one = model.subset_output([2])
    assert type(one) is NystromGP and one.num_outputs == 1
    torch.testing.assert_close(one.train_Y, Y[:, 2:])
    torch.testing.assert_close(one.posterior(Xt).mean, full.mean[..., 2:])
    torch.testing.assert_close(one.posterior(Xt).variance, full.variance[..., 2:])
    two = model.subset_output([2, 0])
    assert isinstance(two, MultiOutputNystromGP) and two.num_outputs == 2
    torch.testing.assert_close(two.posterior(Xt).mean, full.mean[..., [2, 0]])
    # The subsets share nothing with the model.
    one.covar_module.lengthscale = 0.1
    torch.testing.assert_close(model.posterior(Xt).mean, full.mean)


def test_condition_on_observations_equals_single_output_conditioning(tkwargs):
    X, Y = _data(n=60, **tkwargs)
    model = MultiOutputNystromGP(X[:45], Y[:45], inducing=GreedyVarianceSelector(20))
    cond = model.condition_on_observations(X[45:], Y[45:])
    assert isinstance(cond, MultiOutputNystromGP) and cond.train_X.shape[0] == 60
    torch.testing.assert_close(cond.train_Y, Y)
    Xt = 2 + 3 * torch.rand(6, 3, **tkwargs)
    p = cond.posterior(Xt)
    for j, outcome in enumerate(model.outcome_models):
        single = NystromGP(X[:45], Y[:45, j : j + 1], inducing=outcome.inducing_points)
        for name in ("covar_module", "mean_module", "likelihood"):
            getattr(single, name).load_state_dict(getattr(outcome, name).state_dict())
        q = single.condition_on_observations(X[45:], Y[45:, j : j + 1]).posterior(Xt)
        torch.testing.assert_close(p.mean[..., j], q.mean[..., 0])
        torch.testing.assert_close(p.variance[..., j], q.variance[..., 0])
    # the original model is untouched
    assert model.train_X.shape[0] == 45
    assert all(m.train_X.shape[0] == 45 for m in model.outcome_models)
    with pytest.raises(UnsupportedError, match="batch_shape x n' x 2"):
        model.condition_on_observations(X[45:], Y[45:, :1])


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_fantasize(fixed_noise, tkwargs):
    X, Y = _data(**tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    model = MultiOutputNystromGP(
        X, Y, train_Yvar=Yvar, inducing=GreedyVarianceSelector(15)
    )
    sampler = SobolQMCNormalSampler(torch.Size([4]), seed=0)
    fantasy = model.fantasize(2 + 3 * torch.rand(3, 2, 3, **tkwargs), sampler)
    assert fantasy.batch_shape == (4, 3)
    Xt = 2 + 3 * torch.rand(3, 5, 3, **tkwargs)
    p = fantasy.posterior(Xt)
    assert p.mean.shape == (4, 3, 5, 2)
    assert bool(torch.isfinite(p.variance).all())
    # Fantasies move the mean, not the (outcome-independent) covariance.
    assert p.mean[0].sub(p.mean[1]).abs().max() > 0
    torch.testing.assert_close(p.variance[0], p.variance[1])
    with pytest.raises(UnsupportedError, match="fantasy"):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(fantasy.likelihood, fantasy))


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_fantasy_layout_is_single_task_gps(fixed_noise, tkwargs):
    # A fantasy, and a fantasy of it, hold batch x t x (n + n') x d inputs and
    # (fixed noise) batch x t x (n + n') noise variances, as SingleTaskGP's.
    X, Y = _data(n=20, **tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    Xf = 2 + 3 * torch.rand(4, 3, 3, **tkwargs)
    fantasies = []
    for model in (NystromGP(X, Y, Yvar), SingleTaskGP(X, Y, Yvar)):
        model.eval()
        fantasy = model.fantasize(Xf, SobolQMCNormalSampler(torch.Size([5]), seed=0))
        sampler = SobolQMCNormalSampler(torch.Size([2]), seed=1)
        again = fantasy.fantasize(Xf[..., :1, :].expand(5, 4, 1, 3), sampler)
        fantasies.append((fantasy, again))
    for ours, ref in zip(*fantasies, strict=True):
        assert ours.batch_shape == ref.batch_shape
        assert ours.train_inputs[0].shape == ref.train_inputs[0].shape
        torch.testing.assert_close(ours.train_inputs[0], ref.train_inputs[0])
        assert ours.likelihood.noise.shape == ref.likelihood.noise.shape
        if fixed_noise:
            torch.testing.assert_close(ours.likelihood.noise, ref.likelihood.noise)


def test_state_dict_loads_into_a_model_on_fewer_points(tkwargs):
    X, Y = _data(n=60, **tkwargs)
    full = MultiOutputNystromGP(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(full.likelihood, full))
    fold = MultiOutputNystromGP(X[:45], Y[:45])
    fold.load_state_dict(full.state_dict())
    for a, b in zip(fold.outcome_models, full.outcome_models, strict=True):
        torch.testing.assert_close(
            a.covar_module.lengthscale, b.covar_module.lengthscale
        )
    torch.testing.assert_close(
        fold.outcome_transform.means, full.outcome_transform.means
    )
    torch.testing.assert_close(fold.train_targets, full.train_targets[:, :45])
    assert fold.posterior(X[45:]).mean.shape == (15, 2)
    assert all(v.shape[0] != 60 for v in full.state_dict().values() if v.dim())


def test_qlognehvi_step_on_branin_currin(tkwargs):
    problem = BraninCurrin(negate=True).to(**tkwargs)
    bounds = problem.bounds
    g = torch.Generator().manual_seed(0)
    X = torch.rand(24, 2, generator=g, dtype=torch.double).to(bounds)
    X = bounds[0] + (bounds[1] - bounds[0]) * X
    Y = problem(X)
    model = MultiOutputNystromGP(X, Y, input_transform=Normalize(2, bounds=bounds))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acqf = qLogNoisyExpectedHypervolumeImprovement(
        model=model,
        ref_point=problem.ref_point,
        X_baseline=X,
        sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0),
        prune_baseline=True,
    )
    candidates, value = optimize_acqf(
        acqf, bounds=bounds, q=2, num_restarts=2, raw_samples=32
    )
    assert candidates.shape == (2, 2) and bool(torch.isfinite(value))
    assert bool(((candidates >= bounds[0]) & (candidates <= bounds[1])).all())


@pytest.mark.parametrize(
    "make, error, match",
    [
        (
            lambda X, Y: (
                X,
                Y.clone().index_fill_(
                    0, torch.tensor([3], device=Y.device), float("nan")
                ),
            ),
            InputDataError,
            "train_Y contains NaN",
        ),
        (lambda X, Y: (X[:5], Y[:6]), BotorchTensorDimensionError, "rows"),
        (
            lambda X, Y: (X.expand(2, -1, -1), Y.expand(2, -1, -1)),
            UnsupportedError,
            "batched",
        ),
    ],
)
def test_bad_training_data_gets_a_clear_error(make, error, match, tkwargs):
    X, Y = make(*_data(**tkwargs))
    with pytest.raises(error, match=match):
        MultiOutputNystromGP(X, Y)


def test_single_output_features_raise(tkwargs):
    X, Y = _data(**tkwargs)
    with pytest.raises(BotorchTensorDimensionError, match="train_Yvar"):
        MultiOutputNystromGP(X, Y, train_Yvar=torch.full_like(Y[:, :1], 0.1))
    model = MultiOutputNystromGP(X, Y)
    # A container: the outcomes' models hold the inducing sets and statistics.
    for name in ("inducing_index", "inducing_points", "inducing_rule"):
        assert not hasattr(model, name)
        assert getattr(model.outcome_models[0], name) is not None
    for name in ("observation_statistics", "set_data_statistics"):
        assert not hasattr(model, name)
    # One outcome's paths come from its own model.
    paths = draw_matheron_paths(model.subset_output([0]), sample_shape=torch.Size([2]))
    assert paths(X[:3]).shape == (2, 3)


def test_matheron_paths_are_each_outcomes_own_paths(tkwargs):
    # Outcomes of different scales (the container's Standardize(m=2) is
    # inverted on the joined paths), both genuine sketches.
    X, Y = _data(n=300, **tkwargs)
    rule = RidgeLeverageSampler(generator=torch.Generator().manual_seed(1))
    model = MultiOutputNystromGP(X, Y, inducing=rule)
    for outcome, lengthscale in zip(model.outcome_models, (0.5, 0.6), strict=True):
        outcome.covar_module.lengthscale = lengthscale
        outcome.likelihood.noise = 0.01
        outcome.select_inducing_points()
    model.eval()
    assert all(m.inducing_points.shape[0] < 300 for m in model.outcome_models)
    Xt = _data(n=20, seed=5, **tkwargs)[0]
    torch.manual_seed(0)
    paths = draw_matheron_paths(model, sample_shape=torch.Size([4000]))
    with torch.no_grad():
        draws = paths(Xt)  # 4000 x 2 x 20, as a SingleTaskGP's of 2 outputs
        post = model.posterior(Xt)
    assert draws.shape == (4000, 2, 20)
    # Draw for draw, each outcome's paths are those of its own model in the
    # data's units, from the same random stream (outcome 0's drawn first).
    torch.manual_seed(0)
    alone = [
        draw_matheron_paths(model.subset_output([j]), torch.Size([4000]))
        for j in (0, 1)
    ]
    with torch.no_grad():
        for j in (0, 1):
            assert torch.allclose(draws[:, j], alone[j](Xt), rtol=1e-9, atol=1e-9)
    # And they follow the posterior: the means within Monte Carlo error. The
    # variances only loosely: the prior is one draw of 1024 random features,
    # whose error the update carries (BoTorch's SingleTaskGP paths on these
    # data: 1.0-2.1 of the posterior variance at a lengthscale of 0.8); a
    # transform left out would be off by the outcomes' scales, tenfold apart.
    mean, std = post.mean.mT, post.variance.sqrt().mT  # 2 x 20
    assert ((draws.mean(0) - mean).abs() / std).max() < 0.1
    ratio = draws.var(0) / std.pow(2)
    assert 0.5 < float(ratio.min()) and float(ratio.max()) < 3.0
    # Independent outcomes.
    centred = draws - draws.mean(0)
    correlation = (centred[:, 0] * centred[:, 1]).mean(0) / draws.std(0).prod(0)
    assert correlation.abs().max() < 0.1


@pytest.mark.parametrize(
    "sample_shape, shape",
    [
        ([], (7, 3)),
        ([], (1, 7, 3)),
        ([], (2, 7, 3)),
        ([], (4, 1, 7, 3)),
        ([], (4, 2, 7, 3)),
        ([5], (7, 3)),
        ([5], (5, 1, 7, 3)),
        ([5], (5, 2, 7, 3)),
    ],
)
def test_matheron_paths_take_inputs_as_singletaskgps_do(sample_shape, shape, tkwargs):
    # A SingleTaskGP of t outputs is batched over them: an inputs' batch
    # dimension -3 of size t pairs with the outputs, 1 broadcasts.
    X, Y = _data(**tkwargs)
    Xt = _data(n=7, seed=3, **tkwargs)[0].expand(*shape)
    expected = []
    for cls in (SingleTaskGP, MultiOutputNystromGP):
        model = cls(X, Y).eval()
        paths = draw_matheron_paths(model, sample_shape=torch.Size(sample_shape))
        with torch.no_grad():
            expected.append(paths(Xt).shape)
        path_model = get_matheron_path_model(model, torch.Size(sample_shape))
        with torch.no_grad():
            expected.append(
                path_model(Xt[..., 0, :, :] if len(shape) > 2 else Xt).shape
            )
    assert expected[0] == expected[2] and expected[1] == expected[3]


def test_matheron_paths_pair_an_inputs_batch_with_the_outcomes(tkwargs):
    X, Y = _data(**tkwargs)
    A, B = (_data(n=7, seed=seed, **tkwargs)[0] for seed in (3, 4))
    torch.manual_seed(1)
    paths = draw_matheron_paths(MultiOutputNystromGP(X, Y).eval(), torch.Size([3]))
    with torch.no_grad():
        paired = paths(torch.stack([A, B]))  # outcome 0 at A, outcome 1 at B
        at_A, at_B = paths(A), paths(B)
    assert paired.shape == at_A.shape == (3, 2, 7)
    assert torch.allclose(paired[:, 0], at_A[:, 0], rtol=1e-10, atol=1e-10)
    assert torch.allclose(paired[:, 1], at_B[:, 1], rtol=1e-10, atol=1e-10)
    assert not torch.allclose(at_A[:, 1], at_B[:, 1])


def test_matheron_paths_refuse_inputs_that_do_not_broadcast(tkwargs):
    X, Y = _data(**tkwargs)
    paths = draw_matheron_paths(MultiOutputNystromGP(X, Y), torch.Size([2]))
    with pytest.raises(UnsupportedError, match="must be 1 or 2, not 3"):
        paths(X[:21].view(3, 7, 3))


def test_optimal_points_of_sampled_paths(tkwargs):
    # BoTorch's information-theoretic tutorial: Pareto sets of sampled paths
    # by random search (get_matheron_path_model inside), for qLowerBound
    # multi-objective joint entropy search.
    X, Y = _data(n=30, **tkwargs)
    model = MultiOutputNystromGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    bounds = torch.tensor([[2.0] * 3, [5.0] * 3], **tkwargs)
    torch.manual_seed(0)
    inputs, outputs = sample_optimal_points(
        model=model,
        bounds=bounds,
        num_samples=4,
        num_points=3,
        optimizer=random_search_optimizer,
        optimizer_kwargs={"pop_size": 500, "max_tries": 20},
    )
    assert inputs.shape == (4, 3, 3) and outputs.shape == (4, 3, 2)
    assert ((inputs >= 2.0) & (inputs <= 5.0)).all()
    acqf = qLowerBoundMultiObjectiveJointEntropySearch(
        model=model,
        pareto_sets=inputs,
        pareto_fronts=outputs,
        hypercell_bounds=compute_sample_box_decomposition(outputs),
    )
    assert torch.isfinite(acqf(X[:5].unsqueeze(-2))).all()


def test_construct_inputs_and_dataset(tkwargs):
    X, Y = _data(**tkwargs)
    dataset = SupervisedDataset(
        X, Y, feature_names=["a", "b", "c"], outcome_names=["y0", "y1"]
    )
    model = MultiOutputNystromGP(**MultiOutputNystromGP.construct_inputs(dataset))
    assert model.num_outputs == 2


def test_moves_with_to(tkwargs):
    X, Y = _data(**tkwargs)
    model = MultiOutputNystromGP(X.float(), Y.float())
    model.to(**tkwargs)
    assert model.train_X.dtype == tkwargs["dtype"]
    assert all(m.train_X.dtype == tkwargs["dtype"] for m in model.outcome_models)
    assert model.posterior(X[:3]).mean.dtype == tkwargs["dtype"]


@pytest.mark.parametrize(
    "indices, error, match",
    [
        # A float was truncated: [1.7] read as [1], another outcome's posterior.
        ([1.7], InputDataError, "integers"),
        ([0.0], InputDataError, "integers"),
        ([True], InputDataError, "integers"),
        ([torch.tensor(1.0)], InputDataError, "integers"),
        ([2], UnsupportedError, "output_indices"),
        ([-3], UnsupportedError, "output_indices"),
        ([], UnsupportedError, "output_indices"),
    ],
)
def test_output_indices_must_be_integers_of_the_outputs(indices, error, match, tkwargs):
    X, Y = _data(**tkwargs)
    model = MultiOutputNystromGP(X, Y, inducing=GreedyVarianceSelector(10))
    Xt = X[:3]
    with pytest.raises(error, match=match):
        model.posterior(Xt, output_indices=indices)
    with pytest.raises(error, match=match):
        model.subset_output(indices)
    # Integers of any integer type are outputs, negative ones from the end.
    for index in (1, -1, torch.tensor(1), torch.tensor([1])[0]):
        one = model.posterior(Xt, output_indices=[index])
        torch.testing.assert_close(one.mean[..., 0], model.posterior(Xt).mean[..., 1])


def test_single_output_indices_must_be_the_integer_zero(tkwargs):
    X, Y = _data(t=1, **tkwargs)
    model = NystromGP(X, Y, inducing=GreedyVarianceSelector(10))
    Xt = X[:3]
    # [0.0] and [False] compared equal to [0].
    for indices in ([0.0], [False], [0.4]):
        with pytest.raises(InputDataError, match="integers"):
            model.posterior(Xt, output_indices=indices)
    with pytest.raises(UnsupportedError, match="one output"):
        model.posterior(Xt, output_indices=[1])
    torch.testing.assert_close(
        model.posterior(Xt, output_indices=[torch.tensor(0)]).mean,
        model.posterior(Xt).mean,
    )
