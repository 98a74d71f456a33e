#!/usr/bin/env python3
r"""``NystromGP`` at up to a million observations: the cost of each part.

Hartmann6 on the first six of ``d`` uniform inputs (``d = 6`` and ``d = 20``, the
other inputs inactive), noise sd 0.1. For each ``n`` the parts of one BO
iteration are timed in a fresh process, whose peak resident memory is
reported: building the model (the inducing rule at the initial
hyperparameters), fitting (hyperparameters and the inducing rule on a random
subset of 10,000 points, ``NystromGP.fit_subset_size``), the posterior state
(embedding and statistics of all ``n`` points), one ``optimize_acqf`` of
``LogExpectedImprovement`` (10 restarts, 512 raw samples), and the held-out log
likelihood on 10,000 points.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time
from dataclasses import dataclass

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.optim import optimize_acqf
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood

from botorch_sketch.benchmarks.metrics import held_out_accuracy
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.selection import GreedyVarianceSelector

BUDGETS = {
    "small": [(6, 10_000), (6, 100_000), (20, 100_000)],
    "large": [(6, 100_000), (6, 1_000_000), (20, 1_000_000)],
}
NUM_INDUCING = 256
FIT_SUBSET = 10_000


@dataclass
class Row:
    r"""The parts of one BO iteration at one ``(d, n)``."""

    dim: int
    n: int
    m: int
    build: float
    fit: float
    state: float
    acquisition: float
    nll: float
    peak_mb: float

    @property
    def iteration(self) -> float:
        r"""Seconds for one full BO iteration (all parts but the held-out check)."""
        return self.build + self.fit + self.state + self.acquisition


def _data(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    f = Hartmann(dim=6, negate=True)
    Y = f.evaluate_true(X[:, :6]) + 0.1 * torch.randn(n, generator=g, dtype=X.dtype)
    return X, Y.unsqueeze(-1)


def _case(d: int, n: int, queue: mp.Queue) -> None:
    torch.manual_seed(0)
    X, Y = _data(n, d, 0)
    Xt, Yt = _data(10_000, d, 1)
    clock = time.perf_counter
    t0 = clock()
    model = NystromGP(
        X, Y, inducing=GreedyVarianceSelector(NUM_INDUCING), fit_subset_size=FIT_SUBSET
    )
    t1 = clock()
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    t2 = clock()
    with torch.no_grad():
        model._posterior_state()
    t3 = clock()
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).to(X)
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    optimize_acqf(acqf, bounds, q=1, num_restarts=10, raw_samples=512)
    t4 = clock()
    nll = held_out_accuracy(model, Xt, Yt).nll
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(
        Row(
            d,
            n,
            model.inducing_points.shape[0],
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            nll,
            peak,
        )
    )


def run(budget_name: str = "small") -> list[Row]:
    r"""Each case in a fresh process (so that peak memory is its own)."""
    ctx = mp.get_context("spawn")
    rows = []
    for d, n in BUDGETS[budget_name]:
        queue = ctx.Queue()
        proc = ctx.Process(target=_case, args=(d, n, queue))
        proc.start()
        proc.join()  # the result is small: it fits the queue's pipe
        if proc.exitcode != 0:
            raise RuntimeError(f"scale case d={d}, n={n} failed ({proc.exitcode}).")
        row = queue.get()
        print(
            f"d={d} n={n}: iteration {row.iteration:.1f} s, peak {row.peak_mb:.0f} MB"
        )
        rows.append(row)
    return rows


def render(rows: list[Row], machine: str) -> str:
    r"""Growth ratios first, then the parts of each iteration."""
    lines = [
        "Time of one BO iteration, and its growth when n grows 10x at the same d:",
        "",
    ]
    for a in rows:
        for b in rows:
            if b.dim == a.dim and b.n == 10 * a.n:
                growth = b.iteration / a.iteration
                lines.append(
                    f"- d = {a.dim}, n {a.n} -> {b.n}: {growth:.1f}x time, "
                    f"{b.peak_mb / a.peak_mb:.1f}x peak memory"
                )
    lines += [
        "",
        "| d | n | m | iteration s | build s | fit s | posterior state s | "
        "optimize_acqf s | held-out NLL | peak MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.dim} | {r.n} | {r.m} | {r.iteration:.1f} | {r.build:.1f} | "
            f"{r.fit:.1f} | {r.state:.1f} | {r.acquisition:.1f} | {r.nll:.3f} | "
            f"{r.peak_mb:.0f} |"
        )
    lines += ["", f"Absolute figures are from {machine}."]
    return "\n".join(lines)
