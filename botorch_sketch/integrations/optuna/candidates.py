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
import threading
import warnings
from collections.abc import Callable, Mapping

import torch
from botorch.exceptions.errors import InputDataError
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from botorch.utils.transforms import normalize, unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from torch import Tensor

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.integrations.optuna.acquisition import _suggest
from botorch_sketch.integrations.optuna.encoding import _Encoding
from botorch_sketch.integrations.optuna.options import (
    _REFIT_GROWTH,
    _check_acquisition,
    _check_bool,
    _check_int,
)
from botorch_sketch.integrations.optuna.warping import _HalfRankWarp, _warped
from botorch_sketch.models import NystromGP
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning

#: One suggestion at a time in a process. ``BoTorchSampler`` with
#: ``n_jobs > 1`` calls its candidates function from several threads: a
#: ``NystromCandidates`` carries models that one call updates, and GPyTorch's
#: ``lazily_evaluate_kernels`` context (a class-level flag, entered around
#: every dense kernel block) interleaved across threads left the flag off
#: for the whole process, changing later models' evaluation.
_LOCK = threading.RLock()


def nystrom_candidates_func(
    train_x: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    bounds: Tensor,
    pending_x: Tensor | None,
    search_space: Mapping[str, BaseDistribution] | None = None,
) -> Tensor:
    r"""A ``candidates_func`` for optuna-integration's ``BoTorchSampler``.

    It has the signature and return value of ``logei_candidates_func`` and
    ``qei_candidates_func`` but fits one :class:`~botorch_sketch.models.NystromGP`
    per objective and constraint (a ``ModelListGP`` when there are several) and
    maximises ``qLogNoisyExpectedImprovement`` (one objective) or
    ``qLogNoisyExpectedHypervolumeImprovement`` (several), with pending points.
    A single objective is modelled through its half-rank warping, as
    ``SketchSampler`` models it. The acquisition is maximised over valid
    configurations, never an observed or running one: the categorical,
    integer and stepped columns are rounded as Optuna rounds them, all of them
    given ``search_space``, else those that Optuna's encoding of ``bounds``
    shows (categorical, integer and log-integer ones; see
    :func:`_grid_rounding`). No step is inferred from the observed values.
    Without ``search_space`` a float whose encoding is an integer's (bounds
    ``k - 1/2`` and ``j + 1/2`` for integers ``k < j``, or their logs for a
    log-scaled float) observed only at integers cannot be told from an integer
    parameter and is proposed at integers only: pass ``search_space``.

    Example:
        >>> from functools import partial
        >>> from optuna_integration import BoTorchSampler
        >>> sampler = BoTorchSampler(
        ...     candidates_func=nystrom_candidates_func, consider_running_trials=True
        ... )
        >>> # Stepped floats and integers rounded too: the study's search space.
        >>> sampler = BoTorchSampler(
        ...     candidates_func=partial(nystrom_candidates_func, search_space=space)
        ... )

    Args:
        train_x: A ``n x D`` tensor of observed parameters, not normalised
            (categorical parameters one-hot encoded).
        train_obj: A ``n x M`` tensor of observed objectives, to be maximised.
        train_con: A ``n x C`` tensor of constraint values (feasible when
            ``<= 0``), or None.
        bounds: A ``2 x D`` tensor of lower and upper bounds of ``train_x``.
        pending_x: A ``p x D`` tensor of pending (running) parameters, or None.
        search_space: The study's search space (parameter names to Optuna's
            distributions), or None. Given, every parameter with a step is
            rounded as Optuna rounds it; its encoding must give ``bounds``.

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

    with _LOCK:
        return _candidates(
            train_x,
            train_obj,
            train_con,
            bounds,
            pending_x,
            fit,
            warp=warp,
            search_space=search_space,
        )


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
        search_space: Mapping[str, BaseDistribution] | None = None,
    ) -> None:
        r"""Configure the carried models.

        Args:
            refit_every: Refit the hyperparameters every this many trials (see
                :class:`~botorch_sketch.bo.IncrementalGP`).
            acquisition: ``"auto"`` or ``"mc"``, as for ``SketchSampler``.
            warp_objective: Model a single objective's half-rank warping, as
                for ``SketchSampler`` (re-estimated at the scheduled refits).
            search_space: The study's search space, or None: as for
                :func:`nystrom_candidates_func`, every stepped parameter is
                rounded as Optuna rounds it when it is given.
        """
        _check_int("refit_every", refit_every, 1)
        _check_acquisition(acquisition)
        _check_bool("warp_objective", warp_objective)
        if search_space is not None:
            _checked_space(search_space)
        self.search_space = None if search_space is None else dict(search_space)
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
        with _LOCK:
            return self._next(train_x, train_obj, train_con, bounds, pending_x)

    def _next(
        self,
        train_x: Tensor,
        train_obj: Tensor,
        train_con: Tensor | None,
        bounds: Tensor,
        pending_x: Tensor | None,
    ) -> Tensor:
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
            # Absent from an instance pickled before it was an option.
            getattr(self, "search_space", None),
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
    search_space: Mapping[str, BaseDistribution] | None = None,
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
    for name, values in (("train_obj", train_obj), ("train_con", train_con)):
        # A 1-d train_obj failed with an IndexError deep inside.
        if values is not None and (
            not isinstance(values, Tensor)
            or values.dim() != 2
            or values.shape[0] != train_x.shape[0]
        ):
            shape = tuple(values.shape) if isinstance(values, Tensor) else values
            raise InputDataError(
                f"{name} must be a n x M tensor for train_x of shape n x D; got "
                f"{name} of shape {shape} for train_x of shape "
                f"{tuple(train_x.shape)}."
            )
    if bool((bounds[0] > bounds[1]).any()):
        # Normalised against reversed bounds, every point left the unit cube
        # and the candidate came back as [[5e-324, ...]].
        column = int((bounds[0] > bounds[1]).nonzero()[0])
        raise InputDataError(
            f"bounds must be lower bounds then upper bounds; column {column} has "
            f"{bounds[0, column].item()} > {bounds[1, column].item()}."
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
            train_x if pending_x is None else torch.cat([train_x, pending_x]),
            bounds,
            search_space,
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


#: Tolerance of the checks of :func:`_grid_rounding` (relative, or next to an
#: integer): loose next to a step, tight next to a random float.
_GRID_TOL = 1e-6


def _grid_rounding(
    X: Tensor,
    bounds: Tensor,
    search_space: Mapping[str, BaseDistribution] | None = None,
) -> Callable[[Tensor], Tensor] | None:
    r"""The map of relaxed unit-cube points to valid configurations.

    A candidates function is given ``BoTorchSampler``'s encoding of the search
    space (Optuna's ``_SearchSpaceTransform``): a categorical parameter as
    one-hot columns with bounds ``(0, 1)``, an integer or stepped float
    ``low, low + s, ..., high`` as its values with bounds widened by half a
    step, ``(low - s / 2, high + s / 2)``, a log-scaled integer as the log of
    its values with bounds ``(log(low - 1/2), log(high + 1/2))``. Without a
    rounding the acquisition was maximised over the relaxation, where a
    fractional ``depth`` or one-hot column is a point no trial has observed;
    Optuna rounds it back onto the best trial, which was proposed again and
    again (the README example repeated ``lr = 1e-4, depth = 6, gbdt`` from
    trial 12 to 69 on seed 0).

    A column is rounded only where a distribution has a step:

    - with ``search_space``, exactly as Optuna rounds it: every categorical,
      integer and stepped float parameter, and nothing else;
    - without it, only what the bounds of Optuna's encoding say with the
      observed (and running) points ``X``: a run of two or more columns with
      bounds ``(0, 1)`` whose rows each hold a single 1 (a categorical
      parameter), a column with bounds ``(a - 1/2, b + 1/2)`` for integers
      ``a < b`` and integer values (an integer), a column with bounds
      ``(log(a - 1/2), log(b + 1/2))`` and values logs of integers (a
      log-scaled integer). No step is inferred from the spacing of the
      observed values: a continuous parameter warm-started at 0.25 and 0.75
      was only ever proposed at those two values. A stepped parameter of step
      other than 1 is left continuous (Optuna rounds it); pass
      ``search_space`` to round it too.

    The cost is ``O(n D)``, with no comparison of every observed value with
    every candidate grid.

    Args:
        X: A ``n x D`` tensor of the observed (and running) points, not
            normalised.
        bounds: A ``2 x D`` tensor of their bounds.
        search_space: The search space, by parameter name, or None. The
            parameters are encoded as ``BoTorchSampler`` encodes them: sorted
            by name, those of a single value left out.

    Returns:
        ``... x D`` unit-cube points to rounded ones, or None when no column
        is discrete.
    """
    if search_space is not None:
        return _distribution_rounding(_checked_encoding(search_space, bounds))
    low, high = bounds[0], bounds[1]
    width = high - low
    valid = width > 0
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
        if end < D and binary[end] and bool((total == 1).all()) and end > column:
            # Two or more columns: a one-column block would be a continuous
            # parameter in (0, 1) observed at 1 only (Optuna leaves a
            # categorical parameter of one choice out of the encoding).
            blocks.append(list(range(column, end + 1)))
            column = end + 1
        else:
            column += 1
    in_block = {c for block in blocks for c in block}
    logs: list[tuple[int, float, float]] = []
    integers: list[tuple[int, float, float]] = []
    for c in range(D):
        if c in in_block or not bool(valid[c]):
            continue
        log_range = _log_integer_range(X[:, c], low[c], high[c])
        if log_range is not None:
            logs.append((c, *log_range))
            continue
        integer_range = _integer_range(X[:, c], low[c], high[c])
        if integer_range is not None:
            integers.append((c, *integer_range))
    if not (blocks or logs or integers):
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
        for c, a, b in integers:
            lo, span = low[c].to(U), width[c].to(U)
            k = torch.floor(lo + U[..., c] * span + 0.5).clamp(a, b)
            U[..., c] = (k - lo) / span
        return U

    return round_to_grid


def _checked_encoding(
    search_space: Mapping[str, BaseDistribution], bounds: Tensor
) -> _Encoding:
    r"""``BoTorchSampler``'s encoding of ``search_space``, checked on ``bounds``.

    The parameters sorted by name, as ``BoTorchSampler`` passes them; else in
    the order given (a direct caller's), if that one gives ``bounds``.
    """
    space = _checked_space(search_space)
    given = {name: d for name, d in search_space.items() if name in space}
    error = _encoding_mismatch(space, bounds)
    if error is None:
        return _Encoding(space)
    if list(given) != list(space) and _encoding_mismatch(given, bounds) is None:
        return _Encoding(given)
    raise InputDataError(error)


def _encoding_mismatch(
    space: dict[str, BaseDistribution], bounds: Tensor
) -> str | None:
    r"""How the encoding of ``space`` differs from ``bounds``, or None."""
    encoding = _Encoding(space)
    expected = torch.as_tensor(encoding._bounds.T).to(bounds)
    if expected.shape != bounds.shape:
        return (
            f"search_space is encoded as {expected.shape[-1]} columns (parameters "
            f"{list(space)}, sorted by name as BoTorchSampler encodes them) but "
            f"bounds has {bounds.shape[-1]}: is it the study's search space?"
        )
    close = torch.isclose(expected, bounds, rtol=_GRID_TOL, atol=_GRID_TOL).all(dim=0)
    for name, columns in zip(space, encoding.columns, strict=True):
        if not bool(close[torch.as_tensor(columns)].all()):
            return (
                f"search_space's parameter {name!r} ({space[name]!r}) is encoded "
                f"with bounds {expected[:, columns].T.tolist()} but bounds has "
                f"{bounds[:, columns].T.tolist()} there (parameters sorted by "
                "name, as BoTorchSampler encodes them): is it the study's search "
                "space?"
            )
    return None


def _distribution_rounding(encoding: _Encoding) -> Callable[[Tensor], Tensor] | None:
    r"""Round each parameter with a step as Optuna's untransform rounds it.

    Vectorised over the points; the continuous columns are left as they are.
    """
    rules: list[tuple[BaseDistribution, list[int], float, float]] = []
    for distribution, columns in zip(
        encoding.search_space.values(), encoding.columns, strict=True
    ):
        if isinstance(distribution, FloatDistribution) and distribution.step is None:
            continue
        low, high = encoding._bounds[columns[0]]
        rules.append((distribution, columns.tolist(), float(low), float(high)))
    if not rules:
        return None

    def round_to_grid(U: Tensor) -> Tensor:
        U = U.detach().clone()
        for d, columns, lo, hi in rules:
            if isinstance(d, CategoricalDistribution):
                choice = U[..., columns].argmax(dim=-1, keepdim=True)
                U[..., columns] = torch.zeros_like(U[..., columns]).scatter_(
                    -1, choice, 1.0
                )
                continue
            c = columns[0]
            value = lo + U[..., c] * (hi - lo)
            if isinstance(d, IntDistribution) and d.log:
                k = torch.exp(value).round().clamp(d.low, d.high)
                U[..., c] = (torch.log(k) - lo) / (hi - lo)
                continue
            count = round((d.high - d.low) / d.step)
            if isinstance(d, IntDistribution):
                k = torch.floor((value - d.low) / d.step + 0.5)
            else:
                k = torch.round((value - d.low) / d.step)
            real = d.low + k.clamp(0, count) * d.step
            U[..., c] = (real - lo) / (hi - lo)
        return U

    return round_to_grid


def _checked_space(
    search_space: Mapping[str, BaseDistribution],
) -> dict[str, BaseDistribution]:
    r"""``search_space`` as ``BoTorchSampler`` encodes it, or an ``InputDataError``.

    Sorted by name (Optuna's intersection search space), a parameter of a
    single value left out (``infer_relative_search_space``).
    """
    if not isinstance(search_space, Mapping) or not all(
        isinstance(d, (CategoricalDistribution, FloatDistribution, IntDistribution))
        for d in search_space.values()
    ):
        raise InputDataError(
            "search_space must map parameter names to Optuna's "
            "CategoricalDistribution, FloatDistribution or IntDistribution; got "
            f"{search_space!r}."
        )
    space = {
        name: search_space[name]
        for name in sorted(search_space)
        if not search_space[name].single()
    }
    if not space:
        raise InputDataError(
            "search_space has no parameter of more than one value; BoTorchSampler "
            "passes no such parameter to a candidates function."
        )
    return space


def _integer_range(x: Tensor, low: Tensor, high: Tensor) -> tuple[float, float] | None:
    r"""``(a, b)`` when ``x`` are integers in bounds ``(a - 1/2, b + 1/2)``."""
    a, b = float(low) + 0.5, float(high) - 0.5
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        return None
    if a != round(a) or b != round(b):
        return None
    if bool((x != x.round()).any()):
        return None
    return a, b


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
