"""NystromGP of batched training data (BatchedNystromGP), as SingleTaskGP's."""

import warnings

import pytest
import torch
from botorch.cross_validation import batch_cross_validation, gen_loo_cv_folds
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    UnsupportedError,
)
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.models.transforms.input import Warp
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_sketch import FixedSelector, NystromGP, RidgeLeverageSampler
from botorch_sketch.models import BatchedNystromGP


def _data(n=10, seed=0, **tkwargs):
    g = torch.Generator().manual_seed(seed)
    X = 3 * torch.rand(n, 2, generator=g, dtype=torch.double)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    Y = Y + 0.1 * torch.randn(n, 1, generator=g, dtype=torch.double)
    return X.to(**tkwargs), Y.to(**tkwargs)


def _folds(n=10, fixed_noise=False, **tkwargs):
    X, Y = _data(n, **tkwargs)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    return X, Y, gen_loo_cv_folds(X, Y, Yvar)


def _pair(folds, **kwargs):
    # A batched NystromGP of the folds, every input inducing, and the batched
    # SingleTaskGP whose (unfitted, set apart per fold) hyperparameters it takes.
    b, n = folds.train_X.shape[:2]
    Yvar = folds.train_Yvar
    ref = SingleTaskGP(
        folds.train_X, folds.train_Y, Yvar, input_transform=Normalize(2), **kwargs
    )
    lengthscales = torch.linspace(0.2, 0.6, b).reshape(b, 1, 1).expand(b, 1, 2)
    ref.covar_module.lengthscale = lengthscales
    if Yvar is None:
        ref.likelihood.noise = torch.linspace(0.01, 0.05, b).reshape(b, 1)
    model = NystromGP(
        folds.train_X,
        folds.train_Y,
        Yvar,
        inducing=FixedSelector(torch.arange(n)),
        input_transform=Normalize(2),
        **kwargs,
    )
    for i, element in enumerate(model.batch_models):
        element.covar_module.lengthscale = ref.covar_module.lengthscale[i]
        element.likelihood.noise = ref.likelihood.noise[i]
    return model, ref


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_batched_data_build_single_task_gps_batched_model(fixed_noise, tkwargs):
    # NystromGP refused b x n x d data (batch_cross_validation's folds).
    _, _, folds = _folds(fixed_noise=fixed_noise, **tkwargs)
    model, ref = _pair(folds)
    assert type(model) is BatchedNystromGP
    assert model.batch_shape == ref.batch_shape == (10,)
    assert model.num_outputs == 1
    # Laid out as SingleTaskGP's: inputs (transformed, as SingleTaskGP's are
    # in eval mode), targets, noise, outcome transform.
    model.eval(), ref.eval()
    pairs = [
        (model.train_inputs[0], ref.train_inputs[0]),
        (model.train_targets, ref.train_targets),
        (model.likelihood.noise, ref.likelihood.noise),
        (model.outcome_transform.means, ref.outcome_transform.means),
    ]
    for ours, theirs in pairs:
        assert ours.shape == theirs.shape
        torch.testing.assert_close(ours, theirs)
    # Posteriors at the held-out points, at shared points, with more batch
    # dimensions and with observation noise: SingleTaskGP's.
    g = torch.Generator().manual_seed(1)
    Xt = 3 * torch.rand(3, 4, 2, generator=g, dtype=torch.double).to(**tkwargs)
    noise = torch.full((10, 1, 1), 0.2, **tkwargs)
    for X, options in [
        (folds.test_X, {}),
        (folds.test_X, {"observation_noise": True}),
        (folds.test_X, {"observation_noise": noise}),
        (Xt[0], {}),
        (Xt.unsqueeze(1).expand(3, 10, 4, 2), {}),
    ]:
        p, p_ref = model.posterior(X, **options), ref.posterior(X, **options)
        assert p.mean.shape == p_ref.mean.shape
        torch.testing.assert_close(p.mean, p_ref.mean, rtol=1e-6, atol=1e-8)
        torch.testing.assert_close(
            p.distribution.covariance_matrix,
            p_ref.distribution.covariance_matrix,
            rtol=1e-6,
            atol=1e-8,
        )


@pytest.mark.slow
def test_batch_cross_validation_equals_single_task_gps(tkwargs):
    # BoTorch's batch_cross_validation (its cross-validation tutorial) with
    # NystromGP swapped in: each fold is small, so the exact GP, fitted alike.
    _, _, folds = _folds(n=8, **tkwargs)
    results = [
        batch_cross_validation(
            model_cls=cls,
            mll_cls=ExactMarginalLogLikelihood,
            cv_folds=folds,
            model_init_kwargs={"input_transform": Normalize(2)},
        )
        for cls in (NystromGP, SingleTaskGP)
    ]
    ours, theirs = (r.posterior for r in results)
    assert type(results[0].model) is BatchedNystromGP
    assert results[0].model.is_exact
    assert ours.mean.shape == theirs.mean.shape == (8, 1, 1)
    torch.testing.assert_close(ours.mean, theirs.mean, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(ours.variance, theirs.variance, rtol=1e-3, atol=1e-6)


def test_each_element_is_the_nystrom_gp_of_its_data(tkwargs):
    X, Y = _data(60, **tkwargs)
    train_X = torch.stack([X[:40], X[20:]])
    train_Y = torch.stack([Y[:40], Y[20:]])
    model = NystromGP(train_X, train_Y, inducing=RidgeLeverageSampler())
    Xt = 3 * torch.rand(5, 2, **tkwargs)
    p = model.posterior(Xt)
    assert p.mean.shape == (2, 5, 1)
    for i, element in enumerate(model.batch_models):
        single = NystromGP(
            train_X[i],
            train_Y[i],
            inducing=element.inducing_points,
            outcome_transform=Standardize(1),
        )
        torch.testing.assert_close(
            p.mean[i], single.posterior(Xt).mean, rtol=1e-8, atol=1e-10
        )


def test_fit_and_state_dict_round_trip(tkwargs):
    _, _, folds = _folds(n=8, **tkwargs)
    model = NystromGP(folds.train_X, folds.train_Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        model.custom_fit(mll, optimizer_kwargs={"options": {"maxiter": 20}})
    lengthscales = [m.covar_module.lengthscale for m in model.batch_models]
    assert not torch.allclose(lengthscales[0], lengthscales[1])
    loaded = NystromGP(folds.train_X, folds.train_Y)
    loaded.load_state_dict(model.state_dict())
    p, q = model.posterior(folds.test_X), loaded.posterior(folds.test_X)
    torch.testing.assert_close(p.mean, q.mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(p.variance, q.variance, rtol=0, atol=1e-12)


def test_unsupported_batches_are_refused_by_name(tkwargs):
    X, Y, folds = _folds(**tkwargs)
    with pytest.raises(UnsupportedError, match="one batch dimension"):
        NystromGP(folds.train_X.unsqueeze(0), folds.train_Y.unsqueeze(0))
    with pytest.raises(UnsupportedError, match="one output"):
        NystromGP(folds.train_X, folds.train_Y.expand(-1, -1, 2))
    with pytest.raises(UnsupportedError, match="Warp"):
        NystromGP(
            folds.train_X,
            folds.train_Y,
            input_transform=Warp(d=2, indices=[0, 1]).to(**tkwargs),
        )
    model = NystromGP(folds.train_X, folds.train_Y)
    with pytest.raises(UnsupportedError, match="fantasies"):
        model.fantasize(X[:2], SobolQMCNormalSampler(torch.Size([2])))
    with pytest.raises(BotorchTensorDimensionError, match="broadcast"):
        model.posterior(torch.rand(3, 4, 2, **tkwargs))
    with pytest.raises(UnsupportedError, match="one output"):
        model.posterior(folds.test_X, output_indices=[1])


def _loo_folds(X, Y, Yvar):
    # The leave-one-out folds of BoTorch's RGPE tutorial: b = n folds of n - 1.
    masks = torch.eye(len(X), dtype=torch.bool, device=X.device)
    return [torch.stack([t[~m] for m in masks]) for t in (X, Y, Yvar)]


@pytest.mark.parametrize("input_transform", [False, True])
def test_expanded_unbatched_state_loads_into_loo_folds(input_transform, tkwargs):
    # BoTorch's RGPE tutorial expands its target model's state dict to the
    # folds (every entry, t.expand(b, ...)) and loads it into the model of the
    # folds: BatchedNystromGP's per-element modules refused the keys.
    X, Y = _data(8, **tkwargs)
    Yvar = torch.full_like(Y, 0.01)
    transform = {"input_transform": Normalize(2)} if input_transform else {}
    target = NystromGP(X, Y, Yvar, **transform)
    target.covar_module.lengthscale = torch.tensor([[0.3, 0.5]], **tkwargs)
    target.mean_module.constant = torch.tensor(0.2, **tkwargs)
    b = len(X)
    expanded = {
        name: t.expand(b, *[-1 for _ in range(t.ndim)])
        for name, t in target.state_dict().items()
    }
    folds = _loo_folds(X, Y, Yvar)
    transform = {"input_transform": Normalize(2)} if input_transform else {}
    model = NystromGP(*folds, **transform)
    model.load_state_dict(expanded)
    # The reference: a batched SingleTaskGP of the folds loading the same
    # state, its scalar buffers (prior, constraint) left unexpanded (expanded,
    # they stop its own loading on a size mismatch).
    ref = SingleTaskGP(*folds, **transform)
    state = target.state_dict()
    ref.load_state_dict(
        {
            k: state[k] if v.shape == state[k].shape else expanded[k]
            for k, v in ref.state_dict().items()
        }
    )
    for i, element in enumerate(model.batch_models):
        assert element.covar_module.lengthscale.shape == (1, 2)
        torch.testing.assert_close(
            element.covar_module.lengthscale, target.covar_module.lengthscale
        )
        torch.testing.assert_close(element.train_targets, ref.train_targets[i])
    p, q = model.posterior(X), ref.posterior(X)
    assert p.mean.shape == q.mean.shape == (b, b, 1)
    torch.testing.assert_close(p.mean, q.mean, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(p.variance, q.variance, rtol=1e-6, atol=1e-8)


def test_batched_single_task_gp_state_loads(tkwargs):
    # A batched SingleTaskGP's state (leading batch dimension, scalar prior
    # buffers shared) gives each element its index of every entry.
    _, _, folds = _folds(n=8, **tkwargs)
    model, ref = _pair(folds)
    loaded = NystromGP(
        folds.train_X,
        folds.train_Y,
        inducing=FixedSelector(torch.arange(7)),
        input_transform=Normalize(2),
    )
    loaded.load_state_dict(ref.state_dict())
    for i, element in enumerate(loaded.batch_models):
        torch.testing.assert_close(
            element.covar_module.lengthscale, ref.covar_module.lengthscale[i]
        )
        torch.testing.assert_close(element.likelihood.noise, ref.likelihood.noise[i])
    p, q = loaded.posterior(folds.test_X), ref.posterior(folds.test_X)
    torch.testing.assert_close(p.mean, q.mean, rtol=1e-6, atol=1e-8)


def test_expanded_sketch_state_keeps_each_folds_inducing_inputs(tkwargs):
    # A sketched target's inducing set, expanded to the folds, is in each fold
    # those of its inputs the fold holds (the held-out input drops out).
    X, Y = _data(30, **tkwargs)
    Yvar = torch.full_like(Y, 0.01)
    rows = torch.arange(0, 30, 3)
    target = NystromGP(X, Y, Yvar, inducing=FixedSelector(rows))
    target.exact_fraction = None
    target.select_inducing_points()
    state = target.state_dict()
    expanded = {k: t.expand(30, *[-1] * t.ndim) for k, t in state.items()}
    model = NystromGP(*_loo_folds(X, Y, Yvar), inducing=FixedSelector(rows))
    model.load_state_dict(expanded)
    for i, element in enumerate(model.batch_models):
        held = X[rows][(rows != i)]
        torch.testing.assert_close(element.inducing_points, held)
