#!/usr/bin/env python3
r"""GSSBO's subset as the inducing set of a DTC model on all the data.

GSSBO [Wei2025gssbo]_ fits an exact GP on ``M`` of the ``N`` observations and
ignores the others. Its own theory, though, bounds the Nystrom approximation in
which all ``N`` observations enter through the ``M`` chosen ones. This module
builds that model: a :class:`~botorch_sketch.models.gradient_subset_gp.GradientSubsetGP`
chooses the subset and fits the hyperparameters, and a
:class:`~botorch_sketch.models.nystrom_gp.NystromGP` on all ``N`` observations
uses the subset's inputs as its fixed inducing set. Points outside the subset
then still inform the posterior, through DTC, at ``O(N M^2)``.

Units. The subset GP's hyperparameters (signal variance, noise, constant mean)
are in the units of its outcome transform, fitted on the subset; a ``NystromGP``
would standardise on all ``N``. The hyperparameters cannot be rescaled to other
units in general (BoTorch's default kernel has no ``ScaleKernel`` whose
variance could absorb the change), so the hybrid takes the subset GP's outcome
and input transforms along with its hyperparameters: both models then have the
same prior over the raw objective, and differ only in the data they condition
on and in DTC.

Example:
    >>> model = fit_gss_nystrom(train_X, train_Y, subset_size=100, num_initial=20)
    >>> acqf = qLogNoisyExpectedImprovement(model, X_baseline=train_X)

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
"""

from __future__ import annotations

import copy
from typing import Any

from botorch.exceptions.errors import UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.kernels import Kernel
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_sketch.models.gradient_subset_gp import (
    GradientFunction,
    GradientSubsetGP,
)
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.rules import SelectionRule


def nystrom_from_subset(model: GradientSubsetGP) -> NystromGP:
    r"""The ``NystromGP`` on all of a subset GP's data, inducing on its subset.

    Args:
        model: A fitted ``GradientSubsetGP``.

    Returns:
        A ``NystromGP`` on ``model.full_train_X`` (and its observations) whose
        inducing inputs are ``model.full_train_X[model.subset_indices]``, in that
        order, and whose kernel, mean, likelihood and transforms are copies of
        ``model``'s (see the module docstring for why the transforms too). It
        needs no fitting; fitting it would refit the hyperparameters on all the
        data with the inducing set kept.
    """
    if not isinstance(model, GradientSubsetGP):
        raise UnsupportedError(
            f"nystrom_from_subset needs a GradientSubsetGP; got {type(model).__name__}."
        )
    fixed_noise = model.full_train_Yvar is not None
    outcome_transform = getattr(model, "outcome_transform", None)
    input_transform = getattr(model, "input_transform", None)
    hybrid = NystromGP(
        model.full_train_X,
        model.full_train_Y,
        model.full_train_Yvar,
        inducing=model.full_train_X[model.subset_indices],
        covar_module=copy.deepcopy(model.covar_module),
        mean_module=copy.deepcopy(model.mean_module),
        # A fixed-noise likelihood holds the subset's noise; NystromGP builds its
        # own from all of train_Yvar.
        likelihood=None if fixed_noise else copy.deepcopy(model.likelihood),
        outcome_transform=copy.deepcopy(outcome_transform),
        input_transform=copy.deepcopy(input_transform),
    )
    # The constructor fitted the transforms on all N observations; load the
    # subset's (strictly: every hyperparameter and transform statistic must
    # have its counterpart). NystromGP re-transforms its targets on loading.
    hybrid.load_state_dict(model.state_dict())
    return hybrid.eval()


def fit_gss_nystrom(
    train_X: Tensor,
    train_Y: Tensor,
    train_Yvar: Tensor | None = None,
    subset_size: int | None = 100,
    num_initial: int = 0,
    num_newest: int = 1,
    num_best: int = 0,
    subset_rule: SelectionRule | None = None,
    gradient: GradientFunction | None = None,
    fit_rounds: int = 2,
    likelihood: Likelihood | None = None,
    covar_module: Kernel | None = None,
    mean_module: Mean | None = None,
    outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
    input_transform: InputTransform | None = None,
    fit_kwargs: dict[str, Any] | None = None,
) -> NystromGP:
    r"""Select a subset by GSS, fit on it, and return the DTC model on all the data.

    Builds a ``GradientSubsetGP`` with the given options, fits it with
    ``fit_gpytorch_mll`` (which selects the subset) and returns
    :func:`nystrom_from_subset` of it. With ``subset_size >= N`` the subset is
    every observation, and the result is ``NystromGP`` with every training
    input inducing and ``SingleTaskGP``'s fitted hyperparameters, i.e. the exact
    GP posterior.

    Args:
        train_X: A ``N x d`` tensor of all observed inputs, oldest first.
        train_Y: A ``N x 1`` tensor of all observations.
        train_Yvar: An optional ``N x 1`` tensor of observed noise variances.
        subset_size: ``M``, the size of the subset and of the inducing set.
        num_initial: ``GradientSubsetGP``'s ``num_initial``.
        num_newest: ``GradientSubsetGP``'s ``num_newest``.
        num_best: ``GradientSubsetGP``'s ``num_best``.
        subset_rule: ``GradientSubsetGP``'s ``subset_rule`` (default: gradient
            diversity).
        gradient: ``GradientSubsetGP``'s ``gradient``.
        fit_rounds: ``GradientSubsetGP``'s ``fit_rounds``.
        likelihood: As for ``SingleTaskGP``.
        covar_module: As for ``SingleTaskGP``.
        mean_module: As for ``SingleTaskGP``.
        outcome_transform: As for ``SingleTaskGP``; fitted on the subset.
        input_transform: As for ``SingleTaskGP``.
        fit_kwargs: Passed to ``fit_gpytorch_mll``.

    Returns:
        The ``NystromGP``, in eval mode, ready for an acquisition function.
    """
    subset = GradientSubsetGP(
        train_X,
        train_Y,
        train_Yvar,
        subset_size=subset_size,
        num_initial=num_initial,
        num_newest=num_newest,
        subset_rule=subset_rule,
        gradient=gradient,
        fit_rounds=fit_rounds,
        num_best=num_best,
        likelihood=likelihood,
        covar_module=covar_module,
        mean_module=mean_module,
        outcome_transform=outcome_transform,
        input_transform=input_transform,
    )
    fit_gpytorch_mll(
        ExactMarginalLogLikelihood(subset.likelihood, subset), **(fit_kwargs or {})
    )
    return nystrom_from_subset(subset)
