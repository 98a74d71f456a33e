#!/usr/bin/env python3
r"""Asynchronous large-batch Thompson sampling on Ray workers.

:func:`run_on_ray` drives a :class:`~botorch_sketch.bo.LargeBatchOptimizer`
with ``workers`` Ray actors that evaluate one point each at a time:

- every worker holds up to ``queue`` points (one running, the rest waiting
  behind it on the worker), so a worker is not idle while the driver proposes;
- whenever results return, they are told together (the carried model absorbs
  them by a Woodbury step at the next ask, refits only when its schedule says
  so) and a small batch refills the free slots; the points still in flight are
  pending, and the proposals are conditioned on them;
- a point whose worker died (the process killed, the node lost) is resubmitted
  to a fresh worker up to ``max_retries`` times, then told as failed; a point
  whose objective raised is told as failed at once. No point is told twice,
  and none is lost;
- with ``checkpoint``, the optimizer is saved (atomically) after every round;
  a run killed at any moment resumes from it with
  :meth:`LargeBatchOptimizer.load <botorch_sketch.bo.LargeBatchOptimizer.load>`
  and another call: the points in flight at the save are evaluated again first;
- the report gives the workers' utilisation: the seconds they spent in the
  objective over ``workers`` times the run's wall-clock seconds.

On a laptop, ``ray.init(num_cpus=4)`` starts a local instance; on a cluster,
``ray.init(address="auto")`` (or the head's address) joins it and the same call
runs the workers on its nodes. Ray is imported only when :func:`run_on_ray`
runs (the ``ray`` extra).

Example:
    >>> import ray
    >>> ray.init(num_cpus=4)
    >>> f = Hartmann(dim=6, negate=True)
    >>> optimizer = LargeBatchOptimizer(f.bounds, q=16, seed=0)
    >>> report = run_on_ray(optimizer, f, workers=4, evaluations=400)
    >>> report.utilisation, report.best_value
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.bo.ask_tell import LargeBatchOptimizer
from botorch_sketch.checks import checked_count, checked_real

INSTALL_HINT = "pip install botorch-sketch[ray] (pip install -e '.[ray]' in a clone)"


@dataclass
class RayRunReport:
    r"""What :func:`run_on_ray` did.

    Attributes:
        evaluations: Results told in this call (failures included).
        failed: Of those, failures (NaN, the objective raised, or the worker
            died more than ``max_retries`` times).
        retried: Resubmissions after a worker died.
        workers_lost: Workers that died (and were replaced).
        wall_seconds: The call's wall-clock seconds, from the first
            submission to the last result.
        busy_seconds: Seconds the workers spent in the objective, summed.
        workers: The number of workers.
        best_value: The optimizer's best finite observation at the end.
        values: The observations told, in the order told (NaN for failures).
        busy_trace: ``(time, workers busy)`` after each round.
    """

    evaluations: int = 0
    failed: int = 0
    retried: int = 0
    workers_lost: int = 0
    wall_seconds: float = 0.0
    busy_seconds: float = 0.0
    workers: int = 0
    best_value: float = -math.inf
    values: list[float] = field(default_factory=list)
    busy_trace: list[tuple[float, int]] = field(default_factory=list)

    @property
    def utilisation(self) -> float:
        r"""``busy_seconds / (workers * wall_seconds)`` (NaN before any)."""
        if self.wall_seconds <= 0 or self.workers == 0:
            return math.nan
        return self.busy_seconds / (self.workers * self.wall_seconds)


def _evaluate(objective: Callable[[Tensor], Any], x: Tensor) -> tuple[float, float]:
    # On a worker: one point's observation and the seconds it took.
    start = time.perf_counter()
    out = torch.as_tensor(objective(x.unsqueeze(0)), dtype=torch.double)
    if out.numel() != 1:
        raise InputDataError(
            f"The objective returned {out.numel()} values for one point; expected 1."
        )
    return float(out.reshape(())), time.perf_counter() - start


def run_on_ray(
    optimizer: LargeBatchOptimizer,
    objective: Callable[[Tensor], Any],
    workers: int = 4,
    evaluations: int = 100,
    queue: int = 2,
    max_retries: int = 1,
    checkpoint: str | Path | None = None,
    checkpoint_every: float = 0.0,
    worker_options: dict[str, Any] | None = None,
    progress: bool = True,
) -> RayRunReport:
    r"""Evaluate ``evaluations`` points on ``workers`` Ray workers, asynchronously.

    Args:
        optimizer: The optimizer (new, or resumed from a checkpoint).
        objective: Maps a ``1 x d`` tensor in the optimizer's bounds to one
            observation (a number or one-element tensor); NaN or infinity
            marks a failure. Shipped to the workers by Ray's pickling.
        workers: How many Ray actors evaluate.
        evaluations: Results to tell in this call (failures included).
        queue: Points each worker holds at once (1: a worker waits while the
            driver proposes its next point).
        max_retries: Resubmissions of a point whose worker died, before it is
            told as failed.
        checkpoint: Save the optimizer here after every round (atomically),
            and at the end.
        checkpoint_every: Skip a round's save if the last one is more recent
            than this many seconds (a save writes all the data: at ``n = 10^4``
            in 60 dimensions about 10 MB). Results told since the last save
            are evaluated again after a crash.
        worker_options: Ray actor options (default ``{"num_cpus": 1}``; e.g.
            ``{"num_cpus": 0}`` for workers that mostly wait on a simulator
            elsewhere).
        progress: Show a progress bar (best value, evaluations per second,
            workers busy).

    Returns:
        A :class:`RayRunReport`.
    """
    if not isinstance(optimizer, LargeBatchOptimizer):
        raise InputDataError(
            f"optimizer must be a LargeBatchOptimizer, got {type(optimizer).__name__}."
        )
    if not callable(objective):
        raise InputDataError(f"objective must be callable, got {objective!r}.")
    workers = checked_count(workers, "workers")
    evaluations = checked_count(evaluations, "evaluations")
    queue = checked_count(queue, "queue")
    max_retries = checked_count(max_retries, "max_retries", minimum=0)
    checkpoint_every = checked_real(checkpoint_every, "checkpoint_every", minimum=0.0)
    try:
        import ray
    except ImportError:
        raise ImportError(f"run_on_ray needs Ray: {INSTALL_HINT}.") from None
    if not ray.is_initialized():
        ray.init(log_to_driver=False)
    options = {"num_cpus": 1, **(worker_options or {})}
    remote = ray.remote(_Worker).options(**options)
    shipped = ray.put(objective)
    actors = [remote.remote(shipped) for _ in range(workers)]
    load = [0] * workers
    # In flight: ref -> (worker, point, attempts).
    flight: dict[Any, tuple[int, Tensor, int]] = {}
    report = RayRunReport(workers=workers)
    bar = tqdm(total=evaluations, desc="async TS on Ray", disable=not progress)
    submitted = 0  # points handed out by this call, retries not counted
    start: float | None = None
    saved = -math.inf

    def submit(i: int, x: Tensor, attempts: int) -> None:
        flight[actors[i].evaluate.remote(x)] = (i, x, attempts)
        load[i] += 1

    def fill() -> None:
        nonlocal submitted
        free = sum(queue - k for k in load)
        n = min(free, evaluations - submitted)
        if n <= 0:
            return
        X = optimizer.ask(n)
        submitted += n
        for x in X:
            submit(min(range(workers), key=load.__getitem__), x, 0)

    try:
        # The clock starts once every worker is up (has the objective).
        ray.get([actor.ping.remote() for actor in actors])
        start = time.perf_counter()
        fill()
        while flight:
            ready, _ = ray.wait(list(flight), num_returns=1)
            more, _ = ray.wait(list(flight), num_returns=len(flight), timeout=0)
            ready = list(dict.fromkeys(ready + more))
            told_X, told_Y = [], []
            for ref in ready:
                i, x, attempts = flight.pop(ref)
                load[i] -= 1
                try:
                    y, seconds = ray.get(ref)
                    report.busy_seconds += seconds
                except ray.exceptions.RayTaskError:
                    y = math.nan  # the objective raised: the point failed
                except ray.exceptions.RayError:
                    # The worker died: a fresh one, the point again (or failed).
                    if _replace(ray, actors, i, remote, shipped):
                        report.workers_lost += 1
                    if attempts < max_retries:
                        report.retried += 1
                        submit(i, x, attempts + 1)
                        continue
                    y = math.nan
                told_X.append(x)
                told_Y.append(y)
            if told_X:
                Y = torch.tensor(told_Y, dtype=torch.double)
                optimizer.tell(torch.stack(told_X), Y)
                report.evaluations += len(told_Y)
                report.failed += int((~torch.isfinite(Y)).sum())
                report.values.extend(told_Y)
                bar.update(len(told_Y))
            fill()
            now = time.perf_counter() - start
            if checkpoint is not None and (
                not flight or now - saved >= checkpoint_every
            ):
                optimizer.save(checkpoint)
                saved = now
            busy = sum(k > 0 for k in load)
            report.busy_trace.append((now, busy))
            bar.set_postfix(
                best=f"{optimizer.best()[1]:.4g}",
                evals_per_s=f"{report.evaluations / max(now, 1e-9):.3g}",
                busy=f"{busy}/{workers}",
            )
    finally:
        if start is not None:
            report.wall_seconds = time.perf_counter() - start
        report.best_value = optimizer.best()[1]
        bar.close()
        for ref in flight:
            ray.cancel(ref, force=True)
        for actor in actors:
            ray.kill(actor)
    return report


def _replace(ray: Any, actors: list[Any], i: int, remote: Any, shipped: Any) -> bool:
    # A fresh actor for worker ``i`` unless it still answers (it may already
    # have been replaced after another of its points was lost).
    try:
        ray.get(actors[i].ping.remote(), timeout=30)
        return False
    except ray.exceptions.RayError:
        actors[i] = remote.remote(shipped)
        return True


class _Worker:
    # A Ray actor holding the objective; one point at a time.

    def __init__(self, objective: Callable[[Tensor], Any]) -> None:
        self.objective = objective

    def evaluate(self, x: Tensor) -> tuple[float, float]:
        return _evaluate(self.objective, x)

    def ping(self) -> bool:
        return True
