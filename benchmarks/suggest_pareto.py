#!/usr/bin/env python3
r"""Two objectives: the hypervolume Optuna samplers reach in a whole study.

A task loss and a latency-like cost, both minimised, over a 5-parameter space
(a log-scaled float, three floats, an integer), with noise sd 0.01 on each.
Each method runs whole studies (the ``two-objective`` budget of
:mod:`~benchmarks.suggest`: 60 trials, 3 seeds), each in a
process of its own with one thread; the report gives the median hypervolume of
the noise-free values of the trials run, against a fixed reference point, and
the median CPU seconds per study.

The ``two-objective-unseen`` budget runs three tasks the sampler was not tuned
on (:data:`UNSEEN_TASKS`): BoTorch's BraninCurrin (2 floats, Branin from 0.4
to 300), ZDT3 (8 floats, a disconnected front), and a mixed space (a
log-scaled float, two floats, an integer, a categorical) whose error rate of
about ``1e-3`` is minimised and whose throughput of about ``1e3`` maximised,
with noise (1% of each) and failed trials in a corner; the hypervolume is
BoTorch's ``Hypervolume`` against each task's fixed reference point
(:data:`UNSEEN_REFERENCE`).

``python -m benchmarks suggest --budget two-objective``, or
``python -m benchmarks.suggest_pareto [BUDGET [METHOD ...]]``.
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

from benchmarks.suggest import BUDGETS, make_sampler

#: The fixed hypervolume reference point (task loss, cost), both minimised.
#: The box's Pareto front reaches 4.39 against it; 60 random trials 3.0-3.4.
PARETO_REF = (2.5, 2.5)

#: The tasks of the ``two-objective-unseen`` budget (``task="unseen"``).
UNSEEN_TASKS = ("branincurrin", "zdt3", "scaled")
#: Each unseen task's fixed reference point, in its objectives' own units and
#: directions: BoTorch's for BraninCurrin (both minimised); for ZDT3 (both
#: minimised) one that random trials in 8 dimensions seldom dominate (BoTorch's
#: (11, 11) counts mostly the box beyond the front); for ``scaled`` (error
#: minimised, throughput maximised) the worst error of random trials, about,
#: and no throughput.
UNSEEN_REFERENCE = {
    "branincurrin": (18.0, 6.0),
    "zdt3": (1.5, 4.0),
    "scaled": (0.012, 0.0),
}


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
    if task in UNSEEN_TASKS:
        return _unseen_run(method, trials, seed, task)
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


class _Failed(RuntimeError):
    r"""The ``scaled`` task's trial failed (Optuna marks it ``FAIL``)."""


def _scaled(p: dict[str, Any]) -> tuple[float, float]:
    r"""Noise-free (error rate, throughput) of one configuration of ``scaled``.

    The error, about ``1e-3``, falls with the width and ``a`` and has a bowl
    in the learning rate and ``b``; the throughput, about ``1e3``, falls with
    the width, ``a`` and ``b``. Raises :class:`_Failed` where ``a`` and ``b``
    both exceed 0.9.
    """
    if p["a"] > 0.9 and p["b"] > 0.9:
        raise _Failed("out of memory")
    error = 1e-3 * (
        1.0
        + 2.0 * (math.log10(p["lr"]) + 2.5) ** 2
        + 3.0 * (p["b"] - 0.4) ** 2
        + 4.0 / p["width"]
        + {"relu": 0.0, "tanh": 0.3, "gelu": 0.1}[p["act"]]
        + (1.0 - p["a"])
    )
    throughput = 1e3 * (2.0 - p["width"] / 16.0 - 0.6 * p["a"] ** 2 - 0.2 * p["b"])
    return error, throughput


def _unseen_run(method: str, trials: int, seed: int, task: str) -> tuple[float, float]:
    # One study of an unseen task; the hypervolume of its noise-free values.
    import optuna
    from botorch.test_functions.multi_objective import ZDT3, BraninCurrin

    values: list[tuple[float, float]] = []
    directions = ["minimize", "minimize"]
    if task == "scaled":
        directions = ["minimize", "maximize"]
        rng = np.random.default_rng(1000 + seed)

        def objective(trial: Any) -> tuple[float, float]:
            p = {
                "lr": trial.suggest_float("lr", 1e-4, 1e-1, log=True),
                "a": trial.suggest_float("a", 0.0, 1.0),
                "b": trial.suggest_float("b", 0.0, 1.0),
                "width": trial.suggest_int("width", 1, 16),
                "act": trial.suggest_categorical("act", ["relu", "tanh", "gelu"]),
            }
            error, throughput = _scaled(p)
            values.append((error, throughput))
            noise = 1.0 + 0.01 * rng.standard_normal(2)
            return error * float(noise[0]), throughput * float(noise[1])

    else:
        problem = BraninCurrin() if task == "branincurrin" else ZDT3(dim=8)

        def objective(trial: Any) -> tuple[float, float]:
            x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(problem.dim)]
            y = problem(torch.tensor([x], dtype=torch.float64))[0].tolist()
            values.append((y[0], y[1]))
            return y[0], y[1]

    study = optuna.create_study(
        directions=directions, sampler=make_sampler(method, seed)
    )
    start = time.process_time()
    study.optimize(objective, n_trials=trials, catch=(_Failed,))
    seconds = time.process_time() - start
    signs = [1.0 if d == "maximize" else -1.0 for d in directions]
    return hypervolume(values, UNSEEN_REFERENCE[task], signs), seconds


def hypervolume(
    values: list[tuple[float, float]], ref: tuple[float, float], signs: list[float]
) -> float:
    r"""BoTorch's hypervolume of ``values`` against ``ref``.

    ``signs`` is ``+1`` for an objective maximised and ``-1`` for one minimised.
    """
    from botorch.utils.multi_objective.hypervolume import Hypervolume
    from botorch.utils.multi_objective.pareto import is_non_dominated

    sign = torch.tensor(signs, dtype=torch.float64)
    Y = torch.tensor(values, dtype=torch.float64).reshape(-1, len(signs)) * sign
    reference = torch.tensor(ref, dtype=torch.float64) * sign
    Y = Y[(Y > reference).all(dim=-1)]
    if len(Y) == 0:
        return 0.0
    return float(Hypervolume(ref_point=reference).compute(Y[is_non_dominated(Y)]))


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
    tasks = UNSEEN_TASKS if budget.task == "unseen" else (budget.task,)
    # Seed by seed, the methods in turn: a change in the machine's load
    # falls on every method alike rather than on the last one run.
    jobs = [(m, s, t) for s in budget.pareto_seeds for t in tasks for m in methods]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=processes, mp_context=context
    ) as pool:
        futures = {
            job: pool.submit(
                _pareto_alone, job[0], budget.pareto_trials, job[1], job[2]
            )
            for job in jobs
        }
        results = {job: f.result() for job, f in futures.items()}
    return [
        ParetoRow(
            m,
            budget.pareto_trials,
            t,
            [results[m, s, t][0] for s in budget.pareto_seeds],
            [results[m, s, t][1] for s in budget.pareto_seeds],
        )
        for t in tasks
        for m in methods
    ]


def render_pareto(rows: list[ParetoRow]) -> str:
    r"""Markdown: median hypervolume and CPU seconds per study, by method."""
    if rows and rows[0].task in UNSEEN_TASKS:
        return _render_unseen(rows)
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


def _render_unseen(rows: list[ParetoRow]) -> str:
    # One table over the tasks: each method's median hypervolume, its median
    # ratio to GPSampler's seed by seed, each seed's value and CPU seconds.
    from benchmarks.suggest import GP

    trials, seeds = rows[0].trials, len(rows[0].hypervolumes)
    lines = [
        f"{trials} trials, {seeds} seeds. Hypervolume (BoTorch's) against each "
        "task's fixed reference point "
        f"({', '.join(f'{t} {UNSEEN_REFERENCE[t]}' for t in UNSEEN_TASKS)}); "
        "ratio: the median over seeds of the method's hypervolume over "
        f"{GP}'s on the same seed; CPU seconds per study, median.",
        "",
        "| task | method | hypervolume | ratio to GPSampler | per seed | CPU s |",
        "|---|---|---:|---:|---|---:|",
    ]
    peer = {r.task: r.hypervolumes for r in rows if r.method == GP}
    for r in rows:
        base = peer.get(r.task)
        ratios = (
            [h / b for h, b in zip(r.hypervolumes, base, strict=True)]
            if base and all(b > 0 for b in base)
            else []
        )
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "-"
        lines.append(
            f"| {r.task} | {r.method} | {statistics.median(r.hypervolumes):.4g} | "
            f"{ratio} | {', '.join(f'{h:.4g}' for h in r.hypervolumes)} | "
            f"{statistics.median(r.seconds):.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    # ``python -m benchmarks.suggest_pareto [BUDGET [METHOD ...]]``
    name = sys.argv[1] if len(sys.argv) > 1 else "two-objective"
    chosen = sys.argv[2:] or None
    print(render_pareto(run_pareto(name, processes=2, methods=chosen)), flush=True)
