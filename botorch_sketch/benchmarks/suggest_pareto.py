#!/usr/bin/env python3
r"""Two objectives: the hypervolume Optuna samplers reach in a whole study.

A task loss and a latency-like cost, both minimised, over a 5-parameter space
(a log-scaled float, three floats, an integer), with noise sd 0.01 on each.
Each method runs whole studies (the ``two-objective`` budget of
:mod:`~botorch_sketch.benchmarks.suggest`: 60 trials, 3 seeds), each in a
process of its own with one thread; the report gives the median hypervolume of
the noise-free values of the trials run, against a fixed reference point, and
the median CPU seconds per study.

``python -m botorch_sketch.benchmarks suggest --budget two-objective``, or
``python -m botorch_sketch.benchmarks.suggest_pareto [BUDGET [METHOD ...]]``.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import statistics
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from botorch_sketch.benchmarks.suggest import BUDGETS, make_sampler

#: The fixed hypervolume reference point (task loss, cost), both minimised.
#: The box's Pareto front reaches 4.39 against it; 60 random trials 3.0-3.4.
PARETO_REF = (2.5, 2.5)


def _two_objective(p: dict[str, Any]) -> tuple[float, float]:
    r"""Noise-free (task loss, latency-like cost) of one configuration.

    The loss is a bowl in ``lr``, ``b`` and ``dropout`` that falls with the
    model's width (``width``, an integer) and its capacity ``a``; the cost
    grows with both (and a little with ``b``): the Pareto front trades width
    and ``a`` against the cost, at the bowl's optimum in the other parameters.
    """
    lr = math.log10(p["lr"])
    width = p["width"]
    loss = (
        2.0 * (lr + 2.5) ** 2
        + 4.0 * (p["b"] - 0.6) ** 2
        + 8.0 * (p["dropout"] - 0.2) ** 2
        + 1.5 / width
        + 0.6 * (1.0 - p["a"]) ** 2
    )
    cost = 0.1 + width / 8.0 + 0.8 * p["a"] ** 2 + 0.2 * p["b"]
    return loss, cost


def hypervolume_2d(points: np.ndarray, ref: tuple[float, float]) -> float:
    r"""The area dominated by ``n x 2`` points (minimised) up to ``ref``."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    points = points[(points < np.asarray(ref)).all(axis=1)]
    area, floor = 0.0, ref[1]
    for f1, f2 in points[np.lexsort((points[:, 1], points[:, 0]))]:
        if f2 < floor:
            area += (ref[0] - f1) * (floor - f2)
            floor = f2
    return float(area)


def pareto_run(
    method: str, trials: int, seed: int, task: str = "smooth"
) -> tuple[float, float]:
    r"""One two-objective study.

    Args:
        method: The sampler (``suggest.make_sampler``).
        trials: Trials of the study.
        seed: The sampler's and the noise's seed.
        task: ``"smooth"`` (the task loss and cost, noise sd 0.01 on each) or
            ``"dtlz2"`` (BoTorch's DTLZ2 of 6 parameters, no noise).

    Returns:
        The hypervolume of the noise-free values of the trials run (against
        ``PARETO_REF``, or DTLZ2's own reference point) and the CPU seconds of
        the whole study.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if task == "dtlz2":
        return _dtlz2_run(method, trials, seed)
    rng = np.random.default_rng(seed)
    values = []

    def objective(trial: Any) -> tuple[float, float]:
        p = {
            "lr": trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            "a": trial.suggest_float("a", 0.0, 1.0),
            "b": trial.suggest_float("b", 0.0, 1.0),
            "dropout": trial.suggest_float("dropout", 0.0, 0.5),
            "width": trial.suggest_int("width", 1, 16),
        }
        loss, cost = _two_objective(p)
        values.append((loss, cost))
        noise = 0.01 * rng.standard_normal(2)
        return loss + float(noise[0]), cost + float(noise[1])

    study = optuna.create_study(
        directions=["minimize", "minimize"], sampler=make_sampler(method, seed)
    )
    start = time.process_time()
    study.optimize(objective, n_trials=trials)
    seconds = time.process_time() - start
    return hypervolume_2d(np.array(values), PARETO_REF), seconds


def _dtlz2_run(method: str, trials: int, seed: int) -> tuple[float, float]:
    # BoTorch's DTLZ2 (both objectives minimised), six floats in [0, 1]: the
    # front is where the last five are 0.5, so five of the six parameters
    # matter only near it.
    import optuna
    from botorch.test_functions.multi_objective import DTLZ2

    problem = DTLZ2(dim=6, num_objectives=2)
    values = []

    def objective(trial: Any) -> tuple[float, float]:
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(problem.dim)]
        y = problem(torch.tensor([x], dtype=torch.float64))[0].tolist()
        values.append(y)
        return y[0], y[1]

    study = optuna.create_study(
        directions=["minimize", "minimize"], sampler=make_sampler(method, seed)
    )
    start = time.process_time()
    study.optimize(objective, n_trials=trials)
    seconds = time.process_time() - start
    ref = tuple(float(r) for r in problem.ref_point)
    return hypervolume_2d(np.array(values), ref), seconds


@dataclass
class ParetoRow:
    r"""One method's whole two-objective studies, one entry per seed."""

    method: str
    trials: int
    task: str
    hypervolumes: list[float]
    seconds: list[float]


def _pareto_alone(
    method: str, trials: int, seed: int, task: str
) -> tuple[float, float]:
    from threadpoolctl import threadpool_limits

    # One thread for torch and for NumPy's and SciPy's BLAS alike: a BLAS
    # pool of two spinning threads on a shared machine counts its waiting
    # as the study's CPU time.
    torch.set_num_threads(1)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pareto_run(method, trials, seed, task)


def run_pareto(
    budget_name: str, processes: int = 1, methods: list[str] | None = None
) -> list[ParetoRow]:
    r"""Whole two-objective studies of every method of a budget, each seed.

    Each study in a process of its own (spawned, one thread), ``processes``
    at a time; ``methods`` picks some of the budget's.
    """
    budget = BUDGETS[budget_name]
    methods = budget.methods if methods is None else methods
    # Seed by seed, the methods in turn: a change in the machine's load
    # falls on every method alike rather than on the last one run.
    jobs = [(m, s) for s in budget.pareto_seeds for m in methods]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=processes, mp_context=context
    ) as pool:
        futures = {
            job: pool.submit(
                _pareto_alone, job[0], budget.pareto_trials, job[1], budget.task
            )
            for job in jobs
        }
        results = {job: f.result() for job, f in futures.items()}
    return [
        ParetoRow(
            m,
            budget.pareto_trials,
            budget.task,
            [results[m, s][0] for s in budget.pareto_seeds],
            [results[m, s][1] for s in budget.pareto_seeds],
        )
        for m in methods
    ]


def render_pareto(rows: list[ParetoRow]) -> str:
    r"""Markdown: median hypervolume and CPU seconds per study, by method."""
    trials = rows[0].trials if rows else 0
    seeds = len(rows[0].hypervolumes) if rows else 0
    task = (
        "DTLZ2 (6 parameters, no noise), hypervolume against (1.1, 1.1)"
        if rows and rows[0].task == "dtlz2"
        else "Two objectives (task loss, latency-like cost), hypervolume of the "
        f"noise-free values against {PARETO_REF}"
    )
    lines = [
        f"{task}; {trials} trials, {seeds} seeds: median (each seed), and CPU "
        "seconds per study, median.",
        "",
        "| method | hypervolume | per seed | CPU s per study |",
        "|---|---:|---|---:|",
    ]
    lines += [
        f"| {r.method} | {statistics.median(r.hypervolumes):.3f} | "
        f"{', '.join(f'{h:.3f}' for h in r.hypervolumes)} | "
        f"{statistics.median(r.seconds):.1f} |"
        for r in rows
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    # ``python -m botorch_sketch.benchmarks.suggest_pareto [BUDGET [METHOD ...]]``
    name = sys.argv[1] if len(sys.argv) > 1 else "two-objective"
    chosen = sys.argv[2:] or None
    print(render_pareto(run_pareto(name, processes=2, methods=chosen)), flush=True)
