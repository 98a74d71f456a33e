#!/usr/bin/env python3
r"""A run's record: one entry per evaluated batch, the same fields for every method.

A record is a JSON-ready ``dict``. Lists run over the evaluated batches, the
initial design included (its entry comes first), so that every method is read
at the same evaluation counts:

- ``evaluations``: evaluations so far after each batch;
- ``best_value``: the best noise-free value among them;
- ``iteration_seconds``: CPU seconds proposing each batch (objective excluded);
  ``cumulative_seconds``: their running sum;
- ``model_seconds``: the model's share (the sketch: building or updating the
  surrogate; TuRBO-ENN and TuRBO-1: ``tell``, where they fit; CMA-ES: ``tell``;
  Sobol: 0); ``batch_seconds``: the rest (the sketch: drawing and maximising
  paths; the peers: ``ask``);
- ``refit_seconds``, ``incumbent_seconds``, ``refitted``: the sketch's breakdown
  per batch where its trace has one, else None;
- ``train_size``: observations the method held when proposing the batch (a
  trust-region restart of TuRBO-ENN or TuRBO-1 drops them);
  ``inducing_size``: the sketch's inducing points (0 for the others);

and the scalars ``optimal_value`` (NaN where unknown), ``restarts`` (the peers'
trust-region or IPOP restarts; None for the sketch and Sobol),
``stopped_at_cap``, ``total_cpu_seconds`` (the whole cell, evaluations
included), ``threads`` and ``cell`` (the cell's settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The per-batch lists of a record.
SERIES = (
    "evaluations",
    "best_value",
    "iteration_seconds",
    "cumulative_seconds",
    "model_seconds",
    "batch_seconds",
    "train_size",
    "inducing_size",
)
#: The sketch's optional per-batch breakdown (None for the others).
BREAKDOWN = ("refit_seconds", "incumbent_seconds", "refitted")


@dataclass
class RunLog:
    r"""What a peer's loop collects, batch by batch.

    Attributes:
        optimal_value: The problem's maximum (NaN where unknown).
        evaluations: Evaluations so far after each batch.
        best_value: The best noise-free value so far after each batch.
        model_seconds: CPU seconds of each batch's ``tell``.
        batch_seconds: CPU seconds of each batch's ``ask``.
        train_size: Observations held when proposing each batch.
        restarts: Restarts so far (None where the method has none).
        stopped_at_cap: Whether the run stopped at its CPU cap.
    """

    optimal_value: float
    evaluations: list[int] = field(default_factory=list)
    best_value: list[float] = field(default_factory=list)
    model_seconds: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    train_size: list[int] = field(default_factory=list)
    restarts: int | None = None
    stopped_at_cap: bool = False

    @property
    def proposing_seconds(self) -> float:
        r"""CPU seconds proposing so far."""
        return sum(self.model_seconds) + sum(self.batch_seconds)

    def add(
        self,
        size: int,
        best: float,
        ask_seconds: float,
        tell_seconds: float,
        train_size: int,
    ) -> None:
        r"""Log a batch of ``size`` points whose best noise-free value is ``best``."""
        total = (self.evaluations[-1] if self.evaluations else 0) + size
        so_far = max(best, self.best_value[-1]) if self.best_value else best
        self.evaluations.append(total)
        self.best_value.append(so_far)
        self.batch_seconds.append(ask_seconds)
        self.model_seconds.append(tell_seconds)
        self.train_size.append(train_size)

    def record(self) -> dict[str, Any]:
        r"""The record's fields but ``cell``, ``total_cpu_seconds`` and ``threads``."""
        iteration = [
            m + b for m, b in zip(self.model_seconds, self.batch_seconds, strict=True)
        ]
        return {
            "optimal_value": self.optimal_value,
            "evaluations": list(self.evaluations),
            "best_value": list(self.best_value),
            "iteration_seconds": iteration,
            "cumulative_seconds": cumulative(iteration),
            "model_seconds": list(self.model_seconds),
            "batch_seconds": list(self.batch_seconds),
            "refit_seconds": None,
            "incumbent_seconds": None,
            "refitted": None,
            "train_size": list(self.train_size),
            "inducing_size": [0] * len(self.evaluations),
            "restarts": self.restarts,
            "stopped_at_cap": self.stopped_at_cap,
        }


def cumulative(values: list[float]) -> list[float]:
    r"""The running sums of ``values``."""
    out, total = [], 0.0
    for v in values:
        total += v
        out.append(total)
    return out
