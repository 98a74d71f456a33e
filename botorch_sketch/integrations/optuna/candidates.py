#!/usr/bin/env python3
r"""Candidates functions for optuna-integration's ``BoTorchSampler``.

:func:`nystrom_candidates_func` plugs this package's model into
``BoTorchSampler`` through its ``candidates_func`` argument, refitted from
scratch each trial as optuna-integration's own candidates functions are;
:class:`NystromCandidates` does the same with the model carried from trial to
trial.
"""

from __future__ import annotations

import math
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
    ``SketchSampler`` models it. The acquisition is maximised over valid
    configurations, never an observed or running one: the integer, stepped,
    log-integer and one-hot columns are recognised from ``bounds`` and the
    observed points (see :func:`_grid_rounding`) and rounded as Optuna rounds
    them.

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
    train_x = train_x.to(**tkwargs)
    if pending_x is not None and len(pending_x) == 0:
        pending_x = None
    if pending_x is not None:
        pending_x = pending_x.to(**tkwargs)
    candidate = _suggest(
        train_X=normalize(train_x, bounds),
        train_obj=train_obj.to(**tkwargs),
        train_con=None if train_con is None else train_con.to(**tkwargs),
        pending_X=None if pending_x is None else normalize(pending_x, bounds),
        fit=fit,
        seed=None,
        num_restarts=10,
        raw_samples=512,
        mc_samples=256,
        max_baseline=128,
        round_to_grid=_grid_rounding(
            train_x if pending_x is None else torch.cat([train_x, pending_x]), bounds
        ),
        analytic=analytic,
        warp=warp,
    )
    # Strictly below the upper bounds: Optuna's untransform (BoTorchSampler's)
    # returns a continuous parameter at its upper bound as the
    # ``numpy.float64`` one step below it, and anything under that as a Python
    # float. Integer and one-hot columns round as before.
    below = torch.nextafter(bounds[1], bounds[0])
    return unnormalize(candidate, bounds).clamp(bounds[0], below)


#: Tolerance of the grid checks of :func:`_grid_rounding`, in grid steps (or
#: relative to an integer): loose next to a step, tight next to a random float.
_GRID_TOL = 1e-6

#: Most points of an evenly spaced grid that :func:`_grid_rounding` looks for;
#: a finer grid is left continuous (its relaxation is within half a step).
_MAX_GRID_POINTS = 4096


def _grid_rounding(X: Tensor, bounds: Tensor) -> Callable[[Tensor], Tensor] | None:
    r"""The map of relaxed unit-cube points to valid configurations, from the data.

    A candidates function is given no search space, only ``BoTorchSampler``'s
    encoding of it (Optuna's ``_SearchSpaceTransform``): a categorical
    parameter as one-hot columns with bounds ``(0, 1)``, an integer or stepped
    float ``low, low + s, ..., high`` as its values with bounds widened by half
    a step, ``(low - s / 2, high + s / 2)``, a log-scaled integer as the log of
    its values with bounds ``(log(low - 1/2), log(high + 1/2))``. Without a
    rounding the acquisition was maximised over the relaxation, where a
    fractional ``depth`` or one-hot column is a point no trial has observed;
    Optuna rounds it back onto the best trial, which was proposed again and
    again (the README example repeated ``lr = 1e-4, depth = 6, gbdt`` from
    trial 12 to 69 on seed 0: best 0.0099 at trial 80, and to the end with
    ``nystrom_candidates_func``).

    So the columns are recognised from the bounds and from every observed or
    running point ``X`` (in ``BoTorchSampler``'s space), and rounded as
    Optuna's untransform rounds them:

    - a run of columns with bounds ``(0, 1)`` and values in ``{0, 1}`` whose
      rows each hold a single 1 is a one-hot block (taking its argmax);
    - a column whose bounds are ``log(a - 1/2), log(b + 1/2)`` for integers
      ``1 <= a <= b`` and whose values are logs of integers is a log-scaled
      integer (rounded in ``exp`` space, clipped to ``[a, b]``);
    - a column with two or more distinct values, each at the centre of one of
      ``m`` equal cells of its bounds for one ``m`` up to
      ``_MAX_GRID_POINTS`` (the smallest that fits), is a grid of ``m``
      points (rounded to the centre of its cell).

    Any other column is left continuous, as before. A random float matches
    none of these but with negligible probability.

    Args:
        X: A ``n x D`` tensor of the observed (and running) points, not
            normalised.
        bounds: A ``2 x D`` tensor of their bounds.

    Returns:
        ``... x D`` unit-cube points to rounded ones, or None when no column
        is discrete.
    """
    low, high = bounds[0], bounds[1]
    width = high - low
    valid = width > 0
    R = (X - low) / torch.where(valid, width, 1.0)
    binary = valid & (low == 0) & (high == 1) & ((X == 0) | (X == 1)).all(dim=0)
    blocks: list[list[int]] = []
    column, D = 0, X.shape[-1]
    while column < D:
        if not binary[column]:
            column += 1
            continue
        # The shortest run of binary columns from here whose rows each sum to 1.
        total = torch.zeros_like(X[:, 0])
        end = column
        while end < D and binary[end]:
            total = total + X[:, end]
            if bool((total > 1).any()) or bool((total == 1).all()):
                break
            end += 1
        if end < D and binary[end] and bool((total == 1).all()):
            blocks.append(list(range(column, end + 1)))
            column = end + 1
        else:
            column += 1
    in_block = {c for block in blocks for c in block}
    logs: list[tuple[int, float, float]] = []
    grids: list[tuple[int, int]] = []
    for c in range(D):
        if c in in_block or not bool(valid[c]):
            continue
        integers = _log_integer_range(X[:, c], low[c], high[c])
        if integers is not None:
            logs.append((c, *integers))
            continue
        points = _grid_points(R[:, c])
        if points is not None:
            grids.append((c, points))
    if not (blocks or logs or grids):
        return None

    def round_to_grid(U: Tensor) -> Tensor:
        U = U.detach().clone()
        for block in blocks:
            choice = U[..., block].argmax(dim=-1, keepdim=True)
            one_hot = torch.zeros_like(U[..., block]).scatter_(-1, choice, 1.0)
            U[..., block] = one_hot
        for c, a, b in logs:
            lo, span = low[c].to(U), width[c].to(U)
            k = torch.exp(lo + U[..., c] * span).round().clamp(a, b)
            U[..., c] = (torch.log(k) - lo) / span
        for c, m in grids:
            U[..., c] = ((U[..., c] * m).floor().clamp(0, m - 1) + 0.5) / m
        return U

    return round_to_grid


def _log_integer_range(
    x: Tensor, low: Tensor, high: Tensor
) -> tuple[float, float] | None:
    r"""``(a, b)`` when ``x`` are logs of integers in ``log(a - 1/2), log(b + 1/2)``."""
    a, b = float(torch.exp(low)) + 0.5, float(torch.exp(high)) - 0.5
    if not (math.isfinite(b) and round(a) >= 1 and round(b) >= round(a)):
        return None
    if abs(a - round(a)) > _GRID_TOL * a or abs(b - round(b)) > _GRID_TOL * b:
        return None
    values = torch.exp(x)
    if bool(((values - values.round()).abs() > _GRID_TOL * values).any()):
        return None
    return float(round(a)), float(round(b))


def _grid_points(r: Tensor) -> int | None:
    r"""The smallest ``m`` with ``r`` (in ``[0, 1]``) at centres of ``m`` cells.

    ``r`` is on the grid ``(j + 1/2) / m`` when ``2 m r`` is odd; None with
    fewer than two distinct values, or no ``m`` up to ``_MAX_GRID_POINTS``.
    """
    r = torch.unique(r)
    if len(r) < 2:
        return None
    m = torch.arange(1, _MAX_GRID_POINTS + 1, dtype=r.dtype, device=r.device)
    t = 2 * m.unsqueeze(-1) * r
    odd = 2 * torch.floor(t / 2) + 1
    fits = ((t - odd).abs() <= 2 * _GRID_TOL).all(dim=-1)
    if not bool(fits.any()):
        return None
    return int(m[fits][0])
