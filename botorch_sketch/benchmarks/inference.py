#!/usr/bin/env python3
r"""Held-out accuracy against time: ``NystromGP`` and its peers, side by side.

Three experiments, in one run:

1. *frontier*: Hartmann6 on uniform inputs, noise sd 0.3; every inducing rule
   of ``NystromGP`` across inducing-set sizes, BoTorch's
   ``SingleTaskVariationalGP``, GPyTorch's SGPR and the exact ``SingleTaskGP``.
2. *growth*: the same function and noise at increasing ``n``.
3. *bo-data*: data collected by a BO run on Hartmann6 (noise sd 0.05), most
   points near the optimum; a random quarter is held out.

Each case is timed from construction to fitted model plus the held-out
prediction. An approximate GP can only win where ``d_eff`` is well below ``n``,
so ``d_eff`` of the exact fit is printed with each experiment.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models.model import Model
from botorch.test_functions import Hartmann
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.benchmarks.metrics import (
    effective_dimension,
    held_out_accuracy,
    stopwatch,
)
from botorch_sketch.benchmarks.peers import (
    fit_nystrom,
    fit_sgpr,
    fit_single_task_gp,
    fit_variational_gp,
)
from botorch_sketch.sketching import (
    GreedyVarianceSelector,
    RidgeLeverageSampler,
    UniformSelector,
)

EXACT = "SingleTaskGP"


@dataclass
class Row:
    r"""One fitted model in one experiment."""

    experiment: str
    method: str
    n: int
    m: int | None
    seconds: float
    nll: float
    rmse: float


@dataclass
class Budget:
    r"""Sizes of one benchmark run."""

    frontier_n: int
    frontier_m: list[int]
    qbars: list[float]
    peer_m: list[int]
    growth_n: list[int]
    growth_exact_max_n: int
    bo_n: int
    num_test: int


BUDGETS = {
    "small": Budget(
        frontier_n=1000,
        frontier_m=[64, 128, 256],
        qbars=[0.5, 1.0, 2.0],
        peer_m=[64],
        growth_n=[1000, 5000],
        growth_exact_max_n=2000,
        bo_n=400,
        num_test=1000,
    ),
    "large": Budget(
        frontier_n=2000,
        frontier_m=[64, 128, 256, 384, 512],
        qbars=[0.5, 1.0, 2.0, 4.0],
        # SGPR at m = 512, n = 2000 ran for over 20 minutes without finishing.
        peer_m=[128, 256],
        growth_n=[1000, 5000, 10_000, 100_000],
        growth_exact_max_n=5000,
        bo_n=2000,
        num_test=2000,
    ),
}

HARTMANN = Hartmann(dim=6, negate=True)


def hartmann_data(n: int, noise_sd: float, seed: int) -> tuple[Tensor, Tensor]:
    r"""Uniform inputs on ``[0, 1]^6`` and noisy negated Hartmann6 values."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 6, generator=g, dtype=torch.double)
    return X, _observe(X, noise_sd, g)


def _observe(X: Tensor, noise_sd: float, g: torch.Generator) -> Tensor:
    noise = noise_sd * torch.randn(X.shape[0], generator=g, dtype=X.dtype)
    return (HARTMANN.evaluate_true(X) + noise).unsqueeze(-1)


def bo_data(n: int, noise_sd: float, seed: int, q: int = 50) -> tuple[Tensor, Tensor]:
    r"""Points chosen by batched Thompson sampling with ``NystromGP`` on Hartmann6.

    100 uniform points, then batches of ``q`` drawn by ``MaxPosteriorSampling``
    over candidates half uniform and half perturbations of the best point.
    """
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(100, 6, generator=g, dtype=torch.double)
    Y = _observe(X, noise_sd, g)
    with tqdm(total=n, desc="bo-data", initial=X.shape[0], leave=False) as bar:
        while X.shape[0] < n:
            model = fit_nystrom(X, Y, GreedyVarianceSelector(256, tolerance=1e-3))
            best = X[Y.argmax()]
            local = best + 0.1 * torch.randn(1000, 6, generator=g, dtype=X.dtype)
            uniform = torch.rand(1000, 6, generator=g, dtype=X.dtype)
            candidates = torch.cat([uniform, local.clamp(0, 1)])
            with torch.random.fork_rng():
                torch.manual_seed(int(torch.randint(2**31, (1,), generator=g)))
                X_new = MaxPosteriorSampling(model, replacement=False)(
                    candidates, num_samples=min(q, n - X.shape[0])
                )
            X = torch.cat([X, X_new])
            Y = torch.cat([Y, _observe(X_new, noise_sd, g)])
            bar.update(X_new.shape[0])
    return X, Y


def _cases(
    budget: Budget, n: int, frontier: bool
) -> list[tuple[str, int | None, Callable]]:
    seed = torch.Generator().manual_seed(0)
    cases: list[tuple[str, int | None, Callable]] = []
    for qbar in budget.qbars if frontier else [2.0]:
        # Capped at 512 so that the growth experiment's cost stays in minutes.
        rule = RidgeLeverageSampler(qbar=qbar, max_size=512, generator=seed)
        cases.append((f"NystromGP ridge-leverage qbar={qbar:g}", None, _nystrom(rule)))
    for m in budget.frontier_m if frontier else [256]:
        greedy = GreedyVarianceSelector(m, tolerance=None)
        cases.append(("NystromGP greedy-variance", m, _nystrom(greedy)))
        if frontier:
            uniform = UniformSelector(m, generator=seed)
            cases.append(("NystromGP uniform", m, _nystrom(uniform)))
    if frontier:
        for m in budget.peer_m:
            cases.append(("SGPR (GPyTorch, fast paths)", m, _peer(fit_sgpr, m)))
            cases.append(("SingleTaskVariationalGP", m, _peer(fit_variational_gp, m)))
    return cases


def _nystrom(rule: Callable) -> Callable:
    return lambda X, Y: fit_nystrom(X, Y, rule)


def _peer(fit: Callable, m: int) -> Callable:
    return lambda X, Y: fit(X, Y, m)


def _run(
    experiment: str,
    method: str,
    m: int | None,
    build: Callable[[Tensor, Tensor], Model],
    data: tuple[Tensor, Tensor, Tensor, Tensor],
) -> tuple[Row, Model]:
    X, Y, X_test, Y_test = data
    with stopwatch() as elapsed:
        model = build(X, Y)
        accuracy = held_out_accuracy(model, X_test, Y_test)
    if m is None and hasattr(model, "inducing_index"):
        m = int(model.inducing_index.numel())
    row = Row(experiment, method, X.shape[0], m, elapsed(), accuracy.nll, accuracy.rmse)
    tqdm.write(
        f"{experiment:9s} {method:38s} n={row.n:<7d} m={m if m else '-'!s:<5s} "
        f"{row.seconds:8.2f}s  NLL {row.nll:.3f}"
    )
    return row, model


def run(budget_name: str = "small") -> tuple[list[Row], dict[str, float]]:
    r"""Run the three experiments.

    Args:
        budget_name: ``"small"`` (a few minutes on 2 cores) or ``"large"``.

    Returns:
        The rows, and ``d_eff`` of the exact fit per experiment.
    """
    budget = BUDGETS[budget_name]
    rows: list[Row] = []
    d_eff: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 1. frontier
        X, Y = hartmann_data(budget.frontier_n, 0.3, seed=0)
        data = (X, Y, *hartmann_data(budget.num_test, 0.3, seed=1))
        row, exact = _run("frontier", EXACT, None, fit_single_task_gp, data)
        rows.append(row)
        d_eff["frontier"] = effective_dimension(exact, X)
        cases = _cases(budget, budget.frontier_n, frontier=True)
        for method, m, build in tqdm(cases, desc="frontier"):
            rows.append(_run("frontier", method, m, build, data)[0])
        # 2. growth
        test = hartmann_data(budget.num_test, 0.3, seed=1)
        for n in tqdm(budget.growth_n, desc="growth"):
            X, Y = hartmann_data(n, 0.3, seed=2)
            data = (X, Y, *test)
            if n <= budget.growth_exact_max_n:
                row, exact = _run("growth", EXACT, None, fit_single_task_gp, data)
                rows.append(row)
                d_eff[f"growth n={n}"] = effective_dimension(exact, X)
            for method, m, build in _cases(budget, n, frontier=False):
                rows.append(_run("growth", method, m, build, data)[0])
        # 3. data from a BO run
        X_all, Y_all = bo_data(budget.bo_n + budget.bo_n // 3, 0.05, seed=3)
        order = torch.randperm(
            X_all.shape[0], generator=torch.Generator().manual_seed(4)
        )
        train, test_idx = order[: budget.bo_n], order[budget.bo_n :]
        data = (X_all[train], Y_all[train], X_all[test_idx], Y_all[test_idx])
        row, exact = _run("bo-data", EXACT, None, fit_single_task_gp, data)
        rows.append(row)
        d_eff["bo-data"] = effective_dimension(exact, data[0])
        cases = _cases(budget, budget.bo_n, frontier=True)
        for method, m, build in tqdm(cases, desc="bo-data"):
            rows.append(_run("bo-data", method, m, build, data)[0])
    return rows, d_eff


def _exact_row(rows: list[Row], experiment: str, n: int) -> Row | None:
    for row in rows:
        if row.experiment == experiment and row.method == EXACT and row.n == n:
            return row
    return None


def render(rows: list[Row], d_eff: dict[str, float], machine: str) -> str:
    r"""Markdown tables: ratios against ``SingleTaskGP`` first, then absolutes."""
    lines = [
        "Ratios are against `SingleTaskGP` on the same data in the same run: "
        "time ratio = its time / this model's time (higher is faster), "
        "dNLL = this model's held-out NLL per point minus its (nats, lower is better).",
        "",
        "d_eff of the exact fit: "
        + ", ".join(f"{k}: {v:.0f}" for k, v in d_eff.items()),
        "",
    ]
    for experiment in ("frontier", "growth", "bo-data"):
        part = [r for r in rows if r.experiment == experiment]
        if not part:
            continue
        lines += [
            f"### {experiment}",
            "",
            "| method | n | m | time ratio | dNLL | NLL | RMSE | seconds |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in part:
            exact = _exact_row(rows, experiment, r.n)
            ratio = f"{exact.seconds / r.seconds:.1f}x" if exact else "-"
            dnll = f"{r.nll - exact.nll:+.3f}" if exact else "-"
            m = "-" if r.m is None else str(r.m)
            lines.append(
                f"| {r.method} | {r.n} | {m} | {ratio} | {dnll} | {r.nll:.3f} | "
                f"{r.rmse:.3f} | {r.seconds:.2f} |"
            )
        lines.append("")
    growth = [r for r in rows if r.experiment == "growth" and r.method != EXACT]
    by_method: dict[str, list[Row]] = {}
    for r in growth:
        by_method.setdefault(r.method, []).append(r)
    lines += ["Growth in n at fixed rule (time ratio between consecutive n):", ""]
    for method, part in by_method.items():
        steps = [
            f"n {a.n}->{b.n}: {b.seconds / a.seconds:.1f}x time for "
            f"{b.n / a.n:.0f}x data"
            for a, b in zip(part, part[1:], strict=False)
        ]
        lines.append(f"- {method}: " + "; ".join(steps))
    lines += ["", f"Absolute seconds are from {machine}."]
    return "\n".join(lines)


def plot(rows: list[Row], path: str) -> None:
    r"""NLL against time for the frontier and bo-data experiments (log time)."""
    # A Figure of its own: no pyplot state, no backend switch in the caller.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5))
    axes = fig.subplots(1, 2)
    for ax, experiment in zip(axes, ("frontier", "bo-data"), strict=True):
        part = [r for r in rows if r.experiment == experiment]
        methods = sorted({r.method.split(" qbar")[0] for r in part})
        for method in methods:
            pts = [r for r in part if r.method.split(" qbar")[0] == method]
            pts.sort(key=lambda r: r.seconds)
            marker = "*" if method == EXACT else "o"
            ax.plot(
                [r.seconds for r in pts],
                [r.nll for r in pts],
                marker=marker,
                label=method,
                markersize=12 if method == EXACT else 6,
            )
        ax.set_xscale("log")
        ax.set_xlabel("fit + predict time (s)")
        ax.set_ylabel("held-out NLL per point")
        n = part[0].n if part else 0
        ax.set_title(f"{experiment} (n = {n})")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


__all__ = ["BUDGETS", "Row", "bo_data", "hartmann_data", "plot", "render", "run"]
