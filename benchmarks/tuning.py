#!/usr/bin/env python3
r"""``botorch-sketch tune`` with ``NystromGP`` against Ax's default model.

Two measurements on a scikit-learn tuning problem (an RBF SVM's ``C`` and
``gamma``, log scale, 3-fold cross-validated accuracy), with ``NystromGP`` (as
``tune`` builds it: ``CarriedNystromGP``, refitted when the data have grown 5%)
and qLogEI (``--acquisition qlogei``) against Ax's default (``SingleTaskGP`` and
qLogNEI, ``--model default``):

- **Best score.** Both tune the estimator for the same number of trials (the
  same Sobol start and seeds, trials one at a time). A difference in best
  accuracy is "within noise" if it is below twice the standard deviation of
  the accuracy of the two best settings over other fold splits.
- **Time per trial at trial N.** A full run of Ax's default model (an exact GP
  refitted for every trial) to N = 1000 does not fit a benchmark budget, so the
  N trials are a Sobol sample of the search space with the real objective's
  values, attached to an ``ax.api.Client``; each setup's generation strategy
  (that of ``botorch-sketch tune``, going straight to the model) is set on it
  and the time of the next ``get_next_trials`` (Ax's data handling, model fit,
  acquisition optimisation) is the time per trial at trial N. ``NystromGP``
  with Ax's own acquisition (qLogNEI, whose cost grows with the observations
  it keeps as baseline) is timed too, to separate the model's share.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import torch

from botorch_sketch.tune.ax_client import generation_strategy, quiet_ax
from botorch_sketch.tune.config import METRIC, TuneConfig
from botorch_sketch.tune.loop import tune
from botorch_sketch.tune.problems import Param, evaluate, search_space

#: (model, acquisition) of the runs: ours with qLogEI, whose cost does not
#: grow with the number of observations, ours with Ax's choice (qLogNEI), and
#: Ax's default model and acquisition.
OURS = ("nystrom", "qlogei")
SUBSET = ("subset", "qlogei")
OURS_AX_ACQF = ("nystrom", "auto")
AX_DEFAULT = ("default", "auto")
SETUPS = (OURS, SUBSET, OURS_AX_ACQF, AX_DEFAULT)
#: The setups of the tuning runs (best score).
TUNED = (OURS, SUBSET, AX_DEFAULT)
LABELS = {
    OURS: "NystromGP (carried) + qLogEI",
    SUBSET: "GradientSubsetGP (M = 100) + qLogEI",
    OURS_AX_ACQF: "NystromGP (carried) + qLogNEI",
    AX_DEFAULT: "Ax default (SingleTaskGP + qLogNEI)",
}


@dataclass(frozen=True)
class Budget:
    r"""The sizes of one budget."""

    dataset: str
    estimator: str
    #: Trials of each tuning run, and the seeds of the runs.
    trials: int
    seeds: tuple[int, ...]
    #: N: trials attached before timing the next one.
    sizes: tuple[int, ...]
    #: Timed ``get_next_trials`` calls at each N (the median is reported).
    repeats: int
    #: Fold seeds for the noise of the best score.
    noise_splits: int = 5
    initial: int = 8
    #: ``optimize_acqf`` settings of every setup (None: Ax's defaults).
    num_restarts: int | None = None
    raw_samples: int | None = None
    #: Torch threads of every setup: per-core timings, which stay comparable on
    #: a machine that other work shares (oversubscribed threads slow small
    #: problems many times over).
    threads: int = 1


BUDGETS = {
    "small": Budget("breast_cancer", "svm", 25, (0,), (50, 200), 1),
    "large": Budget("breast_cancer", "svm", 80, (0,), (100, 300, 1000), 2),
}


@dataclass
class TuneRow:
    r"""One tuning run."""

    setup: tuple[str, str]
    seed: int
    best: float
    noise_sd: float
    median_suggest_s: float
    checkpoint: str


@dataclass
class TimeRow:
    r"""The time of the next trial after N attached trials."""

    setup: tuple[str, str]
    n: int
    seconds: float


def _config(budget: Budget, setup: tuple[str, str], seed: int = 0) -> TuneConfig:
    return TuneConfig(
        dataset=budget.dataset,
        estimator=budget.estimator,
        model=setup[0],
        acquisition=setup[1],
        trials=budget.trials,
        initial=budget.initial,
        seed=seed,
        num_restarts=budget.num_restarts,
        raw_samples=budget.raw_samples,
    )


def sobol_history(
    budget: Budget, n: int, seed: int = 1234
) -> list[tuple[dict[str, Any], float]]:
    r"""``n`` scrambled Sobol settings of the search space and their accuracies."""
    params = search_space(budget.estimator)
    engine = torch.quasirandom.SobolEngine(len(params), scramble=True, seed=seed)
    history = []
    for u in engine.draw(n, dtype=torch.double):
        setting = {
            p.name: _from_unit(p, float(x)) for p, x in zip(params, u, strict=True)
        }
        history.append(
            (setting, evaluate(budget.dataset, budget.estimator, setting)[0])
        )
    return history


def _from_unit(p: Param, u: float) -> float | int:
    if p.log:
        value = math.exp(math.log(p.low) + u * (math.log(p.high) - math.log(p.low)))
    else:
        value = p.low + u * (p.high - p.low)
    if p.kind == "int":
        return int(min(max(round(value), p.low), p.high))
    return min(max(value, p.low), p.high)


def time_next_trials(
    budget: Budget, history: list[tuple[dict[str, Any], float]]
) -> list[TimeRow]:
    r"""Each setup's time for the next trial after each ``N`` in ``budget.sizes``.

    The trials are attached once, in order, to one client; at each ``N`` every
    setup's generation strategy is set on it in turn and timed (the median of
    ``budget.repeats`` calls, each suggested trial then abandoned, so that every
    call sees the same ``N`` completed trials).

    Args:
        budget: The budget.
        history: At least ``max(budget.sizes)`` settings and their scores.

    Returns:
        The rows, by ``N`` then setup.
    """
    from ax.api.client import Client

    from botorch_sketch.tune.ax_client import ax_parameter

    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[ax_parameter(p) for p in search_space(budget.estimator)]
    )
    client.configure_optimization(objective=METRIC)
    rows, attached = [], 0
    for n in sorted(budget.sizes):
        for setting, score in history[attached:n]:
            index = client.attach_trial(setting)
            client.complete_trial(trial_index=index, raw_data={METRIC: score})
        attached = n
        for setup in SETUPS:
            client.set_generation_strategy(
                generation_strategy(_config(budget, setup), use_existing_trials=True)
            )
            times = []
            for _ in range(budget.repeats):
                start = time.perf_counter()
                (index,) = client.get_next_trials(max_trials=1)
                times.append(time.perf_counter() - start)
                client.mark_trial_abandoned(index)
            rows.append(TimeRow(setup, n, statistics.median(times)))
    return rows


def _noise_sd(budget: Budget, setting: dict[str, Any]) -> float:
    scores = [
        evaluate(budget.dataset, budget.estimator, setting, seed=s)[0]
        for s in range(1, budget.noise_splits + 1)
    ]
    return statistics.stdev(scores)


def run(
    budget_name: str = "small", directory: str | None = None
) -> tuple[list[TuneRow], list[TimeRow]]:
    r"""Run both measurements; checkpoints go to ``directory`` (a temporary one)."""
    with quiet_ax():
        return _run(budget_name, directory)


def _run(
    budget_name: str, directory: str | None
) -> tuple[list[TuneRow], list[TimeRow]]:
    budget = BUDGETS[budget_name]
    directory = directory or tempfile.mkdtemp(prefix="tuning-benchmark-")
    tune_rows = []
    for seed in budget.seeds:
        for setup in TUNED:
            name = f"tuning-{budget_name}-{setup[0]}-{setup[1]}-{seed}.json"
            path = os.path.join(directory, name)
            config = _config(budget, setup, seed)
            record = tune(
                config,
                path,
                overwrite=True,
                workers=0,
                threads=budget.threads,
                progress=False,
            )
            trials = [t for t in record["trials"].values() if "score" in t]
            best = max(trials, key=lambda t: t["score"])
            tune_rows.append(
                TuneRow(
                    setup=setup,
                    seed=seed,
                    best=best["score"],
                    noise_sd=_noise_sd(budget, best["parameters"]),
                    median_suggest_s=statistics.median(
                        t["suggest_seconds"] for t in trials[budget.initial :]
                    ),
                    checkpoint=path,
                )
            )
    history = sobol_history(budget, max(budget.sizes))
    threads = torch.get_num_threads()
    torch.set_num_threads(budget.threads)
    try:
        return tune_rows, time_next_trials(budget, history)
    finally:
        torch.set_num_threads(threads)


def plot(tune_rows: list[TuneRow], stem: str) -> list[str]:
    r"""The best score and time per trial of the tuning runs, one figure per seed."""
    from botorch_sketch.tune.checkpoint import read_record
    from botorch_sketch.tune.plot import plot_series, series

    paths = []
    for seed in sorted({r.seed for r in tune_rows}):
        runs = [
            series(read_record(r.checkpoint)[1], label=LABELS[r.setup])
            for r in tune_rows
            if r.seed == seed
        ]
        paths.append(plot_series(runs, f"{stem}-seed{seed}.png"))
    return paths


def render(
    tune_rows: list[TuneRow], time_rows: list[TimeRow], budget_name: str, machine: str
) -> str:
    r"""Ratios first, then the runs' best scores and the timings."""
    budget = BUDGETS[budget_name]
    seconds = {(r.setup, r.n): r.seconds for r in time_rows}
    lines = [
        f"Tuning an RBF SVM on {budget.dataset} (3-fold CV accuracy). Time per "
        "trial after N completed trials, Ax's default over NystromGP + qLogEI, "
        "over GradientSubsetGP + qLogEI (in brackets: over NystromGP with Ax's "
        "qLogNEI). NystromGP is `tune`'s CarriedNystromGP: its hyperparameters "
        "are refitted once the data have grown 5% since its last fit:",
        "",
    ]
    for n in sorted(budget.sizes):
        ours, theirs = seconds[OURS, n], seconds[AX_DEFAULT, n]
        subset = seconds[SUBSET, n]
        same_acqf = theirs / seconds[OURS_AX_ACQF, n]
        lines.append(
            f"- N = {n}: {theirs / ours:.1f}x, {theirs / subset:.1f}x "
            f"({same_acqf:.1f}x); {ours:.2f} s and {subset:.2f} s against "
            f"{theirs:.2f} s"
        )
    lines += ["", f"Best accuracy after {budget.trials} trials:", ""]
    for seed in budget.seeds:
        rows = {r.setup: r for r in tune_rows if r.seed == seed}
        theirs = rows[AX_DEFAULT]
        for setup in (OURS, SUBSET):
            ours = rows[setup]
            noise = 2 * math.hypot(ours.noise_sd, theirs.noise_sd)
            verdict = "within" if abs(ours.best - theirs.best) <= noise else "outside"
            lines.append(
                f"- seed {seed}: {LABELS[setup]} {ours.best:.4f}, Ax default "
                f"{theirs.best:.4f} ({verdict} noise: twice the split-to-split sd "
                f"is {noise:.4f})"
            )
    lines += [
        "",
        "| setup | seed | best accuracy | sd over splits | median s per BO trial |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in tune_rows:
        lines.append(
            f"| {LABELS[r.setup]} | {r.seed} | {r.best:.4f} | {r.noise_sd:.4f} | "
            f"{r.median_suggest_s:.2f} |"
        )
    lines += ["", "| N | setup | s for the next trial |", "|---:|---|---:|"]
    for r in time_rows:
        lines.append(f"| {r.n} | {LABELS[r.setup]} | {r.seconds:.2f} |")
    lines += [
        "",
        f"Absolute figures are from {machine}; every setup ran with "
        f"{budget.threads} torch thread(s).",
    ]
    return "\n".join(lines)


def report(budget_name: str, stem: str, machine: str) -> tuple[str, list[str]]:
    r"""Run, plot and render (the runner for ``python -m benchmarks``).

    Args:
        budget_name: ``"small"`` or ``"large"``.
        stem: The path prefix of the figures (checkpoints go beside them).
        machine: A description of this machine.

    Returns:
        The Markdown text and the figure paths.
    """
    directory = os.path.dirname(os.path.abspath(stem))
    tune_rows, time_rows = run(budget_name, directory)
    return render(tune_rows, time_rows, budget_name, machine), plot(tune_rows, stem)
