import pytest
import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import hartmann3, toy_data

from botorch_sketch import FixedSelector, GradientSubsetGP, NystromGP
from botorch_sketch.models import fit_gss_nystrom, nystrom_from_subset
from botorch_sketch.sketching.rules import GradientDiversitySubset


def _data(tkwargs, n=150, seed=0):
    X, Y = toy_data(n, 3, hartmann3, 0.02, seed, **tkwargs)
    # Offset and scaled, so that a units mistake shows.
    return X, 10 + 3 * Y, Hartmann(dim=3, negate=True).to(**tkwargs)


def _options(seed=0, **kw):
    rule = GradientDiversitySubset(generator=torch.Generator().manual_seed(seed))
    return {"num_initial": 10, "num_newest": 2, "subset_rule": rule, **kw}


def _fitted_subset(X, Y, Yvar=None, **kw):
    model = GradientSubsetGP(X, Y, Yvar, **_options(**kw))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def _moments(model, X):
    p = model.posterior(X)
    return p.mean, p.distribution.covariance_matrix.to_dense()


def test_inducing_set_is_exactly_the_selected_subset(tkwargs):
    X, Y, _ = _data(tkwargs)
    subset = _fitted_subset(X, Y, subset_size=40)
    hybrid = nystrom_from_subset(subset)
    assert isinstance(hybrid, NystromGP)
    assert torch.equal(hybrid.inducing_points, X[subset.subset_indices])
    # All N observations, the subset GP's hyperparameters and transforms.
    assert torch.equal(hybrid.train_X, X) and torch.equal(hybrid.train_Y, Y)
    for name, value in subset.state_dict().items():
        assert torch.equal(hybrid.state_dict()[name], value), name


def test_fixed_noise_in_the_subset_units(tkwargs):
    X, Y, _ = _data(tkwargs, n=60)
    Yvar = 0.01 + 0.01 * torch.rand_like(Y)
    subset = _fitted_subset(X, Y, Yvar, subset_size=20)
    hybrid = nystrom_from_subset(subset)
    stdv = subset.outcome_transform.stdvs.squeeze()
    # Every observation's noise, in the units the subset GP was fitted in.
    torch.testing.assert_close(hybrid.likelihood.noise, Yvar.squeeze(-1) / stdv**2)
    assert bool((hybrid.posterior(X[:5]).variance > 0).all())


def test_fit_gss_nystrom_selects_like_gradient_subset_gp(tkwargs):
    X, Y, _ = _data(tkwargs)
    hybrid = fit_gss_nystrom(X, Y, subset_size=40, **_options(seed=3))
    subset = _fitted_subset(X, Y, subset_size=40, seed=3)
    assert torch.equal(hybrid.inducing_points, X[subset.subset_indices])
    torch.testing.assert_close(
        hybrid.covar_module.lengthscale, subset.covar_module.lengthscale
    )


@pytest.mark.parametrize("fixed_noise", [False, True])
def test_all_points_selected_equals_nystrom_with_every_point_inducing(
    fixed_noise, tkwargs
):
    X, Y, _ = _data(tkwargs, n=40)
    Yvar = torch.full_like(Y, 0.01) if fixed_noise else None
    hybrid = fit_gss_nystrom(
        X, Y, Yvar, subset_size=60, input_transform=Normalize(3), **_options()
    )
    every_point = FixedSelector(torch.arange(40))
    reference = NystromGP(
        X, Y, Yvar, inducing=every_point, input_transform=Normalize(3)
    )
    reference.load_state_dict(hybrid.state_dict())
    exact = SingleTaskGP(X, Y, Yvar, input_transform=Normalize(3))
    # Not strict: the hybrid's state also holds its inducing set.
    exact.load_state_dict(hybrid.state_dict(), strict=False)
    # The same set (the rule lists distinct rows sorted, the hybrid in subset order).
    assert torch.equal(
        hybrid.inducing_points.unique(dim=0), reference.inducing_points.unique(dim=0)
    )
    Xt = torch.rand(3, 5, 3, **tkwargs)
    mean, covar = _moments(hybrid, Xt)
    ref_mean, ref_covar = _moments(reference, Xt)
    torch.testing.assert_close(mean, ref_mean, rtol=0, atol=1e-8)
    torch.testing.assert_close(covar, ref_covar, rtol=0, atol=1e-8)
    # ... which is the exact GP (the package's first identity).
    exact_mean, exact_covar = _moments(exact.eval(), Xt)
    torch.testing.assert_close(mean, exact_mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(covar, exact_covar, rtol=1e-6, atol=1e-6)


def test_same_prior_as_the_subset_gp_and_points_outside_inform(tkwargs):
    X, Y, f = _data(tkwargs, n=200)
    subset = _fitted_subset(X, Y, subset_size=30)
    hybrid = nystrom_from_subset(subset)
    # Far from all data both revert to the same prior, in the raw units: the
    # hybrid's transforms are the subset GP's.
    far = torch.full((1, 3), 50.0, **tkwargs)
    for a, b in zip(_moments(hybrid, far), _moments(subset.eval(), far), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)
    # The 170 observations outside the subset improve the predictions.
    g = torch.Generator().manual_seed(1)
    Xt = torch.rand(300, 3, generator=g, dtype=torch.double).to(**tkwargs)
    truth = 10 + 3 * f(Xt)

    def rmse(model):
        return (model.posterior(Xt).mean.squeeze(-1) - truth).pow(2).mean().sqrt()

    assert rmse(hybrid) < 0.9 * rmse(subset)
    variance = hybrid.posterior(Xt).variance
    assert bool((variance > 0).all())


def test_bad_input(tkwargs):
    X, Y, _ = _data(tkwargs, n=30)
    with pytest.raises(UnsupportedError, match="GradientSubsetGP"):
        nystrom_from_subset(SingleTaskGP(X, Y))
    with pytest.raises(InputDataError, match="subset_size"):
        fit_gss_nystrom(X, Y, subset_size=5, num_initial=10)
    with pytest.raises(BotorchTensorDimensionError, match="rows"):
        fit_gss_nystrom(X, Y[:-1], subset_size=20)
