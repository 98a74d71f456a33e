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

Run time is bounded on purpose: the benchmark sets torch's thread count for its
own run (one thread on the small budget, so that a machine other jobs share is
not oversubscribed: threads spin-waiting for cores that other jobs held made
fits there up to 15x slower), caps the fits of the peers with learned inducing
inputs (SGPR, SVGP; a capped row says "stopped at the cap"), keeps SVGP, the
slowest peer, and the growth experiment for the large budget, and prints after
each step the time elapsed and an estimate of the time left.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models.model import Model
from botorch.test_functions import Hartmann
from torch import Tensor
from tqdm.auto import tqdm

from benchmarks.metrics import (
    effective_dimension,
    held_out_accuracy,
    stopwatch,
)
from benchmarks.peers import (
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
    #: Whether the fit was stopped at the budget's time cap (peers only).
    capped: bool = False


@dataclass
class Budget:
    r"""Sizes of one benchmark run."""

    frontier_n: int
    frontier_m: list[int]
    qbars: list[float]
    #: Inducing-set sizes of GPyTorch's SGPR and of BoTorch's SVGP (frontier
    #: and bo-data); an empty list leaves that peer out.
    sgpr_m: list[int]
    svgp_m: list[int]
    growth_n: list[int]
    growth_exact_max_n: int
    bo_n: int
    #: Points per batch of the BO run that makes the bo-data experiment's data.
    bo_batch: int
    num_test: int
    #: Seconds after which the fit of a peer (SGPR, SVGP) is stopped.
    peer_cap_seconds: float
    #: torch threads for the run (restored after it); None keeps torch's
    #: default of one per core.
    threads: int | None = None


BUDGETS = {
    # Under 3 minutes on 2 cores that other jobs share (``make demo``): one
    # thread; SGPR capped at 5 s; no SVGP (75 s alone at n = 1000 and m = 64, 20
    # minutes on a shared machine with a thread per core); no growth experiment
    # (ridge leverage at n = 5000 alone took over 80 s on a shared core); the BO
    # data in batches of 100.
    "small": Budget(
        frontier_n=800,
        frontier_m=[64, 256],
        qbars=[1.0, 2.0],
        sgpr_m=[64],
        svgp_m=[],
        growth_n=[],
        growth_exact_max_n=0,
        bo_n=400,
        bo_batch=100,
        num_test=1000,
        peer_cap_seconds=5.0,
        threads=1,
    ),
    "large": Budget(
        frontier_n=2000,
        frontier_m=[64, 128, 256, 384, 512],
        qbars=[0.5, 1.0, 2.0, 4.0],
        # SGPR at m = 512, n = 2000 ran for over 20 minutes without finishing.
        sgpr_m=[128, 256],
        svgp_m=[128, 256],
        growth_n=[1000, 5000, 10_000, 100_000],
        growth_exact_max_n=5000,
        bo_n=2000,
        bo_batch=50,
        num_test=2000,
        # The slowest peer fit of docs/inference-large.md took 103 s.
        peer_cap_seconds=300.0,
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


def _cases(budget: Budget, frontier: bool) -> list[tuple[str, int | None, Callable]]:
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
        cap = budget.peer_cap_seconds
        for m in budget.sgpr_m:
            cases.append(("SGPR (GPyTorch, fast paths)", m, _peer(fit_sgpr, m, cap)))
        for m in budget.svgp_m:
            svgp = _peer(fit_variational_gp, m, cap)
            cases.append(("SingleTaskVariationalGP", m, svgp))
    return cases


def _nystrom(rule: Callable) -> Callable:
    return lambda X, Y: fit_nystrom(X, Y, rule)


def _peer(fit: Callable, m: int, cap: float) -> Callable:
    return lambda X, Y: fit(X, Y, m, cap_seconds=cap)


def expected_seconds(method: str, n: int, m: int | None, budget: Budget) -> float:
    r"""A rough cost of one step in seconds on one core, for the time-left estimate.

    Only the proportions matter: the estimate rescales them by the time the
    steps so far took against their expected seconds.
    """
    if method == EXACT:
        return 1.0 + 3.0 * (n / 1000) ** 3
    if method == "bo-data":  # one NystromGP fit and one joint sample per batch
        batches = max(1, -(-(n - 100) // budget.bo_batch))
        return batches * (
            1.5 + expected_seconds("NystromGP", (n + 100) // 2, 256, budget)
        )
    if method.startswith(("SGPR", "SingleTaskVariationalGP")):
        guess = 0.5 + 10.0 * (n / 1000) * (m / 128) ** 2
        return min(guess, budget.peer_cap_seconds + 1.0)
    if m is None:  # ridge leverage: m follows d_eff, at most 512
        m = 256
    return 0.5 + 3.0 * (n / 1000) * (m / 256) ** 2


@dataclass
class _Step:
    experiment: str
    method: str
    n: int
    m: int | None
    build: Callable[[Tensor, Tensor], Model]
    #: The experiment's data, read when the step runs (bo-data is made by a step).
    data: Callable[[], tuple[Tensor, Tensor, Tensor, Tensor]]
    #: Record ``d_eff`` of this (exact) fit under this name.
    d_eff_key: str | None = None


class Progress:
    r"""Time elapsed and an estimate of the time left, printed after each step."""

    def __init__(self, expected: list[float]) -> None:
        r"""Start the clock for steps of ``expected`` seconds each."""
        self.expected = expected
        self.done = 0
        self.start = time.perf_counter()

    def step_done(self) -> str:
        r"""Mark one more step done; return "[E s elapsed, about L s left]"."""
        self.done += 1
        elapsed = time.perf_counter() - self.start
        return (
            f"[{elapsed:4.0f} s elapsed, about {self.seconds_left(elapsed):.0f} s left]"
        )

    def seconds_left(self, elapsed: float) -> float:
        r"""The expected seconds of the steps left, scaled by the speed so far."""
        done, left = sum(self.expected[: self.done]), sum(self.expected[self.done :])
        return left * (elapsed / done if done > 0 else 1.0)


def _steps(budget: Budget, bo: dict[str, tuple]) -> list[_Step]:
    steps: list[_Step] = []
    # 1. frontier
    X, Y = hartmann_data(budget.frontier_n, 0.3, seed=0)
    frontier = (X, Y, *hartmann_data(budget.num_test, 0.3, seed=1))
    steps.append(
        _Step(
            "frontier",
            EXACT,
            X.shape[0],
            None,
            fit_single_task_gp,
            lambda: frontier,
            d_eff_key="frontier",
        )
    )
    for method, m, build in _cases(budget, frontier=True):
        steps.append(_Step("frontier", method, X.shape[0], m, build, lambda: frontier))
    # 2. growth
    test = hartmann_data(budget.num_test, 0.3, seed=1)
    for n in budget.growth_n:
        growth = (*hartmann_data(n, 0.3, seed=2), *test)
        if n <= budget.growth_exact_max_n:
            steps.append(
                _Step(
                    "growth",
                    EXACT,
                    n,
                    None,
                    fit_single_task_gp,
                    lambda d=growth: d,
                    d_eff_key=f"growth n={n}",
                )
            )
        for method, m, build in _cases(budget, frontier=False):
            steps.append(_Step("growth", method, n, m, build, lambda d=growth: d))
    # 3. data from a BO run, made by the first step of the experiment
    n = budget.bo_n
    steps.append(_Step("bo-data", "bo-data", n + n // 3, None, None, None))
    steps.append(
        _Step(
            "bo-data",
            EXACT,
            n,
            None,
            fit_single_task_gp,
            lambda: bo["data"],
            d_eff_key="bo-data",
        )
    )
    for method, m, build in _cases(budget, frontier=True):
        steps.append(_Step("bo-data", method, n, m, build, lambda: bo["data"]))
    return steps


def _make_bo_data(budget: Budget) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    n = budget.bo_n + budget.bo_n // 3
    X_all, Y_all = bo_data(n, 0.05, seed=3, q=budget.bo_batch)
    order = torch.randperm(X_all.shape[0], generator=torch.Generator().manual_seed(4))
    train, test_idx = order[: budget.bo_n], order[budget.bo_n :]
    return X_all[train], Y_all[train], X_all[test_idx], Y_all[test_idx]


def _run(step: _Step, progress: Progress) -> tuple[Row, Model]:
    X, Y, X_test, Y_test = step.data()
    with stopwatch() as elapsed:
        model = step.build(X, Y)
        accuracy = held_out_accuracy(model, X_test, Y_test)
    m = step.m
    if m is None and hasattr(model, "inducing_index"):
        m = int(model.inducing_index.numel())
    capped = bool(getattr(model, "stopped_at_cap", False))
    row = Row(
        step.experiment,
        step.method,
        X.shape[0],
        m,
        elapsed(),
        accuracy.nll,
        accuracy.rmse,
        capped,
    )
    note = "  stopped at the cap" if capped else ""
    tqdm.write(
        f"{step.experiment:9s} {step.method:38s} n={row.n:<7d} "
        f"m={m if m else '-'!s:<5s} {row.seconds:8.2f}s  NLL {row.nll:.3f}  "
        f"{progress.step_done()}{note}"
    )
    return row, model


def run(budget_name: str = "small") -> tuple[list[Row], dict[str, float]]:
    r"""Run the three experiments.

    torch's thread count is set to the budget's ``threads`` for the run and
    restored after it.

    Args:
        budget_name: ``"small"`` (under 3 minutes on 2 cores) or ``"large"``.

    Returns:
        The rows, and ``d_eff`` of the exact fit per experiment.
    """
    budget = BUDGETS[budget_name]
    rows: list[Row] = []
    d_eff: dict[str, float] = {}
    bo: dict[str, tuple] = {}
    steps = _steps(budget, bo)
    threads = torch.get_num_threads()
    if budget.threads is not None:
        torch.set_num_threads(budget.threads)
    expected = [expected_seconds(s.method, s.n, s.m, budget) for s in steps]
    expected[0] += 5.0  # the first fit of a process also pays its warm-up
    progress = Progress(expected)
    print(
        f"inference benchmark, {budget_name} budget: {len(steps)} steps, torch "
        f"threads {torch.get_num_threads()}, peers capped at "
        f"{budget.peer_cap_seconds:g} s; about {sum(expected):.0f} s of one free "
        "core (the time left printed after each step follows the actual speed)",
        flush=True,
    )
    try:  # from here on, the thread count is restored however the run ends
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # The bar shows no ETA of its own: the lines above it carry the estimate.
            bar = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} steps"
            for step in tqdm(steps, desc="inference", bar_format=bar + " [{elapsed}]"):
                if step.method == "bo-data":
                    bo["data"] = _make_bo_data(budget)
                    tqdm.write(
                        f"bo-data   {step.n} points collected by BO "
                        f"{' ' * 30}{progress.step_done()}"
                    )
                    continue
                row, model = _run(step, progress)
                rows.append(row)
                if step.d_eff_key is not None:
                    d_eff[step.d_eff_key] = effective_dimension(model, step.data()[0])
    finally:
        torch.set_num_threads(threads)
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
    if any(r.capped for r in rows):
        lines += [
            "A peer marked 'stopped at the cap' had its hyperparameter fit stopped "
            "at the budget's time cap and keeps the values it had reached.",
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
            method = f"{r.method}, stopped at the cap" if r.capped else r.method
            lines.append(
                f"| {method} | {r.n} | {m} | {ratio} | {dnll} | {r.nll:.3f} | "
                f"{r.rmse:.3f} | {r.seconds:.2f} |"
            )
        lines.append("")
    growth = [r for r in rows if r.experiment == "growth" and r.method != EXACT]
    by_method: dict[str, list[Row]] = {}
    for r in growth:
        by_method.setdefault(r.method, []).append(r)
    if by_method:
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


__all__ = [
    "BUDGETS",
    "Budget",
    "Progress",
    "Row",
    "bo_data",
    "expected_seconds",
    "hartmann_data",
    "plot",
    "render",
    "run",
]
