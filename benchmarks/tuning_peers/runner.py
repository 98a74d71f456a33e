r"""Every run and timing of a budget, each in a process of its own if asked.

The process's peak resident set (``ru_maxrss``) is read after each, with its
increase over the process's size once the libraries are imported.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import resource
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks.tuning_peers.config import (
    BUDGETS,
    TASKS,
    Budget,
    RunResult,
    TimeResult,
)
from benchmarks.tuning_peers.methods import tune_once
from benchmarks.tuning_peers.timing import (
    sobol_history,
    time_interleaved,
    time_suggestions,
)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measured(function: Callable[..., Any], *args: Any) -> Any:
    # Runs ``function`` on one thread and adds the process's peak memory.
    from threadpoolctl import threadpool_limits

    from botorch_sketch.tune.ax_client import quiet_ax

    before = _peak_mib()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with quiet_ax(), threadpool_limits(limits=1):
            result = function(*args)
    finally:
        torch.set_num_threads(threads)
    result.peak_mib = _peak_mib()
    result.added_mib = result.peak_mib - before
    return result


def _import_everything() -> None:
    # Imported before the peak memory is read, so that "added" is the method's.
    import ax.api.client  # noqa: F401
    import optuna  # noqa: F401
    import optuna_integration  # noqa: F401
    import sklearn.ensemble  # noqa: F401

    import botorch_sketch.integrations.optuna  # noqa: F401
    import botorch_sketch.tune.loop  # noqa: F401


def _isolated(function: Callable[..., Any], *args: Any) -> Any:
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_import_everything,
    ) as pool:
        return pool.submit(_measured, function, *args).result()


def run(budget_name: str = "small") -> tuple[list[RunResult], list[TimeResult]]:
    r"""Tune every task with every method and seed, then time the suggestions.

    Args:
        budget_name: A key of :data:`BUDGETS`.

    Returns:
        The runs (with noise and memory) and the timings.
    """
    budget = BUDGETS[budget_name]
    call = _isolated if budget.isolate else _measured
    runs = []
    for task_name in budget.tasks:
        for seed in budget.seeds:
            for method in budget.methods:
                result = call(tune_once, method, task_name, seed, budget)
                task = TASKS[task_name]
                result.noise_sd = statistics.stdev(
                    task.score(result.best_parameters, seed=s)
                    for s in range(1, budget.noise_splits + 1)
                )
                runs.append(result)
    history = sobol_history(budget.timed_task, max(budget.sizes))
    if budget.interleave:
        together = call(_timed_together, budget, history)
        for result in together.results:
            result.peak_mib, result.added_mib = together.peak_mib, together.added_mib
        return runs, together.results
    times = [call(time_suggestions, m, budget, history) for m in budget.methods]
    return runs, times


@dataclass
class _Together:
    # The results of time_interleaved, with the process's peak memory.
    results: list[TimeResult]
    peak_mib: float = float("nan")
    added_mib: float = float("nan")


def _timed_together(budget: Budget, history: list) -> _Together:
    return _Together(time_interleaved(budget, history))
