#!/usr/bin/env python3
r"""The tuning loop: Ax suggests, workers evaluate, a checkpoint after each result.

A run tunes a built-in problem (:mod:`botorch_sketch.integrations.tune.problems`)
or your own objective (``config.objective``,
:mod:`botorch_sketch.integrations.tune.objective`, on a search space of
:mod:`botorch_sketch.integrations.tune.space`). With ``backend="optuna"`` the same
loop asks and tells an Optuna study kept in an SQLite file
(:mod:`botorch_sketch.integrations.tune.study`); what follows describes the Ax
backend, whose checkpoint is JSON. Either checkpoint is locked the same way.

An Ax run is one ``ax.api.Client`` whose generation strategy uses
:class:`~botorch_sketch.models.NystromGP` (``model="nystrom"``) or Ax's default
model (``model="default"``). Up to ``workers`` trials run at once, on local
processes or on a Ray cluster. After every completed trial the client is saved
with Ax's JSON encoding, plus this run's settings and per-trial timings under
the key ``"botorch_sketch_tune"`` (``Client.load_from_json_file`` reads the file
and ignores that key), to a temporary file in the same directory that then
replaces the checkpoint: a killed run leaves the previous checkpoint or the new
one, never half of one. A checkpoint that is a symbolic link is written
through: the file it resolves to is replaced, the link kept. A run holds an
exclusive lock on its checkpoint file (:func:`checkpoint_lock`), under whatever
name it was given (a symbolic or hard link), so a second run on the same file
refuses at once instead of interleaving its saves with the first's; the next run
on a checkpoint removes the temporary files a killed run left.

An evaluation that fails (an exception, NaN, or a worker process that dies)
makes its trial FAILED and the run goes on; a worker process that dies is
replaced. Ax's model does not see a FAILED trial, so it may propose the same
point again: such a repeat is marked ABANDONED, not evaluated, and Ax is asked
again (after :data:`REPEAT_TRIES` repeats, a random point is evaluated instead).

Resuming marks the trials that were running when the run stopped as FAILED
(reason ``"interrupted"``; Ax may suggest their points again), keeps every
completed trial, and runs until ``trials`` trials are COMPLETED.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import functools
import json
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import signal
import stat
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from botorch_sketch.integrations.tune.objective import (
    ObjectiveError,
    call_objective,
    is_failure,
    parse_objectives,
)
from botorch_sketch.integrations.tune.problems import (
    DATASETS,
    ESTIMATORS,
    evaluate,
    search_space,
)
from botorch_sketch.integrations.tune.space import SpaceParam, parse_space, to_dict
from botorch_sketch.integrations.tune.study import is_study_file

try:
    import fcntl
except ImportError:  # Windows: runs are not locked
    fcntl = None

#: The key of this package's record in a checkpoint.
KEY = "botorch_sketch_tune"
FORMAT_VERSION = 1
METRIC = "accuracy"
MODELS = ("nystrom", "subset", "default")
#: ``ax``: an ``ax.api.Client`` saved as Ax's JSON; ``optuna``: an Optuna study
#: in an SQLite file, sampled by
#: :class:`~botorch_sketch.integrations.optuna.SketchSampler` (``--model
#: default``: Optuna's ``GPSampler``).
BACKENDS = ("ax", "optuna")
#: The objective of the built-in problems, maximised.
BUILTIN_OBJECTIVES = {METRIC: "max"}
#: ``auto``: Ax's choice (qLogNoisyExpectedImprovement), whose cost grows with the
#: observations it keeps as baseline; ``qlogei``: qLogExpectedImprovement, which
#: compares with the best observed mean and costs the same at any n; ``bkb``:
#: qBKBUpperConfidenceBound (``nystrom`` only).
ACQUISITIONS = ("auto", "qlogei", "bkb")
#: The most trials a run may ask for. A GP-based search is of no use long before
#: this (its model's cost grows with every trial); the bound keeps a damaged or
#: hostile checkpoint from starting a run without end.
MAX_TRIALS = 100_000
#: The inclusive range of each integer setting. The seed's is numpy's, which
#: scikit-learn's fold split passes it to; the others only keep absurd values
#: (a checkpoint's 10**30, say) from reaching Ax, torch or scikit-learn.
LIMITS: dict[str, tuple[int, int]] = {
    "trials": (1, MAX_TRIALS),
    "initial": (1, MAX_TRIALS),
    "folds": (2, 1000),
    "seed": (0, 2**32 - 1),
    "subset_size": (2, MAX_TRIALS),
    "num_restarts": (1, 10_000),
    "raw_samples": (1, 1_000_000),
}
_CHOICES: dict[str, Any] = {
    "dataset": DATASETS,
    "estimator": ESTIMATORS,
    "model": MODELS,
    "acquisition": ACQUISITIONS,
    "backend": BACKENDS,
}
_OPTIONAL = ("num_restarts", "raw_samples")


class TuneError(Exception):
    r"""A problem with the user's input or checkpoint, reported without traceback."""


def _describe(value: Any) -> str:
    # A value for a message: a 4000-digit integer or a long nested list from a
    # damaged file must neither flood the terminal nor fail to print.
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1e18:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any) -> bool:
    # JSON's true and false are Python ints; a count is never a boolean.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any, finite: bool = True) -> bool:
    if not (_is_int(value) or isinstance(value, float)):
        return False
    try:
        return math.isfinite(value) or not finite
    except OverflowError:  # an integer beyond any float
        return False


def _setting_problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    # (name, what is wrong) for each setting in ``values`` of the wrong type or
    # outside its range; shared by TuneConfig.validate and the checkpoint check.
    for name, choices in _CHOICES.items():
        if name in values:
            value = values[name]
            if not isinstance(value, str) or value not in choices:
                problem = f"must be one of {sorted(choices)}, got {_describe(value)}"
                yield name, problem
    for name, (low, high) in LIMITS.items():
        if name not in values or (name in _OPTIONAL and values[name] is None):
            continue
        value = values[name]
        if not _is_int(value) or not low <= value <= high:
            problem = f"must be an integer from {low} to {high}, got {_describe(value)}"
            yield name, problem
    if "bounds" in values:
        bounds = values["bounds"]
        if not isinstance(bounds, Mapping) or not all(
            isinstance(k, str)
            and isinstance(v, (list, tuple))
            and len(v) == 2
            and all(_is_real(x) for x in v)
            for k, v in bounds.items()
        ):
            problem = (
                "must map parameter names to [low, high] pairs of finite "
                f"numbers, got {_describe(bounds)}"
            )
            yield "bounds", problem
    if values.get("objective") is not None and not isinstance(values["objective"], str):
        yield (
            "objective",
            f"must be MODULE:FUNCTION, got {_describe(values['objective'])}",
        )
    if "objectives" in values:
        objectives = values["objectives"]
        if not (
            isinstance(objectives, Mapping)
            and objectives
            and all(
                isinstance(k, str) and v in ("min", "max")
                for k, v in objectives.items()
            )
        ):
            problem = f"must map names to 'min' or 'max', got {_describe(objectives)}"
            yield "objectives", problem


@dataclass
class TuneConfig:
    r"""The settings of a run; those that define the problem are stored with it."""

    dataset: str = "digits"
    estimator: str = "svm"
    model: str = "nystrom"
    trials: int = 100
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    initial: int = 10
    folds: int = 3
    seed: int = 0
    num_restarts: int | None = None
    raw_samples: int | None = None
    acquisition: str = "auto"
    #: ``subset``: GradientSubsetGP's subset size (the paper's M is about 100).
    subset_size: int = 100
    backend: str = "ax"
    #: Your own objective, ``package.module:function``, and its search space
    #: (``--space`` entries with their names, see
    #: :mod:`botorch_sketch.integrations.tune.space`); None for a built-in problem.
    objective: str | None = None
    space: list[dict[str, Any]] | None = None
    #: The objectives' names and directions (``"min"`` or ``"max"``).
    objectives: dict[str, str] = field(default_factory=BUILTIN_OBJECTIVES.copy)

    #: Settings a resumed run must share with its checkpoint.
    PROBLEM = (
        "dataset",
        "estimator",
        "model",
        "acquisition",
        "params",
        "folds",
        "seed",
        "backend",
        "objective",
        "objectives",
    )

    @property
    def custom(self) -> bool:
        r"""Whether this run tunes your own objective (``--objective``)."""
        return self.objective is not None

    def params(self) -> tuple[SpaceParam, ...]:
        r"""The search space (raises ``ValueError`` on bad input)."""
        if self.custom:
            if self.space is None:
                raise ValueError("--objective needs --space FILE")
            return parse_space(self.space)
        return search_space(self.estimator, self.bounds)

    def name(self) -> str:
        r"""A short name of the problem: ``estimator-dataset`` or the function's."""
        if self.custom:
            return str(self.objective).rsplit(":", 1)[-1]
        return f"{self.estimator}-{self.dataset}"

    def validate(self) -> None:
        r"""Raise ``TuneError`` naming the first bad setting (type, range, choice)."""
        for name, problem in _setting_problems(asdict(self)):
            raise TuneError(f"--{name.replace('_', '-')} {problem}")
        if self.acquisition == "bkb" and self.model != "nystrom":
            raise TuneError("--acquisition bkb needs --model nystrom")
        if self.backend == "optuna" and self.acquisition != "auto":
            raise TuneError(
                "--acquisition is an Ax setting; with --backend optuna the sampler "
                "chooses (SketchSampler: qLogNEI, qLogNEHVI for several objectives)"
            )
        if self.custom:
            try:
                parse_objectives([f"{k}={v}" for k, v in self.objectives.items()])
            except ObjectiveError as e:
                raise TuneError(str(e)) from None
        elif self.objectives != BUILTIN_OBJECTIVES:
            raise TuneError(
                "--objectives names the values of your own --objective; the "
                f"built-in problems maximise {METRIC}"
            )
        if self.model == "subset" and self.subset_size <= self.initial + 1:
            raise TuneError(
                f"--subset-size ({self.subset_size}) must exceed --initial + 1 "
                f"({self.initial + 1}): the initial trials and the newest are kept"
            )
        try:
            self.params()
        except ValueError as e:
            raise TuneError(f"bad search space: {e}") from None

    def record(self) -> dict[str, Any]:
        r"""A JSON record of the settings and the search space."""
        out = asdict(self)
        out["bounds"] = {k: list(v) for k, v in self.bounds.items()}
        if self.custom:
            out["params"] = [to_dict(p) for p in self.params()]
        else:
            out["params"] = [p.to_dict() for p in self.params()]
        return out


# ------------------------------------------------------------------ checkpoints


@contextlib.contextmanager
def quiet_ax() -> Iterator[None]:
    r"""Within the block, silence Ax's log messages below ERROR and all warnings.

    Both are restored on exit, so calling the command in-process (a notebook,
    a test) leaves the caller's logging and warning filters as they were.
    """
    import warnings

    try:
        from ax.utils.common.logger import ROOT_STREAM_HANDLER
    except ImportError:  # --backend optuna needs no Ax
        ROOT_STREAM_HANDLER = logging.NullHandler()
    level = ROOT_STREAM_HANDLER.level
    ROOT_STREAM_HANDLER.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        ROOT_STREAM_HANDLER.setLevel(level)


def _ax():
    # Imported on use: ``python -m botorch_sketch.integrations.tune --help`` stays
    # fast and a missing Ax gives the message of botorch_sketch.integrations.ax.
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    import botorch_sketch.integrations.ax as integration
    import botorch_sketch.integrations.ax_carried  # noqa: F401 (registers its class)

    return Client, RangeParameterConfig, integration


def save_checkpoint(
    path: str,
    client: Any,
    record: Mapping[str, Any],
    lock: CheckpointLock | None = None,
) -> None:
    r"""Write the client and this run's record to ``path`` atomically.

    A symbolic link is written through: the file it resolves to
    (``os.path.realpath``) is replaced, and the link is kept. (A hard link
    cannot be kept: the replacement is a new file, and another name of the old
    one keeps the old contents.)

    Args:
        path: The checkpoint file.
        client: The ``ax.api.Client``.
        record: The run's settings and per-trial timings (JSON values).
        lock: The checkpoint's lock, held by this process: the new file is
            locked before it takes the checkpoint's place (see
            :meth:`CheckpointLock.replace`).
    """
    target = lock.path if lock is not None else os.path.realpath(path)
    fd, tmp = tempfile.mkstemp(
        dir=os.path.dirname(target),
        prefix=f".{os.path.basename(target)}.",
        suffix=".tmp",
    )
    os.close(fd)
    try:
        # Ax's public writer, then the record beside its keys (Ax's reader
        # ignores keys it does not know).
        client.save_to_json_file(tmp)
        with open(tmp) as f:
            snapshot = json.load(f)
        snapshot[KEY] = dict(record)
        # mkstemp makes the file private: give it the mode of the file it
        # replaces (a checkpoint kept private stays so), else a new file's.
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with open(tmp, "w") as f:
            json.dump(snapshot, f)
            f.flush()
            os.fsync(f.fileno())
        if lock is not None:
            lock.replace(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _study_record(path: str) -> dict[str, Any]:
    from botorch_sketch.integrations.tune.study import read_study_record

    try:
        return read_study_record(path)
    except ImportError:
        raise TuneError(
            f"{path} is an Optuna checkpoint; reading it needs Optuna: pip install "
            "-e '.[optuna]' in a clone"
        ) from None
    except ValueError as e:
        raise TuneError(f"{path} is an SQLite file but {e}") from None


def read_record(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    r"""The JSON snapshot in a checkpoint and this run's record in it.

    An Optuna checkpoint (an SQLite file, ``--backend optuna``) has no Ax
    snapshot: its record is read from the study's attributes and returned
    alone under :data:`KEY`.

    Every field of the record is checked (types and ranges), so that a damaged
    or hand-edited file gives a message rather than a traceback or a run
    without end.

    Raises:
        TuneError: If the file is missing, not a regular file, unreadable, not
            JSON, not a tune checkpoint, or holds a bad field.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            # A directory or a FIFO (whose open() would wait for a writer).
            raise TuneError(f"checkpoint {path} is not a regular file")
        if is_study_file(path):
            snapshot = {KEY: _study_record(path)}
        else:
            with open(path) as f:
                snapshot = json.load(f)
    except FileNotFoundError:
        raise TuneError(f"no checkpoint at {path}") from None
    except OSError as e:
        raise TuneError(f"cannot read checkpoint {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        # ValueError: not JSON, or an integer of more than 4300 digits.
        # RecursionError: arrays or objects nested too deeply.
        reason = str(e) if len(str(e)) <= 200 else str(e)[:197] + "..."
        raise TuneError(
            f"checkpoint {path} is corrupt or truncated (not valid JSON: {reason})"
        ) from None
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get(KEY), dict):
        raise TuneError(f"{path} is not a botorch-sketch tune checkpoint")
    record = snapshot[KEY]
    if record.get("version") != FORMAT_VERSION or "config" not in record:
        raise TuneError(
            f"{path} has checkpoint format {_describe(record.get('version'))}; "
            f"this version reads format {FORMAT_VERSION}"
        )
    record.setdefault("trials", {})
    if isinstance(record["config"], dict):
        # Settings added after format 1 was first written: their defaults.
        for name in ("backend", "objective", "space", "objectives"):
            default = TuneConfig.__dataclass_fields__[name]
            value = (
                default.default_factory() if name == "objectives" else default.default
            )
            record["config"].setdefault(name, value)
    problem = _record_problem(record)
    if problem:
        raise TuneError(
            f"checkpoint {path} is damaged: {problem} (resume from a backup, or "
            "start a new run with --overwrite or another --checkpoint)"
        )
    return snapshot, record


_PARAM_FIELDS = {"name": str, "low": float, "high": float, "kind": str, "log": bool}
_TRIAL_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")


def _record_problem(record: Mapping[str, Any]) -> str | None:
    # What is wrong with a checkpoint's record, or None. Fields a later format
    # may add are ignored; those this version reads are checked.
    config = record["config"]
    if not isinstance(config, dict):
        return f"config must be an object, got {_describe(config)}"
    missing = [
        k for k in (*TuneConfig.__dataclass_fields__, "params") if k not in config
    ]
    if missing:
        return f"config lacks {missing[0]!r}"
    for name, problem in _setting_problems(config):
        return f"config field {name!r} {problem}"
    params = config["params"]
    if config["objective"] is not None:
        try:
            parse_space(config["space"])
            parse_space(params)
        except ValueError as e:
            return f"config field 'space' or 'params' is bad: {e}"
    elif not isinstance(params, list) or not all(
        isinstance(p, dict)
        and all(
            _is_real(p.get(k)) if kind is float else type(p.get(k)) is kind
            for k, kind in _PARAM_FIELDS.items()
        )
        and p["kind"] in ("float", "int")
        for p in params
    ):
        return (
            "config field 'params' must be a list of {name, low, high, kind, log} "
            f"objects, got {_describe(params)}"
        )
    trials = record["trials"]
    if not isinstance(trials, dict):
        return f"trials must be an object, got {_describe(trials)}"
    for index, trial in trials.items():
        where = f"trial {_describe(index)}"
        if not _TRIAL_INDEX.fullmatch(index):
            return f"{where}: a trial index must be a non-negative integer"
        if not isinstance(trial, dict):
            return f"{where} must be an object, got {_describe(trial)}"
        problem = _trial_problem(trial)
        if problem:
            return f"{where}: {problem}"
    return None


def _trial_problem(trial: Mapping[str, Any]) -> str | None:
    parameters = trial.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        _is_real(v) or isinstance(v, (str, bool)) for v in parameters.values()
    ):
        return (
            "'parameters' must map names to numbers (or the texts and booleans of "
            f"categorical ones), got {_describe(parameters)}"
        )
    values = trial.get("values", {})
    if not isinstance(values, dict) or not all(
        _is_real(v, finite=False) for v in values.values()
    ):
        return f"'values' must map names to numbers, got {_describe(values)}"
    for name in ("suggest_seconds", "eval_seconds"):
        value = trial.get(name, 0.0)
        if not (_is_real(value) and value >= 0):
            return f"{name!r} must be a non-negative number, got {_describe(value)}"
    # A failed cross-validation fit may score NaN, so the score may be NaN.
    if "score" in trial and not _is_real(trial["score"], finite=False):
        return f"'score' must be a number, got {_describe(trial['score'])}"
    if ("score" in trial) != ("completed" in trial):
        return "'score' and 'completed' must be stored together"
    completed = trial.get("completed", 1)
    if not (_is_int(completed) and 1 <= completed <= MAX_TRIALS):
        return (
            f"'completed' must be an integer from 1 to {MAX_TRIALS}, got "
            f"{_describe(completed)}"
        )
    if not isinstance(trial.get("failed", ""), str):
        return f"'failed' must be a text, got {_describe(trial['failed'])}"
    return None


def load_checkpoint(path: str) -> tuple[Any, dict[str, Any]]:
    r"""The ``ax.api.Client`` and this run's record from a checkpoint.

    Raises:
        TuneError: If the checkpoint cannot be read or restored.
    """
    _, record = read_record(path)
    Client, _, _ = _ax()
    try:
        client = Client.load_from_json_file(path)
    except Exception as e:  # Ax raises many kinds on malformed snapshots.
        raise TuneError(
            f"checkpoint {path} could not be restored by Ax ({type(e).__name__}: {e})"
        ) from None
    return client, record


def _check_same_problem(path: str, stored: Mapping[str, Any], config: TuneConfig):
    mine = config.record()
    for name in TuneConfig.PROBLEM:
        if stored.get(name) != mine[name]:
            raise TuneError(
                f"checkpoint {path} was made with {name} = {stored.get(name)!r}, "
                f"not {mine[name]!r}; resume it with the same settings or start a "
                "new run with --overwrite or another --checkpoint"
            )


def _lock_path(target: str) -> str:
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}.lock")


def _named(checkpoint: str, target: str) -> str:
    # A checkpoint for a message, with the file it resolves to if that differs.
    if os.path.abspath(checkpoint) == target:
        return checkpoint
    return f"{checkpoint} (the file {target})"


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _temporary_pattern(target: str) -> re.Pattern:
    # The names save_checkpoint's mkstemp gives: ".NAME." + 8 characters of
    # tempfile's alphabet + ".tmp". Exactly 8, so that the temporary files of
    # a checkpoint whose name merely starts with this one's never match.
    name = re.escape(os.path.basename(target))
    return re.compile(rf"\.{name}\.[a-z0-9_]{{8}}\.tmp")


class CheckpointLock:
    r"""A checkpoint's lock, held by this process; :func:`checkpoint_lock` makes it.

    Attributes:
        checkpoint: The checkpoint as it was given (for messages).
        path: The file it resolves to (``os.path.realpath``). The run reads and
            writes this file, so a symbolic link is written through and kept.
    """

    def __init__(self, checkpoint: str, path: str) -> None:
        r"""A lock on ``checkpoint`` (which resolves to ``path``), not yet held."""
        self.checkpoint = checkpoint
        self.path = path
        self._fd: int | None = None  # the locked checkpoint file, once it exists

    def hold_file(self) -> None:
        r"""Lock the checkpoint file itself, if it exists and is not locked yet.

        Its other names (hard links, in any directory) share the lock, as they
        share the file. Call it again once a new checkpoint has been made (an
        Optuna study is made in place; an Ax save goes through
        :meth:`replace`).

        Raises:
            TuneError: If another process holds the file's lock.
        """
        if fcntl is None:
            return
        if self._fd is not None:
            # Locked already? Asked without opening the file: closing another
            # descriptor of it would drop the POSIX locks SQLite holds on it.
            with contextlib.suppress(FileNotFoundError):
                if _same_file(os.stat(self.path), os.fstat(self._fd)):
                    return
        while True:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except (FileNotFoundError, PermissionError):
                # Not made yet; or unreadable, which the run refuses anyway.
                return
            except OSError as e:
                raise TuneError(
                    f"cannot lock checkpoint {self.checkpoint} ({e.strerror or e})"
                ) from None
            mine = os.fstat(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if isinstance(e, BlockingIOError):
                    raise TuneError(
                        f"checkpoint {_named(self.checkpoint, self.path)} is in use "
                        "by another tune run, under another name of the same file "
                        "(a hard link); wait for it to end, or give another "
                        "--checkpoint"
                    ) from None
                raise TuneError(
                    f"cannot lock checkpoint {self.checkpoint} ({e.strerror or e})"
                ) from None
            # A save of the holder may have put a new file in place since this
            # one was opened: the lock must be on the file that is there now.
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current and _same_file(current, mine):
                self._hold(fd)
                return
            os.close(fd)

    def replace(self, tmp: str) -> None:
        r"""Put the file ``tmp`` in the checkpoint's place, locked before it is there.

        So the checkpoint file is locked at every moment, even through a hard
        link made to the new file during the run.
        """
        if fcntl is None:
            os.replace(tmp, self.path)
            return
        fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._hold(fd)

    def release(self) -> None:
        r"""Release the checkpoint file's lock (:func:`checkpoint_lock` does)."""
        self._hold(None)

    def _hold(self, fd: int | None) -> None:
        # Closing the descriptor releases its flock.
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)


@contextlib.contextmanager
def checkpoint_lock(checkpoint: str) -> Iterator[CheckpointLock]:
    r"""Hold a checkpoint's exclusive lock for the block, or refuse at once.

    The lock is keyed by the file, not by the name it was given: a run through
    a symbolic link or a hard link is refused while another run holds the file
    under any of its names. It is two ``fcntl.flock`` locks. The first is on
    ``.NAME.lock`` beside the file ``NAME`` the checkpoint resolves to
    (``os.path.realpath``), which exists before the checkpoint does (two new
    runs of one file) and holds the holder's process id for the message of a
    refused run; it is removed on release. The second is on the checkpoint file
    itself, which its hard links share (see :class:`CheckpointLock`). The kernel
    releases both when their holder exits, even by ``kill -9``, so a killed run
    never leaves the checkpoint locked. Locks on some network file systems are
    not reliable. Where ``fcntl`` does not exist (Windows) the block runs
    unlocked.

    Args:
        checkpoint: The checkpoint file (it need not exist).

    Yields:
        The held :class:`CheckpointLock`; its ``path`` is the file to write.

    Raises:
        TuneError: If another process holds the lock, or the lock file cannot
            be created (a read-only directory, say).
    """
    target = os.path.realpath(checkpoint)
    lock = CheckpointLock(checkpoint, target)
    if fcntl is None:
        yield lock
        return
    path = _lock_path(target)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as e:
            raise TuneError(
                f"cannot create the lock file {path} of checkpoint {checkpoint} "
                f"({e.strerror or e}); is its directory writable?"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if isinstance(e, BlockingIOError):
                by = f" (process {holder})" if holder.isdigit() else ""
                raise TuneError(
                    f"checkpoint {_named(checkpoint, target)} is in use by another "
                    f"tune run{by}; wait for it to end, or give another --checkpoint"
                ) from None
            raise TuneError(
                f"cannot lock checkpoint {checkpoint} ({e.strerror or e})"
            ) from None
        # The previous holder removes the file on release, and may have done so
        # after this process opened it: a lock on a removed file locks nothing.
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current and _same_file(current, os.fstat(fd)):
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        lock.hold_file()
        yield lock
    finally:
        lock.release()
        # Removed while still held, so no other process can lock it meanwhile.
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def remove_stale_temporaries(checkpoint: str) -> list[str]:
    r"""Remove the temporary files a killed run left beside a checkpoint.

    Call it only while holding :func:`checkpoint_lock`: every run writes its
    temporary files under the lock, so while it is held none is in use.

    Args:
        checkpoint: The checkpoint file (the temporary files are beside the
            file it resolves to).

    Returns:
        The paths removed.
    """
    target = os.path.realpath(checkpoint)
    directory = os.path.dirname(target)
    pattern = _temporary_pattern(target)
    removed = []
    for name in os.listdir(directory):
        if pattern.fullmatch(name):
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed


def _read_only(path: str) -> bool:
    # The mode as well as access(): root may write any file, but a file with no
    # write bit was made read-only on purpose, and replacing it by rename would
    # quietly undo that.
    return not (os.stat(path).st_mode & 0o222) or not os.access(path, os.W_OK)


def _check_writable(checkpoint: str) -> None:
    # Saving creates a temporary file beside the checkpoint and renames it; try
    # the first half now, before any trial is evaluated, rather than lose the
    # first trial's work to a failed save. Both are beside the file a link
    # resolves to.
    target = os.path.realpath(checkpoint)
    directory = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
    except OSError as e:
        raise TuneError(
            f"cannot write checkpoint {checkpoint}: its directory {directory} is "
            f"not writable ({e.strerror or e})"
        ) from None
    os.close(fd)
    os.unlink(tmp)


# ---------------------------------------------------------------------- workers


def _builtin_trial(
    dataset: str, estimator: str, folds: int, seed: int, parameters: dict[str, Any]
) -> tuple[dict[str, float], float]:
    # One trial of a built-in problem: its score by name, and the seconds.
    score, seconds = evaluate(dataset, estimator, parameters, folds, seed)
    return {METRIC: score}, seconds


def trial_function(config: TuneConfig) -> Any:
    r"""The picklable ``parameters -> (values by objective, seconds)`` of a run."""
    if config.custom:
        return functools.partial(call_objective, config.objective, config.objectives)
    return functools.partial(
        _builtin_trial, config.dataset, config.estimator, config.folds, config.seed
    )


def _apply(function: Any, parameters: dict[str, Any]) -> Any:
    return function(parameters)


class _InProcess:
    # ``workers = 0``: evaluate in this process, one at a time.
    def __init__(self) -> None:
        self.capacity = 1

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(function(parameters))
        except Exception as e:
            future.set_exception(e)
        return future

    def wait(self, handles: list[Any]) -> list[Any]:
        return list(handles)

    def result(self, handle: Any) -> tuple[float, float]:
        return handle.result()

    def cancel(self, handles: list[Any]) -> None:
        pass

    def close(self) -> None:
        pass


#: Seconds between a worker's checks that the tune process still lives.
PARENT_POLL_SECONDS = 0.25
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def exit_with_parent(parent: int) -> None:
    r"""Make this process exit as soon as process ``parent`` dies.

    The first call of each local worker (:func:`_serve`). A run killed with
    ``kill -9`` (or any signal Python does not handle) runs no cleanup, so
    without this its workers would outlive it under PID 1, evaluating trials
    nobody will record and keeping ``multiprocessing``'s resource tracker
    alive with them.

    On Linux the kernel sends the worker SIGKILL when its parent dies
    (``prctl(PR_SET_PDEATHSIG)``; strictly, when the parent's thread that
    started the worker ends, which in ``tune`` outlives the pool). Everywhere,
    a daemon thread also polls the parent's process id every
    :data:`PARENT_POLL_SECONDS`: the portable fallback, and the cover for a
    parent that died before ``prctl`` was called.

    Args:
        parent: The process id of the process that started this one.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    threading.Thread(
        target=_watch_parent, args=(parent,), name="exit-with-parent", daemon=True
    ).start()


def _watch_parent(parent: int) -> None:
    # An orphan is re-parented (to PID 1 or a subreaper), so its parent's id
    # changes the moment the parent dies.
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


class WorkerDied(RuntimeError):
    r"""A local worker process ended before it returned its trial's result.

    ``os._exit``, a crash (a segfault in an extension) or the out-of-memory
    killer: the trial fails with this error and the run goes on.
    """


def _worker_died(exitcode: int | None) -> WorkerDied:
    # The error of a trial whose process ended with ``exitcode`` (Process's:
    # minus the signal's number if a signal killed it).
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = {"SIGKILL": " (the out-of-memory killer?)", "SIGSEGV": " (a crash)"}
        return WorkerDied(
            "the worker process evaluating the trial was killed by "
            f"{name}{hint.get(name, '')}"
        )
    return WorkerDied(
        f"the worker process evaluating the trial exited (exit code {exitcode}) "
        "without returning"
    )


def _serve(connection: Any, parent: int) -> None:
    r"""A local worker: evaluate the trials sent over ``connection``, one at a time.

    Each message is ``(function, parameters)``; the reply is ``(True, value)``
    or ``(False, exception)``. It returns on ``None`` or a closed connection.

    Args:
        connection: Its end of the pipe to the tune process.
        parent: The tune process's id (see :func:`exit_with_parent`).
    """
    exit_with_parent(parent)
    try:
        while True:
            try:
                task = connection.recv()
            except (EOFError, OSError):
                return
            if task is None:
                return
            function, parameters = task
            try:
                reply = (True, function(parameters))
            except (Exception, SystemExit) as e:  # the objective's failure
                reply = (False, e)
            try:
                connection.send(reply)
            except Exception as e:  # a value or an error pickle cannot carry
                what = "value" if reply[0] else type(reply[1]).__name__
                connection.send(
                    (False, RuntimeError(f"the trial's {what} cannot be sent: {e}"))
                )
    except KeyboardInterrupt:
        return  # Ctrl-C reaches the whole group: the tune process reports it


class _Worker:
    # One spawned process and the future of the trial it is evaluating.
    def __init__(self, context: Any) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, os.getpid()), name="botorch-sketch-tune"
        )
        self.process.start()
        child.close()
        self.future: concurrent.futures.Future | None = None


class _LocalPool(_InProcess):
    # Spawned processes: forking a process that holds OpenMP and torch thread
    # pools can deadlock the children. Each evaluates one trial at a time, so
    # a process that dies (os._exit, a segfault, the out-of-memory killer)
    # names its trial: that trial fails with WorkerDied, a new process takes
    # the dead one's place, and the trials on the others go on. (In a
    # ProcessPoolExecutor one dead process breaks the pool: every trial on it
    # failed with BrokenProcessPool, and so did every later submit.)
    def __init__(self, workers: int) -> None:
        self.capacity = workers
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        future: concurrent.futures.Future = concurrent.futures.Future()
        for _ in range(2):
            worker = next((w for w in self.workers if w.future is None), None)
            if worker is None:
                if len(self.workers) >= self.capacity:
                    raise RuntimeError("every worker is busy")
                worker = _Worker(self.context)
                self.workers.append(worker)
            try:
                worker.connection.send((function, parameters))
            except (BrokenPipeError, ConnectionResetError):
                self._retire(worker)  # died while idle: once more, on a new one
                continue
            worker.future = future
            return future
        raise RuntimeError("a new worker process died before its first trial")

    def wait(self, handles: list[Any]) -> list[Any]:
        wanted = set(handles)
        while True:
            done = [h for h in handles if h.done()]
            if done:
                return done
            ready: dict[Any, _Worker] = {}
            for worker in self.workers:
                if worker.future in wanted:
                    ready[worker.connection] = worker
                    ready[worker.process.sentinel] = worker
            if not ready:
                return []
            for key in multiprocessing.connection.wait(list(ready)):
                self._collect(ready[key])

    def _collect(self, worker: _Worker) -> None:
        # The reply of a worker whose pipe or process is ready.
        future = worker.future
        if future is None:  # collected already, through its other key
            return
        try:
            if worker.connection.poll():
                ok, value = worker.connection.recv()
                worker.future = None
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
                return
        except (EOFError, OSError):
            pass  # its end of the pipe closed: the process ended
        except Exception as e:  # a reply that cannot be unpickled here
            worker.future = None
            future.set_exception(RuntimeError(f"the trial's reply is unreadable: {e}"))
            return
        worker.process.join(timeout=5)
        future.set_exception(_worker_died(worker.process.exitcode))
        self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        # Forget a dead (or stuck) worker; the next submit starts another.
        self.workers.remove(worker)
        worker.future = None
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()
        worker.connection.close()

    def close(self) -> None:
        # Idle workers are asked to exit; busy ones are stopped, since nobody
        # will record their trials.
        for worker in self.workers:
            if worker.future is None:
                with contextlib.suppress(OSError):
                    worker.connection.send(None)
            else:
                worker.process.terminate()
        for worker in list(self.workers):
            worker.process.join(timeout=5)
            self._retire(worker)


class _RayPool:
    # Ray tasks, one CPU each; connects to the cluster at ``address``
    # (``"auto"``: the one running on this machine; an already initialised Ray
    # in this process is used as it is).
    def __init__(self, address: str, workers: int | None) -> None:
        try:
            import ray
        except ImportError:
            raise TuneError(
                "--ray needs Ray: pip install -e '.[ray]' in a clone"
            ) from None
        self.ray = ray
        try:
            ray.init(
                address=address,
                ignore_reinit_error=True,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise TuneError(f"could not connect to Ray at {address!r}: {e}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.capacity = workers or max(1, cpus)
        self.task = ray.remote(num_cpus=1)(_apply)

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        return self.task.remote(function, parameters)

    def wait(self, handles: list[Any]) -> list[Any]:
        ready, _ = self.ray.wait(list(handles), num_returns=1)
        return list(ready)

    def result(self, handle: Any) -> tuple[float, float]:
        return self.ray.get(handle)

    def cancel(self, handles: list[Any]) -> None:
        for handle in handles:
            self.ray.cancel(handle)

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------- loop


def generation_strategy(config: TuneConfig, use_existing_trials: bool = False) -> Any:
    r"""The Ax ``GenerationStrategy`` of a run's settings.

    Args:
        config: The settings (model, acquisition, Sobol trials, optimiser).
        use_existing_trials: Count trials already on the experiment as Sobol
            trials.

    Returns:
        A ``GenerationStrategy``.
    """
    from botorch.acquisition.logei import qLogExpectedImprovement

    from botorch_sketch.acquisition import qBKBUpperConfidenceBound

    _, _, integration = _ax()
    options = {
        k: v
        for k, v in (
            ("num_restarts", config.num_restarts),
            ("raw_samples", config.raw_samples),
        )
        if v is not None
    }
    acqf = {
        "auto": None,
        "qlogei": qLogExpectedImprovement,
        "bkb": qBKBUpperConfidenceBound,
    }[config.acquisition]
    common = {
        "num_initial": config.initial,
        "botorch_acqf_class": acqf,
        "optimizer_options": options or None,
        "seed": config.seed,
        "use_existing_trials": use_existing_trials,
    }
    if config.model == "nystrom":
        from botorch_sketch.integrations.ax_carried import CarriedNystromGP

        # Ax refits its model every trial; this one carries its hyperparameters
        # until the data have grown 5%, under a key of this strategy's own.
        return integration.sketch_generation_strategy(
            CarriedNystromGP, model_options={"carry": uuid.uuid4().hex}, **common
        )
    if config.model == "subset":
        from botorch_sketch.models import GradientSubsetGP

        options = {"subset_size": config.subset_size, "num_initial": config.initial}
        return integration.sketch_generation_strategy(
            GradientSubsetGP, model_options=options, **common
        )
    return integration.default_generation_strategy(**common)


def ax_parameter(p: SpaceParam) -> Any:
    r"""The Ax parameter config of a search-space parameter (range or choice)."""
    from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig

    if p.kind != "categorical":
        return RangeParameterConfig(
            name=p.name,
            parameter_type=p.kind,
            bounds=(p.low, p.high),
            scaling="log" if p.log else "linear",
        )
    types = {type(c) for c in p.choices}
    kind = {str: "str", bool: "bool", int: "int"}.get(next(iter(types)))
    if types <= {int, float} and types != {int}:
        kind = "float"
    if len(types) > 1 and kind != "float":
        raise TuneError(
            f"parameter {p.name!r}: Ax needs choices of one type (all texts, all "
            f"numbers or all booleans), got {list(p.choices)}"
        )
    return ChoiceParameterConfig(
        name=p.name, parameter_type=kind, values=list(p.choices)
    )


def ax_objective(objectives: Mapping[str, str]) -> str:
    r"""Ax's objective text: ``"-loss"`` to minimise, ``"acc, -loss"`` for two."""
    return ", ".join(("-" if d == "min" else "") + n for n, d in objectives.items())


def _new_client(config: TuneConfig) -> Any:
    Client, _, _ = _ax()
    gs = generation_strategy(config)
    from ax.exceptions.core import UserInputError

    client = Client(random_seed=config.seed)
    try:
        client.configure_experiment(
            name=f"tune-{config.name()}",
            parameters=[ax_parameter(p) for p in config.params()],
        )
    except UserInputError as e:
        # Ax's own limits on a space (e.g. a range narrower than 1.5e-5).
        raise TuneError(f"Ax refuses the search space: {e}") from None
    client.configure_optimization(objective=ax_objective(config.objectives))
    client.set_generation_strategy(generation_strategy=gs)
    return client


#: How many times Ax is asked again when it proposes the point of a failed
#: trial, before a random point is evaluated instead.
REPEAT_TRIES = 2
#: The ``failed`` reason of a trial Ax proposed at a failed trial's point, which
#: was abandoned rather than evaluated.
NOT_EVALUATED = "not evaluated: the point of failed trial"


def _point(parameters: Mapping[str, Any]) -> tuple:
    # A parameterisation as a dictionary key.
    return tuple(sorted(parameters.items()))


def random_point(params: tuple[SpaceParam, ...], rng: random.Random) -> dict:
    r"""A point drawn uniformly from a search space (log-uniformly on a log scale).

    Args:
        params: The search space.
        rng: The random stream.

    Returns:
        The parameters, of the types Ax takes for them (see :func:`ax_parameter`).
    """
    out: dict[str, Any] = {}
    for p in params:
        if p.kind == "categorical":
            value = rng.choice(p.choices)
            numbers = all(
                isinstance(c, (int, float)) and not isinstance(c, bool)
                for c in p.choices
            )
            if numbers and not all(isinstance(c, int) for c in p.choices):
                value = float(value)  # Ax holds mixed numbers as floats
            out[p.name] = value
            continue
        if p.log:
            value = math.exp(rng.uniform(math.log(p.low), math.log(p.high)))
        else:
            value = rng.uniform(p.low, p.high)
        value = min(max(value, p.low), p.high)
        out[p.name] = int(round(value)) if p.kind == "int" else value
    return out


class _AxRun:
    # The Ax side of a run: the client, saved with the record after each round.
    def __init__(self, lock: CheckpointLock, config: TuneConfig, resume: bool) -> None:
        self.lock = lock
        self.config = config
        if resume:
            self.client, self.record = load_checkpoint(lock.checkpoint)
            self.interrupted = [
                index
                for index, status in _trial_statuses(self.client).items()
                if status in ("CANDIDATE", "STAGED", "RUNNING")
            ]
            for index in self.interrupted:
                self.client.mark_trial_failed(index, failed_reason="interrupted")
                entry = self.record["trials"].setdefault(str(index), {})
                entry["failed"] = "interrupted"
            self.record["config"]["trials"] = config.trials
        else:
            self.client = _new_client(config)
            self.record = {
                "version": FORMAT_VERSION,
                "config": config.record(),
                "trials": {},
            }
            self.save()

    def completed(self) -> int:
        return _status_counts(self.client).get("COMPLETED", 0)

    def suggest(self, wanted: int, others_running: bool) -> dict[int, Any]:
        # A FAILED trial is neither data nor a pending point to Ax: its model,
        # unchanged, proposed the same failed point again and again (an
        # objective NaN on half its space ended the run after 21 failures). A
        # repeat is marked ABANDONED instead of evaluated, which Ax counts as
        # pending and avoids in its next proposal; after REPEAT_TRIES repeats,
        # a random point breaks the loop.
        failed = {
            _point(t["parameters"]): int(index)
            for index, t in self.record["trials"].items()
            if "parameters" in t
            and "score" not in t
            # An interrupted trial may run again; a repeat is not a failure.
            and not t.get("failed", "interrupted").startswith(
                ("interrupted", NOT_EVALUATED)
            )
        }
        out: dict[int, Any] = {}
        for _ in range(1 + REPEAT_TRIES):
            suggested = _suggest(
                self.client, wanted - len(out), others_running or bool(out)
            )
            for index, parameters in suggested.items():
                repeated = failed.get(_point(parameters))
                if repeated is None:
                    out[index] = parameters
                    continue
                self.client.mark_trial_abandoned(index)
                self.record["trials"][str(index)] = {
                    "parameters": dict(parameters),
                    "failed": f"{NOT_EVALUATED} {repeated}",
                }
            if len(out) >= wanted or not suggested:
                return out
        params = self.config.params()
        rng = random.Random(self.config.seed * 1_000_003 + len(self.record["trials"]))
        for _ in range(wanted - len(out)):
            parameters = random_point(params, rng)
            for _ in range(10):  # a discrete space may hold few points
                if _point(parameters) not in failed:
                    break
                parameters = random_point(params, rng)
            out[self.client.attach_trial(parameters=parameters)] = parameters
        return out

    def complete(self, index: int, values: Mapping[str, float]) -> None:
        self.client.complete_trial(trial_index=index, raw_data=dict(values))

    def fail(self, index: int, reason: str) -> None:
        self.client.mark_trial_failed(index, failed_reason=reason)

    def save(self) -> None:
        save_checkpoint(self.lock.path, self.client, self.record, self.lock)


class _OptunaRun:
    # The Optuna side: a study in an SQLite file
    # (botorch_sketch.integrations.tune.study).
    def __init__(self, lock: CheckpointLock, config: TuneConfig, resume: bool) -> None:
        try:
            import optuna

            from botorch_sketch.integrations.tune.study import StudyRun, remove
        except ImportError:
            raise TuneError(
                "--backend optuna needs Optuna: pip install -e '.[optuna]' in a clone"
            ) from None
        if not resume:
            # --overwrite, under the lock: the file a link resolves to, not the
            # link, so that the study is made there.
            remove(lock.path)
        self.verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            self.study = StudyRun(lock.path, config, resume)
            lock.hold_file()  # the new file, made in place by SQLite
        except Exception:
            optuna.logging.set_verbosity(self.verbosity)
            raise
        self.record = self.study.record
        self.interrupted = self.study.interrupted
        self.complete = self.study.complete
        self.fail = self.study.fail
        self.save = self.study.save
        self.completed = self.study.completed

    def suggest(self, wanted: int, others_running: bool) -> dict[int, Any]:
        return self.study.suggest(wanted)

    def close(self) -> None:
        import optuna

        optuna.logging.set_verbosity(self.verbosity)


def _trial_statuses(client: Any) -> dict[int, str]:
    # Ax's public view of the trials (one row per trial).
    frame = client.summarize()
    if len(frame) == 0:
        return {}
    return {
        int(i): str(status)
        for i, status in zip(frame["trial_index"], frame["trial_status"], strict=True)
    }


def _status_counts(client: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in _trial_statuses(client).values():
        counts[status] = counts.get(status, 0) + 1
    return counts


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
        raise TuneError(f"the directory of {_named(checkpoint, target)} does not exist")
    if os.path.lexists(target) and not os.path.isfile(target):
        raise TuneError(
            f"checkpoint {checkpoint} is not a regular file (a directory?); "
            "give the path of a file with --checkpoint"
        )
    # Every check of the file is made under the lock: checked before it, two
    # runs could both find no checkpoint and both start one.
    with checkpoint_lock(checkpoint) as lock:
        exists = os.path.exists(target)
        if resume and not exists:
            raise TuneError(f"--resume: no checkpoint at {checkpoint}")
        if exists and not (resume or overwrite):
            raise TuneError(
                f"checkpoint {checkpoint} exists; pass --resume to continue it or "
                "--overwrite to start a new run in its place"
            )
        if exists and _read_only(checkpoint):
            raise TuneError(
                f"checkpoint {checkpoint} is read-only and this run would replace "
                f"it; make it writable (chmod u+w {checkpoint}) or give another "
                "--checkpoint"
            )
        _check_writable(checkpoint)
        remove_stale_temporaries(checkpoint)
        return _run_locked(
            config,
            checkpoint,
            lock,
            resume,
            workers,
            ray_address,
            threads,
            max_failures,
            progress,
        )


def _run_locked(
    config: TuneConfig,
    checkpoint: str,
    lock: CheckpointLock,
    resume: bool,
    workers: int | None,
    ray_address: str | None,
    threads: int | None,
    max_failures: int,
    progress: bool,
) -> dict[str, Any]:
    # The run itself, under the checkpoint's ``lock``; arguments as in ``tune``.
    import torch

    if resume:
        _check_same_problem(checkpoint, read_record(checkpoint)[1]["config"], config)
    if ray_address is not None:
        pool: Any = _RayPool(ray_address, workers)
    elif workers == 0:
        pool = _InProcess()
    else:
        pool = _LocalPool(workers or os.cpu_count() or 1)
    backend: Any = None
    threads_before = torch.get_num_threads()
    try:
        if config.backend == "optuna":
            backend = _OptunaRun(lock, config, resume)
        else:
            backend = _AxRun(lock, config, resume)
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) - pool.capacity)
        torch.set_num_threads(threads)
        return _loop(config, backend, pool, max_failures, progress)
    finally:
        pool.close()
        torch.set_num_threads(threads_before)
        if hasattr(backend, "close"):
            backend.close()


def _loop(
    config: TuneConfig, backend: Any, pool: Any, max_failures: int, progress: bool
) -> dict[str, Any]:
    # Suggest, evaluate and record until ``config.trials`` trials are completed.
    from tqdm.auto import tqdm

    record = backend.record
    function = trial_function(config)
    first, direction = next(iter(config.objectives.items()))
    sign = 1.0 if direction == "max" else -1.0
    completed = backend.completed()
    running: dict[Any, int] = {}
    failures = 0
    bar = tqdm(
        total=config.trials,
        initial=min(completed, config.trials),
        unit="trial",
        desc=f"{config.model} {config.name()}",
        disable=not progress,
    )
    best = max(
        (sign * t["score"] for t in record["trials"].values() if "score" in t),
        default=float("nan"),
    )
    try:
        while completed < config.trials:
            wanted = min(pool.capacity, config.trials - completed) - len(running)
            if wanted > 0:
                start = time.perf_counter()
                suggested = backend.suggest(wanted, bool(running))
                if not suggested and not running:
                    raise TuneError(f"{config.backend} proposed no trial")
                seconds = (time.perf_counter() - start) / max(1, len(suggested))
                for index, parameters in suggested.items():
                    record["trials"][str(index)] = {
                        "parameters": dict(parameters),
                        "suggest_seconds": seconds,
                    }
                    running[pool.submit(function, dict(parameters))] = index
            for handle in pool.wait(list(running)):
                index = running.pop(handle)
                entry = record["trials"][str(index)]
                try:
                    values, seconds = pool.result(handle)
                    if config.custom and is_failure(values):
                        raise ValueError(f"the objective returned {values}")
                except ObjectiveError as e:
                    # Not importable, or a return value of the wrong kind: the
                    # same for every trial, so stop at once.
                    entry["failed"] = str(e)
                    backend.fail(index, entry["failed"])
                    raise TuneError(str(e)) from None
                except Exception as e:
                    failures += 1
                    entry["failed"] = f"{type(e).__name__}: {e}"
                    backend.fail(index, entry["failed"])
                    # An objective that fails now and then is the objective's
                    # business; one that mostly fails is a bug to report.
                    if failures > max_failures and failures > completed:
                        raise TuneError(
                            f"{failures} evaluations failed; the last with "
                            f"{type(e).__name__}: {e}"
                        ) from None
                    continue
                completed += 1
                score = values[first]
                entry.update(score=score, eval_seconds=seconds, completed=completed)
                if len(values) > 1:
                    entry["values"] = dict(values)
                backend.complete(index, values)
                if math.isnan(best) or sign * score > best:
                    best = sign * score
                bar.update(1)
                bar.set_postfix(best=f"{sign * best:.4g}")
            backend.save()
    finally:
        bar.close()
        pool.cancel(list(running))
    return record


def _suggest(client: Any, wanted: int, others_running: bool) -> dict[int, Any]:
    from ax.exceptions.core import DataRequiredError, SearchSpaceExhausted
    from ax.exceptions.generation_strategy import (
        GenerationStrategyRepeatedPoints,
        MaxParallelismReachedException,
    )

    try:
        return client.get_next_trials(max_trials=wanted)
    except (DataRequiredError, MaxParallelismReachedException):
        # Ax waits for results (e.g. of its initial Sobol trials) first.
        if others_running:
            return {}
        raise
    except (GenerationStrategyRepeatedPoints, SearchSpaceExhausted) as e:
        raise TuneError(
            f"Ax proposes only points it has tried already ({e}); the search "
            "space may be too small for the requested number of trials"
        ) from None
