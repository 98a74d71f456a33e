#!/usr/bin/env python3
r"""The settings of a tune run (:class:`TuneConfig`), their choices and ranges.

The same checks serve the command line (:meth:`TuneConfig.validate`) and a
checkpoint's stored settings (:func:`setting_problems`, used by
:mod:`botorch_sketch.tune.validation`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from botorch_sketch.tune.errors import TuneError, describe
from botorch_sketch.tune.objective import ObjectiveError, parse_objectives
from botorch_sketch.tune.problems import DATASETS, ESTIMATORS, search_space
from botorch_sketch.tune.space import SpaceParam, parse_space, to_dict

METRIC = "accuracy"
MODELS = ("nystrom", "subset", "default")
#: ``ax``: an ``ax.api.Client`` saved as Ax's JSON; ``optuna``: an Optuna study
#: in an SQLite file, sampled by
#: :class:`~botorch_sketch.integrations.optuna.SketchSampler` (``--model
#: default``: Optuna's ``GPSampler``).
BACKENDS = ("ax", "optuna")
#: The objective of the built-in problems, maximised.
BUILTIN_OBJECTIVES = {METRIC: "max"}
#: ``auto``: Ax's choice (qLogNoisyExpectedImprovement), whose cost grows with the
#: observations it keeps as baseline; ``qlogei``: qLogExpectedImprovement, which
#: compares with the best observed mean and costs the same at any n; ``bkb``:
#: qBKBUpperConfidenceBound (``nystrom`` only).
ACQUISITIONS = ("auto", "qlogei", "bkb")
#: The most trials a run may ask for. A GP-based search is of no use long before
#: this (its model's cost grows with every trial); the bound keeps a damaged or
#: hostile checkpoint from starting a run without end.
MAX_TRIALS = 100_000
#: The inclusive range of each integer setting. The seed's is numpy's, which
#: scikit-learn's fold split passes it to; the others only keep absurd values
#: (a checkpoint's 10**30, say) from reaching Ax, torch or scikit-learn.
LIMITS: dict[str, tuple[int, int]] = {
    "trials": (1, MAX_TRIALS),
    "initial": (1, MAX_TRIALS),
    "folds": (2, 1000),
    "seed": (0, 2**32 - 1),
    "subset_size": (2, MAX_TRIALS),
    "num_restarts": (1, 10_000),
    "raw_samples": (1, 1_000_000),
}
_CHOICES: dict[str, Any] = {
    "dataset": DATASETS,
    "estimator": ESTIMATORS,
    "model": MODELS,
    "acquisition": ACQUISITIONS,
    "backend": BACKENDS,
}
_OPTIONAL = ("num_restarts", "raw_samples")


def is_int(value: Any) -> bool:
    r"""Whether ``value`` is an integer; JSON's true and false are not counts."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: Any, finite: bool = True) -> bool:
    r"""Whether ``value`` is a real number (finite, unless ``finite`` is False).

    Args:
        value: Any value.
        finite: Refuse NaN and the infinities.

    Returns:
        False for booleans, texts and integers beyond any float too.
    """
    if not (is_int(value) or isinstance(value, float)):
        return False
    try:
        return math.isfinite(value) or not finite
    except OverflowError:  # an integer beyond any float
        return False


def setting_problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    r"""The settings in ``values`` of the wrong type or outside their range.

    Shared by :meth:`TuneConfig.validate` and the check of a checkpoint's
    stored settings; settings absent from ``values`` are not checked.

    Args:
        values: Settings by name, as in :class:`TuneConfig`.

    Yields:
        ``(name, what is wrong)`` for each bad setting.
    """
    for name, choices in _CHOICES.items():
        if name in values:
            value = values[name]
            if not isinstance(value, str) or value not in choices:
                problem = f"must be one of {sorted(choices)}, got {describe(value)}"
                yield name, problem
    for name, (low, high) in LIMITS.items():
        if name not in values or (name in _OPTIONAL and values[name] is None):
            continue
        value = values[name]
        if not is_int(value) or not low <= value <= high:
            problem = f"must be an integer from {low} to {high}, got {describe(value)}"
            yield name, problem
    if "bounds" in values:
        bounds = values["bounds"]
        if not isinstance(bounds, Mapping) or not all(
            isinstance(k, str)
            and isinstance(v, (list, tuple))
            and len(v) == 2
            and all(is_real(x) for x in v)
            for k, v in bounds.items()
        ):
            problem = (
                "must map parameter names to [low, high] pairs of finite "
                f"numbers, got {describe(bounds)}"
            )
            yield "bounds", problem
    if values.get("objective") is not None and not isinstance(values["objective"], str):
        yield (
            "objective",
            f"must be MODULE:FUNCTION, got {describe(values['objective'])}",
        )
    if "objectives" in values:
        objectives = values["objectives"]
        if not (
            isinstance(objectives, Mapping)
            and objectives
            and all(
                isinstance(k, str) and v in ("min", "max")
                for k, v in objectives.items()
            )
        ):
            problem = f"must map names to 'min' or 'max', got {describe(objectives)}"
            yield "objectives", problem


@dataclass
class TuneConfig:
    r"""The settings of a run; those that define the problem are stored with it."""

    dataset: str = "digits"
    estimator: str = "svm"
    model: str = "nystrom"
    trials: int = 100
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    initial: int = 10
    folds: int = 3
    seed: int = 0
    num_restarts: int | None = None
    raw_samples: int | None = None
    acquisition: str = "auto"
    #: ``subset``: GradientSubsetGP's subset size (the paper's M is about 100).
    subset_size: int = 100
    backend: str = "ax"
    #: Your own objective, ``package.module:function``, and its search space
    #: (``--space`` entries with their names, see
    #: :mod:`botorch_sketch.tune.space`); None for a built-in problem.
    objective: str | None = None
    space: list[dict[str, Any]] | None = None
    #: The objectives' names and directions (``"min"`` or ``"max"``).
    objectives: dict[str, str] = field(default_factory=BUILTIN_OBJECTIVES.copy)

    #: Settings a resumed run must share with its checkpoint.
    PROBLEM = (
        "dataset",
        "estimator",
        "model",
        "acquisition",
        "params",
        "folds",
        "seed",
        "backend",
        "objective",
        "objectives",
    )

    @property
    def custom(self) -> bool:
        r"""Whether this run tunes your own objective (``--objective``)."""
        return self.objective is not None

    def params(self) -> tuple[SpaceParam, ...]:
        r"""The search space (raises ``ValueError`` on bad input)."""
        if self.custom:
            if self.space is None:
                raise ValueError("--objective needs --space FILE")
            return parse_space(self.space)
        return search_space(self.estimator, self.bounds)

    def name(self) -> str:
        r"""A short name of the problem: ``estimator-dataset`` or the function's."""
        if self.custom:
            return str(self.objective).rsplit(":", 1)[-1]
        return f"{self.estimator}-{self.dataset}"

    def validate(self) -> None:
        r"""Raise ``TuneError`` naming the first bad setting (type, range, choice)."""
        for name, problem in setting_problems(asdict(self)):
            raise TuneError(f"--{name.replace('_', '-')} {problem}")
        if self.acquisition == "bkb" and self.model != "nystrom":
            raise TuneError("--acquisition bkb needs --model nystrom")
        if self.backend == "optuna" and self.acquisition != "auto":
            raise TuneError(
                "--acquisition is an Ax setting; with --backend optuna the sampler "
                "chooses (SketchSampler: qLogNEI, qLogNEHVI for several objectives)"
            )
        if self.custom:
            try:
                parse_objectives([f"{k}={v}" for k, v in self.objectives.items()])
            except ObjectiveError as e:
                raise TuneError(str(e)) from None
        elif self.objectives != BUILTIN_OBJECTIVES:
            raise TuneError(
                "--objectives names the values of your own --objective; the "
                f"built-in problems maximise {METRIC}"
            )
        if self.model == "subset" and self.subset_size <= self.initial + 1:
            raise TuneError(
                f"--subset-size ({self.subset_size}) must exceed --initial + 1 "
                f"({self.initial + 1}): the initial trials and the newest are kept"
            )
        try:
            self.params()
        except ValueError as e:
            raise TuneError(f"bad search space: {e}") from None

    def record(self) -> dict[str, Any]:
        r"""A JSON record of the settings and the search space."""
        out = asdict(self)
        out["bounds"] = {k: list(v) for k, v in self.bounds.items()}
        if self.custom:
            out["params"] = [to_dict(p) for p in self.params()]
        else:
            out["params"] = [p.to_dict() for p in self.params()]
        return out
