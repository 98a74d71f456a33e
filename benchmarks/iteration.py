#!/usr/bin/env python3
r"""One BO iteration as a user writes it, on the same data for every model.

For each size ``n`` and data set: build and fit the model with
``fit_gpytorch_mll``, then maximise an acquisition function with
``optimize_acqf`` (4 restarts, 256 raw samples), for ``qLogNoisyExpectedImprovement``
(``q`` = 1 and 10, observed inputs as baseline, pruned) and ``qLogExpectedImprovement``
(``q`` = 10). The data imitate a loop's: Hartmann-6 with noise sd 0.1, half
uniform and half clustered near the optimum. The number of acquisition
evaluations L-BFGS-B needs is heavy-tailed on any model, so the report gives
medians over data sets, and evaluations and milliseconds per evaluation beside
the totals. Beside wall-clock seconds it records the process's CPU seconds
(``time.process_time``): the runs are single-threaded, so on a machine shared
with other jobs the CPU ratio is the one that carries over. The two models take
turns in which goes first.

``python -m benchmarks iteration --budget small|large``
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
)
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from benchmarks.harness.loop import count_evaluations
from botorch_sketch.models import NystromGP

MODELS: dict[str, Callable[[Tensor, Tensor], Model]] = {
    "SingleTaskGP": SingleTaskGP,
    "NystromGP": NystromGP,
}

#: (label, acquisition builder, q).
ACQUISITIONS: list[
    tuple[str, Callable[[Model, Tensor, Tensor], AcquisitionFunction], int]
] = [
    ("qLogNEI q=10", lambda m, X, Y: qLogNoisyExpectedImprovement(m, X), 10),
    ("qLogNEI q=1", lambda m, X, Y: qLogNoisyExpectedImprovement(m, X), 1),
    ("qLogEI q=10", lambda m, X, Y: qLogExpectedImprovement(m, best_f=Y.max()), 10),
]

BUDGETS: dict[str, tuple[list[int], int, int]] = {
    # (sizes, data sets per size, acquisitions used: the first k)
    "small": ([60, 150], 1, 1),
    # The sizes of the target "never slower from 100 to 1000", qLogNEI q = 10.
    "medium": ([100, 200, 350, 600, 1000], 5, 1),
    "large": ([100, 350, 1000, 2000], 3, 3),
}


def loop_like_data(n: int, seed: int) -> tuple[Tensor, Tensor]:
    r"""Hartmann-6 (maximised) with noise sd 0.1; half near the optimum."""
    problem = Hartmann(dim=6, negate=True).to(torch.double)
    g = torch.Generator().manual_seed(seed)
    uniform = torch.rand(n // 2, 6, generator=g, dtype=torch.double)
    optimum = torch.tensor(problem.optimizers[0], dtype=torch.double)
    near = optimum + 0.05 * torch.randn(n - n // 2, 6, generator=g, dtype=torch.double)
    X = torch.cat([uniform, near.clamp(0, 1)])
    Y = problem(X).unsqueeze(-1)
    return X, Y + 0.1 * torch.randn(n, 1, generator=g, dtype=torch.double)


@dataclass
class Measurement:
    r"""One model, size, data set and acquisition."""

    model: str
    n: int
    seed: int
    acquisition: str
    fit_s: float
    acquisition_s: float
    evaluations: int
    m: int | None
    fit_cpu_s: float = float("nan")
    acquisition_cpu_s: float = float("nan")


def measure(n: int, seed: int, num_acquisitions: int) -> list[Measurement]:
    r"""Every model on one data set: one fit, then each acquisition."""
    X, Y = loop_like_data(n, seed)
    bounds = torch.stack([torch.zeros(6), torch.ones(6)]).to(X)
    out = []
    names = list(MODELS) if seed % 2 == 0 else list(reversed(MODELS))
    for name in names:
        start, cpu = time.perf_counter(), time.process_time()
        # Seeded as the acquisition below: an inducing rule draws from torch's
        # global random state, which otherwise depends on what ran before in
        # the process (one data set came out sketched in one run, exact in
        # another).
        with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
            warnings.simplefilter("ignore")
            torch.manual_seed(seed)
            model = MODELS[name](X, Y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
        index = getattr(model, "inducing_index", None)
        for label, make, q in ACQUISITIONS[:num_acquisitions]:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                start, cpu = time.perf_counter(), time.process_time()
                acqf = make(model, X, Y)
                calls = count_evaluations(acqf)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    optimize_acqf(acqf, bounds, q=q, num_restarts=4, raw_samples=256)
                acquisition_s = time.perf_counter() - start
                acquisition_cpu_s = time.process_time() - cpu
            out.append(
                Measurement(
                    model=name,
                    n=n,
                    seed=seed,
                    acquisition=label,
                    fit_s=fit_s,
                    acquisition_s=acquisition_s,
                    evaluations=calls[0],
                    m=None if index is None else int(index.numel()),
                    fit_cpu_s=fit_cpu_s,
                    acquisition_cpu_s=acquisition_cpu_s,
                )
            )
    return out


def run(budget: str = "small") -> list[Measurement]:
    r"""Every size, data set, model and acquisition of a budget."""
    sizes, num_sets, num_acquisitions = BUDGETS[budget]
    rows = []
    for n in sizes:
        for seed in range(num_sets):
            for row in measure(n, seed, num_acquisitions):
                rows.append(row)
                print(
                    f"n={n} set {seed} {row.model:12s} {row.acquisition:13s} fit "
                    f"{row.fit_s:7.2f} s acquisition {row.acquisition_s:6.2f} s "
                    f"({row.evaluations} evaluations) m={row.m}",
                    flush=True,
                )
    return rows


def _median(values: list[float]) -> float:
    return float(torch.tensor(values, dtype=torch.double).median())


def render(rows: list[Measurement], machine: str) -> str:
    r"""Markdown: ratios NystromGP / SingleTaskGP of medians, then the medians."""
    keys = list(dict.fromkeys((r.n, r.acquisition) for r in rows))

    def pick(model: str, n: int, acquisition: str) -> list[Measurement]:
        return [
            r for r in rows if (r.model, r.n, r.acquisition) == (model, n, acquisition)
        ]

    lines = [
        "Medians over data sets; iteration = fit + acquisition optimisation. "
        "Ratios are NystromGP / SingleTaskGP (below 1: NystromGP faster).",
        "",
        "| n | acquisition | iteration ratio | fit ratio | acquisition ratio | "
        "ms/evaluation ratio | CPU iteration ratio | CPU ms/evaluation ratio |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    table = []
    for n, acquisition in keys:
        med = {}
        for model in MODELS:
            sel = pick(model, n, acquisition)
            if not sel:
                continue
            med[model] = (
                _median([r.fit_s + r.acquisition_s for r in sel]),
                _median([r.fit_s for r in sel]),
                _median([r.acquisition_s for r in sel]),
                _median([1e3 * r.acquisition_s / max(1, r.evaluations) for r in sel]),
                _median([float(r.evaluations) for r in sel]),
                [r.m for r in sel],
                _median([r.fit_cpu_s + r.acquisition_cpu_s for r in sel]),
                _median(
                    [1e3 * r.acquisition_cpu_s / max(1, r.evaluations) for r in sel]
                ),
            )
        if len(med) < 2:
            continue
        a, b = med["NystromGP"], med["SingleTaskGP"]
        lines.append(
            f"| {n} | {acquisition} | {a[0] / b[0]:.2f} | {a[1] / b[1]:.2f} | "
            f"{a[2] / b[2]:.2f} | {a[3] / b[3]:.2f} | {a[6] / b[6]:.2f} | "
            f"{a[7] / b[7]:.2f} |"
        )
        for model, v in med.items():
            table.append(
                f"| {n} | {acquisition} | {model} | {v[0]:.2f} | {v[1]:.2f} | "
                f"{v[2]:.2f} | {v[4]:.0f} | {v[3]:.1f} | "
                f"{'-' if v[5][0] is None else ', '.join(map(str, v[5]))} |"
            )
    lines += [
        "",
        f"Medians ({machine}):",
        "",
        "| n | acquisition | model | iteration s | fit s | acquisition s | "
        "evaluations | ms/evaluation | m (per data set) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---|",
        *table,
    ]
    return "\n".join(lines)
