import warnings

import pytest
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import assert_same_hyperparameters, sine_sum, toy_data

from botorch_sketch import NystromGP, RidgeLeverageSampler
from botorch_sketch.models.nystrom import fitting
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


def _data(n, d=3, seed=0, noise_sd=0.1, **tkwargs):
    return toy_data(n, d, sine_sum(4), noise_sd, seed, **tkwargs)


def _fit(model):
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def test_small_data_fit_the_exact_likelihood_and_become_the_exact_gp(
    monkeypatch, tkwargs
):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    X, Y = _data(40, **tkwargs)
    with pytest.warns(ExactRegimeWarning, match="exact GP"):
        model = _fit(NystromGP(X, Y))
    assert model.is_exact
    assert model.inducing_index.numel() == 40
    # The same fitted hyperparameters in SingleTaskGP give the same posterior.
    ref = SingleTaskGP(X, Y)
    # Not strict: NystromGP's state also holds its inducing set.
    ref.load_state_dict(model.state_dict(), strict=False)
    Xt = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(1)).to(X)
    post, ref_post = model.posterior(Xt), ref.posterior(Xt)
    torch.testing.assert_close(post.mean, ref_post.mean, rtol=1e-7, atol=1e-7)
    torch.testing.assert_close(
        post.covariance_matrix, ref_post.covariance_matrix, rtol=1e-6, atol=1e-7
    )


def test_exact_loss_equals_titsias_bound_with_every_input_inducing(tkwargs):
    X, Y = _data(30, **tkwargs)
    model = NystromGP(X, Y)
    model._inducing.use_every_input(model.transformed_train_X)
    model.train()
    exact = model.compute_custom_loss()
    # The same loss through the DTC algebra (the regime flag off).
    model._inducing.every_input = False
    dtc = model.compute_custom_loss()
    torch.testing.assert_close(exact, dtc, rtol=1e-8, atol=1e-10)


def test_exact_regime_fits_once_and_matches_single_task_gp_hyperparameters(tkwargs):
    X, Y = _data(50, seed=3, **tkwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        model = _fit(NystromGP(X, Y))
    ref = _fit(SingleTaskGP(X, Y))
    # Both maximise the same objective from the same start.
    torch.testing.assert_close(
        model.likelihood.noise, ref.likelihood.noise, rtol=1e-3, atol=1e-6
    )
    torch.testing.assert_close(
        model.covar_module.lengthscale, ref.covar_module.lengthscale, rtol=1e-3, atol=0
    )


def test_exact_fraction_none_keeps_the_sketch(monkeypatch, tkwargs):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    X, Y = _data(40, **tkwargs)
    model = NystromGP(X, Y)
    model.exact_fraction = None
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExactRegimeWarning)
        _fit(model)
    assert not model.is_exact


def test_large_data_stay_a_sketch(monkeypatch, tkwargs):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    # Smooth data and many points: the set is far below half the inputs.
    X, Y = _data(600, d=2, **tkwargs)
    model = NystromGP(X, Y, inducing=RidgeLeverageSampler(qbar=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExactRegimeWarning)
        _fit(model)
    assert not model.is_exact
    assert model.inducing_index.numel() < 300


def test_conditioning_an_exact_model_leaves_the_exact_regime(tkwargs):
    X, Y = _data(40, **tkwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        model = _fit(NystromGP(X, Y))
    assert model.is_exact
    Xn, Yn = _data(3, seed=9, **tkwargs)
    conditioned = model.condition_on_observations(Xn, Yn)
    assert not conditioned.is_exact
    # Its loss is the DTC one on all 43 points (the new ones are not inducing).
    conditioned.train()
    assert torch.isfinite(conditioned.compute_custom_loss())


def test_automatic_fit_subset_equals_an_explicit_one(tkwargs):
    X, Y = _data(120, **tkwargs)
    auto = NystromGP(X, Y)
    auto.automatic_fit_subset_size = 50
    explicit = NystromGP(X, Y, fit_subset_size=50)
    explicit.automatic_fit_subset_size = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(auto)
        _fit(explicit)
    assert_same_hyperparameters(auto, explicit)
    # Off: the fit sees every point, and the hyperparameters differ.
    full = NystromGP(X, Y)
    full.automatic_fit_subset_size = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(full)
    assert not torch.allclose(full.likelihood.noise, auto.likelihood.noise)


def test_fixed_noise_does_not_take_the_automatic_subset(tkwargs):
    X, Y = _data(80, **tkwargs)
    model = NystromGP(X, Y, train_Yvar=torch.full_like(Y, 0.01))
    model.automatic_fit_subset_size = 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        _fit(model)  # an explicit fit_subset_size would raise here
    assert torch.isfinite(model.posterior(X[:3]).mean).all()


def test_small_data_fit_the_exact_likelihood_even_with_a_small_set(
    monkeypatch, tkwargs
):
    # The warning comes once a process: let it come (or not) here.
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    X, Y = _data(120, seed=4, **tkwargs)
    rule = RidgeLeverageSampler(qbar=0.05, generator=torch.Generator().manual_seed(0))
    model = NystromGP(X, Y, inducing=rule)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExactRegimeWarning)
        _fit(model)
    # A sketch posterior, with the exact GP's hyperparameters.
    assert not model.is_exact and model.inducing_index.numel() < 60
    ref = _fit(SingleTaskGP(X, Y))
    torch.testing.assert_close(
        model.covar_module.lengthscale, ref.covar_module.lengthscale, rtol=1e-3, atol=0
    )
    # Above exact_fit_size the same data take Titsias' bound instead.
    titsias = NystromGP(X, Y, inducing=RidgeLeverageSampler(qbar=0.05))
    titsias.exact_fit_size = 50
    _fit(titsias)
    assert not torch.allclose(
        titsias.covar_module.lengthscale, ref.covar_module.lengthscale, rtol=1e-2
    )


def test_the_exact_regime_warns_once_in_a_loop(monkeypatch, tkwargs):
    # A BO loop refits every iteration: the README promises one warning, and
    # a loop of 16 fits gave 16 (the message differs from fit to fit, and
    # BoTorch's fit resets the warnings registry).
    monkeypatch.setattr(fitting, "_warned_exact_regime", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (30, 31, 32):
            model = _fit(NystromGP(*_data(n, seed=n, **tkwargs)))
            assert model.is_exact
    exact = [w for w in caught if issubclass(w.category, ExactRegimeWarning)]
    assert len(exact) == 1
