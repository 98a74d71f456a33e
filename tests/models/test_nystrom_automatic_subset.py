"""The automatic fitting subset: the rule on ``automatic_fit_subset_size`` points,
the hyperparameters fitted once, exactly, on the first ``exact_fit_size`` of them."""

import warnings

import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import Normalize, Warp
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import assert_same_hyperparameters, sine_sum, toy_data

from benchmarks.metrics import held_out_accuracy
from botorch_sketch import NystromGP
from botorch_sketch.models.nystrom import fitting
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


def _data(n, seed=0, **tkwargs):
    return toy_data(n, 3, sine_sum(4), 0.1, seed, **tkwargs)


def _fit(model):
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def _automatic(X, Y, limit=80, exact=40, **kwargs):
    model = NystromGP(X, Y, **kwargs)
    model.automatic_fit_subset_size = limit
    model.exact_fit_size = exact
    return model


def test_the_hyperparameter_rows_are_a_prefix_of_the_rule_rows(tkwargs):
    X, Y = _data(200, **tkwargs)
    model = _automatic(X, Y)
    rule_rows, fit_rows = fitting.rule_rows(model), fitting.fit_rows(model)
    assert rule_rows.numel() == 80 and fit_rows.numel() == 40
    assert torch.equal(fit_rows, rule_rows[:40])
    assert rule_rows.unique().numel() == 80
    # At or below the limit the rule sees every row and the hyperparameters a
    # random exact_fit_size of them (not the first rows: data in loop order
    # start with the initial design); at or below exact_fit_size, every row.
    between = _automatic(X[:80], Y[:80])
    device = tkwargs["device"]
    assert torch.equal(fitting.rule_rows(between), torch.arange(80, device=device))
    fit_rows = fitting.fit_rows(between)
    assert fit_rows.numel() == 40 and fit_rows.unique().numel() == 40
    assert not torch.equal(fit_rows.sort().values, torch.arange(40, device=device))
    small = _automatic(X[:40], Y[:40])
    assert fitting.rule_rows(small).numel() == fitting.fit_rows(small).numel() == 40


def test_automatic_fit_equals_an_explicit_subset_of_exact_fit_size(tkwargs):
    X, Y = _data(200, **tkwargs)
    auto = _fit(_automatic(X, Y))
    explicit = NystromGP(X, Y, fit_subset_size=40)
    explicit.exact_fit_size = 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(explicit)
    assert_same_hyperparameters(auto, explicit)
    # But the automatic rule chose among all 80 rule rows, not only those 40.
    assert bool(torch.isin(auto.inducing_index, fitting.rule_rows(auto)).all())
    assert not bool(torch.isin(auto.inducing_index, fitting.rule_rows(auto)[:40]).all())


def test_between_the_sizes_the_fit_uses_a_random_exact_fit_size(monkeypatch, tkwargs):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    # 60 points, limit 80, exact 40: the hyperparameters are those of an exact
    # fit on the 40 hyperparameter rows, and the rule then sees all 60 points.
    X, Y = _data(60, **tkwargs)
    model = _automatic(X, Y)
    rows = fitting.fit_rows(model)
    assert rows.numel() == 40
    # The rule saw every row, and its set (about 60% of them here) covers most:
    # the model is the exact GP, and says so.
    with pytest.warns(ExactRegimeWarning):
        _fit(model)
    assert model.is_exact and model.inducing_index.numel() == 60
    explicit = NystromGP(X, Y, fit_subset_size=40)
    explicit.exact_fit_size = 40
    original = fitting.rule_rows  # the same 40 rows for the explicit subset
    monkeypatch.setattr(
        fitting, "rule_rows", lambda m: rows if m is explicit else original(m)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(explicit)
    assert_same_hyperparameters(model, explicit)


def test_the_subset_fit_warns_nothing_and_the_model_stays_a_sketch(
    monkeypatch, tkwargs
):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    X, Y = _data(200, **tkwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExactRegimeWarning)
        model = _fit(_automatic(X, Y))
    assert not model.is_exact


def test_the_subset_copies_the_instance_fitting_options(tkwargs):
    X, Y = _data(200, **tkwargs)
    model = _automatic(X, Y)
    model.fit_rounds, model.titsias, model.exact_fraction = 1, False, 0.9
    model.initial_max_inducing = 17
    subset = fitting.fitting_subset(model, NystromGP)
    assert subset.train_X.shape[0] == 40
    for name in ("fit_rounds", "titsias", "exact_fraction", "exact_fit_size"):
        assert getattr(subset, name) == getattr(model, name)
    assert subset.initial_max_inducing == 17


@pytest.mark.slow
def test_automatic_fit_is_about_as_accurate_as_the_full_fit(tkwargs):
    X, Y = _data(600, seed=3, **tkwargs)
    Xt, Yt = _data(300, seed=99, **tkwargs)
    auto = _fit(_automatic(X, Y, limit=400, exact=200))
    full = NystromGP(X, Y)
    full.automatic_fit_subset_size = None
    full.exact_fit_size = None
    _fit(full)
    nll_auto = held_out_accuracy(auto, Xt, Yt).nll
    nll_full = held_out_accuracy(full, Xt, Yt).nll
    assert nll_auto < nll_full + 0.1


def test_a_learnable_input_transform_fits_on_every_point(tkwargs):
    # The subset is fitted on transformed inputs, so it could not learn the
    # warping; the automatic subset steps aside (this crashed before, as the
    # subset's inputs carried the transform's graph).
    X, Y = _data(120, **tkwargs)
    model = _automatic(X, Y, input_transform=Warp(d=3, indices=[0, 1, 2]).to(X))
    assert fitting.rule_rows(model).numel() == 120
    before = model.input_transform.concentration0.detach().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(model)
    assert not torch.equal(model.input_transform.concentration0.detach(), before)
    # A transform without learnable parameters keeps the automatic subset.
    fixed = _automatic(X, Y, input_transform=Normalize(d=3))
    assert fitting.rule_rows(fixed).numel() == 80


def test_an_explicit_subset_with_a_learnable_input_transform_is_refused(tkwargs):
    X, Y = _data(120, **tkwargs)
    model = NystromGP(
        X, Y, fit_subset_size=50, input_transform=Warp(d=3, indices=[0, 1, 2]).to(X)
    )
    with pytest.raises(UnsupportedError, match="learnable parameters"):
        _fit(model)


def test_an_explicit_subset_is_not_subsetted_again(tkwargs, monkeypatch):
    # fit_subset_size = 120 above the automatic limit (here 50 for every model,
    # the subset's too) fits on all 120 points: the subset model must not take
    # an automatic subset of its own.
    monkeypatch.setattr(NystromGP, "automatic_fit_subset_size", 50)
    X, Y = _data(200, **tkwargs)
    nested = NystromGP(X, Y, fit_subset_size=120)
    subset = fitting.fitting_subset(nested, NystromGP)
    assert subset.train_X.shape[0] == 120
    assert fitting.rule_rows(subset).numel() == 120
    plain = NystromGP(X, Y, fit_subset_size=120)
    plain.automatic_fit_subset_size = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(nested)
        _fit(plain)
    assert_same_hyperparameters(nested, plain)
