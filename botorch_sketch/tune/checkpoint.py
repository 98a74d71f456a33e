#!/usr/bin/env python3
r"""Checkpoint files: the record written with every save, read back and checked.

An Ax run's checkpoint is the ``ax.api.Client`` saved with Ax's JSON encoding,
plus this run's settings and per-trial timings under the key :data:`KEY`
(``Client.load_from_json_file`` reads the file and ignores that key). It is
written to a temporary file in the same directory that then replaces the
checkpoint: a killed run leaves the previous checkpoint or the new one, never
half of one. A checkpoint that is a symbolic link is written through: the file
it resolves to is replaced, the link kept. The next run on a checkpoint removes
the temporary files a killed run left (:func:`remove_stale_temporaries`).

An Optuna run's checkpoint is an SQLite file (:mod:`botorch_sketch.tune.study`);
:func:`read_record` reads either.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from typing import Any

from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError, describe
from botorch_sketch.tune.lock import CheckpointLock
from botorch_sketch.tune.study import is_study_file, read_study_record
from botorch_sketch.tune.validation import record_problem

#: The key of this package's record in a checkpoint.
KEY = "botorch_sketch_tune"
FORMAT_VERSION = 1


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
            :meth:`~botorch_sketch.tune.lock.CheckpointLock.replace`).
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
        os.chmod(tmp, _mode_of(target))
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


def _mode_of(target: str) -> int:
    # mkstemp makes the file private: give it the mode of the file it replaces
    # (a checkpoint kept private stays so), else a new file's.
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _study_record(path: str) -> dict[str, Any]:
    try:
        return read_study_record(path)
    except ImportError:
        raise TuneError(
            f"{path} is an Optuna checkpoint; reading it needs Optuna: pip install "
            "-e '.[optuna]' in a clone"
        ) from None
    except ValueError as e:
        raise TuneError(f"{path} is an SQLite file but {e}") from None


def _read_snapshot(path: str) -> Any:
    # The checkpoint's JSON (or an Optuna checkpoint's record under KEY).
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            # A directory or a FIFO (whose open() would wait for a writer).
            raise TuneError(f"checkpoint {path} is not a regular file")
        if is_study_file(path):
            return {KEY: _study_record(path)}
        with open(path) as f:
            return json.load(f)
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
    snapshot = _read_snapshot(path)
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get(KEY), dict):
        raise TuneError(f"{path} is not a botorch-sketch tune checkpoint")
    record = snapshot[KEY]
    if record.get("version") != FORMAT_VERSION or "config" not in record:
        raise TuneError(
            f"{path} has checkpoint format {describe(record.get('version'))}; "
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
    problem = record_problem(record)
    if problem:
        raise TuneError(
            f"checkpoint {path} is damaged: {problem} (resume from a backup, or "
            "start a new run with --overwrite or another --checkpoint)"
        )
    return snapshot, record


def check_same_problem(
    path: str, stored: Mapping[str, Any], config: TuneConfig
) -> None:
    r"""Refuse to resume a checkpoint with settings that change its problem.

    Args:
        path: The checkpoint, for the message.
        stored: Its stored settings (the record's ``"config"``).
        config: The settings of this run.

    Raises:
        TuneError: If a setting of :attr:`TuneConfig.PROBLEM` differs.
    """
    mine = config.record()
    for name in TuneConfig.PROBLEM:
        if stored.get(name) != mine[name]:
            raise TuneError(
                f"checkpoint {path} was made with {name} = {stored.get(name)!r}, "
                f"not {mine[name]!r}; resume it with the same settings or start a "
                "new run with --overwrite or another --checkpoint"
            )


def _temporary_pattern(target: str) -> re.Pattern:
    # The names save_checkpoint's mkstemp gives: ".NAME." + 8 characters of
    # tempfile's alphabet + ".tmp". Exactly 8, so that the temporary files of
    # a checkpoint whose name merely starts with this one's never match.
    name = re.escape(os.path.basename(target))
    return re.compile(rf"\.{name}\.[a-z0-9_]{{8}}\.tmp")


def remove_stale_temporaries(checkpoint: str) -> list[str]:
    r"""Remove the temporary files a killed run left beside a checkpoint.

    Call it only while holding
    :func:`~botorch_sketch.tune.lock.checkpoint_lock`: every run writes its
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


def is_read_only(path: str) -> bool:
    r"""Whether a checkpoint must not be replaced: no write bit, or not writable.

    The mode as well as ``access()``: root may write any file, but a file with
    no write bit was made read-only on purpose, and replacing it by rename
    would quietly undo that.
    """
    return not (os.stat(path).st_mode & 0o222) or not os.access(path, os.W_OK)


def check_writable(checkpoint: str) -> None:
    r"""Refuse a checkpoint whose directory this process cannot write in.

    Saving creates a temporary file beside the checkpoint and renames it; the
    first half is tried now, before any trial is evaluated, rather than lose
    the first trial's work to a failed save. Both are beside the file a link
    resolves to.

    Raises:
        TuneError: If the temporary file cannot be created.
    """
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
