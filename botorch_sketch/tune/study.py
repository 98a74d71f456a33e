#!/usr/bin/env python3
r"""``botorch-sketch tune --backend optuna``: an Optuna study in an SQLite file.

The checkpoint is an Optuna RDB storage (``sqlite:///PATH``) holding one study,
:data:`STUDY`; SQLite commits every ``tell``, so a killed run loses no
completed trial. The run's settings are a study user attribute and each trial's
timings a trial user attribute, both under the key
``"botorch_sketch_tune"``: ``optuna.load_study(study_name="botorch-sketch-tune",
storage="sqlite:///PATH")`` opens the study as any other.

Trials are asked for in this process (so the sampler sees the running ones as
pending points) and evaluated by the same local processes or Ray tasks as with
Ax. The sampler is :class:`~botorch_sketch.integrations.optuna.SketchSampler`
with ``NystromGP`` (``--model nystrom``) or ``GradientSubsetGP`` (``subset``),
or Optuna's ``GPSampler`` (``default``); it supports several objectives.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping
from typing import Any

from botorch_sketch.models import GradientSubsetGP
from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.consistency import check_study_run
from botorch_sketch.tune.space import SpaceParam

#: The study's name in the file.
STUDY = "botorch-sketch-tune"
#: The key of this package's attributes.
KEY = "botorch_sketch_tune"
_MAGIC = b"SQLite format 3\x00"


def is_study_file(path: str) -> bool:
    r"""Whether ``path`` is an SQLite file (an Optuna checkpoint), by its header."""
    try:
        with open(path, "rb") as f:
            return f.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def _storage(path: str) -> Any:
    import optuna

    return optuna.storages.RDBStorage(url=f"sqlite:///{os.path.abspath(path)}")


def _has_study_tables(path: str) -> bool:
    try:
        uri = f"file:{os.path.abspath(path)}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        return False
    return {"studies", "trials"} <= names


def remove(path: str) -> None:
    r"""Remove an SQLite checkpoint and the journal files SQLite may have left."""
    for name in (path, f"{path}-journal", f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def read_study_record(path: str) -> dict[str, Any]:
    r"""This run's record (settings and trials) from an Optuna checkpoint.

    Raises:
        ValueError: If the file holds no study of this command.
    """
    import optuna

    if not _has_study_tables(path):
        # Opening it with Optuna would add Optuna's tables to someone's file.
        raise ValueError("not an Optuna storage")
    try:
        study = optuna.load_study(study_name=STUDY, storage=_storage(path))
    except Exception as e:  # SQLAlchemy and Optuna raise many kinds
        raise ValueError(f"not a botorch-sketch tune study ({type(e).__name__})") from e
    record = study.user_attrs.get(KEY)
    if not isinstance(record, dict):
        raise ValueError("its study has no botorch-sketch tune settings")
    record = dict(record)
    record["trials"] = {
        str(t.number): t.user_attrs[KEY]
        for t in study.get_trials(deepcopy=False)
        if isinstance(t.user_attrs.get(KEY), dict)
    }
    return record


def sampler(config: TuneConfig, seed: int) -> Any:
    r"""The Optuna sampler of a run's settings.

    Args:
        config: The run's settings.
        seed: The sampler's seed (the run's, shifted on resume so that the
            random start does not repeat itself).
    """
    if config.model == "default":
        from optuna.samplers import GPSampler

        return GPSampler(seed=seed, n_startup_trials=config.initial)
    from botorch_sketch.integrations.optuna import SketchSampler

    options: dict[str, Any] = {
        k: v
        for k, v in (
            ("num_restarts", config.num_restarts),
            ("raw_samples", config.raw_samples),
        )
        if v is not None
    }
    if options.get("raw_samples", 256) < options.get("num_restarts", 8):
        options["raw_samples"] = options["num_restarts"]
    if config.model == "subset":
        options["model"] = GradientSubsetGP
        options["model_options"] = {
            "subset_size": config.subset_size,
            "num_initial": config.initial,
        }
    return SketchSampler(seed=seed, n_startup_trials=config.initial, **options)


def distributions(params: tuple[SpaceParam, ...]) -> dict[str, Any]:
    r"""Optuna distributions of a search space (floats, integers, categories)."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    out = {}
    for p in params:
        if p.kind == "categorical":
            out[p.name] = CategoricalDistribution(list(p.choices))
        elif p.kind == "int":
            out[p.name] = IntDistribution(int(p.low), int(p.high), log=p.log)
        else:
            out[p.name] = FloatDistribution(p.low, p.high, log=p.log)
    return out


class StudyRun:
    r"""A run's Optuna study: ask, tell, and the record kept in user attributes."""

    def __init__(
        self,
        path: str,
        config: TuneConfig,
        resume: bool,
        checkpoint: str | None = None,
    ) -> None:
        r"""Create or load the study; mark the trials a killed run left FAILED.

        A loaded study whose record disagrees with its trials (an edited
        file) is refused first
        (:func:`~botorch_sketch.tune.consistency.check_study_run`).

        Args:
            path: The SQLite checkpoint.
            config: The run's settings.
            resume: Load the study (else create it; the file must not exist).
            checkpoint: The checkpoint as it was given, for messages
                (default ``path``).
        """
        import optuna
        from optuna.trial import TrialState

        self.config = config
        storage = _storage(path)
        directions = [
            "maximize" if d == "max" else "minimize" for d in config.objectives.values()
        ]
        if resume:
            study = optuna.load_study(study_name=STUDY, storage=storage)
            # Before anything is changed: an edited record is refused.
            expected = distributions(config.params())
            check_study_run(checkpoint or path, study, config, expected, KEY)
            self.record = read_study_record(path)
        else:
            study = optuna.create_study(
                study_name=STUDY, storage=storage, directions=directions
            )
            self.record = {"version": 1, "config": config.record(), "trials": {}}
        self.interrupted: list[int] = []
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            # Running when the run stopped: failed, and suggested again if good.
            entry = dict(trial.user_attrs.get(KEY, {}), failed="interrupted")
            # Private: Optuna sets a user attribute of an existing trial only
            # through the Trial that ``ask`` returned, which a killed run took.
            study._storage.set_trial_user_attr(trial._trial_id, KEY, entry)
            study.tell(trial.number, state=TrialState.FAIL)
            self.record["trials"][str(trial.number)] = entry
            self.interrupted.append(trial.number)
        self.record["config"]["trials"] = config.trials
        settings = {k: v for k, v in self.record.items() if k != "trials"}
        study.set_user_attr(KEY, settings)
        study.sampler = sampler(config, (config.seed + len(study.trials)) % 2**31)
        self.study = study
        self.distributions = distributions(config.params())
        self.asked: dict[int, Any] = {}

    def completed(self) -> int:
        r"""The number of COMPLETE trials."""
        from optuna.trial import TrialState

        return len(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    def suggest(self, wanted: int) -> dict[int, dict[str, Any]]:
        r"""Ask for ``wanted`` trials; their numbers and parameters."""
        out = {}
        for _ in range(wanted):
            trial = self.study.ask(self.distributions)
            self.asked[trial.number] = trial
            out[trial.number] = dict(trial.params)
        return out

    def complete(self, index: int, values: Mapping[str, float]) -> None:
        r"""Tell the study a trial's objective values."""
        self._store(index)
        trial = self.asked.pop(index)
        self.study.tell(trial, [values[name] for name in self.config.objectives])

    def fail(self, index: int, reason: str) -> None:
        r"""Tell the study a trial failed."""
        from optuna.trial import TrialState

        self._store(index)
        trial = self.asked.pop(index)
        self.study.tell(trial, state=TrialState.FAIL)

    def save(self) -> None:
        r"""Nothing to do: SQLite has committed every ``tell``."""

    def _store(self, index: int) -> None:
        # The trial's entry of the record, kept as its user attribute.
        entry = dict(self.record["trials"][str(index)])
        self.asked[index].set_user_attr(KEY, entry)
