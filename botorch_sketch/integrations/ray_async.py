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
  whose objective raised, or ran past ``timeout`` seconds (its worker is then
  replaced), is told as failed at once, and the error's text is kept in the
  report. No point is told twice, and none is lost;
- as :func:`~botorch_sketch.bo.run_large_batch` does, the run stops after
  ``max_failed_batches`` rounds of ``workers`` results in a row that all
  failed, each warned with a
  :class:`~botorch_sketch.bo.FailedBatchWarning` that quotes the last error
  (an objective that always raises, or returns something other than one
  number, does not spend the whole budget); the points still out are asked
  again first by the optimizer's next ask;
- workers that cannot start (more CPUs asked for than the cluster has) are
  refused after ``start_timeout`` seconds with the CPUs asked for and found;
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
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.bo.ask_tell import LargeBatchOptimizer
from botorch_sketch.bo.large_batch import FailedBatchWarning
from botorch_sketch.checks import checked_count, checked_real

INSTALL_HINT = "pip install botorch-sketch[ray] (pip install -e '.[ray]' in a clone)"


@dataclass
class RayRunReport:
    r"""What :func:`run_on_ray` did.

    Attributes:
        evaluations: Results told in this call (failures included).
        failed: Of those, failures (NaN, the objective raised or ran past
            ``timeout``, or the worker died more than ``max_retries`` times).
        retried: Resubmissions after a worker died.
        workers_lost: Workers that died (and were replaced).
        timed_out: Evaluations that ran past ``timeout`` (each worker
            replaced).
        errors: The error of each failure that had one, in the order told
            (``"ValueError: simulator diverged"``; NaN results have none).
        stopped_reason: ``"failed batches"`` if the run stopped after
            ``max_failed_batches`` rounds of failures, else ``""``.
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
    timed_out: int = 0
    errors: list[str] = field(default_factory=list)
    stopped_reason: str = ""
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
    output = objective(x.unsqueeze(0))
    try:
        out = torch.as_tensor(output, dtype=torch.double)
    except (TypeError, ValueError, RuntimeError) as e:
        shown = repr(output)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InputDataError(
            f"The objective returned {type(output).__name__} ({shown}) for one "
            "point; expected a number or a one-element tensor."
        ) from e
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
    timeout: float | None = None,
    max_failed_batches: int = 3,
    start_timeout: float | None = 60.0,
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
        timeout: Seconds one evaluation may run, from when its worker starts
            it (a replaced worker's own start is not counted, up to
            ``start_timeout``). A point past it is told as failed and its
            worker replaced (a hung objective is killed with it). None: no
            limit.
        max_failed_batches: Stop after this many rounds of ``workers``
            results in a row that all failed (each warned, with the last
            error); the points still out are asked again first by the
            optimizer's next ask.
        start_timeout: Seconds to wait for the workers to start (an actor
            that asks for more CPUs than the cluster has never does); past
            it the call is refused with the CPUs asked for and found. None
            waits for good (an autoscaling cluster that adds nodes).

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
    if timeout is not None:
        timeout = checked_real(timeout, "timeout", positive=True)
    max_failed_batches = checked_count(max_failed_batches, "max_failed_batches")
    if start_timeout is not None:
        start_timeout = checked_real(start_timeout, "start_timeout", positive=True)
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
    # In flight: ref -> (worker, point, attempts); ``load``: per worker;
    # ``queues``: each worker's refs in the order it runs them, the first
    # running since ``since`` (a Ray actor runs its calls one at a time, in
    # order); ``starting``: replaced workers not yet up (their ping, and
    # when), whose first point's clock starts once they answer.
    flight: dict[Any, tuple[int, Tensor, int]] = {}
    load = [0] * workers
    queues: list[list[Any]] = [[] for _ in range(workers)]
    since = [0.0] * workers
    starting: dict[int, tuple[Any, float]] = {}
    failed_in_a_row = 0
    batch = workers  # a round of the fleet: run_large_batch's batch
    report = RayRunReport(workers=workers)
    bar = tqdm(total=evaluations, desc="async TS on Ray", disable=not progress)
    proposer = _Proposer(optimizer, evaluations, workers * (queue + 1), checkpoint)
    proposer.checkpoint_every = checkpoint_every
    start: float | None = None
    dispatched = 0  # points handed out by this call, retries not counted
    best = optimizer.best()[1]

    def submit(i: int, x: Tensor, attempts: int) -> None:
        ref = actors[i].evaluate.remote(x)
        flight[ref] = (i, x, attempts)
        load[i] += 1
        if not queues[i]:
            since[i] = time.perf_counter()
        queues[i].append(ref)
        report.last_dispatch = time.perf_counter() - start

    def done(ref: Any) -> tuple[int, Tensor, int]:
        # The ref's entry, out of the books; the worker's next point starts.
        i, x, attempts = flight.pop(ref)
        load[i] -= 1
        queues[i].remove(ref)
        since[i] = time.perf_counter()
        return i, x, attempts

    def replaced(i: int) -> None:
        # Worker ``i`` is a fresh actor: its start (a process, the objective
        # unpickled, seconds) is not its first point's time.
        if timeout is not None:
            starting[i] = (actors[i].ping.remote(), time.perf_counter())

    def due(i: int) -> float:
        # When worker ``i``'s running point passes ``timeout``: a worker still
        # starting gets ``start_timeout`` more from its replacement.
        if i in starting:
            allowance = math.inf if start_timeout is None else start_timeout
            return starting[i][1] + allowance + timeout
        return since[i] + timeout

    def expired() -> list[tuple[Tensor, float, str]]:
        # Points past ``timeout``, failed; their workers replaced and the
        # points queued behind them resubmitted to the fresh ones.
        if timeout is None:
            return []
        if starting:
            pings = [ping for ping, _ in starting.values()]
            up, _ = ray.wait(pings, num_returns=len(pings), timeout=0)
            for i, (ping, _) in list(starting.items()):
                if ping in up:
                    del starting[i]
                    since[i] = time.perf_counter()
        now = time.perf_counter()
        failures = []
        for i in range(workers):
            if not queues[i] or now <= due(i):
                continue
            refs, queues[i] = queues[i], []
            load[i] = 0
            entries = [flight.pop(ref) for ref in refs]
            ray.kill(actors[i])
            actors[i] = remote.remote(shipped)
            replaced(i)
            report.timed_out += 1
            text = f"TimeoutError: the evaluation ran past timeout={timeout:g} s"
            failures.append((entries[0][1], math.nan, text))
            for _, x, attempts in entries[1:]:
                submit(i, x, attempts)
        return failures

    def wait_timeout() -> float | None:
        # How long ``ray.wait`` may block: a free slot while more points are
        # to come looks again soon (an idle worker sooner), the proposer may
        # add some before a result; with ``timeout``, until the first point
        # due.
        wait = None
        if proposer.more_to_come and min(load) < queue:
            wait = 0.005 if min(load) == 0 else 0.02
        if timeout is not None:
            busy = [due(i) for i in range(workers) if queues[i]]
            if busy:
                first = max(0.0, min(busy) - time.perf_counter()) + 0.001
                # A worker starting: look for its answer every 0.05 s.
                first = min(first, 0.05) if starting else first
                wait = first if wait is None else min(wait, first)
        return wait

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
        _started(ray, actors, options, start_timeout)
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
            ready, _ = ray.wait(list(flight), num_returns=1, timeout=wait_timeout())
            if ready:
                more, _ = ray.wait(list(flight), num_returns=len(flight), timeout=0)
                ready = list(dict.fromkeys(ready + more))
            outcomes: list[tuple[Tensor, float, str]] = []
            for ref in ready:
                i, x, attempts = done(ref)
                try:
                    y, seconds = ray.get(ref)
                    report.busy_seconds += seconds
                    end = time.perf_counter() - start
                    report.spans.append((end - seconds, end))
                    outcomes.append((x, y, ""))
                except ray.exceptions.RayTaskError as e:
                    # The objective raised: the point failed, with its error.
                    outcomes.append((x, math.nan, _error_text(e)))
                except ray.exceptions.RayError as e:
                    # The worker died: a fresh one, the point again (or failed).
                    if _replace(ray, actors, i, remote, shipped):
                        report.workers_lost += 1
                        replaced(i)
                    if attempts < max_retries:
                        report.retried += 1
                        submit(i, x, attempts + 1)
                        continue
                    outcomes.append((x, math.nan, _error_text(e)))
            # Then the points still running past ``timeout``.
            outcomes += expired()
            if not outcomes:
                continue
            # The freed slots first, then the results to the proposer.
            dispatch()
            proposer.put([(x, y) for x, y, _ in outcomes])
            values = [y for _, y, _ in outcomes]
            told += len(values)
            report.evaluations += len(values)
            report.failed += sum(not math.isfinite(y) for y in values)
            report.values.extend(values)
            report.errors.extend(text for _, _, text in outcomes if text)
            best = max([best, *(y for y in values if math.isfinite(y))])
            bar.update(len(values))
            for _, y, _ in outcomes:
                failed_in_a_row = 0 if math.isfinite(y) else failed_in_a_row + 1
                if failed_in_a_row == 0 or failed_in_a_row % batch:
                    continue
                rounds = failed_in_a_row // batch
                last = report.errors[-1] if report.errors else "none (NaN results)"
                warnings.warn(
                    f"The last {failed_in_a_row} results all failed: {rounds} "
                    f"round(s) of {batch} (workers) in a row, the run stops "
                    f"after {max_failed_batches}. The last error: {last}",
                    FailedBatchWarning,
                    stacklevel=2,
                )
                if rounds >= max_failed_batches:
                    report.stopped_reason = "failed batches"
                    break
            if report.stopped_reason:
                break
            now = time.perf_counter() - start
            busy = sum(k > 0 for k in load)
            report.busy_trace.append((now, busy))
            bar.set_postfix(
                best=f"{best:.4g}",
                evals_per_s=f"{report.evaluations / max(now, 1e-9):.3g}",
                busy=f"{busy}/{workers}",
            )
        if not report.stopped_reason:
            proposer.finish()
    finally:
        if start is not None:
            report.wall_seconds = time.perf_counter() - start
        proposer.stop()
        bar.close()
        # Killing the workers ends their calls in flight (Ray refuses
        # ``ray.cancel(force=True)`` of an actor's calls).
        for actor in actors:
            ray.kill(actor)
        # A run that stopped early: the results handed over are told, and the
        # points in flight or ready come first out of the next ask.
        proposer.wind_up([x for _, x, _ in flight.values()])
        report.best_value = optimizer.best()[1]
    return report


def _started(
    ray: Any, actors: list[Any], options: dict[str, Any], start_timeout: float | None
) -> None:
    # Wait until every worker answers, or refuse after ``start_timeout``
    # seconds with the resources asked for and found.
    try:
        ray.get([actor.ping.remote() for actor in actors], timeout=start_timeout)
    except ray.exceptions.GetTimeoutError:
        cpus = float(options.get("num_cpus", 1)) * len(actors)
        total = ray.cluster_resources().get("CPU", 0.0)
        free = ray.available_resources().get("CPU", 0.0)
        raise InputDataError(
            f"run_on_ray's {len(actors)} workers did not all start within "
            f"start_timeout={start_timeout:g} s: they ask for {cpus:g} CPUs "
            f"(worker_options {options}), and the Ray cluster has {total:g} CPUs "
            f"({free:g} free). Pass fewer workers, a smaller num_cpus in "
            "worker_options, or start_timeout=None on a cluster that adds nodes."
        ) from None


def _error_text(error: BaseException) -> str:
    # "ValueError: simulator diverged" for an error raised by the objective on
    # a worker (Ray wraps it with the worker's traceback); Ray's own otherwise.
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


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

    def wind_up(self, out: list[Tensor]) -> None:
        # After ``stop``, in the driver: tell the results handed over and not
        # yet told, and put the points still ``out`` (in flight) and ready
        # first in line for the optimizer's next ask, so none stays pending
        # for good. Not after the thread's own error (the optimizer may be
        # mid-update).
        if self.error is not None or self.thread.is_alive():
            return
        results, self.results = self.results, []
        if results:
            X = torch.stack([x for x, _ in results])
            Y = torch.tensor([y for _, y in results], dtype=torch.double)
            self.optimizer.tell(X, Y)
            self.unsaved = True
        points, self.ready = out + self.ready, []
        if points:
            self.optimizer.requeue(torch.stack(points))
        self._save(last=True)

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
