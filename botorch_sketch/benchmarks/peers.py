#!/usr/bin/env python3
r"""The models a user would pick instead, each built and fitted as that user would.

Every builder returns a fitted model; the caller times it. Peers:

- ``SingleTaskGP``: the exact GP, BoTorch's default.
- ``SingleTaskVariationalGP``: BoTorch's SVGP, fitted by ``fit_gpytorch_mll`` on
  the variational ELBO (its default path: L-BFGS up to 1024 points, Adam above).
- SGPR: GPyTorch's ``InducingPointKernel`` inside a ``SingleTaskGP``, fitted under
  ``gpytorch.settings.fast_computations(log_prob=True)`` so that its marginal
  likelihood uses the Woodbury identity rather than the dense Cholesky BoTorch's
  defaults select; inducing inputs start at BoTorch's greedy variance allocation
  and are learned.
- ``NystromGP`` with a given inducing rule.
"""

from __future__ import annotations

import gpytorch
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_gaussian_likelihood_with_lognormal_prior,
)
from botorch.models.utils.inducing_point_allocators import GreedyVarianceReduction
from botorch.posteriors import Posterior
from gpytorch.kernels import InducingPointKernel
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from botorch_sketch.models import NystromGP
from botorch_sketch.sketching import InducingSelector


def fit_single_task_gp(X: Tensor, Y: Tensor) -> SingleTaskGP:
    r"""The exact GP, fitted by ``fit_gpytorch_mll``."""
    model = SingleTaskGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def fit_nystrom(X: Tensor, Y: Tensor, rule: InducingSelector) -> NystromGP:
    r"""``NystromGP`` with an inducing rule, fitted by ``fit_gpytorch_mll``."""
    model = NystromGP(X, Y, inducing=rule)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def fit_variational_gp(X: Tensor, Y: Tensor, m: int) -> SingleTaskVariationalGP:
    r"""BoTorch's SVGP with ``m`` learned inducing points."""
    model = SingleTaskVariationalGP(X, Y, inducing_points=m)
    mll = VariationalELBO(model.likelihood, model.model, num_data=X.shape[0])
    fit_gpytorch_mll(mll)
    return model


class SGPRModel(SingleTaskGP):
    r"""``SingleTaskGP`` with GPyTorch's ``InducingPointKernel``, used at its best.

    Its posterior is evaluated under ``fast_computations`` too, as its fit is.
    """

    def posterior(self, *args, **kwargs) -> Posterior:
        r"""The SGPR posterior, with GPyTorch's fast paths on."""
        with gpytorch.settings.fast_computations(log_prob=True, solves=True):
            return super().posterior(*args, **kwargs)


def fit_sgpr(X: Tensor, Y: Tensor, m: int) -> SGPRModel:
    r"""SGPR (Titsias) with ``m`` learned inducing inputs."""
    likelihood = get_gaussian_likelihood_with_lognormal_prior()
    base = get_covar_module_with_dim_scaled_prior(ard_num_dims=X.shape[-1]).to(X)
    with torch.no_grad():
        Z = GreedyVarianceReduction().allocate_inducing_points(
            X, base, min(m, X.shape[0]), torch.Size()
        )
    kernel = InducingPointKernel(base, inducing_points=Z, likelihood=likelihood)
    model = SGPRModel(X, Y, covar_module=kernel, likelihood=likelihood)
    with gpytorch.settings.fast_computations(log_prob=True, solves=True):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model
