"""The inducing set is part of a NystromGP's state dict (``InducingSet.state``)."""

import io
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_sketch import NystromGP, RidgeLeverageSampler
from botorch_sketch.models import MultiOutputNystromGP


def _data(n, seed=1, t=1, **tkwargs):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 3, generator=g, dtype=torch.double)
    Y = torch.sin(6 * X).sum(-1, keepdim=True)
    Y = torch.cat([Y, X.sum(-1, keepdim=True)][:t], dim=-1)
    Y = Y + 0.05 * torch.randn(n, t, generator=g, dtype=torch.double)
    return X.to(**tkwargs), Y.to(**tkwargs)


def _fitted(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def _sketch(X, Y, **kwargs):
    # A rule's set after two draws at fixed hyperparameters: a third draw (what
    # a loaded model made before) starts from nothing and draws afresh.
    model = NystromGP(X, Y, inducing=RidgeLeverageSampler(), **kwargs)
    model.covar_module.lengthscale = 0.4
    model.likelihood.noise = 0.05
    model.select_inducing_points()
    model.select_inducing_points()
    assert 0 < model.inducing_index.numel() < X.shape[0] / 2
    return model


def _assert_same_posterior(a, b, Xt):
    pa, pb = a.posterior(Xt), b.posterior(Xt)
    torch.testing.assert_close(pa.mean, pb.mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(pa.variance, pb.variance, rtol=0, atol=1e-12)


def test_loaded_fitted_model_keeps_every_input_and_its_posterior(tkwargs):
    # The fitted model kept all 100 inputs; a model loading its state re-chose
    # 87 of them, and the means differed by 1.4e-2.
    X, Y = _data(100, **tkwargs)
    model = _fitted(NystromGP(X, Y))
    assert model.is_exact
    loaded = NystromGP(X, Y)
    loaded.load_state_dict(model.state_dict())
    assert loaded.is_exact
    assert torch.equal(loaded.inducing_index, model.inducing_index)
    _assert_same_posterior(model, loaded, torch.rand(20, 3, **tkwargs))


def test_loaded_sketch_keeps_the_rules_set(tkwargs):
    X, Y = _data(200, **tkwargs)
    model = _sketch(X, Y, input_transform=Normalize(3))
    loaded = NystromGP(
        X, Y, inducing=RidgeLeverageSampler(), input_transform=Normalize(3)
    )
    loaded.load_state_dict(model.state_dict())
    assert torch.equal(loaded.inducing_index, model.inducing_index)
    assert not loaded.is_exact
    _assert_same_posterior(model, loaded, torch.rand(3, 20, 3, **tkwargs))
    # Later draws continue the saved model's (the count of draws is restored).
    model.select_inducing_points()
    loaded.select_inducing_points()
    assert torch.equal(loaded.inducing_index, model.inducing_index)


def test_fold_keeps_the_inputs_it_holds(tkwargs):
    # Ax's cross-validation: the full data's state loads into a model on fewer
    # points; the set is the saved one's inputs that the fold holds.
    X, Y = _data(200, **tkwargs)
    full = _sketch(X, Y)
    fold_rows = torch.arange(200, device=X.device) % 4 != 0
    fold = NystromGP(X[fold_rows], Y[fold_rows], inducing=RidgeLeverageSampler())
    fold.load_state_dict(full.state_dict())
    kept = full.inducing_points[fold_rows[full.inducing_index]]
    assert 0 < kept.shape[0] < full.inducing_points.shape[0]
    assert torch.equal(fold.inducing_points, kept)
    assert fold.posterior(X[~fold_rows]).mean.shape == (50, 1)


def test_fold_of_an_exact_model_is_the_exact_gp_of_the_fold(tkwargs):
    X, Y = _data(100, **tkwargs)
    full = _fitted(NystromGP(X, Y))
    assert full.is_exact
    fold = NystromGP(X[:75], Y[:75])
    fold.load_state_dict(full.state_dict())
    assert fold.is_exact
    exact = SingleTaskGP(X[:75], Y[:75])
    exact.load_state_dict(full.state_dict(), strict=False)
    Xt = X[75:]
    p, p_exact = fold.posterior(Xt), exact.posterior(Xt)
    torch.testing.assert_close(p.mean, p_exact.mean, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(p.variance, p_exact.variance, rtol=1e-6, atol=1e-8)
    # A model of fixed inputs keeps fixed inputs: every input of its data.
    fixed = NystromGP(X[:75], Y[:75], inducing=X[:5])
    fixed.load_state_dict(full.state_dict())
    assert fixed.inducing_rule is None and fixed.is_exact
    torch.testing.assert_close(fixed.posterior(Xt).mean, p.mean, rtol=0, atol=1e-12)


def test_multi_output_model_keeps_its_outcomes_sets(tkwargs):
    X, Y = _data(100, t=2, **tkwargs)
    model = _fitted(MultiOutputNystromGP(X, Y))
    loaded = MultiOutputNystromGP(X, Y)
    loaded.load_state_dict(model.state_dict())
    for ours, theirs in zip(loaded.outcome_models, model.outcome_models, strict=True):
        assert torch.equal(ours.inducing_index, theirs.inducing_index)
        assert ours.is_exact == theirs.is_exact
    _assert_same_posterior(model, loaded, torch.rand(20, 3, **tkwargs))


def test_fixed_inputs_are_restored(tkwargs):
    X, Y = _data(60, **tkwargs)
    Z = torch.rand(7, 3, **tkwargs)
    model = NystromGP(X, Y, inducing=Z)
    loaded = NystromGP(X, Y)
    loaded.load_state_dict(model.state_dict())
    assert loaded.inducing_rule is None
    assert torch.equal(loaded.inducing_points, model.inducing_points)
    _assert_same_posterior(model, loaded, torch.rand(5, 3, **tkwargs))


def test_a_state_without_a_set_still_loads(tkwargs):
    # A SingleTaskGP's state, or one saved before the set was saved: the rule
    # chooses at the loaded hyperparameters.
    X, Y = _data(40, **tkwargs)
    exact = SingleTaskGP(X, Y)
    model = NystromGP(X, Y)
    model.load_state_dict(exact.state_dict())
    assert model.inducing_index.numel() > 0
    # A pending set (a model never used) stays pending: the same first choice.
    fresh = NystromGP(X, Y)
    model = NystromGP(X, Y)
    model.load_state_dict(fresh.state_dict())
    assert torch.equal(model.inducing_index, fresh.inducing_index)


def test_state_is_tensors_and_survives_a_weights_only_round_trip(tkwargs):
    # IncrementalGP's checkpoints clone the entries and load with weights_only.
    X, Y = _data(200, **tkwargs)
    model = _sketch(X, Y)
    state = model.state_dict()
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    buffer = io.BytesIO()
    torch.save({k: v.detach().clone() for k, v in state.items()}, buffer)
    buffer.seek(0)
    loaded = NystromGP(X, Y, inducing=RidgeLeverageSampler())
    loaded.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(loaded.inducing_index, model.inducing_index)


def test_tampered_or_partial_set_is_refused_by_name(tkwargs):
    X, Y = _data(200, **tkwargs)
    state = _sketch(X, Y).state_dict()
    bad = dict(state, inducing_flags=torch.tensor([7.0, 0.0, 0.0, 0.0]))
    with pytest.raises(InputDataError, match="inducing_flags"):
        NystromGP(X, Y).load_state_dict(bad)
    bad = dict(state, inducing_inputs=torch.zeros(3, 2, **tkwargs))
    with pytest.raises(InputDataError, match="inducing_inputs"):
        NystromGP(X, Y).load_state_dict(bad)
    partial = {k: v for k, v in state.items() if k != "inducing_rows"}
    with pytest.raises(RuntimeError, match="inducing_rows"):
        NystromGP(X, Y).load_state_dict(partial)
