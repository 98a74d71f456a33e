#!/usr/bin/env python3
r"""What the sampler reads from a study's trials, and what it writes to them.

A trial's relative parameters are written to its system attributes so that
other workers on the same storage see a running trial's point before its
objective has called ``suggest_*``; they are read back as pending points.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Container, Sequence
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError
from botorch.exceptions.warnings import InputDataWarning
from optuna.distributions import BaseDistribution
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState
from torch import Tensor

from botorch_sketch.integrations.optuna.encoding import _TKWARGS, _contains

_RELATIVE_PARAMS_KEY = "botorch_sketch:relative_params"
#: Where Optuna's samplers write a ``constraints_func``'s values, which
#: ``FrozenTrial.constraints`` reads back as the constraints "0", "1", ...
_CONSTRAINTS_KEY = "constraints"
#: RDB storage caps an attribute at 2046 characters.
_SYSTEM_ATTR_MAX_LENGTH = 2045


def _completed_trials(
    trials: list[FrozenTrial], search_space: dict[str, BaseDistribution]
) -> list[FrozenTrial]:
    r"""The completed trials with every parameter, in the order they completed.

    In completion order, so that each trial's data extend the previous
    trial's and a carried model only absorbs the new rows.
    """
    completed = [
        t
        for t in trials
        if t.state == TrialState.COMPLETE and search_space.keys() <= t.params.keys()
    ]
    completed.sort(key=_completion_order)
    return completed


def _failed_trials(
    trials: list[FrozenTrial],
    search_space: dict[str, BaseDistribution],
    known: Container[int] = (),
) -> list[FrozenTrial]:
    r"""The failed trials whose parameters all lie in the search space.

    A trial that failed before suggesting every parameter, or with a value
    outside today's search space, is left out.

    Args:
        trials: The study's trials.
        search_space: The search space.
        known: Numbers of failed trials already found in ``search_space``
            (a finished trial's parameters never change), not checked again:
            checking every failed trial's every value cost 13 ms a suggestion
            at 375 failed trials of 18 parameters.
    """
    return [
        t
        for t in trials
        if t.state == TrialState.FAIL
        and (t.number in known or _contains(search_space, t.params))
    ]


def _completion_order(trial: FrozenTrial) -> tuple[float, int]:
    done = trial.datetime_complete
    return (done.timestamp() if done is not None else -math.inf, trial.number)


def _objective_values(study: Study, completed: list[FrozenTrial]) -> Tensor:
    r"""The ``n x M`` objective values, each to be maximised."""
    signs = np.array(
        [1.0 if d == StudyDirection.MAXIMIZE else -1.0 for d in study.directions]
    )
    values = signs * np.array([t.values for t in completed], dtype=np.float64)
    return torch.as_tensor(values, **_TKWARGS)


def _constraint_values(trials: list[FrozenTrial]) -> Tensor | None:
    r"""The ``n x C`` constraints set by ``trial.set_constraint``, None if none."""
    keys = sorted(trials[0].constraints)
    for t in trials:
        if sorted(t.constraints) != keys:
            raise InputDataError(
                f"Every completed trial must set the same constraints: trial "
                f"{trials[0].number} set {keys}, trial {t.number} set "
                f"{sorted(t.constraints)}."
            )
    if not keys:
        return None
    values = np.array([[t.constraints[k] for k in keys] for t in trials])
    return torch.as_tensor(values, **_TKWARGS)


def _pending_params(
    trials: list[FrozenTrial],
    trial: FrozenTrial,
    search_space: dict[str, BaseDistribution],
) -> list[dict[str, Any]]:
    r"""The known points of the running trials other than ``trial``.

    Those of another process on the same storage included (see
    :func:`_share_relative_params`); a point that misses a parameter of the
    search space, or has a value outside it, is left out.
    """
    running = [
        t for t in trials if t.state == TrialState.RUNNING and t.number != trial.number
    ]
    return [
        p
        for p in (_params_of_running(t) for t in running)
        if _contains(search_space, p)
    ]


def _params_of_running(trial: FrozenTrial) -> dict[str, Any]:
    r"""A running trial's parameters, with those chosen but not yet suggested.

    Shared parameters that are not the JSON object the sampler writes (another
    program's attribute, a truncated write) are ignored with an
    ``InputDataWarning``: raised, they stopped every suggestion while the trial
    ran. The trial's suggested parameters are still read.
    """
    chunks = []
    while chunk := trial.system_attrs.get(f"{_RELATIVE_PARAMS_KEY}:{len(chunks)}"):
        chunks.append(chunk)
    params: Any = {}
    if chunks:
        text = "".join(chunks) if all(isinstance(c, str) for c in chunks) else None
        try:
            params = json.loads(text) if text is not None else None
        except (ValueError, RecursionError):
            params = None
        if not isinstance(params, dict):
            warnings.warn(
                f"Running trial {trial.number}'s shared parameters "
                f"({_RELATIVE_PARAMS_KEY!r}) are not the JSON object the sampler "
                "writes; only its suggested parameters are read as pending.",
                InputDataWarning,
                stacklevel=2,
            )
            params = {}
    return {**params, **trial.params}


def _share_relative_params(
    study: Study, trial: FrozenTrial, params: dict[str, Any]
) -> None:
    r"""Write ``trial``'s relative parameters to its system attributes.

    Through the storage, by trial id: Optuna 5 has no public way to set a
    trial's system attribute (``Trial.set_system_attr`` is gone; its own
    samplers write theirs this way), and a user attribute would show in
    ``trial.user_attrs`` and ``trials_dataframe()``.
    """
    text = json.dumps(params)
    for i in range(0, len(text), _SYSTEM_ATTR_MAX_LENGTH):
        study._storage.set_trial_system_attr(
            trial._trial_id,
            f"{_RELATIVE_PARAMS_KEY}:{i // _SYSTEM_ATTR_MAX_LENGTH}",
            text[i : i + _SYSTEM_ATTR_MAX_LENGTH],
        )


def _record_constraints(
    constraints_func: Callable[[FrozenTrial], Sequence[float]],
    study: Study,
    trial: FrozenTrial,
    state: TrialState,
) -> None:
    r"""Write ``constraints_func(trial)`` to a finished trial, as ``GPSampler`` does.

    Only for a ``COMPLETE`` or ``PRUNED`` trial. The values are then the
    trial's ``constraints`` (feasible when every one is ``<= 0``), as if the
    objective had called ``trial.set_constraint`` for each, through the
    storage (see :func:`_share_relative_params`).

    Raises:
        ValueError: When the function does not return a non-empty sequence of
            numbers, or returns a NaN (Optuna's own error, which stops the
            optimisation with the trial recorded without constraints).
    """
    if state not in (TrialState.COMPLETE, TrialState.PRUNED):
        return
    values = constraints_func(trial)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 1 or array.size == 0:
        raise ValueError(
            "constraints_func must return a non-empty sequence of floats; for "
            f"trial {trial.number} it returned {values!r}."
        )
    if np.isnan(array).any():
        raise ValueError(
            f"Constraint values cannot be NaN: constraints_func returned {values!r} "
            f"for trial {trial.number}."
        )
    study._storage.set_trial_system_attr(
        trial._trial_id, _CONSTRAINTS_KEY, array.tolist()
    )
