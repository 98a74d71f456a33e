r"""Seconds to suggest trial N: a study (an Ax client) fed a Sobol history."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from benchmarks.tuning_peers.config import (
    OPTUNA,
    TASKS,
    Budget,
    TimeResult,
)
from benchmarks.tuning_peers.methods import (
    ax_client,
    optuna_distributions,
    optuna_sampler,
)


def sobol_history(
    task_name: str, n: int, seed: int = 1234
) -> list[tuple[dict[str, Any], float]]:
    r"""``n`` scrambled Sobol settings of a task's space and their scores."""
    from benchmarks.tuning import _from_unit

    task = TASKS[task_name]
    engine = torch.quasirandom.SobolEngine(len(task.params), scramble=True, seed=seed)
    history = []
    for u in engine.draw(n, dtype=torch.double):
        setting = {
            p.name: _from_unit(p, float(x)) for p, x in zip(task.params, u, strict=True)
        }
        history.append((setting, task.score(setting)))
    return history


class _Timer:
    # One method's study (or Ax client) fed the Sobol history, timed on demand.
    def __init__(self, method: str, budget: Budget, history: list) -> None:
        self.method, self.budget, self.history = method, budget, history
        self.result = TimeResult(method)
        self.attached = 0
        self.times: list[float] = []
        task = TASKS[budget.timed_task]
        if method in OPTUNA:
            import optuna

            optuna.logging.set_verbosity(optuna.logging.ERROR)
            self.distributions = optuna_distributions(task)
            self.study = optuna.create_study(
                direction="maximize", sampler=optuna_sampler(method, 0, budget)
            )
        else:
            self.client, self.strategy = ax_client(method, task, 0, budget)

    def attach(self, setting: dict[str, Any], score: float) -> None:
        if self.method in OPTUNA:
            from optuna.trial import create_trial

            trial = create_trial(
                params=setting, distributions=self.distributions, value=score
            )
            self.study.add_trial(trial)
        else:
            from botorch_sketch.tune.config import METRIC

            index = self.client.attach_trial(setting)
            self.client.complete_trial(trial_index=index, raw_data={METRIC: score})

    def prepare(self, n: int) -> None:
        # Attach the history up to the first timed suggestion before trial n.
        first = max(0, n - self.budget.repeats)
        for setting, score in self.history[self.attached : first]:
            self.attach(setting, score)
        self.attached = max(self.attached, first)
        self.times = []
        if self.method not in OPTUNA:
            # A new strategy on the client's trials, as ``tuning`` times Ax.
            self.client.set_generation_strategy(self.strategy(True))

    def time_one(self, n: int) -> None:
        # Time one suggestion (then discarded), then attach one more trial.
        begin = time.perf_counter()
        try:
            if self.method in OPTUNA:
                from optuna.trial import TrialState

                trial = self.study.ask(self.distributions)
                self.study.tell(trial, state=TrialState.FAIL)
            else:
                ((index, _),) = self.client.get_next_trials(max_trials=1).items()
                self.client.mark_trial_abandoned(index)
        except Exception as e:  # a failed fit is a result, not the end
            self.result.failures[n] = f"{type(e).__name__}: {e}"[:200]
        else:
            self.times.append(time.perf_counter() - begin)
        self.attach(*self.history[self.attached])
        self.attached += 1

    def finish(self, n: int) -> bool:
        # Record the median at n; whether the method goes on to larger N.
        if self.times:
            self.result.seconds[n] = statistics.median(self.times)
            return self.result.seconds[n] <= self.budget.suggest_cap_s
        return True


def time_suggestions(
    method: str,
    budget: Budget,
    history: list[tuple[dict[str, Any], float]],
) -> TimeResult:
    r"""Seconds to suggest trial N for each N in ``budget.sizes`` (median of repeats).

    Args:
        method: One of :data:`METHODS`.
        budget: The budget (sizes, repeats, cap).
        history: At least ``max(budget.sizes)`` settings and their scores.

    Returns:
        The medians, for each N reached before the cap.
    """
    timer = _Timer(method, budget, history)
    for n in sorted(budget.sizes):
        timer.prepare(n)
        for _ in range(budget.repeats):
            timer.time_one(n)
        if not timer.finish(n):
            break
    return timer.result


def time_interleaved(
    budget: Budget, history: list[tuple[dict[str, Any], float]]
) -> list[TimeResult]:
    r"""As :func:`time_suggestions` for every method, taking turns in one process.

    At each N every method's ``r``-th suggestion is timed before any method's
    ``r + 1``-th, so that a change in the machine's load (other work on shared
    cores) falls on all methods alike and the ratios stay fair. Peak memory is
    then that of the whole process (the isolated tuning runs give each
    method's).

    Args:
        budget: The budget (methods, sizes, repeats, cap).
        history: At least ``max(budget.sizes)`` settings and their scores.

    Returns:
        One result per method, in the budget's order.
    """
    timers = [_Timer(m, budget, history) for m in budget.methods]
    active = list(timers)
    for n in sorted(budget.sizes):
        for timer in active:
            timer.prepare(n)
        for _ in range(budget.repeats):
            for timer in active:
                timer.time_one(n)
        active = [t for t in active if t.finish(n)]
    return [t.result for t in timers]
