#!/usr/bin/env python3
r"""Held-out accuracy, effective dimension, and timing for the benchmarks."""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from botorch.models.model import Model
from torch import Tensor

from botorch_sketch.sketching.chunks import row_chunks


@dataclass
class Accuracy:
    r"""Held-out predictive accuracy, in the units of ``Y``."""

    nll: float  #: mean negative log predictive density per point (nats)
    rmse: float  #: root mean squared error of the predictive mean


def held_out_accuracy(model: Model, X: Tensor, Y: Tensor) -> Accuracy:
    r"""Predictive NLL (with observation noise) and RMSE on test data.

    Points are predicted one at a time in a batch (``n x 1 x d``), so no test
    covariance is formed.

    Args:
        model: A fitted single-output model.
        X: A ``n x d`` tensor of test inputs.
        Y: A ``n x 1`` tensor of test observations.

    Returns:
        The accuracy.
    """
    nll, sq = 0.0, 0.0
    with torch.no_grad():
        for rows in row_chunks(X.shape[0], 2048):
            post = model.posterior(X[rows].unsqueeze(-2), observation_noise=True)
            mean = post.mean.reshape(-1)
            var = post.variance.reshape(-1).clamp_min(1e-12)
            y = Y[rows].reshape(-1)
            nll += float(
                (
                    0.5 * (math.log(2 * math.pi) + var.log())
                    + 0.5 * (y - mean).pow(2) / var
                ).sum()
            )
            sq += float((y - mean).pow(2).sum())
    n = X.shape[0]
    return Accuracy(nll=nll / n, rmse=math.sqrt(sq / n))


def effective_dimension(model: Model, X: Tensor) -> float:
    r"""``d_eff = tr(K (K + lambda I)^{-1}) = sum_i var_i / lambda`` of a fitted GP.

    ``var_i`` is the latent posterior variance at training input ``x_i`` and
    ``lambda`` the (outcome-transformed) noise variance of a homoskedastic model.

    Args:
        model: A fitted GP with a ``GaussianLikelihood``.
        X: Its ``n x d`` training inputs.

    Returns:
        The effective dimension.
    """
    with torch.no_grad():
        post = model.posterior(X.unsqueeze(-2))
        var = post.variance.reshape(-1)
        if hasattr(model, "outcome_transform"):
            var = var / model.outcome_transform.stdvs.pow(2).reshape(-1)
        noise = model.likelihood.noise.reshape(-1)[0]
    return float(var.sum() / noise)


@contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    r"""Context manager yielding a function that returns the elapsed seconds."""
    start = time.perf_counter()
    end: list[float] = []
    try:
        yield lambda: (end[0] if end else time.perf_counter()) - start
    finally:
        end.append(time.perf_counter())


RowT = TypeVar("RowT")


def reference_row(rows: list[RowT], case: Any, method: str) -> RowT | None:
    r"""The row of ``method`` on ``case`` (the reference a ratio divides by).

    Args:
        rows: Benchmark rows with ``case`` and ``method`` attributes.
        case: The case to match.
        method: The reference method's name.

    Returns:
        The first matching row, or None if that method did not run on the case.
    """
    return next((r for r in rows if r.case == case and r.method == method), None)


def in_fresh_process(target: Callable[..., None], *args: Any) -> Any:
    r"""Run ``target(*args, queue)`` in a spawned process and return what it puts.

    A fresh process makes the peak resident memory and the caches of a case its
    own. ``target`` must be importable (a module-level function) and put one
    picklable result, without tensors (they would travel by shared memory that
    the child frees when it exits).
    """
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()  # before join: a large result would block the pipe
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"{target.__name__}{args} failed ({proc.exitcode}).")
    return result
