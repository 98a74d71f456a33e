#!/usr/bin/env python3
r"""A resumed checkpoint's record, checked against the backend's own record.

A checkpoint holds two records of one run: this package's (the settings and
every trial's parameters, score and timings; :mod:`.checkpoint`) and the
backend's (Ax's experiment and data, or the Optuna study's trials). They are
written together, so they agree unless the file was edited: a trial's score
changed, or the search space widened in the settings, was accepted and the
run went on with a record that disagreed with what Ax or Optuna had seen
(and would go on proposing). A resume compares the two first
(:func:`check_ax_run`, :func:`check_study_run`) and refuses, naming what
differs, before any trial is evaluated.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError, describe
from botorch_sketch.tune.space import SpaceParam

_ADVICE = (
    "was it edited after it was saved? Resume from a backup, or start a new run "
    "with --overwrite or another --checkpoint"
)


def _refuse(checkpoint: str, backend: str, difference: str) -> TuneError:
    return TuneError(
        f"checkpoint {checkpoint} disagrees with {backend}: {difference}; {_ADVICE}"
    )


#: Ax keeps a trial's values rounded to 10 decimal places (``complete_trial``).
_AX_ROUNDING = 1e-9


def _same(a: Any, b: Any, tolerance: float = 0.0) -> bool:
    # Numbers to the last bits, or within ``tolerance`` (absolute and
    # relative); NaN equal to NaN; anything else by ``==``.
    real = (numbers.Real,)
    if isinstance(a, real) and isinstance(b, real):
        if isinstance(a, bool) or isinstance(b, bool):
            return bool(a) == bool(b) and type(a) is type(b)
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        rel_tol = max(tolerance, 1e-12)
        return a == b or math.isclose(a, b, rel_tol=rel_tol, abs_tol=tolerance)
    return bool(a == b)


def _plain(value: Any) -> Any:
    # A NumPy scalar (of a pandas row) as the Python value it holds.
    return value.item() if hasattr(value, "item") else value


def _describe_param(p: SpaceParam) -> str:
    if p.kind == "categorical":
        return f"one of {list(p.choices)}"
    scale = "log-scaled " if p.log else ""
    return f"a {scale}{p.kind} in [{p.low:g}, {p.high:g}]"


def _describe_distribution(distribution: Any) -> str:
    # An Optuna distribution as ``_describe_param`` describes a parameter.
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    if isinstance(distribution, CategoricalDistribution):
        return f"one of {list(distribution.choices)}"
    kind = "float" if isinstance(distribution, FloatDistribution) else "int"
    step = getattr(distribution, "step", None)
    scale = "log-scaled " if distribution.log else ""
    grid = f" by steps of {step:g}" if step not in (None, 1) else ""
    return f"a {scale}{kind} in [{distribution.low:g}, {distribution.high:g}]{grid}"


def _trial_values(entry: Mapping[str, Any], objectives: list[str]) -> dict[str, Any]:
    # A completed trial's values by objective, as the run's record holds them.
    values = dict(entry.get("values", {}))
    values.setdefault(objectives[0], entry.get("score"))
    return values


def _value_name(name: str, objectives: list[str]) -> str:
    return "score" if name == objectives[0] else f"value of {name!r}"


# ------------------------------------------------------------------------ Ax


def check_ax_run(
    checkpoint: str,
    snapshot: Mapping[str, Any],
    client: Any,
    record: Mapping[str, Any],
    config: TuneConfig,
) -> None:
    r"""Refuse an Ax checkpoint whose record disagrees with its Ax experiment.

    The search space and objectives of the run's settings against those of
    Ax's experiment; every trial of the record against Ax's trials
    (``Client.summarize``): one must be completed where the other is, with the
    same parameters and values.

    Args:
        checkpoint: The checkpoint, for the message.
        snapshot: Its JSON (Ax's snapshot, with the record beside it).
        client: The ``ax.api.Client`` restored from it.
        record: The run's record in it.
        config: The run's settings.

    Raises:
        TuneError: Naming the first difference.
    """
    from ax.core.parameter import ChoiceParameter, ParameterType, RangeParameter
    from ax.storage.json_store.decoder import object_from_json

    def refuse(difference: str) -> TuneError:
        return _refuse(checkpoint, "its Ax experiment", difference)

    try:
        experiment = object_from_json(snapshot["experiment"])
    except Exception as e:  # Ax raises many kinds on malformed snapshots.
        raise TuneError(
            f"checkpoint {checkpoint} could not be restored by Ax "
            f"({type(e).__name__}: {e})"
        ) from None
    ax_params = dict(experiment.search_space.parameters)
    for p in config.params():
        ax_param = ax_params.pop(p.name, None)
        if ax_param is None:
            raise refuse(
                f"parameter {p.name!r} is in the run's settings but not in Ax's "
                "experiment"
            )
        if isinstance(ax_param, ChoiceParameter):
            same = p.kind == "categorical" and len(ax_param.values) == len(p.choices)
            same = same and all(
                _same(a, b) for a, b in zip(ax_param.values, p.choices, strict=False)
            )
            theirs = f"one of {list(ax_param.values)}"
        elif isinstance(ax_param, RangeParameter):
            kind = "int" if ax_param.parameter_type == ParameterType.INT else "float"
            same = (
                p.kind == kind
                and _same(ax_param.lower, p.low)
                and _same(ax_param.upper, p.high)
                and bool(ax_param.log_scale) == p.log
            )
            scale = "log-scaled " if ax_param.log_scale else ""
            theirs = f"a {scale}{kind} in [{ax_param.lower:g}, {ax_param.upper:g}]"
        else:
            same, theirs = False, type(ax_param).__name__
        if not same:
            raise refuse(
                f"parameter {p.name!r} is {_describe_param(p)} in the run's "
                f"settings but {theirs} in Ax's experiment"
            )
    if ax_params:
        raise refuse(
            f"parameter {next(iter(ax_params))!r} is in Ax's experiment but not "
            "in the run's settings"
        )
    weights = dict(experiment.optimization_config.objective.metric_weights)
    theirs = {name: "min" if w < 0 else "max" for name, w in weights.items()}
    if theirs != dict(config.objectives):
        raise refuse(
            f"the objectives are {dict(config.objectives)} in the run's settings but "
            f"{theirs} in Ax's experiment"
        )
    _check_ax_trials(client, record, config, refuse)


def _check_ax_trials(
    client: Any, record: Mapping[str, Any], config: TuneConfig, refuse: Any
) -> None:
    # Every trial of the record against Ax's summary of its trials.
    frame = client.summarize()
    rows = {
        int(row["trial_index"]): {k: _plain(v) for k, v in row.items()}
        for row in frame.to_dict("records")
    }
    objectives = list(config.objectives)
    names = [p.name for p in config.params()]
    for index, entry in record["trials"].items():
        row = rows.pop(int(index), None)
        where = f"trial {index}"
        if row is None:
            raise refuse(f"{where} is in the run's record but not in Ax's experiment")
        status = str(row["trial_status"])
        if ("score" in entry) != (status == "COMPLETED"):
            state = "completed" if "score" in entry else "not completed"
            raise refuse(
                f"{where} is {state} in the run's record but {status} in Ax's "
                "experiment"
            )
        for name in names:
            if name not in entry.get("parameters", {}) or name not in row:
                continue
            mine, ax_value = entry["parameters"][name], row[name]
            if not _same(mine, ax_value):
                raise refuse(
                    f"{where}: its parameter {name!r} is {describe(mine)} in the "
                    f"run's record but {describe(ax_value)} in Ax's experiment"
                )
        if "score" not in entry:
            continue
        for name, mine in _trial_values(entry, objectives).items():
            ax_value = row.get(name, math.nan)
            if not _same(mine, ax_value, _AX_ROUNDING):
                raise refuse(
                    f"{where}: its {_value_name(name, objectives)} is "
                    f"{describe(mine)} in the run's record but {describe(ax_value)} "
                    "in Ax's data"
                )
    if rows:
        index, row = next(iter(rows.items()))
        raise refuse(
            f"trial {index} is in Ax's experiment ({row['trial_status']}) but not "
            "in the run's record"
        )


# -------------------------------------------------------------------- Optuna


def check_study_run(
    checkpoint: str,
    study: Any,
    config: TuneConfig,
    expected: Mapping[str, Any],
    key: str,
) -> None:
    r"""Refuse an Optuna checkpoint whose record disagrees with its study.

    The objectives' directions against the study's; the search space of the
    run's settings against every trial's distributions; every trial's record
    (its user attribute) against the trial: completed where the trial is, with
    its parameters and values.

    Args:
        checkpoint: The checkpoint, for the message.
        study: The run's ``optuna.Study``.
        config: The run's settings.
        expected: The Optuna distribution of each parameter of the settings
            (what :mod:`.study` asks the study with).
        key: The trials' user attribute holding this package's record.

    Raises:
        TuneError: Naming the first difference.
    """
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    def refuse(difference: str) -> TuneError:
        return _refuse(checkpoint, "its Optuna study", difference)

    directions = [
        "max" if d == StudyDirection.MAXIMIZE else "min" for d in study.directions
    ]
    if directions != list(config.objectives.values()):
        raise refuse(
            f"the objectives are {dict(config.objectives)} in the run's settings but "
            f"the study's directions are {directions}"
        )
    described = {p.name: _describe_param(p) for p in config.params()}
    objectives = list(config.objectives)
    for trial in study.get_trials(deepcopy=False):
        where = f"trial {trial.number}"
        for name, distribution in trial.distributions.items():
            if name not in expected:
                raise refuse(
                    f"parameter {name!r} is in the study's {where} but not in the "
                    "run's settings"
                )
            if distribution != expected[name]:
                raise refuse(
                    f"parameter {name!r} is {described[name]} in the run's "
                    f"settings but {_describe_distribution(distribution)} in the "
                    f"study's {where}"
                )
        entry = trial.user_attrs.get(key)
        if not isinstance(entry, dict):
            continue  # A trial a killed run left running: no record yet.
        completed = trial.state == TrialState.COMPLETE
        if ("score" in entry) != completed:
            state = "completed" if "score" in entry else "not completed"
            raise refuse(
                f"{where} is {state} in the run's record but {trial.state.name} in "
                "the study"
            )
        for name, mine in entry.get("parameters", {}).items():
            theirs = trial.params.get(name)
            if not _same(mine, theirs):
                raise refuse(
                    f"{where}: its parameter {name!r} is {describe(mine)} in the "
                    f"run's record but {describe(theirs)} in the study"
                )
        if not completed:
            continue
        study_values = dict(zip(objectives, trial.values, strict=True))
        for name, mine in _trial_values(entry, objectives).items():
            theirs = study_values.get(name, math.nan)
            if not _same(mine, theirs):
                raise refuse(
                    f"{where}: its {_value_name(name, objectives)} is "
                    f"{describe(mine)} in the run's record but {describe(theirs)} "
                    "in the study"
                )
