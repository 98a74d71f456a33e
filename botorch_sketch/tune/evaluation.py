#!/usr/bin/env python3
r"""What a worker evaluates for one trial: a built-in problem or your objective."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from botorch_sketch.tune.config import METRIC, TuneConfig
from botorch_sketch.tune.objective import call_objective
from botorch_sketch.tune.problems import evaluate

#: ``parameters -> (values by objective, seconds)``.
TrialFunction = Callable[[dict[str, Any]], tuple[dict[str, float], float]]


def _builtin_trial(
    dataset: str, estimator: str, folds: int, seed: int, parameters: dict[str, Any]
) -> tuple[dict[str, float], float]:
    # One trial of a built-in problem: its score by name, and the seconds.
    score, seconds = evaluate(dataset, estimator, parameters, folds, seed)
    return {METRIC: score}, seconds


def trial_function(config: TuneConfig) -> TrialFunction:
    r"""The picklable ``parameters -> (values by objective, seconds)`` of a run."""
    if config.custom:
        return functools.partial(call_objective, config.objective, config.objectives)
    return functools.partial(
        _builtin_trial, config.dataset, config.estimator, config.folds, config.seed
    )
