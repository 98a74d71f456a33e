#!/usr/bin/env python3
r"""Upper confidence bound with BKB's data-adaptive width, for continuous domains.

BoTorch's UCB is ``mean + sqrt(beta) * std``. BKB [Calandriello2019bkb]_ scores
``mu + beta_t * sigma_tilde`` with ``sigma_tilde = std / sqrt(lambda)`` and a width
``beta_t`` that grows with the model's own estimate of the effective dimension,
``sum_s sigma_tilde_t^2(x_s)`` over the observations. So these classes compute
``beta_t`` from a fitted :class:`~botorch_sketch.models.NystromGP` when they are
built, and hand ``beta = beta_t^2 / lambda`` to BoTorch's
:class:`~botorch.acquisition.analytic.UpperConfidenceBound` and
:class:`~botorch.acquisition.monte_carlo.qUpperConfidenceBound`, which do the rest
(``optimize_acqf``, batches, pending points, posterior transforms).

``lambda`` is the model's noise variance in its outcome-transformed units (the
mean noise if it is heteroskedastic), where ``beta`` is scale-free: with
``Standardize``, mean and std are rescaled together. Build the acquisition
function after fitting, as the width reads the current state; a new model gives
a new width.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT
    2019.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.acquisition.analytic import UpperConfidenceBound
from botorch.acquisition.input_constructors import acqf_input_constructor
from botorch.acquisition.monte_carlo import qUpperConfidenceBound
from botorch.acquisition.objective import MCAcquisitionObjective, PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.sampling.base import MCSampler
from torch import Tensor

from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.embedding import kernel_diagonal
from botorch_sketch.sketching.posterior import WidthForm, bkb_width


def bkb_beta(
    model: NystromGP,
    form: WidthForm = "theory",
    rkhs_norm: float = 1.0,
    delta: float = 0.5,
    epsilon: float = 0.5,
) -> float:
    r"""BoTorch's ``beta`` (``sqrt(beta)`` multiplies the std) from BKB's width.

    Args:
        model: A fitted single-output NystromGP.
        form: ``"theory"`` (Theorem 2, safe form) or ``"authors"``; see
            :func:`~botorch_sketch.sketching.posterior.bkb_width`.
        rkhs_norm: ``F``, the assumed RKHS norm of the objective in the model's
            outcome-transformed units.
        delta: The failure probability.
        epsilon: The accuracy of the inducing set (``0`` if it holds every input).

    Returns:
        ``beta_t^2 / lambda``.
    """
    if not isinstance(model, NystromGP):
        raise UnsupportedError(
            f"BKB's width is computed from a NystromGP's inducing set; got "
            f"{type(model).__name__}. Use UpperConfidenceBound with a fixed beta."
        )
    if model.num_outputs != 1:
        raise UnsupportedError(
            "BKB's width is for one outcome; use model.subset_output([j])."
        )
    if model.batch_shape != torch.Size():
        raise UnsupportedError("BKB's width needs a model without batch dimensions.")
    with torch.no_grad():
        lam = float(model.train_noise().mean())
        X = model.transformed_train_X
        width = bkb_width(
            float(model.effective_dimension()),
            model.train_X.shape[0],
            noise_std=math.sqrt(lam),
            noise_var=lam,
            rkhs_norm=rkhs_norm,
            delta=delta,
            kappa2=float(kernel_diagonal(model.covar_module, X).max()),
            epsilon=epsilon,
            form=form,
        )
    return width**2 / lam


class BKBUpperConfidenceBound(UpperConfidenceBound):
    r"""Analytic UCB on a NystromGP with BKB's width (``q = 1``).

    Example:
        >>> model = NystromGP(train_X, train_Y)
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> acqf = BKBUpperConfidenceBound(model)
        >>> candidate, value = optimize_acqf(acqf, bounds, q=1, num_restarts=8,
        ...                                  raw_samples=256)
    """

    def __init__(
        self,
        model: NystromGP,
        form: WidthForm = "theory",
        rkhs_norm: float = 1.0,
        delta: float = 0.5,
        epsilon: float = 0.5,
        posterior_transform: PosteriorTransform | None = None,
        maximize: bool = True,
    ) -> None:
        r"""Compute the width from the model and set up BoTorch's UCB.

        Args:
            model: A fitted single-output NystromGP.
            form: The form of the width (see :func:`bkb_beta`).
            rkhs_norm: ``F`` in the model's outcome-transformed units.
            delta: The failure probability.
            epsilon: The accuracy of the inducing set.
            posterior_transform: A ``PosteriorTransform``.
            maximize: If False, a lower confidence bound for minimisation.
        """
        beta = bkb_beta(model, form, rkhs_norm, delta, epsilon)
        super().__init__(
            model, beta=beta, posterior_transform=posterior_transform, maximize=maximize
        )


class qBKBUpperConfidenceBound(qUpperConfidenceBound):
    r"""Monte-Carlo q-batch UCB on a NystromGP with BKB's width.

    The joint posterior of the ``q`` points carries the batch's diversity, as in
    BoTorch's ``qUpperConfidenceBound``; only ``beta`` comes from BKB.
    """

    def __init__(
        self,
        model: NystromGP,
        form: WidthForm = "theory",
        rkhs_norm: float = 1.0,
        delta: float = 0.5,
        epsilon: float = 0.5,
        sampler: MCSampler | None = None,
        objective: MCAcquisitionObjective | None = None,
        posterior_transform: PosteriorTransform | None = None,
        X_pending: Tensor | None = None,
    ) -> None:
        r"""Compute the width from the model and set up BoTorch's qUCB.

        Args:
            model: A fitted single-output NystromGP.
            form: As for :class:`BKBUpperConfidenceBound`.
            rkhs_norm: As for :class:`BKBUpperConfidenceBound`.
            delta: As for :class:`BKBUpperConfidenceBound`.
            epsilon: As for :class:`BKBUpperConfidenceBound`.
            sampler: The MC sampler (BoTorch's default if None).
            objective: An MC objective.
            posterior_transform: A ``PosteriorTransform``.
            X_pending: A ``m x d`` tensor of pending points.
        """
        beta = bkb_beta(model, form, rkhs_norm, delta, epsilon)
        super().__init__(
            model,
            beta=beta,
            sampler=sampler,
            objective=objective,
            posterior_transform=posterior_transform,
            X_pending=X_pending,
        )
        self.beta = beta  # as UpperConfidenceBound has it (qUCB keeps beta_prime)


@acqf_input_constructor(BKBUpperConfidenceBound)
def construct_inputs_bkb_ucb(
    model: Model,
    posterior_transform: PosteriorTransform | None = None,
    form: WidthForm = "theory",
    rkhs_norm: float = 1.0,
    delta: float = 0.5,
    epsilon: float = 0.5,
    maximize: bool = True,
    **ignored: Any,
) -> dict[str, Any]:
    r"""Keyword arguments of :class:`BKBUpperConfidenceBound` (for Ax)."""
    return {
        "model": model,
        "posterior_transform": posterior_transform,
        "form": form,
        "rkhs_norm": rkhs_norm,
        "delta": delta,
        "epsilon": epsilon,
        "maximize": maximize,
    }


@acqf_input_constructor(qBKBUpperConfidenceBound)
def construct_inputs_qbkb_ucb(
    model: Model,
    objective: MCAcquisitionObjective | None = None,
    posterior_transform: PosteriorTransform | None = None,
    X_pending: Tensor | None = None,
    sampler: MCSampler | None = None,
    form: WidthForm = "theory",
    rkhs_norm: float = 1.0,
    delta: float = 0.5,
    epsilon: float = 0.5,
    **ignored: Any,
) -> dict[str, Any]:
    r"""Keyword arguments of :class:`qBKBUpperConfidenceBound` (for Ax)."""
    return {
        "model": model,
        "objective": objective,
        "posterior_transform": posterior_transform,
        "X_pending": X_pending,
        "sampler": sampler,
        "form": form,
        "rkhs_norm": rkhs_norm,
        "delta": delta,
        "epsilon": epsilon,
    }
