#!/usr/bin/env python3
r"""Where trials are evaluated: this process, local processes, or Ray tasks.

Every pool has the interface :class:`Pool`; :func:`make_pool` picks one from
the run's ``workers`` and ``ray_address``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
from typing import Any, Protocol

from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.workers import LocalPool


class Pool(Protocol):
    r"""Runs trial functions; handles are whatever :meth:`submit` returns.

    Attributes:
        capacity: The most trials at once.
    """

    capacity: int

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        r"""Start ``function(parameters)``; its handle."""

    def wait(self, handles: list[Any]) -> list[Any]:
        r"""Block until one of ``handles`` is done; the done ones."""

    def result(self, handle: Any) -> tuple[dict[str, float], float]:
        r"""The trial's values and seconds; raises its error."""

    def cancel(self, handles: list[Any]) -> None:
        r"""Give up the trials of ``handles`` (the run is stopping)."""

    def close(self) -> None:
        r"""Release the pool's processes."""


class InProcess:
    r"""``workers = 0``: evaluate in this process, one at a time, at submit."""

    def __init__(self) -> None:
        r"""A pool of one: this process."""
        self.capacity = 1

    def submit(self, function: Any, parameters: dict[str, Any]) -> Any:
        r"""Evaluate ``function(parameters)`` now; a done future."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(function(parameters))
        except Exception as e:
            future.set_exception(e)
        return future

    def wait(self, handles: list[Any]) -> list[Any]:
        r"""All of ``handles``: every one is done."""
        return list(handles)

    def result(self, handle: Any) -> tuple[dict[str, float], float]:
        r"""The trial's values and seconds; raises its error."""
        return handle.result()

    def cancel(self, handles: list[Any]) -> None:
        r"""Nothing: no trial is running."""

    def close(self) -> None:
        r"""Nothing to release."""


def _apply(function: Any, parameters: dict[str, Any]) -> Any:
    return function(parameters)


class RayPool:
    r"""Ray tasks, one CPU each, on the cluster at an address.

    ``"auto"`` is the cluster running on this machine; a Ray already
    initialised in this process is used as it is.
    """

    def __init__(self, address: str, workers: int | None) -> None:
        r"""Connect to Ray at ``address``; ``workers`` tasks at once (its CPUs).

        Raises:
            TuneError: If Ray is not installed or cannot be reached.
        """
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
        r"""Start a task of ``function(parameters)``; its object reference."""
        return self.task.remote(function, parameters)

    def wait(self, handles: list[Any]) -> list[Any]:
        r"""Block until one of ``handles`` is done; the done ones."""
        ready, _ = self.ray.wait(list(handles), num_returns=1)
        return list(ready)

    def result(self, handle: Any) -> tuple[dict[str, float], float]:
        r"""The trial's values and seconds; raises its error."""
        return self.ray.get(handle)

    def cancel(self, handles: list[Any]) -> None:
        r"""Cancel the tasks of ``handles``."""
        for handle in handles:
            self.ray.cancel(handle)

    def close(self) -> None:
        r"""Nothing: the cluster is not this run's."""


def make_pool(workers: int | None, ray_address: str | None) -> Pool:
    r"""The pool of a run's settings.

    Args:
        workers: Trials at once: local processes (0: in this process), or Ray
            tasks; default the number of CPUs (of the Ray cluster with Ray).
        ray_address: A Ray address, or None for local processes.

    Returns:
        A :class:`RayPool`, :class:`InProcess` or
        :class:`~botorch_sketch.tune.workers.LocalPool`.
    """
    if ray_address is not None:
        return RayPool(ray_address, workers)
    if workers == 0:
        return InProcess()
    return LocalPool(workers or os.cpu_count() or 1)
