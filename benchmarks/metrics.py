#!/usr/bin/env python3
r"""Held-out accuracy, effective dimension, and timing for the benchmarks."""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from botorch.models.model import Model
from torch import Tensor
from torch.overrides import TorchFunctionMode

from botorch_sketch.sketching.embedding import row_chunks

if TYPE_CHECKING:
    from botorch_sketch.bandits.loop import BanditTrace


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


@dataclass
class BanditRow:
    r"""One bandit policy on one case: the columns every bandit benchmark has."""

    case: Any
    method: str
    seconds: float  #: policy time of the whole run
    regret: float  #: cumulative expected regret
    dictionary: int  #: the policy's final dictionary size
    ms_early: float  #: mean ms per step over the first 10% of steps
    ms_mid: float  #: mean ms per step over steps 40% to 50%
    ms_late: float  #: mean ms per step over the last 10% of steps


def trace_columns(trace: BanditTrace) -> dict[str, float]:
    r"""A bandit run's columns of a benchmark row: total time, regret, ms per step.

    Returns:
        ``seconds`` (policy time), ``regret`` (cumulative), and ``ms_early``,
        ``ms_mid``, ``ms_late``: the mean ms per step over the first 10%, steps
        40% to 50% and the last 10% of the run.
    """
    return {
        "seconds": trace.total_time,
        "regret": float(trace.cumulative_regret[-1]),
        "ms_early": trace.mean_step_ms(0.0, 0.1),
        "ms_mid": trace.mean_step_ms(0.4, 0.5),
        "ms_late": trace.mean_step_ms(0.9, 1.0),
    }


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


def synchronize(device: torch.device | str) -> None:
    r"""Wait for the work queued on ``device``, so that a host clock times it.

    CUDA kernels run asynchronously: without this a timer stops when the work
    is queued, not when it is done. A no-op on the CPU.
    """
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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


@dataclass(frozen=True)
class MachineRates:
    r"""Measured float64 throughput of this process (flop/s), at its thread count.

    The floor of an online loop's step is its arithmetic over these rates: what
    the step would cost with no interpreter, dispatch or allocation in the way.
    """

    #: a ``2048 x 64`` matrix times a vector (cache-resident, faster layout)
    matvec: float
    matmul: float  #: a ``192 x 192`` matrix product
    axpy: float  #: ``y += a x`` on 16384 elements

    def floor_ms(
        self,
        matvec_flops: float = 0.0,
        matmul_flops: float = 0.0,
        axpy_flops: float = 0.0,
    ) -> float:
        r"""Milliseconds for the given flops at the measured rates."""
        return 1e3 * (
            matvec_flops / self.matvec
            + matmul_flops / self.matmul
            + axpy_flops / self.axpy
        )


_RATES: dict[int, MachineRates] = {}


def _best_rate(flops: float, run: Callable[[], Any], repeats: int) -> float:
    # The fastest of ``repeats`` timings of a batch of runs: a rate the
    # machine reaches, not one diluted by the other work on it.
    run()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(10):
            run()
        best = min(best, (time.perf_counter() - start) / 10)
    return flops / best


def machine_rates() -> MachineRates:
    r"""The :class:`MachineRates` of this process, measured once per thread count.

    Takes a few tens of milliseconds.
    """
    threads = torch.get_num_threads()
    if threads not in _RATES:
        g = torch.Generator().manual_seed(0)
        A = torch.rand(2048, 64, generator=g, dtype=torch.double)
        # The same matrix held column-major, as the online loops hold their
        # embedded arms: BLAS's gemv is faster there, and the floor is the
        # best rate the machine reaches.
        A_columns = A.mT.contiguous().mT
        v = torch.rand(64, generator=g, dtype=torch.double)
        M = torch.rand(192, 192, generator=g, dtype=torch.double)
        x = torch.rand(16384, generator=g, dtype=torch.double)
        y = torch.zeros_like(x)
        _RATES[threads] = MachineRates(
            matvec=max(
                _best_rate(2 * 2048 * 64, lambda: torch.mv(A, v), 5),
                _best_rate(2 * 2048 * 64, lambda: torch.mv(A_columns, v), 5),
            ),
            matmul=_best_rate(2 * 192**3, lambda: M @ M, 3),
            axpy=_best_rate(2 * 16384, lambda: y.add_(x, alpha=1e-9), 5),
        )
    return _RATES[threads]


def dtc_step_flops(num_arms: int, dictionary: float) -> float:
    r"""Flops of one steady single-pull step of a finite-arm DTC loop.

    Scores (``~6 A``), the rank-one weight update and statistics (``~6 m^2``)
    and every arm's mean and variance (``2 A m + ~6 A``): what BKB, GP-UCB and
    DTC-UCB do per step between insertions and redraws, which come on top.
    """
    A, m = num_arms, dictionary
    return 2 * A * m + 6 * m * m + 12 * A


class TorchCallCounter(TorchFunctionMode):
    r"""Counts the torch calls made while it is active: functions and tensor methods.

    Reads of tensor attributes (``.shape``, ``.dtype``) are not counted. Each
    ``with counter:`` block adds to :attr:`calls`, so a loop can count the
    policy's calls and leave the environment's out.

    Example:
        >>> counter = TorchCallCounter()
        >>> with counter:
        ...     policy.update(indices, rewards)
        >>> counter.calls
    """

    def __init__(self) -> None:
        r"""Start at zero calls."""
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: D105
        if getattr(func, "__name__", None) != "__get__":
            self.calls += 1
        return func(*args, **(kwargs or {}))
