#!/usr/bin/env python3
r"""Asynchronous large-batch Thompson sampling on Ray workers.

:func:`run_on_ray` drives a :class:`~botorch_sketch.bo.LargeBatchOptimizer`
with ``workers`` Ray actors that evaluate one point each at a time:

- every worker holds up to ``queue`` points (one running, the rest waiting
  behind it on the worker), so that it starts its next point without a round
  trip to the driver; the driver keeps up to ``workers`` more proposed and
  ready, handed out as slots free, so that a refit does not leave a worker
  without a point. In the last ``workers * queue`` points of the budget a
  point goes only to an idle worker: none then waits behind another worker's
  slow evaluation while a worker idles;
- the optimizer is used by one thread of the driver, the proposer, while the
  main thread only dispatches and collects: results are told together (the
  carried model absorbs them by a Woodbury step at the next ask, refits only
  when its schedule says so) and all the missing points are asked for in one
  ask, so that neither a refit (seconds) nor a proposal blocks a dispatch while
  ready points remain; the points in flight or ready are pending, and the
  proposals are conditioned on them;
- a point whose worker died (the process killed, the node lost) is resubmitted
  to a fresh worker up to ``max_retries`` times, then told as failed; a point
  whose objective raised is told as failed at once. No point is told twice,
  and none is lost;
- with ``checkpoint``, the optimizer is saved (atomically) after every round;
  a run killed at any moment resumes from it with
  :meth:`LargeBatchOptimizer.load <botorch_sketch.bo.LargeBatchOptimizer.load>`
  and another call: the points in flight at the save are evaluated again first;
- the report gives the workers' utilisation: the seconds they spent in the
  objective over ``workers`` times the run's wall-clock seconds, and the same
  until the last dispatch (the drain at the end of the budget left out).

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
import threading
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
        spans: ``(start, end)`` of each evaluation on the run's clock: ``end``
            when its result reached the driver, ``start`` its seconds before.
        last_dispatch: When the last point was handed to a worker; after it
            the workers drain (a fixed budget leaves them idle one by one).
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
    spans: list[tuple[float, float]] = field(default_factory=list)
    last_dispatch: float = 0.0

    @property
    def utilisation(self) -> float:
        r"""``busy_seconds / (workers * wall_seconds)`` (NaN before any)."""
        if self.wall_seconds <= 0 or self.workers == 0:
            return math.nan
        return self.busy_seconds / (self.workers * self.wall_seconds)

    @property
    def steady_utilisation(self) -> float:
        r"""The utilisation until the last dispatch, the drain left out (NaN if none).

        The drain at the end of a fixed budget idles the workers whatever the
        driver does (16 workers with exponential evaluation times of mean 1 s
        wait on the slowest of their last points, about 3.4 s); before it, an
        idle worker is one the driver left without a point.
        """
        end = self.last_dispatch
        if end <= 0 or self.workers == 0:
            return math.nan
        busy = sum(max(0.0, min(b, end) - max(a, 0.0)) for a, b in self.spans)
        return busy / (self.workers * end)


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
        queue: Points each worker holds at once (1: a worker waits for a
            round trip to the driver between points); the driver keeps
            ``workers`` more ready.
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
    # In flight: ref -> (worker, point, attempts); ``load``: per worker.
    flight: dict[Any, tuple[int, Tensor, int]] = {}
    load = [0] * workers
    report = RayRunReport(workers=workers)
    bar = tqdm(total=evaluations, desc="async TS on Ray", disable=not progress)
    proposer = _Proposer(optimizer, evaluations, workers * (queue + 1), checkpoint)
    proposer.checkpoint_every = checkpoint_every
    start: float | None = None
    dispatched = 0  # points handed out by this call, retries not counted
    best = optimizer.best()[1]

    def submit(i: int, x: Tensor, attempts: int) -> None:
        flight[actors[i].evaluate.remote(x)] = (i, x, attempts)
        load[i] += 1
        report.last_dispatch = time.perf_counter() - start

    def dispatch() -> None:
        # Ready points to the least loaded workers, up to ``queue`` each; in
        # the budget's last ``workers * queue`` points, to idle workers only.
        nonlocal dispatched
        while True:
            limit = 1 if evaluations - dispatched <= workers * queue else queue
            i = min(range(workers), key=load.__getitem__)
            points = proposer.take(1) if load[i] < limit else []
            if not points:
                return
            submit(i, points[0], 0)
            dispatched += 1

    try:
        # The clock starts once every worker is up (has the objective).
        ray.get([actor.ping.remote() for actor in actors])
        start = proposer.start = time.perf_counter()
        proposer.thread.start()
        told = 0
        while told < evaluations:
            proposer.check()
            # Dispatch first: a free slot takes a ready point at once,
            # whatever the proposer is doing (a refit takes seconds).
            dispatch()
            if not flight:
                proposer.wait_for_points(timeout=1.0)
                continue
            # A free slot while more points are to come: look again soon (an
            # idle worker sooner), the proposer may add some before a result.
            timeout = None
            if proposer.more_to_come and min(load) < queue:
                timeout = 0.005 if min(load) == 0 else 0.02
            ready, _ = ray.wait(list(flight), num_returns=1, timeout=timeout)
            if not ready:
                continue
            more, _ = ray.wait(list(flight), num_returns=len(flight), timeout=0)
            ready = list(dict.fromkeys(ready + more))
            results: list[tuple[Tensor, float]] = []
            for ref in ready:
                i, x, attempts = flight.pop(ref)
                load[i] -= 1
                try:
                    y, seconds = ray.get(ref)
                    report.busy_seconds += seconds
                    end = time.perf_counter() - start
                    report.spans.append((end - seconds, end))
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
                results.append((x, y))
            # The freed slots first, then the results to the proposer.
            dispatch()
            if results:
                proposer.put(results)
                values = [y for _, y in results]
                told += len(values)
                report.evaluations += len(values)
                report.failed += sum(not math.isfinite(y) for y in values)
                report.values.extend(values)
                best = max([best, *(y for y in values if math.isfinite(y))])
                bar.update(len(values))
            now = time.perf_counter() - start
            busy = sum(k > 0 for k in load)
            report.busy_trace.append((now, busy))
            bar.set_postfix(
                best=f"{best:.4g}",
                evals_per_s=f"{report.evaluations / max(now, 1e-9):.3g}",
                busy=f"{busy}/{workers}",
            )
        proposer.finish()
    finally:
        if start is not None:
            report.wall_seconds = time.perf_counter() - start
        proposer.stop()
        report.best_value = optimizer.best()[1]
        bar.close()
        for ref in flight:
            ray.cancel(ref, force=True)
        for actor in actors:
            ray.kill(actor)
    return report


class _Proposer:
    # The optimizer's only user while a run lasts: a thread that tells the
    # results the driver hands it and keeps ``held`` points in flight or ready
    # (asking for all the missing ones in one ask), so that the driver
    # dispatches while it tells, refits or proposes. Torch releases the GIL in
    # its kernels; the driver waits on Ray with the GIL released.

    def __init__(
        self,
        optimizer: LargeBatchOptimizer,
        evaluations: int,
        held: int,
        checkpoint: str | Path | None,
    ) -> None:
        self.optimizer = optimizer
        self.evaluations = evaluations
        self.held = held
        self.checkpoint = checkpoint
        self.checkpoint_every = 0.0
        self.start = 0.0
        self.saved = -math.inf
        self.unsaved = False
        self.asked = 0  # points handed out by this call, retries not counted
        self.out = 0  # of those, not yet told back to the optimizer
        self.ready: list[Tensor] = []
        self.results: list[tuple[Tensor, float]] = []
        self.error: BaseException | None = None
        self.stopped = False
        self.done = False
        self.lock = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def more_to_come(self) -> bool:
        return bool(self.ready) or self.asked < self.evaluations

    def take(self, n: int) -> list[Tensor]:
        # Up to ``n`` ready points, oldest first.
        with self.lock:
            points, self.ready = self.ready[:n], self.ready[n:]
            if points:
                self.lock.notify_all()
            return points

    def put(self, results: list[tuple[Tensor, float]]) -> None:
        with self.lock:
            self.results.extend(results)
            self.lock.notify_all()

    def wait_for_points(self, timeout: float) -> None:
        with self.lock:
            if not self.ready and self.error is None:
                self.lock.wait(timeout)

    def check(self) -> None:
        # The proposer's error, raised in the driver.
        if self.error is not None:
            raise self.error

    def finish(self) -> None:
        # Wait until every result is told (and saved), then stop.
        with self.lock:
            self.done = True
            self.lock.notify_all()
        self.thread.join()
        self.check()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()
        if self.thread.is_alive():
            self.thread.join()

    def _missing(self) -> int:
        # Points to ask for: up to ``held`` in flight or ready, within budget.
        in_hand = self.out - len(self.results)
        return max(0, min(self.held - in_hand, self.evaluations - self.asked))

    def _run(self) -> None:
        try:
            while True:
                with self.lock:
                    while not (
                        self.stopped
                        or self.results
                        or self._missing() > 0
                        or (self.done and self.asked == self.evaluations)
                    ):
                        self.lock.wait()
                    if self.stopped:
                        return
                    results, self.results = self.results, []
                if results:
                    X = torch.stack([x for x, _ in results])
                    Y = torch.tensor([y for _, y in results], dtype=torch.double)
                    self.optimizer.tell(X, Y)
                with self.lock:
                    self.out -= len(results)
                    n = self._missing()
                if n > 0:
                    X = self.optimizer.ask(n)
                with self.lock:
                    if n > 0:
                        self.ready.extend(X)
                        self.asked += n
                        self.out += n
                    finished = self.asked == self.evaluations and self.out == 0
                    self.lock.notify_all()
                self.unsaved = self.unsaved or bool(results)
                self._save(last=finished)
                if finished and self.done:
                    return
        except BaseException as e:  # raised in the driver by ``check``
            with self.lock:
                self.error = e
                self.lock.notify_all()

    def _save(self, last: bool) -> None:
        # After results were told: every round, or at most every
        # ``checkpoint_every`` seconds and after the last result.
        if self.checkpoint is None or not self.unsaved:
            return
        now = time.perf_counter() - self.start
        if last or now - self.saved >= self.checkpoint_every:
            self.optimizer.save(self.checkpoint)
            self.saved, self.unsaved = now, False


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
