#!/usr/bin/env python3
r"""The Optuna side of a run (:class:`OptunaRun`): a study in an SQLite file.

The study itself, and how the run's record is kept in it, is
:mod:`botorch_sketch.tune.study`; this adapter gives the loop the same
interface as :class:`~botorch_sketch.tune.ax_backend.AxRun`, and keeps
Optuna's log to warnings while the run lasts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.lock import CheckpointLock
from botorch_sketch.tune.study import StudyRun, remove


class OptunaRun:
    r"""The Optuna side of a run: asks and tells a :class:`StudyRun`.

    Attributes:
        study: The run's :class:`~botorch_sketch.tune.study.StudyRun`.
        record: The run's record (settings and trials).
        interrupted: The trials a killed run left running, now FAILED.
    """

    def __init__(self, lock: CheckpointLock, config: TuneConfig, resume: bool) -> None:
        r"""Load the run's study, or make a new one in place of the checkpoint.

        Args:
            lock: The checkpoint's held lock (the new file is locked too).
            config: The run's settings.
            resume: Load the study (else remove the checkpoint and make one).

        Raises:
            TuneError: If Optuna is not installed.
        """
        try:
            import optuna
        except ImportError:
            raise TuneError(
                "--backend optuna needs Optuna: pip install -e '.[optuna]' in a clone"
            ) from None
        if not resume:
            # --overwrite, under the lock: the file a link resolves to, not the
            # link, so that the study is made there.
            remove(lock.path)
        self._logging = optuna.logging
        self.verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            self.study = StudyRun(lock.path, config, resume, lock.checkpoint)
            lock.hold_file()  # the new file, made in place by SQLite
        except Exception:
            optuna.logging.set_verbosity(self.verbosity)
            raise
        self.record = self.study.record
        self.interrupted = self.study.interrupted

    def completed(self) -> int:
        r"""The number of COMPLETE trials."""
        return self.study.completed()

    def suggest(self, wanted: int, others_running: bool) -> dict[int, Any]:
        r"""Ask for ``wanted`` trials (the sampler sees running ones as pending)."""
        return self.study.suggest(wanted)

    def complete(self, index: int, values: Mapping[str, float]) -> None:
        r"""Tell the study a trial's objective values."""
        self.study.complete(index, values)

    def fail(self, index: int, reason: str) -> None:
        r"""Tell the study a trial failed."""
        self.study.fail(index, reason)

    def save(self) -> None:
        r"""Nothing to do: SQLite has committed every ``tell``."""
        self.study.save()

    def close(self) -> None:
        r"""Restore Optuna's log verbosity."""
        self._logging.set_verbosity(self.verbosity)
