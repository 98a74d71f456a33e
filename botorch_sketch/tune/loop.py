#!/usr/bin/env python3
r"""The tuning loop: the backend suggests, workers evaluate, a save after each round.

A run tunes a built-in problem (:mod:`botorch_sketch.tune.problems`) or your own
objective (``config.objective``, :mod:`botorch_sketch.tune.objective`, on a
search space of :mod:`botorch_sketch.tune.space`), through Ax
(:mod:`botorch_sketch.tune.ax_backend`, a JSON checkpoint) or Optuna
(:mod:`botorch_sketch.tune.optuna_backend`, an SQLite checkpoint). Up to
``workers`` trials run at once, on local processes or on a Ray cluster
(:mod:`botorch_sketch.tune.pools`). Either checkpoint is locked the same way
(:mod:`botorch_sketch.tune.lock`) and checked before any trial is evaluated.

An evaluation that fails (an exception, NaN, or a worker process that dies)
makes its trial FAILED and the run goes on; a worker process that dies is
replaced. A resumed run keeps every completed trial and runs until ``trials``
trials are COMPLETED.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Any, Protocol

import torch
from tqdm.auto import tqdm

from botorch_sketch.tune.ax_backend import AxRun
from botorch_sketch.tune.checkpoint import (
    check_same_problem,
    check_writable,
    is_read_only,
    read_record,
    remove_stale_temporaries,
)
from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.evaluation import trial_function
from botorch_sketch.tune.lock import CheckpointLock, checkpoint_lock, display_name
from botorch_sketch.tune.objective import ObjectiveError, is_failure
from botorch_sketch.tune.optuna_backend import OptunaRun
from botorch_sketch.tune.pools import Pool, make_pool


class Backend(Protocol):
    r"""What the loop needs of :class:`AxRun` and :class:`OptunaRun`.

    Attributes:
        record: The run's record: ``"config"`` and ``"trials"`` by index.
    """

    record: dict[str, Any]

    def completed(self) -> int:
        r"""The number of completed trials."""

    def suggest(self, wanted: int, others_running: bool) -> dict[int, Any]:
        r"""Up to ``wanted`` new trials' parameters by index."""

    def complete(self, index: int, values: Mapping[str, float]) -> None:
        r"""Report a trial's objective values."""

    def fail(self, index: int, reason: str) -> None:
        r"""Report a failed trial."""

    def save(self) -> None:
        r"""Write the checkpoint."""

    def close(self) -> None:
        r"""Restore what the backend changed for the run."""


def tune(
    config: TuneConfig,
    checkpoint: str,
    resume: bool = False,
    overwrite: bool = False,
    workers: int | None = None,
    ray_address: str | None = None,
    threads: int | None = None,
    max_failures: int = 20,
    progress: bool = True,
) -> dict[str, Any]:
    r"""Run (or resume) a tuning run until ``config.trials`` trials are completed.

    Args:
        config: The settings. On resume, those that define the problem must match
            the checkpoint's; ``trials`` may differ (to extend a run).
        checkpoint: The checkpoint file, written after every completed trial.
        resume: Continue the run in ``checkpoint``.
        overwrite: Start afresh even if ``checkpoint`` exists.
        workers: Trials at once: local processes (0: in this process), or Ray
            tasks; default the number of CPUs (of the Ray cluster with Ray).
        ray_address: A Ray address (``"auto"`` for the local cluster).
        threads: Torch threads for the model in this process; default the CPUs
            the workers leave, at least one.
        max_failures: Stop once more than this many evaluations have failed
            in this call (raised an exception or, for your own objective,
            returned NaN) and they outnumber the completed trials.
        progress: Show a progress bar.

    Returns:
        This run's record (settings and per-trial scores and timings).

    Raises:
        TuneError: On bad settings, a missing, corrupt or mismatched checkpoint,
            an existing checkpoint without ``resume`` or ``overwrite``, a
            read-only checkpoint or directory, a checkpoint another run holds,
            or too many failed evaluations. Every one but the last is raised
            before any trial is evaluated.
    """
    config.validate()
    if resume and overwrite:
        raise TuneError("pass either --resume or --overwrite, not both")
    if workers is not None and workers < 0:
        raise TuneError("--workers must be 0 or more")
    # A symbolic link is followed: the run's file is the one it resolves to.
    target = os.path.realpath(checkpoint)
    if not os.path.isdir(os.path.dirname(target)):
        raise TuneError(
            f"the directory of {display_name(checkpoint, target)} does not exist"
        )
    if os.path.lexists(target) and not os.path.isfile(target):
        raise TuneError(
            f"checkpoint {checkpoint} is not a regular file (a directory?); "
            "give the path of a file with --checkpoint"
        )
    # Every check of the file is made under the lock: checked before it, two
    # runs could both find no checkpoint and both start one.
    with checkpoint_lock(checkpoint) as lock:
        _check_checkpoint(checkpoint, os.path.exists(target), resume, overwrite)
        remove_stale_temporaries(checkpoint)
        if resume:
            stored = read_record(checkpoint)[1]["config"]
            check_same_problem(checkpoint, stored, config)
        pool = make_pool(workers, ray_address)
        return _run_locked(config, lock, resume, pool, threads, max_failures, progress)


def _check_checkpoint(
    checkpoint: str, exists: bool, resume: bool, overwrite: bool
) -> None:
    # Whether the run may use the checkpoint file, asked under its lock.
    if resume and not exists:
        raise TuneError(f"--resume: no checkpoint at {checkpoint}")
    if exists and not (resume or overwrite):
        raise TuneError(
            f"checkpoint {checkpoint} exists; pass --resume to continue it or "
            "--overwrite to start a new run in its place"
        )
    if exists and is_read_only(checkpoint):
        raise TuneError(
            f"checkpoint {checkpoint} is read-only and this run would replace "
            f"it; make it writable (chmod u+w {checkpoint}) or give another "
            "--checkpoint"
        )
    check_writable(checkpoint)


def _run_locked(
    config: TuneConfig,
    lock: CheckpointLock,
    resume: bool,
    pool: Pool,
    threads: int | None,
    max_failures: int,
    progress: bool,
) -> dict[str, Any]:
    # The run itself, under the checkpoint's ``lock``, on ``pool`` (closed on
    # return); the other arguments as in ``tune``.
    backend: Backend | None = None
    threads_before = torch.get_num_threads()
    try:
        if config.backend == "optuna":
            backend = OptunaRun(lock, config, resume)
        else:
            backend = AxRun(lock, config, resume)
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) - pool.capacity)
        torch.set_num_threads(threads)
        return _Loop(config, backend, pool, max_failures, progress).run()
    finally:
        pool.close()
        torch.set_num_threads(threads_before)
        if backend is not None:
            backend.close()


class _Loop:
    # Suggest, evaluate and record until ``config.trials`` trials are completed.
    def __init__(
        self,
        config: TuneConfig,
        backend: Backend,
        pool: Pool,
        max_failures: int,
        progress: bool,
    ) -> None:
        self.config = config
        self.backend = backend
        self.pool = pool
        self.max_failures = max_failures
        self.record = backend.record
        self.function = trial_function(config)
        self.first, direction = next(iter(config.objectives.items()))
        self.sign = 1.0 if direction == "max" else -1.0
        self.completed = backend.completed()
        self.running: dict[Any, int] = {}  # pool handle -> trial index
        self.failures = 0
        self.best = max(
            (
                self.sign * t["score"]
                for t in self.record["trials"].values()
                if "score" in t
            ),
            default=float("nan"),
        )
        self.bar = tqdm(
            total=config.trials,
            initial=min(self.completed, config.trials),
            unit="trial",
            desc=f"{config.model} {config.name()}",
            disable=not progress,
        )

    def run(self) -> dict[str, Any]:
        # The loop; on any exit the bar is closed and running trials given up.
        try:
            while self.completed < self.config.trials:
                wanted = min(self.pool.capacity, self.config.trials - self.completed)
                wanted -= len(self.running)
                if wanted > 0:
                    self._submit(wanted)
                for handle in self.pool.wait(list(self.running)):
                    self._finish(handle)
                self.backend.save()
        finally:
            self.bar.close()
            self.pool.cancel(list(self.running))
        return self.record

    def _submit(self, wanted: int) -> None:
        # Ask the backend for trials and start them.
        start = time.perf_counter()
        suggested = self.backend.suggest(wanted, bool(self.running))
        if not suggested and not self.running:
            raise TuneError(f"{self.config.backend} proposed no trial")
        seconds = (time.perf_counter() - start) / max(1, len(suggested))
        for index, parameters in suggested.items():
            self.record["trials"][str(index)] = {
                "parameters": dict(parameters),
                "suggest_seconds": seconds,
            }
            self.running[self.pool.submit(self.function, dict(parameters))] = index

    def _finish(self, handle: Any) -> None:
        # Record the trial of a done ``handle``: completed, or failed.
        index = self.running.pop(handle)
        entry = self.record["trials"][str(index)]
        try:
            values, seconds = self.pool.result(handle)
            if self.config.custom and is_failure(values):
                raise ValueError(f"the objective returned {values}")
        except ObjectiveError as e:
            # Not importable, or a return value of the wrong kind: the same for
            # every trial, so stop at once.
            entry["failed"] = str(e)
            self.backend.fail(index, entry["failed"])
            raise TuneError(str(e)) from None
        except Exception as e:
            self.failures += 1
            entry["failed"] = f"{type(e).__name__}: {e}"
            self.backend.fail(index, entry["failed"])
            # An objective that fails now and then is the objective's business;
            # one that mostly fails is a bug to report.
            if self.failures > self.max_failures and self.failures > self.completed:
                raise TuneError(
                    f"{self.failures} evaluations failed; the last with "
                    f"{type(e).__name__}: {e}"
                ) from None
            return
        self.completed += 1
        score = values[self.first]
        entry.update(score=score, eval_seconds=seconds, completed=self.completed)
        if len(values) > 1:
            entry["values"] = dict(values)
        self.backend.complete(index, values)
        if math.isnan(self.best) or self.sign * score > self.best:
            self.best = self.sign * score
        self.bar.update(1)
        self.bar.set_postfix(best=f"{self.sign * self.best:.4g}")
