#!/usr/bin/env python3
r"""Checkpoints of :class:`~botorch_sketch.bo.ask_tell.LargeBatchOptimizer`.

A checkpoint is data only: one ``torch.save`` of a dict of tensors, numbers,
strings, lists and dicts, read back with ``torch.load(weights_only=True)``,
which unpickles no code and runs nothing. The dict carries a format name and a
version; a file with other contents, another version, or settings (dimension,
bounds, batch size, seed, ...) other than the resuming optimizer's is refused
with a :class:`CheckpointError` that says which.

Writes are atomic: the state goes to a temporary file in the same directory,
is flushed to disk and renamed over the checkpoint (``os.replace``), so a
process killed at any moment leaves either the previous checkpoint or the new
one, never a torn file.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

#: The format name a checkpoint carries.
FORMAT = "botorch_sketch.LargeBatchOptimizer"
#: The version this code writes and reads.
VERSION = 1


#: What ``torch.load`` raises on a file that is not a whole data-only checkpoint
#: (an ``OSError`` while parsing: a truncated one).
_UNREADABLE = (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError)


class CheckpointError(InputDataError):
    r"""A checkpoint that is not this optimizer's, or not of this version."""


def save_checkpoint(state: dict[str, Any], path: str | Path) -> None:
    r"""Write ``state`` to ``path`` atomically, with the format and version.

    Args:
        state: A :meth:`LargeBatchOptimizer.state_dict
            <botorch_sketch.bo.ask_tell.LargeBatchOptimizer.state_dict>`.
        path: The checkpoint's file (its directory must exist).
    """
    path = Path(path)
    payload = {"format": FORMAT, "version": VERSION, "state": state}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private; the checkpoint gets a plain file's mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    r"""The optimizer state in ``path``, after checking its format and version.

    Args:
        path: A file written by :func:`save_checkpoint`.

    Returns:
        The state dict.
    """
    # Opened here, so that a missing or unreadable file raises as opening it
    # does; an ``OSError`` while parsing is the file's contents (a truncated
    # checkpoint gave "[Errno 22] Invalid argument").
    with open(path, "rb") as f:
        try:
            payload = torch.load(f, weights_only=True, map_location="cpu")
        except _UNREADABLE as e:
            raise _unreadable(path, e) from e
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else None
        raise CheckpointError(
            f"{path} is not a {FORMAT} checkpoint (format {found!r})."
        )
    if payload.get("version") != VERSION:
        raise CheckpointError(
            f"{path} is a version {payload.get('version')!r} checkpoint; this code "
            f"reads version {VERSION}."
        )
    state = payload.get("state")
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds no optimizer state.")
    return state


def _unreadable(path: str | Path, e: BaseException) -> CheckpointError:
    first = str(e).splitlines()[0] if str(e) else ""
    return CheckpointError(
        f"{path} is not a data-only checkpoint of {FORMAT}, or is truncated "
        f"({type(e).__name__}: {first})."
    )


def check_config(saved: Any, current: dict[str, Any]) -> None:
    r"""Refuse a saved configuration that differs from the resuming optimizer's.

    Args:
        saved: The checkpoint's ``config``.
        current: The optimizer's :meth:`config`.
    """
    if not isinstance(saved, dict):
        raise CheckpointError("The checkpoint holds no optimizer settings.")
    dim = saved.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int):
        # A string "2" read as "a 2-dimensional problem; this optimizer's is
        # 2-dimensional".
        raise CheckpointError(
            f"The checkpoint's dim is {dim!r} ({type(dim).__name__}), not a "
            "number of inputs: the file is damaged or was edited."
        )
    if dim != current["dim"]:
        raise CheckpointError(
            f"The checkpoint is of a {saved.get('dim')}-dimensional problem; this "
            f"optimizer's is {current['dim']}-dimensional."
        )
    for name, value in current.items():
        other = saved.get(name)
        same = (
            isinstance(other, Tensor)
            and other.shape == value.shape
            and torch.equal(other.to(value), value)
            if isinstance(value, Tensor)
            else other == value
        )
        if not same:
            raise CheckpointError(
                f"The checkpoint's {name} is {other!r}; this optimizer's is "
                f"{value!r}. Resume with the saved run's settings."
            )
