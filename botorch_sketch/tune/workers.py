#!/usr/bin/env python3
r"""Local worker processes: each evaluates one trial at a time, and may die.

:class:`LocalPool` spawns them (forking a process that holds OpenMP and torch
thread pools can deadlock the children). A process that dies (``os._exit``, a
segfault, the out-of-memory killer) names its trial: that trial fails with
:class:`WorkerDied`, a new process takes the dead one's place, and the trials
on the others go on. (In a ``ProcessPoolExecutor`` one dead process breaks the
pool: every trial on it failed with ``BrokenProcessPool``, and so did every
later submit.) A worker exits when the tune process dies
(:func:`exit_with_parent`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from typing import Any

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


class LocalPool:
    r"""Spawned worker processes, one trial each at a time; a dead one is replaced.

    Its handles are ``concurrent.futures.Future`` objects.

    Attributes:
        capacity: The most processes, and so trials at once.
    """

    def __init__(self, workers: int) -> None:
        r"""A pool of up to ``workers`` processes, started as trials need them."""
        self.capacity = workers
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        r"""Send ``function(parameters)`` to an idle process; its future."""
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
        r"""Block until one of ``handles`` is done; the done ones."""
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

    def result(self, handle: Any) -> tuple[dict[str, float], float]:
        r"""The trial's values and seconds; raises its error."""
        return handle.result()

    def cancel(self, handles: list[Any]) -> None:
        r"""Nothing: :meth:`close` stops the processes of unfinished trials."""

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
        r"""Ask idle processes to exit; stop busy ones (nobody records their trial)."""
        for worker in self.workers:
            if worker.future is None:
                with contextlib.suppress(OSError):
                    worker.connection.send(None)
            else:
                worker.process.terminate()
        for worker in list(self.workers):
            worker.process.join(timeout=5)
            self._retire(worker)
