import pytest
import torch
from botorch.models.transforms.outcome import Log, Standardize

from botorch_sketch.models import NystromGP
from botorch_sketch.models.nystrom.posterior import dtc_marginals


def _model(tkwargs, outcome_transform="default", n=120, d=3):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(n, d, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    Y = torch.sin(6 * X).sum(-1, keepdim=True) + 3.0
    inducing = X[:25]  # fewer inducing points than data: the DTC regime
    kwargs = {}
    if outcome_transform != "default":
        kwargs["outcome_transform"] = outcome_transform
    model = NystromGP(X, Y, inducing=inducing, **kwargs)
    model.warn_exact_regime = False
    model.eval()
    return model


def _marginals(model, X):
    return dtc_marginals(
        model.nystrom_state,
        X,
        model.mean_module,
        model.covar_module,
        getattr(model, "outcome_transform", None),
    )


@pytest.mark.parametrize("transform", ["standardize", "none"])
def test_marginals_equal_the_posteriors_mean_and_variance(tkwargs, transform):
    # The default outcome transform is a plain Standardize.
    model = _model(tkwargs, "default" if transform == "standardize" else None)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(7, 2, 3, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    mean, variance = _marginals(model, X)
    posterior = model.posterior(X)
    assert mean.shape == variance.shape == torch.Size([7, 2])
    torch.testing.assert_close(mean, posterior.mean.squeeze(-1), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(
        variance, posterior.variance.squeeze(-1), rtol=1e-9, atol=1e-12
    )
    # Away from the inducing set the DTC variance keeps the exact k(x, x).
    assert bool((variance > 0).all())


def test_marginals_carry_the_gradient_of_the_posterior(tkwargs):
    model = _model(tkwargs)
    X = torch.full((4, 1, 3), 0.37, **tkwargs)
    X = X + 0.1 * torch.arange(4, **tkwargs).view(4, 1, 1)
    X1 = X.clone().requires_grad_(True)
    mean, variance = _marginals(model, X1)
    (g1,) = torch.autograd.grad((mean + variance.sqrt()).sum(), X1)
    X2 = X.clone().requires_grad_(True)
    posterior = model.posterior(X2)
    value = (posterior.mean + posterior.variance.sqrt()).sum()
    (g2,) = torch.autograd.grad(value, X2)
    torch.testing.assert_close(g1, g2, rtol=1e-8, atol=1e-10)


def test_marginals_refuse_what_they_do_not_read(tkwargs):
    # A transform other than a plain Standardize, and a fantasy model (batched).
    model = _model(tkwargs, outcome_transform=Log())
    X = torch.rand(3, 1, 3, **tkwargs)
    assert _marginals(model, X) is None
    model = _model(tkwargs, outcome_transform=Standardize(m=1))
    fantasy = model.condition_on_observations(
        torch.rand(2, 1, 3, **tkwargs), torch.rand(5, 2, 1, 1, **tkwargs)
    )
    assert _marginals(fantasy, X) is None
