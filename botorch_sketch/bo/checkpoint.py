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
    try:
        payload = torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as e:
        raise CheckpointError(
            f"{path} is not a data-only checkpoint of {FORMAT} ({type(e).__name__}: "
            f"{str(e).splitlines()[0] if str(e) else ''})."
        ) from e
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


def check_config(saved: Any, current: dict[str, Any]) -> None:
    r"""Refuse a saved configuration that differs from the resuming optimizer's.

    Args:
        saved: The checkpoint's ``config``.
        current: The optimizer's :meth:`config`.
    """
    if not isinstance(saved, dict):
        raise CheckpointError("The checkpoint holds no optimizer settings.")
    if saved.get("dim") != current["dim"]:
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
