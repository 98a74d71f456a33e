#!/usr/bin/env python3
r"""The default ``NystromGP`` against ``SingleTaskGP``: fit time and held-out NLL.

Hartmann-6 with noise sd 0.3 on uniform inputs, as a user would write both
models: ``Model(X, Y)``, ``fit_gpytorch_mll``, predict, timed together. Beside
the default, ``fit_subset_size = 1000`` (an option: two Titsias passes on a
random 1000 points) runs as an ablation, so the gain of fitting the
hyperparameters once, exactly, on ``exact_fit_size`` of them shows in the same
run. Every model sees the same data; the exact GP runs first for each case.

``python -m benchmarks default-fit --budget large`` (n = 2000
and 5000, two seeds, one torch thread, then two).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from benchmarks.inference import hartmann_data
from benchmarks.metrics import held_out_accuracy, stopwatch
from botorch_sketch.models import NystromGP

NOISE_SD = 0.3


@dataclass(frozen=True)
class Budget:
    r"""Training sizes, seeds, test points and thread counts of one budget."""

    sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    num_test: int
    threads: tuple[int, ...]


BUDGETS = {
    "small": Budget(sizes=(1500,), seeds=(0,), num_test=500, threads=(1,)),
    "large": Budget(sizes=(2000, 5000), seeds=(0, 1), num_test=2000, threads=(1, 2)),
}


@dataclass
class Row:
    r"""One model on one case."""

    method: str
    n: int
    seed: int
    threads: int
    m: int | None  #: inducing points (None for the exact GP)
    seconds: float
    nll: float


def _exact(X: Tensor, Y: Tensor) -> tuple[SingleTaskGP, int | None]:
    model = SingleTaskGP(X, Y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model, None


def _nystrom(fit_subset_size: int | None):
    def fit(X: Tensor, Y: Tensor) -> tuple[NystromGP, int | None]:
        model = NystromGP(X, Y, fit_subset_size=fit_subset_size)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model, int(model.inducing_index.numel())

    return fit


METHODS = {
    "SingleTaskGP": _exact,
    "NystromGP (default)": _nystrom(None),
    "NystromGP fit_subset_size=1000": _nystrom(1000),
}


def run(budget_name: str = "small") -> list[Row]:
    r"""Fit and score every method on every case of the budget.

    Args:
        budget_name: A key of :data:`BUDGETS`.

    Returns:
        One row per method, size, seed and thread count.
    """
    budget = BUDGETS[budget_name]
    rows = []
    before = torch.get_num_threads()
    try:
        for threads in budget.threads:
            torch.set_num_threads(threads)
            for n in budget.sizes:
                for seed in budget.seeds:
                    X, Y = hartmann_data(n, NOISE_SD, seed)
                    Xt, Yt = hartmann_data(budget.num_test, NOISE_SD, 10_000 + seed)
                    for method, fit in METHODS.items():
                        with stopwatch() as seconds:
                            model, m = fit(X, Y)
                            accuracy = held_out_accuracy(model, Xt, Yt)
                        row = Row(method, n, seed, threads, m, seconds(), accuracy.nll)
                        print(
                            f"threads={threads} n={n} seed={seed} {method}: "
                            f"{row.seconds:.2f} s, NLL {row.nll:.3f}, m={m}",
                            flush=True,
                        )
                        rows.append(row)
    finally:
        torch.set_num_threads(before)
    return rows


def render(rows: list[Row], machine: str) -> str:
    r"""One table: time ratio and dNLL against ``SingleTaskGP`` per case.

    Args:
        rows: The output of :func:`run`.
        machine: A line describing the machine.

    Returns:
        Markdown.
    """
    exact = {(r.n, r.seed, r.threads): r for r in rows if r.m is None}
    lines = [
        "Time ratio = `SingleTaskGP`'s seconds / this model's, same data, same run "
        "(fit and held-out prediction); dNLL = held-out NLL per point minus "
        "`SingleTaskGP`'s (nats).",
        "",
        "| threads | n | seed | method | m | time ratio | dNLL | seconds |",
        "|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    ratios: dict[tuple[str, int, int], list[float]] = {}
    for r in rows:
        ref = exact[(r.n, r.seed, r.threads)]
        ratio = ref.seconds / r.seconds
        ratios.setdefault((r.method, r.n, r.threads), []).append(ratio)
        lines.append(
            f"| {r.threads} | {r.n} | {r.seed} | {r.method} | "
            f"{'-' if r.m is None else r.m} | {ratio:.1f}x | "
            f"{r.nll - ref.nll:+.3f} | {r.seconds:.2f} |"
        )
    lines += ["", "Median time ratio over seeds:", ""]
    for (method, n, threads), values in ratios.items():
        if method != "SingleTaskGP":
            lines.append(
                f"- {threads} thread(s), n = {n}, {method}: "
                f"{statistics.median(values):.1f}x"
            )
    lines += ["", f"Machine: {machine}."]
    return "\n".join(lines)
