#!/usr/bin/env python3
r"""The package's cells: :func:`~botorch_sketch.bo.run_large_batch` as a record.

``SKETCH`` runs ``run_large_batch`` with ``strategy="regions"`` (the Thompson
regions, otherwise its defaults), ``SKETCH_CMA`` with ``strategy="cma"`` (the
default: CMA-ES screened by the same surrogate); ``EXACT`` (the old
anchor, kept out of the headline grid) the same loop with BoTorch's exact GP
rebuilt each batch from the last hyperparameters (:class:`WarmExactGP`). The
trace's per-batch breakdown (``refit_seconds``, ``incumbent_seconds``,
``refitted``) is read, for the two sketches, where the trace has it (``getattr``: the
fields are newer than the trace).
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.test_functions.synthetic import SyntheticTestFunction
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_sketch.bo.large_batch import optimal_value, run_large_batch

from .record import BREAKDOWN, cumulative

SKETCH, SKETCH_CMA, EXACT = "sketch", "sketch-CMA", "exact GP (warm)"


def _copy_parameters(source: Model, target: Model) -> None:
    # Parameters of the same name and shape, copied in place.
    values = dict(source.named_parameters())
    with torch.no_grad():
        for name, parameter in target.named_parameters():
            if name in values and values[name].shape == parameter.shape:
                parameter.copy_(values[name])


class WarmExactGP:
    r"""``SingleTaskGP`` rebuilt each call from the last hyperparameters.

    The expert's exact GP in a long loop (BoTorch's closed-loop tutorial starts
    from the previous state): a Cholesky per call, a refit every
    ``refit_every`` calls, optionally on the newest ``max_points`` only.
    """

    def __init__(self, refit_every: int = 5, max_points: int | None = None) -> None:
        r"""Refit every ``refit_every`` calls; keep the newest ``max_points``."""
        self.refit_every = refit_every
        self.max_points = max_points
        self.calls = 0
        self.previous: SingleTaskGP | None = None

    def __call__(self, X: Tensor, Y: Tensor) -> SingleTaskGP:
        r"""The exact GP of (the newest of) ``X`` (``n x d``), ``Y`` (``n x 1``)."""
        if self.max_points is not None:
            X, Y = X[-self.max_points :], Y[-self.max_points :]
        model = SingleTaskGP(X, Y)
        if self.previous is not None:
            _copy_parameters(self.previous, model)
        if self.previous is None or self.calls % self.refit_every == 0:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        self.calls += 1
        self.previous = model
        return model


def _floats(values: Any) -> list[Any]:
    # A tensor or a list, as a list of Python numbers.
    return values.tolist() if isinstance(values, Tensor) else list(values)


def run_sketch(
    problem: SyntheticTestFunction,
    evaluations: int,
    q: int,
    seed: int,
    time_cap: float | None = None,
    method: str = SKETCH,
) -> dict[str, Any]:
    r"""Run ``run_large_batch`` on ``problem``; return its record's fields.

    The trace has no entry for the Sobol design (``q`` points); the record's
    first entry is the design's, with no proposing seconds.

    Args:
        problem: A maximised test function (its bounds are the search box).
        evaluations: Evaluations in all.
        q: Points per batch (and the design's size).
        seed: The run's seed.
        time_cap: ``run_large_batch``'s CPU cap.
        method: ``SKETCH`` (``strategy="regions"``), ``SKETCH_CMA``
            (``strategy="cma"``) or ``EXACT`` (:class:`WarmExactGP` in the
            regions).

    Returns:
        The fields of :mod:`~benchmarks.large_batch.record` but
        ``cell``, ``total_cpu_seconds`` and ``threads``.
    """
    extra: dict[str, Any] = {
        SKETCH: {"strategy": "regions"},
        SKETCH_CMA: {"strategy": "cma"},
        EXACT: {"strategy": "regions", "surrogate": WarmExactGP()},
    }[method]
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=evaluations,
        q=q,
        seed=seed,
        time_cap=time_cap,
        progress=False,
        **extra,
    )
    design = int(trace.train_size[0]) if trace.train_size else min(q, evaluations)
    iteration = [0.0] + _floats(trace.iteration_seconds)
    record: dict[str, Any] = {
        "optimal_value": optimal_value(problem),
        "evaluations": [design] + [int(e) for e in _floats(trace.evaluations)],
        "best_value": [float(trace.initial_best)] + _floats(trace.best_value),
        "iteration_seconds": iteration,
        "cumulative_seconds": cumulative(iteration),
        "model_seconds": [0.0] + _floats(trace.model_seconds),
        "batch_seconds": [0.0] + _floats(trace.batch_seconds),
        "train_size": [0] + [int(n) for n in trace.train_size],
        "inducing_size": [0] + [int(m) for m in trace.inducing_size],
        "restarts": None,
        "stopped_at_cap": bool(trace.stopped_at_cap),
    }
    for name in BREAKDOWN:
        # The trace sees the refits of its own surrogate only.
        values = getattr(trace, name, None) if method != EXACT else None
        if values is None:
            record[name] = None
        elif name == "refitted":
            record[name] = [False] + [bool(v) for v in _floats(values)]
        else:
            record[name] = [0.0] + [float(v) for v in _floats(values)]
    return record
