#!/usr/bin/env python3
r"""A checkpoint's exclusive lock: one tune run per checkpoint file.

A run holds an exclusive lock on its checkpoint file (:func:`checkpoint_lock`),
under whatever name it was given (a symbolic or hard link), so a second run on
the same file refuses at once instead of interleaving its saves with the
first's. Where ``fcntl`` does not exist (Windows) runs are not locked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from botorch_sketch.tune.errors import TuneError

try:
    import fcntl
except ImportError:  # Windows: runs are not locked
    fcntl = None


def lock_path(target: str) -> str:
    r"""The lock file ``.NAME.lock`` beside the checkpoint file ``NAME``."""
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}.lock")


def display_name(checkpoint: str, target: str) -> str:
    r"""A checkpoint for a message, with the file it resolves to if that differs.

    Args:
        checkpoint: The checkpoint as it was given.
        target: The file it resolves to (``os.path.realpath``).
    """
    if os.path.abspath(checkpoint) == target:
        return checkpoint
    return f"{checkpoint} (the file {target})"


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


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
        # Files that were the checkpoint until a save replaced them and that
        # still have another name (a hard link): kept locked until release.
        self._kept: list[int] = []

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
            if self._lock_open_file(fd):
                return

    def _lock_open_file(self, fd: int) -> bool:
        # Lock the opened checkpoint ``fd``; False (closed) if it was replaced.
        mine = os.fstat(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if isinstance(e, BlockingIOError):
                raise TuneError(
                    f"checkpoint {display_name(self.checkpoint, self.path)} is in "
                    "use by another tune run, under another name of the same file "
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
            return True
        os.close(fd)
        return False

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
        kept, self._kept = self._kept, []
        for fd in kept:
            os.close(fd)

    def _hold(self, fd: int | None) -> None:
        # Closing the descriptor releases its flock. A file the checkpoint's
        # name no longer points to, but another name (a hard link made to the
        # live run's file) still does, stays locked while the run lasts: else
        # a second run could resume that old copy beside this one.
        old, self._fd = self._fd, fd
        if old is None:
            return
        try:
            linked = os.fstat(old).st_nlink > 0 and not (
                fd is not None and _same_file(os.fstat(old), os.fstat(fd))
            )
        except OSError:
            linked = False
        if linked and fd is not None:
            self._kept.append(old)
        else:
            os.close(old)


def _open_lock_file(checkpoint: str, target: str) -> int:
    # The locked descriptor of ``.NAME.lock``; refuses at once if it is held.
    path = lock_path(target)
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
                    f"checkpoint {display_name(checkpoint, target)} is in use by "
                    f"another tune run{by}; wait for it to end, or give another "
                    "--checkpoint"
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
            return fd
        os.close(fd)


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
    itself, which its hard links share (see :class:`CheckpointLock`); a save
    puts a new file in the checkpoint's place, and an old one that another
    name (a hard link) still points to stays locked until release. The kernel
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
    fd = _open_lock_file(checkpoint, target)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        lock.hold_file()
        yield lock
    finally:
        lock.release()
        # Removed while still held, so no other process can lock it meanwhile.
        with contextlib.suppress(OSError):
            os.unlink(lock_path(target))
        os.close(fd)
