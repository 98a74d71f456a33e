#!/usr/bin/env python3
r"""The checks of a checkpoint's record: its settings and every trial's fields.

A damaged or hand-edited checkpoint gives a message rather than a traceback or
a run without end. Fields a later format may add are ignored; those this
version reads are checked (types and ranges).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from botorch_sketch.tune.config import (
    MAX_TRIALS,
    TuneConfig,
    is_int,
    is_real,
    setting_problems,
)
from botorch_sketch.tune.errors import describe
from botorch_sketch.tune.space import parse_space

_PARAM_FIELDS = {"name": str, "low": float, "high": float, "kind": str, "log": bool}
_TRIAL_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")


def record_problem(record: Mapping[str, Any]) -> str | None:
    r"""What is wrong with a checkpoint's record, or None.

    Args:
        record: The record, with its ``"config"`` and ``"trials"`` keys (the
            settings added after format 1 filled in with their defaults).

    Returns:
        The first problem found, for a message, or None if there is none.
    """
    config = record["config"]
    if not isinstance(config, dict):
        return f"config must be an object, got {describe(config)}"
    missing = [
        k for k in (*TuneConfig.__dataclass_fields__, "params") if k not in config
    ]
    if missing:
        return f"config lacks {missing[0]!r}"
    for name, problem in setting_problems(config):
        return f"config field {name!r} {problem}"
    problem = _params_problem(config)
    if problem:
        return problem
    trials = record["trials"]
    if not isinstance(trials, dict):
        return f"trials must be an object, got {describe(trials)}"
    for index, trial in trials.items():
        where = f"trial {describe(index)}"
        if not _TRIAL_INDEX.fullmatch(index):
            return f"{where}: a trial index must be a non-negative integer"
        if not isinstance(trial, dict):
            return f"{where} must be an object, got {describe(trial)}"
        problem = trial_problem(trial)
        if problem:
            return f"{where}: {problem}"
    return None


def _params_problem(config: Mapping[str, Any]) -> str | None:
    # The search space: a --space for your own objective, else Param records.
    params = config["params"]
    if config["objective"] is not None:
        try:
            parse_space(config["space"])
            parse_space(params)
        except ValueError as e:
            return f"config field 'space' or 'params' is bad: {e}"
    elif not isinstance(params, list) or not all(
        isinstance(p, dict)
        and all(
            is_real(p.get(k)) if kind is float else type(p.get(k)) is kind
            for k, kind in _PARAM_FIELDS.items()
        )
        and p["kind"] in ("float", "int")
        for p in params
    ):
        return (
            "config field 'params' must be a list of {name, low, high, kind, log} "
            f"objects, got {describe(params)}"
        )
    return None


def trial_problem(trial: Mapping[str, Any]) -> str | None:
    r"""What is wrong with one trial's entry in a record, or None.

    Args:
        trial: The entry: its parameters, and the values, score, timings and
            failure it has so far.

    Returns:
        The first problem found, for a message, or None if there is none.
    """
    parameters = trial.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        is_real(v) or isinstance(v, (str, bool)) for v in parameters.values()
    ):
        return (
            "'parameters' must map names to numbers (or the texts and booleans of "
            f"categorical ones), got {describe(parameters)}"
        )
    values = trial.get("values", {})
    if not isinstance(values, dict) or not all(
        is_real(v, finite=False) for v in values.values()
    ):
        return f"'values' must map names to numbers, got {describe(values)}"
    for name in ("suggest_seconds", "eval_seconds"):
        value = trial.get(name, 0.0)
        if not (is_real(value) and value >= 0):
            return f"{name!r} must be a non-negative number, got {describe(value)}"
    # A failed cross-validation fit may score NaN, so the score may be NaN.
    if "score" in trial and not is_real(trial["score"], finite=False):
        return f"'score' must be a number, got {describe(trial['score'])}"
    if ("score" in trial) != ("completed" in trial):
        return "'score' and 'completed' must be stored together"
    completed = trial.get("completed", 1)
    if not (is_int(completed) and 1 <= completed <= MAX_TRIALS):
        return (
            f"'completed' must be an integer from 1 to {MAX_TRIALS}, got "
            f"{describe(completed)}"
        )
    if not isinstance(trial.get("failed", ""), str):
        return f"'failed' must be a text, got {describe(trial['failed'])}"
    return None
