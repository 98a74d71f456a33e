#!/usr/bin/env python3
r"""The posterior over many candidates against ``torch.matmul`` on this machine.

An acquisition function's raw samples are ``b x 1 x d``; ``NystromGP``'s
posterior over them is a kernel block ``b x m``, the product with the ``m x m'``
root and one triangular solve with ``m'`` right-hand sides per point: about
``3 b m^2`` floating-point operations, all matrix products. The achieved rate
(mean and variance of every candidate, with BoTorch's posterior objects) is
reported as a fraction of the rate ``torch.matmul`` reaches on a
``b x m @ m x m`` product of the same sizes, on the same device (the CPU by
default, or a GPU: ``--device cuda``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import torch

from benchmarks.metrics import synchronize
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.rules import GreedyVarianceSelector

BUDGETS = {
    "small": [(20_000, 256), (20_000, 512)],
    "large": [(100_000, 256), (100_000, 512), (100_000, 1024)],
}


@dataclass
class Row:
    r"""One candidate-set size and inducing-set size."""

    candidates: int
    m: int
    posterior_seconds: float
    matmul_seconds: float

    @property
    def gflops(self) -> float:
        r"""Achieved rate of the posterior, counting ``3 b m^2`` operations."""
        return 3 * self.candidates * self.m**2 / self.posterior_seconds / 1e9

    @property
    def matmul_gflops(self) -> float:
        r"""Rate of ``torch.matmul`` on ``b x m @ m x m`` (``2 b m^2`` operations)."""
        return 2 * self.candidates * self.m**2 / self.matmul_seconds / 1e9


def _best_of(fn, device: torch.device, repeats: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return min(times)


def _posterior(model: NystromGP, cand: torch.Tensor) -> None:
    with torch.no_grad():
        post = model.posterior(cand)
        post.mean, post.variance  # noqa: B018 (force evaluation)


def run(budget_name: str = "small", device: str | torch.device = "cpu") -> list[Row]:
    r"""Time the posterior and the matching matmul for each size.

    Args:
        budget_name: ``"small"`` or ``"large"``.
        device: Where the model, the candidates and the matmul's operands live.
            The data are drawn on the CPU, so every device sees the same.
    """
    device = torch.device(device)
    tkwargs = {"dtype": torch.double, "device": device}
    rows = []
    g = torch.Generator().manual_seed(0)
    for b, m in BUDGETS[budget_name]:
        X = torch.rand(max(4 * m, 2000), 6, generator=g, dtype=torch.double)
        X = X.to(device)
        Y = X.sin().sum(-1, keepdim=True)
        model = NystromGP(X, Y, inducing=GreedyVarianceSelector(m, tolerance=None))
        model.covar_module.lengthscale = 0.2
        model.select_inducing_points()
        model.eval()
        m_used = model.inducing_points.shape[0]
        cand = torch.rand(b, 1, 6, generator=g, dtype=torch.double).to(**tkwargs)

        A = torch.rand(b, m_used, generator=g, dtype=torch.double).to(**tkwargs)
        B = torch.rand(m_used, m_used, generator=g, dtype=torch.double).to(**tkwargs)
        seconds = _best_of(partial(_posterior, model, cand), device)
        matmul = _best_of(partial(torch.matmul, A, B), device)
        rows.append(Row(b, m_used, seconds, matmul))
    return rows


def render(rows: list[Row], machine: str) -> str:
    r"""A table: fraction of the matmul rate first, then absolute figures."""
    lines = [
        "Fraction = the posterior's achieved GFLOP/s (3 b m^2 operations for mean "
        "and variance of b candidates) over torch.matmul's on b x m @ m x m, same "
        "run; best of 3.",
        "",
        "| candidates | m | fraction of matmul rate | posterior s | GFLOP/s | "
        "matmul GFLOP/s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.candidates} | {r.m} | {r.gflops / r.matmul_gflops:.2f} | "
            f"{r.posterior_seconds:.3f} | {r.gflops:.1f} | {r.matmul_gflops:.1f} |"
        )
    lines += ["", f"Absolute figures are from {machine}."]
    return "\n".join(lines)
