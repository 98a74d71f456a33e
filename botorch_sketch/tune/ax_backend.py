#!/usr/bin/env python3
r"""The Ax side of a run (:class:`AxRun`): Ax suggests, the loop reports back.

The client is saved with the run's record after each round of results
(:func:`~botorch_sketch.tune.checkpoint.save_checkpoint`).

Ax's model does not see a FAILED trial, so it may propose the same point
again: such a repeat is marked ABANDONED, not evaluated, and Ax is asked again
(after :data:`REPEAT_TRIES` repeats, a random point is evaluated instead).

Resuming first refuses a checkpoint whose record disagrees with its Ax
experiment (an edited file: :func:`~botorch_sketch.tune.consistency.check_ax_run`),
then marks the trials that were running when the run stopped as FAILED (reason
``"interrupted"``; Ax may suggest their points again) and keeps every completed
trial.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from botorch_sketch.tune.ax_client import load_checkpoint, new_client
from botorch_sketch.tune.checkpoint import (
    FORMAT_VERSION,
    read_record,
    save_checkpoint,
)
from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.consistency import check_ax_run
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.lock import CheckpointLock
from botorch_sketch.tune.space import SpaceParam

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
        The parameters, of the types Ax takes for them (see
        :func:`~botorch_sketch.tune.ax_client.ax_parameter`).
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


def trial_statuses(client: Any) -> dict[int, str]:
    r"""Each trial's status by index, from Ax's public view (one row per trial)."""
    frame = client.summarize()
    if len(frame) == 0:
        return {}
    return {
        int(i): str(status)
        for i, status in zip(frame["trial_index"], frame["trial_status"], strict=True)
    }


def _status_counts(client: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in trial_statuses(client).values():
        counts[status] = counts.get(status, 0) + 1
    return counts


def _next_trials(client: Any, wanted: int, others_running: bool) -> dict[int, Any]:
    # Up to ``wanted`` new trials from Ax; none while it waits for results.
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


class AxRun:
    r"""The Ax side of a run: the client, saved with the record after each round.

    Attributes:
        client: The ``ax.api.Client``.
        record: The run's record (settings and trials), saved with the client.
        interrupted: The trials a killed run left running, now FAILED.
    """

    def __init__(self, lock: CheckpointLock, config: TuneConfig, resume: bool) -> None:
        r"""Load the run's checkpoint, or start one (saved at once).

        Args:
            lock: The checkpoint's held lock.
            config: The run's settings.
            resume: Load the checkpoint (else make a new client).
        """
        self.lock = lock
        self.config = config
        self.interrupted: list[int] = []
        if resume:
            self.client, self.record = load_checkpoint(lock.checkpoint)
            # Before anything is changed: an edited record is refused.
            check_ax_run(
                lock.checkpoint,
                read_record(lock.checkpoint)[0],
                self.client,
                self.record,
                config,
            )
            self._fail_interrupted()
            self.record["config"]["trials"] = config.trials
        else:
            self.client = new_client(config)
            self.record = {
                "version": FORMAT_VERSION,
                "config": config.record(),
                "trials": {},
            }
            self.save()

    def _fail_interrupted(self) -> None:
        # Running when the run stopped: failed, and suggested again if good.
        self.interrupted = [
            index
            for index, status in trial_statuses(self.client).items()
            if status in ("CANDIDATE", "STAGED", "RUNNING")
        ]
        for index in self.interrupted:
            self.client.mark_trial_failed(index, failed_reason="interrupted")
            entry = self.record["trials"].setdefault(str(index), {})
            entry["failed"] = "interrupted"

    def completed(self) -> int:
        r"""The number of COMPLETED trials."""
        return _status_counts(self.client).get("COMPLETED", 0)

    def suggest(self, wanted: int, others_running: bool) -> dict[int, Any]:
        r"""Up to ``wanted`` new trials, none at the point of a failed one.

        A FAILED trial is neither data nor a pending point to Ax: its model,
        unchanged, proposed the same failed point again and again (an
        objective NaN on half its space ended the run after 21 failures). A
        repeat is marked ABANDONED instead of evaluated, which Ax counts as
        pending and avoids in its next proposal; after :data:`REPEAT_TRIES`
        repeats, a random point breaks the loop.

        Args:
            wanted: The trials to suggest.
            others_running: Whether trials are running (Ax may then wait for
                their results and suggest none).

        Returns:
            The new trials' parameters by trial index.
        """
        failed = self._failed_points()
        out: dict[int, Any] = {}
        for _ in range(1 + REPEAT_TRIES):
            suggested = _next_trials(
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

    def _failed_points(self) -> dict[tuple, int]:
        # The points of failed trials, with their indices. An interrupted
        # trial may run again, and a repeat is not a failure.
        return {
            _point(t["parameters"]): int(index)
            for index, t in self.record["trials"].items()
            if "parameters" in t
            and "score" not in t
            and not t.get("failed", "interrupted").startswith(
                ("interrupted", NOT_EVALUATED)
            )
        }

    def complete(self, index: int, values: Mapping[str, float]) -> None:
        r"""Report a trial's objective values to Ax."""
        self.client.complete_trial(trial_index=index, raw_data=dict(values))

    def fail(self, index: int, reason: str) -> None:
        r"""Mark a trial FAILED in Ax."""
        self.client.mark_trial_failed(index, failed_reason=reason)

    def save(self) -> None:
        r"""Write the client and the record to the checkpoint."""
        save_checkpoint(self.lock.path, self.client, self.record, self.lock)

    def close(self) -> None:
        r"""Nothing to restore."""
