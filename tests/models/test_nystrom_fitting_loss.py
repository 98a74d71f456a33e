#!/usr/bin/env python3
r"""The exact fitting loss's hand-written gradient against GPyTorch's autograd."""

from __future__ import annotations

import pytest
import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import ConstantMean
from linear_operator.utils.warnings import NumericalWarning

from botorch_sketch.models.nystrom.fitting import exact_log_likelihood


def _modules(kernel: str, tkwargs: dict) -> tuple:
    base = (
        MaternKernel(nu=2.5, ard_num_dims=3)
        if kernel == "matern"
        else RBFKernel(ard_num_dims=3)
    )
    covar = ScaleKernel(base).to(**tkwargs)
    mean = ConstantMean().to(**tkwargs)
    likelihood = GaussianLikelihood().to(**tkwargs)
    with torch.no_grad():
        base.lengthscale = torch.tensor([0.3, 0.7, 1.9], **tkwargs)
        covar.outputscale = 1.7
        mean.constant.fill_(0.25)
        likelihood.noise = 0.03
    return mean, covar, likelihood


@pytest.mark.parametrize("kernel", ["matern", "rbf"])
def test_value_and_gradient_are_gpytorchs(kernel: str, tkwargs: dict) -> None:
    g = torch.Generator().manual_seed(3)
    X = torch.rand(40, 3, generator=g, dtype=torch.float64)
    y = torch.sin(6 * X).sum(-1) + 0.1 * torch.randn(40, generator=g, dtype=X.dtype)
    X, y = X.to(**tkwargs), y.to(**tkwargs)
    modules = _modules(kernel, tkwargs)
    params = [p for m in modules for p in m.parameters()]

    ours = exact_log_likelihood(*modules, X, y)
    ours_grad = torch.autograd.grad(ours, params)
    mean, covar, likelihood = modules
    theirs = likelihood(MultivariateNormal(mean(X), covar(X))).log_prob(y)
    theirs_grad = torch.autograd.grad(theirs, params)

    assert torch.allclose(ours, theirs, rtol=1e-12, atol=1e-10)
    for a, b in zip(ours_grad, theirs_grad, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-9)


def test_not_positive_definite_falls_back_to_gpytorchs_jitter(tkwargs: dict) -> None:
    # Duplicated inputs at a tiny noise: the covariance is singular to
    # rounding, where GPyTorch's log_prob adds jitter and stays finite.
    X = torch.rand(
        5, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    X = torch.cat([X, X]).to(**tkwargs)
    mean, covar, likelihood = _modules("rbf", tkwargs)
    with torch.no_grad():
        covar.base_kernel.lengthscale = 100.0
    likelihood.noise_covar.raw_noise_constraint.lower_bound.fill_(0.0)
    likelihood.noise_covar.raw_noise.data.fill_(-1e3)
    y = torch.zeros(10, **tkwargs)
    with pytest.warns(NumericalWarning, match="jitter"):
        value = exact_log_likelihood(mean, covar, likelihood, X, y)
    assert torch.isfinite(value)
