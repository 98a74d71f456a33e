#!/usr/bin/env python3
r"""Candidates functions for optuna-integration's ``BoTorchSampler``.

:func:`nystrom_candidates_func` plugs this package's model into
``BoTorchSampler`` through its ``candidates_func`` argument, refitted from
scratch each trial as optuna-integration's own candidates functions are;
:class:`NystromCandidates` does the same with the model carried from trial to
trial.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from botorch.exceptions.errors import InputDataError
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from botorch.utils.transforms import normalize, unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.integrations.optuna.acquisition import _suggest
from botorch_sketch.integrations.optuna.options import (
    _REFIT_GROWTH,
    _check_acquisition,
    _check_bool,
    _check_int,
)
from botorch_sketch.integrations.optuna.warping import _HalfRankWarp, _warped
from botorch_sketch.models import NystromGP
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


def nystrom_candidates_func(
    train_x: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    bounds: Tensor,
    pending_x: Tensor | None,
) -> Tensor:
    r"""A ``candidates_func`` for optuna-integration's ``BoTorchSampler``.

    It has the signature and return value of ``logei_candidates_func`` and
    ``qei_candidates_func`` but fits one :class:`~botorch_sketch.models.NystromGP`
    per objective and constraint (a ``ModelListGP`` when there are several) and
    maximises ``qLogNoisyExpectedImprovement`` (one objective) or
    ``qLogNoisyExpectedHypervolumeImprovement`` (several), with pending points.
    A single objective is modelled through its half-rank warping, as
    ``SketchSampler`` models it.

    Example:
        >>> from optuna_integration import BoTorchSampler
        >>> sampler = BoTorchSampler(
        ...     candidates_func=nystrom_candidates_func, consider_running_trials=True
        ... )

    Args:
        train_x: A ``n x D`` tensor of observed parameters, not normalised
            (categorical parameters one-hot encoded).
        train_obj: A ``n x M`` tensor of observed objectives, to be maximised.
        train_con: A ``n x C`` tensor of constraint values (feasible when
            ``<= 0``), or None.
        bounds: A ``2 x D`` tensor of lower and upper bounds of ``train_x``.
        pending_x: A ``p x D`` tensor of pending (running) parameters, or None.

    Returns:
        A ``1 x D`` tensor: the next parameters, in the space of ``train_x``.
    """

    def fit(X: Tensor, Y: Tensor, name: str) -> Model:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExactRegimeWarning)
            model = NystromGP(X, Y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    def warp(Y: Tensor, name: str) -> Tensor:
        return _HalfRankWarp(Y)(Y)

    return _candidates(train_x, train_obj, train_con, bounds, pending_x, fit, warp=warp)


class NystromCandidates:
    r"""A ``candidates_func`` for ``BoTorchSampler`` that carries its models.

    :func:`nystrom_candidates_func` builds and fits a ``NystromGP`` from
    scratch at every trial, as optuna-integration's own candidates functions
    do. An instance of this class keeps one
    :class:`~botorch_sketch.bo.IncrementalGP` per objective and constraint, so
    each trial absorbs the new observations (a Woodbury step) and the
    hyperparameters are refitted, warm-started, every ``refit_every`` trials
    (or sooner when the data stop agreeing with them), as ``SketchSampler``
    does. A trial chosen alone (one objective, no constraints, no running
    trials) maximises analytic ``LogExpectedImprovement`` at the best posterior
    mean of the observed points; otherwise the Monte Carlo acquisition of
    :func:`nystrom_candidates_func`.

    Example:
        >>> from optuna_integration import BoTorchSampler
        >>> sampler = BoTorchSampler(candidates_func=NystromCandidates())
    """

    def __init__(
        self,
        refit_every: int = 10,
        acquisition: str = "auto",
        warp_objective: bool = True,
    ) -> None:
        r"""Configure the carried models.

        Args:
            refit_every: Refit the hyperparameters every this many trials (see
                :class:`~botorch_sketch.bo.IncrementalGP`).
            acquisition: ``"auto"`` or ``"mc"``, as for ``SketchSampler``.
            warp_objective: Model a single objective's half-rank warping, as
                for ``SketchSampler`` (re-estimated at the scheduled refits).
        """
        _check_int("refit_every", refit_every, 1)
        _check_acquisition(acquisition)
        _check_bool("warp_objective", warp_objective)
        self.refit_every = refit_every
        self.analytic = acquisition == "auto"
        self.warp_objective = warp_objective
        self._incremental: dict[str, IncrementalGP] = {}
        self._warps: dict[str, _HalfRankWarp] = {}
        self._bounds: Tensor | None = None

    def __call__(
        self,
        train_x: Tensor,
        train_obj: Tensor,
        train_con: Tensor | None,
        bounds: Tensor,
        pending_x: Tensor | None,
    ) -> Tensor:
        r"""The next parameters (arguments as for ``nystrom_candidates_func``)."""
        if self._bounds is None or not torch.equal(bounds, self._bounds):
            # A new search space: the carried models describe another one.
            self._bounds = bounds.clone()
            self._incremental = {}
            self._warps = {}

        def fit(X: Tensor, Y: Tensor, name: str) -> Model:
            surrogate = self._incremental.get(name)
            if surrogate is None:
                surrogate = self._incremental[name] = IncrementalGP(
                    refit_every=self.refit_every, refit_growth=_REFIT_GROWTH
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExactRegimeWarning)
                return surrogate(X, Y)

        def warp(Y: Tensor, name: str) -> Tensor:
            return _warped(self._warps, name, Y, self._incremental.get(name))

        return _candidates(
            train_x,
            train_obj,
            train_con,
            bounds,
            pending_x,
            fit,
            self.analytic,
            warp if self.warp_objective else None,
        )


def _candidates(
    train_x: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    bounds: Tensor,
    pending_x: Tensor | None,
    fit: Callable[[Tensor, Tensor, str], Model],
    analytic: bool = False,
    warp: Callable[[Tensor, str], Tensor] | None = None,
) -> Tensor:
    r"""The body of both candidates functions, in ``train_x``'s space."""
    D = train_x.shape[-1]
    if train_x.dim() != 2 or bounds.shape != (2, D):
        # Else a size mismatch deep in ``normalize`` that names neither.
        raise InputDataError(
            f"bounds must be a 2 x D tensor for train_x of shape n x D; got "
            f"bounds of shape {tuple(bounds.shape)} for train_x of shape "
            f"{tuple(train_x.shape)}."
        )
    if pending_x is not None and (pending_x.dim() != 2 or pending_x.shape[-1] != D):
        raise InputDataError(
            f"pending_x must be a p x D tensor for train_x of shape n x D; got "
            f"pending_x of shape {tuple(pending_x.shape)} for train_x of shape "
            f"{tuple(train_x.shape)}."
        )
    tkwargs = {"dtype": torch.float64, "device": train_x.device}
    bounds = bounds.to(**tkwargs)
    candidate = _suggest(
        train_X=normalize(train_x.to(**tkwargs), bounds),
        train_obj=train_obj.to(**tkwargs),
        train_con=None if train_con is None else train_con.to(**tkwargs),
        pending_X=(
            None
            if pending_x is None or len(pending_x) == 0
            else normalize(pending_x.to(**tkwargs), bounds)
        ),
        fit=fit,
        seed=None,
        num_restarts=10,
        raw_samples=512,
        mc_samples=256,
        max_baseline=128,
        round_to_grid=None,
        analytic=analytic,
        warp=warp,
    )
    # Strictly below the upper bounds: Optuna's untransform (BoTorchSampler's)
    # returns a continuous parameter at its upper bound as the
    # ``numpy.float64`` one step below it, and anything under that as a Python
    # float. Integer and one-hot columns round as before.
    below = torch.nextafter(bounds[1], bounds[0])
    return unnormalize(candidate, bounds).clamp(bounds[0], below)
