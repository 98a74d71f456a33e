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

The two peers with learned inducing inputs can be given a time cap
(``cap_seconds``): their hyperparameter fit then stops at the cap, as BoTorch's
``timeout_sec`` stops it, and the model keeps the values reached so far. One
deadline covers every attempt ``fit_gpytorch_mll`` makes. The returned model's
``stopped_at_cap`` says whether the cap was hit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gpytorch
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_gaussian_likelihood_with_lognormal_prior,
)
from botorch.models.utils.inducing_point_allocators import GreedyVarianceReduction
from botorch.optim.fit import fit_gpytorch_mll_scipy, fit_gpytorch_mll_torch
from botorch.posteriors import Posterior
from gpytorch.kernels import InducingPointKernel
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from botorch_sketch.models import NystromGP
from botorch_sketch.sketching import SelectionRule


def fit_single_task_gp(X: Tensor, Y: Tensor) -> SingleTaskGP:
    r"""The exact GP, fitted by ``fit_gpytorch_mll``."""
    model = SingleTaskGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def fit_nystrom(X: Tensor, Y: Tensor, rule: SelectionRule) -> NystromGP:
    r"""``NystromGP`` with an inducing rule, fitted by ``fit_gpytorch_mll``."""
    model = NystromGP(X, Y, inducing=rule)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


class CappedOptimizer:
    r"""A ``fit_gpytorch_mll`` optimizer whose attempts share one deadline.

    Each call passes the time left to ``timeout_sec`` (BoTorch's own timeout, which
    keeps the parameters reached), so the whole fit, retries included, takes
    about ``cap_seconds`` at most; ``stopped_at_cap`` records whether it did.
    """

    def __init__(self, optimizer: Callable[..., Any], cap_seconds: float) -> None:
        r"""Wrap ``optimizer`` (``fit_gpytorch_mll_scipy`` or ``_torch``)."""
        self.optimizer = optimizer
        self.cap_seconds = cap_seconds
        self.deadline = time.monotonic() + cap_seconds
        self.stopped_at_cap = False

    def __call__(self, mll: Any, **kwargs: Any) -> Any:
        r"""One fit attempt, stopped at the deadline."""
        left = self.deadline - time.monotonic()
        result = self.optimizer(mll, timeout_sec=max(left, 1e-3), **kwargs)
        message = str(getattr(result, "message", "") or "")
        if "timed out" in message or "timeout" in message or left <= 0:
            self.stopped_at_cap = True
        return result


def _fit(mll: Any, optimizer: Callable[..., Any], cap_seconds: float | None) -> bool:
    r"""``fit_gpytorch_mll`` with ``optimizer``, capped; whether it hit the cap."""
    if cap_seconds is None:
        fit_gpytorch_mll(mll, optimizer=optimizer)
        return False
    capped = CappedOptimizer(optimizer, cap_seconds)
    fit_gpytorch_mll(mll, optimizer=capped)
    return capped.stopped_at_cap


def fit_variational_gp(
    X: Tensor, Y: Tensor, m: int, cap_seconds: float | None = None
) -> SingleTaskVariationalGP:
    r"""BoTorch's SVGP with ``m`` learned inducing points.

    Fitted on the variational ELBO with the optimizer ``fit_gpytorch_mll`` picks
    by default (L-BFGS-B up to 1024 points, Adam above), stopped after
    ``cap_seconds`` if given.
    """
    model = SingleTaskVariationalGP(X, Y, inducing_points=m)
    mll = VariationalELBO(model.likelihood, model.model, num_data=X.shape[0])
    optimizer = fit_gpytorch_mll_scipy if X.shape[0] <= 1024 else fit_gpytorch_mll_torch
    model.stopped_at_cap = _fit(mll, optimizer, cap_seconds)
    return model


class SGPRModel(SingleTaskGP):
    r"""``SingleTaskGP`` with GPyTorch's ``InducingPointKernel``, used at its best.

    Its posterior is evaluated under ``fast_computations`` too, as its fit is.
    """

    def posterior(self, *args, **kwargs) -> Posterior:
        r"""The SGPR posterior, with GPyTorch's fast paths on."""
        with gpytorch.settings.fast_computations(log_prob=True, solves=True):
            return super().posterior(*args, **kwargs)


def fit_sgpr(
    X: Tensor, Y: Tensor, m: int, cap_seconds: float | None = None
) -> SGPRModel:
    r"""SGPR (Titsias) with ``m`` learned inducing inputs, capped at ``cap_seconds``."""
    likelihood = get_gaussian_likelihood_with_lognormal_prior()
    base = get_covar_module_with_dim_scaled_prior(ard_num_dims=X.shape[-1]).to(X)
    with torch.no_grad():
        Z = GreedyVarianceReduction().allocate_inducing_points(
            X, base, min(m, X.shape[0]), torch.Size()
        )
    kernel = InducingPointKernel(base, inducing_points=Z, likelihood=likelihood)
    model = SGPRModel(X, Y, covar_module=kernel, likelihood=likelihood)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with gpytorch.settings.fast_computations(log_prob=True, solves=True):
        model.stopped_at_cap = _fit(mll, fit_gpytorch_mll_scipy, cap_seconds)
    return model
