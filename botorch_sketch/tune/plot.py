#!/usr/bin/env python3
r"""Plots of tuning runs from their checkpoints: best score and time per trial.

Reads only this package's record in a checkpoint, so it needs neither Ax nor the
run's model, and draws any number of runs on the same axes (e.g. ``NystromGP``
against Ax's default model on the same problem).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botorch_sketch.tune.checkpoint import read_record


@dataclass
class Series:
    r"""One run's curves.

    Attributes:
        label: The legend entry.
        completed: ``1, 2, ...``, the number of completed trials.
        best: The best score after each completed trial.
        trial: The index (from 1) of each trial with a suggestion time.
        suggest_seconds: Ax's time to suggest that trial (model fit and
            acquisition optimisation, shared equally by the trials of one call).
        objective: The name of the (first) objective.
        minimize: Whether it is minimised (``best`` is then the running minimum).
    """

    label: str
    completed: list[int]
    best: list[float]
    trial: list[int]
    suggest_seconds: list[float]
    objective: str = "accuracy"
    minimize: bool = False


def series(record: Mapping[str, Any], label: str | None = None) -> Series:
    r"""The curves of one run from its record.

    Args:
        record: The ``"botorch_sketch_tune"`` record of a checkpoint.
        label: The legend entry; defaults to the model, estimator and data set.

    Returns:
        The run's :class:`Series`.
    """
    config = record["config"]
    trials = record["trials"]
    objective, direction = next(
        iter(config.get("objectives", {"accuracy": "max"}).items())
    )
    sign = -1.0 if direction == "min" else 1.0
    done = sorted((t["completed"], t["score"]) for t in trials.values() if "score" in t)
    best, running = [], float("-inf")
    for _, score in done:
        running = max(running, sign * score)
        best.append(sign * running)
    timed = sorted(
        (int(i), t["suggest_seconds"])
        for i, t in trials.items()
        if "suggest_seconds" in t
    )
    model = config["model"]
    if config.get("acquisition", "auto") != "auto":
        model = f"{model}+{config['acquisition']}"
    if config.get("backend", "ax") != "ax":
        model = f"{config['backend']}:{model}"
    if config.get("objective") is not None:
        problem = config["objective"]
    else:
        problem = f"{config['estimator']}/{config['dataset']}"
    return Series(
        label=label or f"{model} ({problem})",
        completed=list(range(1, len(best) + 1)),
        best=best,
        trial=[i + 1 for i, _ in timed],
        suggest_seconds=[s for _, s in timed],
        objective=objective,
        minimize=direction == "min",
    )


def _rolling_median(values: Sequence[float], window: int) -> list[float]:
    return [
        statistics.median(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def plot_series(runs: Sequence[Series], path: str, title: str | None = None) -> str:
    r"""Draw best score and suggestion time per trial against trials.

    Args:
        runs: The runs' curves.
        path: The image file to write (its format from the extension).
        title: The figure title.

    Returns:
        ``path``.
    """
    # A Figure of its own: no pyplot state, no backend switch in the caller.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    (left, right) = fig.subplots(1, 2)
    for run in runs:
        (line,) = left.plot(run.completed, run.best, label=run.label)
        right.plot(
            run.trial,
            run.suggest_seconds,
            ".",
            ms=2,
            alpha=0.35,
            color=line.get_color(),
        )
        window = max(1, len(run.trial) // 25)
        right.plot(
            run.trial,
            _rolling_median(run.suggest_seconds, window),
            color=line.get_color(),
            label=run.label,
        )
    left.set_xlabel("completed trials")
    names = {(r.objective, r.minimize) for r in runs}
    if names == {("accuracy", False)}:
        left.set_ylabel("best cross-validated accuracy")
    else:
        left.set_ylabel(
            " / ".join(f"{'lowest' if m else 'highest'} {n}" for n, m in sorted(names))
        )
    left.grid(alpha=0.3)
    left.legend(loc="best")
    right.set_xlabel("trial")
    right.set_ylabel("time to suggest the trial [s]")
    right.set_yscale("log")
    right.grid(alpha=0.3, which="both")
    right.legend(loc="upper left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_checkpoints(paths: Sequence[str], out: str) -> tuple[str, list[Series]]:
    r"""Plot one or more runs from their checkpoint files.

    Runs with the same default label are told apart by file name.

    Args:
        paths: Checkpoint files.
        out: The image file to write.

    Returns:
        ``out`` and the runs' curves.
    """
    runs = [series(read_record(p)[1]) for p in paths]
    labels = [r.label for r in runs]
    for run, p in zip(runs, paths, strict=True):
        if labels.count(run.label) > 1:
            run.label = f"{run.label} [{os.path.basename(p)}]"
    return plot_series(runs, out), runs


def summary(runs: Sequence[Series]) -> str:
    r"""A Markdown table: completed trials, best score, late suggestion times.

    The best score is that of the first objective (the highest, or the lowest
    for a minimised one).
    """
    lines = [
        "| run | completed | best score | median suggest s (last 10%) |",
        "|---|---:|---:|---:|",
    ]
    for run in runs:
        tail = run.suggest_seconds[-max(1, len(run.suggest_seconds) // 10) :]
        late = statistics.median(tail) if tail else float("nan")
        best = run.best[-1] if run.best else float("nan")
        lines.append(
            f"| {run.label} | {len(run.completed)} | {best:.4f} | {late:.3f} |"
        )
    return "\n".join(lines)
