r"""The ``tuning-peers`` benchmark's methods, tasks, budgets and results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botorch_sketch.tune.problems import (
    ESTIMATORS,
    Param,
    cross_validated,
    evaluate,
)

#: The methods, in the order of the tables.
SKETCH = "SketchSampler"
BOTORCH_NYSTROM = "BoTorchSampler + NystromGP"
AX_OURS = "Ax + NystromGP carried (qLogEI)"
GP = "GPSampler"
TPE = "TPESampler"
BOTORCH = "BoTorchSampler (exact)"
AX_DEFAULT = "Ax default"
METHODS = (SKETCH, BOTORCH_NYSTROM, AX_OURS, GP, TPE, BOTORCH, AX_DEFAULT)
OPTUNA = (SKETCH, BOTORCH_NYSTROM, GP, TPE, BOTORCH)
#: Ours against the peer it is measured against, for the time ratios.
PAIRS = (
    (SKETCH, GP),
    (SKETCH, BOTORCH),
    (BOTORCH_NYSTROM, BOTORCH),
    (AX_OURS, AX_DEFAULT),
)


def _gbm6(p: Mapping[str, Any]) -> Any:
    # ``tune``'s gradient boosting, with ``max_features`` as a sixth parameter.
    return ESTIMATORS["gbm"].build(p)


@dataclass(frozen=True)
class Task:
    r"""A tuning problem: an estimator's search space on a data set."""

    name: str
    dataset: str
    params: tuple[Param, ...]
    #: The estimator of ``botorch_sketch.integrations.tune.problems.ESTIMATORS``,
    #: or None to build it with :func:`_gbm6`.
    estimator: str | None = None

    def score(self, parameters: Mapping[str, Any], seed: int = 0) -> float:
        r"""The 3-fold cross-validated accuracy (fold split ``seed``)."""
        if self.estimator is not None:
            return evaluate(self.dataset, self.estimator, parameters, seed=seed)[0]
        return cross_validated(self.dataset, _gbm6(parameters), seed=seed)[0]


TASKS = {
    "svm": Task(
        "svm/breast_cancer",
        "breast_cancer",
        (Param("C", 1e-3, 1e3, log=True), Param("gamma", 1e-5, 1.0, log=True)),
        "svm",
    ),
    "gbm6": Task(
        "gbm (6 parameters)/breast_cancer",
        "breast_cancer",
        (
            Param("learning_rate", 1e-3, 1.0, log=True),
            Param("max_iter", 10, 200, kind="int", log=True),
            Param("max_leaf_nodes", 4, 64, kind="int", log=True),
            Param("min_samples_leaf", 1, 50, kind="int", log=True),
            Param("l2_regularization", 1e-6, 10.0, log=True),
            Param("max_features", 0.1, 1.0),
        ),
    ),
}


@dataclass(frozen=True)
class Budget:
    r"""The sizes of one budget."""

    #: Tasks tuned (keys of :data:`TASKS`) and the task timed.
    tasks: tuple[str, ...]
    timed_task: str
    trials: int
    seeds: tuple[int, ...]
    #: N at which the suggestion is timed.
    sizes: tuple[int, ...]
    repeats: int = 3
    methods: tuple[str, ...] = METHODS
    #: Trial counts at which best scores are tabulated.
    checkpoints: tuple[int, ...] = (50, 100, 200)
    #: A tuning run stops after this many seconds; a method is no longer timed
    #: at larger N once its median suggestion takes longer than this.
    run_cap_s: float = 3600.0
    suggest_cap_s: float = 120.0
    noise_splits: int = 5
    initial: int = 10
    #: Each run and timing in a process of its own (peak memory per method).
    isolate: bool = True
    #: Time the methods taking turns in one process (``time_interleaved``):
    #: fair ratios on a shared machine, but one peak memory for all.
    interleave: bool = True
    #: Ax's and SketchSampler's optimiser settings (None: their defaults).
    num_restarts: int | None = None
    raw_samples: int | None = None


BUDGETS = {
    "small": Budget(
        ("svm",), "svm", 30, (0,), (50, 100), repeats=2, checkpoints=(20, 30)
    ),
    # The budget: hours to days on 2 cores.
    "large": Budget(
        ("svm", "gbm6"),
        "svm",
        2000,
        (0, 1, 2),
        (100, 300, 1000, 2000),
        checkpoints=(100, 200, 300, 1000, 2000),
    ),
    # What fits in about an hour on 2 shared cores.
    "svm-200": Budget(
        ("svm",),
        "svm",
        200,
        (0,),
        (100, 300, 1000),
        run_cap_s=900.0,
        checkpoints=(50, 100, 200),
    ),
}


@dataclass
class RunResult:
    r"""One method's tuning run on one task with one seed."""

    method: str
    task: str
    seed: int
    #: Best score after each completed trial and the wall clock at that point.
    best: list[float]
    seconds: list[float]
    best_parameters: dict[str, Any]
    noise_sd: float = float("nan")
    peak_mib: float = float("nan")
    added_mib: float = float("nan")
    capped: bool = False


@dataclass
class TimeResult:
    r"""One method's seconds to suggest trial N, for each N reached."""

    method: str
    seconds: dict[int, float] = field(default_factory=dict)
    #: The error of a suggestion that failed, by N (the others are timed).
    failures: dict[int, str] = field(default_factory=dict)
    peak_mib: float = float("nan")
    added_mib: float = float("nan")
