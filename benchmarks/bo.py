#!/usr/bin/env python3
r"""Closed-loop BO: which surrogate finds optima, and how fast each iteration stays.

Every method runs the same loop (:func:`botorch_sketch.bo.run_bo`), written as
BoTorch's tutorials write it: a scrambled Sobol design, then each iteration the
surrogate of all data so far, ``qLogNoisyExpectedImprovement`` on the observed
inputs (pruned) or pathwise Thompson sampling, maximised by ``optimize_acqf``
(4 restarts, 256 raw samples), and the batch evaluated with noise. Methods:

- ``SingleTaskGP``: rebuilt and refitted every iteration (BoTorch's tutorials).
- ``NystromGP``: the same two lines with the class swapped, defaults.
- ``NystromGP incremental``: :class:`~botorch_sketch.bo.IncrementalGP`, the
  model carried across iterations (Woodbury steps, warm refits every 10).
- ``GSSBO`` / ``RSSBO``: :class:`~botorch_sketch.bo.GSSBOSurrogate` as
  published: an exact GP on all data up to ``M`` observations, then on ``M``
  chosen by gradient diversity / at random [Wei2025gssbo]_; warm-started, as
  the paper.
- ``SVGP``: BoTorch's ``SingleTaskVariationalGP`` with ``m`` inducing points
  placed by ``GreedyImprovementReduction`` from the previous iteration's model
  (BoTorch's allocator for BO [Moss2023inducing]_), fitted on the ELBO.
- ``GSS-Nystrom``: the GSSBO subset as the inducing set of a ``NystromGP`` on
  all data (:func:`~botorch_sketch.models.gss_nystrom.fit_gss_nystrom`).
- ``TuRBO SingleTaskGP`` / ``TuRBO NystromGP``: TuRBO-1 with restarts
  (:func:`~benchmarks.harness.turbo_loop.run_turbo`), the same
  acquisition inside the box.

Each configuration is a budget; ``small`` is what the test suite runs. A time
cap stops a method once its fit + acquisition seconds exceed it, and the report
says so.

``python -m benchmarks bo --budget small|medium|large|long|ts``

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
.. [Moss2023inducing]
    H. B. Moss, S. W. Ober, V. Picheny. Inducing point allocation for sparse
    Gaussian processes in high-throughput Bayesian optimisation. AISTATS 2023.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.utils.inducing_point_allocators import (
    GreedyImprovementReduction,
    GreedyVarianceReduction,
)
from botorch.test_functions import Ackley, Hartmann, Levy, Powell, Rastrigin
from botorch.test_functions.synthetic import SyntheticTestFunction
from gpytorch.mlls import VariationalELBO
from torch import Tensor

from benchmarks.cv_problem import CrossValidatedAccuracy
from benchmarks.harness import BOTrace, ModelSpec, run_bo
from benchmarks.harness.turbo_loop import run_turbo
from botorch_sketch.bo import GSSBOSurrogate, IncrementalGP
from botorch_sketch.models import NystromGP, fit_gss_nystrom

#: Problems, maximised (BoTorch's test functions negated; accuracy as it is).
PROBLEMS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "Hartmann-6": lambda: Hartmann(dim=6, noise_std=0.1, negate=True),
    "Ackley-20": lambda: Ackley(dim=20, negate=True),
    "Levy-20": lambda: Levy(dim=20, negate=True),
    # BoTorch's Powell sums over floor(d / 4) blocks: dimensions 49-50 are inert.
    "Powell-50": lambda: Powell(dim=50, negate=True),
    "Rastrigin-100": lambda: Rastrigin(dim=100, negate=True),
    # The real task: an RBF SVM's 3-fold accuracy on breast_cancer, as ``tune``.
    "SVM-breast-cancer": lambda: CrossValidatedAccuracy("breast_cancer", "svm"),
}

EXACT, SKETCH, INCREMENTAL = "SingleTaskGP", "NystromGP", "NystromGP incremental"
GSS, RSS, SVGP, HYBRID = "GSSBO", "RSSBO", "SVGP", "GSS-Nystrom"
TURBO_EXACT, TURBO_SKETCH = "TuRBO SingleTaskGP", "TuRBO NystromGP"
#: Methods run by ``run_turbo`` rather than ``run_bo``.
TURBO = {TURBO_EXACT, TURBO_SKETCH}


@dataclass
class Budget:
    r"""One configuration of the benchmark.

    Attributes:
        problems: Names from :data:`PROBLEMS`.
        evaluations: Evaluations per run, the initial design included.
        seeds: One run per seed and method.
        methods: Names from :data:`METHODS`.
        acquisition: ``"qlognei"``, ``"ts"`` or ``"ucb"``.
        q: Points per iteration.
        num_initial: Size of the Sobol design.
        subset_size: ``M`` for GSSBO and RSSBO, ``m`` for SVGP.
        time_cap: Seconds of fit + acquisition after which a run stops.
        num_restarts: ``optimize_acqf``'s restarts.
        raw_samples: ``optimize_acqf``'s raw samples.
    """

    problems: list[str]
    evaluations: int
    seeds: list[int]
    methods: list[str]
    acquisition: str = "qlognei"
    q: int = 10
    num_initial: int = 20
    subset_size: int = 200
    time_cap: float | None = None
    num_restarts: int = 4
    raw_samples: int = 256

    @property
    def iterations(self) -> int:
        r"""BO iterations after the design."""
        return max(0, math.ceil((self.evaluations - self.num_initial) / self.q))


ALL = [EXACT, SKETCH, INCREMENTAL, GSS, RSS, HYBRID, SVGP, TURBO_EXACT, TURBO_SKETCH]
BUDGETS: dict[str, Budget] = {
    # Seconds: the suite and a first look (every method, a short loop).
    "small": Budget(
        ["Hartmann-6"],
        26,
        [0],
        ALL,
        q=4,
        num_initial=10,
        subset_size=16,
        num_restarts=2,
        raw_samples=64,
    ),
    # The headline case at the sizes where loops spend most iterations.
    "medium": Budget(["Hartmann-6"], 500, [0, 1, 2], [EXACT, SKETCH, INCREMENTAL]),
    # The incremental mode beside the exact GP, seed 0 (half an hour of CPU).
    "incremental": Budget(["Hartmann-6"], 500, [0], [EXACT, INCREMENTAL]),
    # The grid: every problem to 1000 evaluations, 5 seeds (hours).
    "large": Budget(list(PROBLEMS), 1000, [0, 1, 2, 3, 4], ALL),
    # 5000 evaluations; every method stopped at an hour of fit + acquisition.
    "long": Budget(["Hartmann-6"], 5000, [0, 1, 2], ALL, time_cap=3600.0),
    # q = 50 with pathwise Thompson sampling.
    "ts": Budget(
        ["Hartmann-6", "Levy-20"],
        1000,
        [0, 1, 2],
        [EXACT, SKETCH, INCREMENTAL],
        acquisition="ts",
        q=50,
    ),
}


class VariationalSurrogate:
    r"""``SingleTaskVariationalGP`` placed by ``GreedyImprovementReduction``.

    The allocator needs the model of the previous BO step; the first iteration
    uses ``GreedyVarianceReduction``.
    """

    def __init__(self, num_inducing: int) -> None:
        r"""Use ``num_inducing`` inducing points (fewer if there is less data)."""
        self.num_inducing = num_inducing
        self.previous: Model | None = None

    def __call__(self, X: Tensor, Y: Tensor) -> SingleTaskVariationalGP:
        r"""Build and fit the SVGP of all data so far."""
        allocator = (
            GreedyVarianceReduction()
            if self.previous is None
            else GreedyImprovementReduction(self.previous, maximize=True)
        )
        model = SingleTaskVariationalGP(
            X,
            Y,
            inducing_points=min(self.num_inducing, X.shape[0]),
            inducing_point_allocator=allocator,
        )
        mll = VariationalELBO(model.likelihood, model.model, num_data=X.shape[0])
        fit_gpytorch_mll(mll)
        self.previous = model
        return model


def _spec(method: str, budget: Budget, seed: int) -> ModelSpec:
    if method == EXACT:
        return ModelSpec(EXACT)
    if method == SKETCH:
        return ModelSpec(SKETCH, NystromGP)
    if method == INCREMENTAL:
        return ModelSpec(
            INCREMENTAL,
            surrogate=lambda: IncrementalGP(
                generator=torch.Generator().manual_seed(seed)
            ),
        )
    if method in (GSS, RSS):
        # The published loop: the count switch at M, nothing forced in but the
        # design and the newest batch, warm-started fits.
        return ModelSpec(
            method,
            surrogate=lambda: GSSBOSurrogate(
                num_initial=budget.num_initial,
                switch_at=budget.subset_size,
                subset_rule="gradient" if method == GSS else "random",
                num_best=0,
                num_neighbours=0,
                num_newest=budget.q,
                seed=seed,
            ),
        )
    if method == SVGP:
        return ModelSpec(
            SVGP, surrogate=lambda: VariationalSurrogate(budget.subset_size)
        )
    if method == HYBRID:

        def hybrid(X: Tensor, Y: Tensor) -> NystromGP:
            # Its own fit (the subset GP's): the loop must not refit it.
            return fit_gss_nystrom(
                X,
                Y,
                subset_size=budget.subset_size,
                num_initial=budget.num_initial,
                num_newest=budget.q,
                fit_rounds=1,
            )

        return ModelSpec(HYBRID, surrogate=lambda: hybrid)
    if method == TURBO_EXACT:
        return ModelSpec(TURBO_EXACT)
    if method == TURBO_SKETCH:
        return ModelSpec(TURBO_SKETCH, NystromGP)
    raise KeyError(f"Unknown method {method!r}; expected one of {ALL}.")


@dataclass
class Row:
    r"""One method on one problem, over seeds."""

    problem: str
    method: str
    evaluations: float
    simple_regret: float
    seconds: float
    median_fit_s: float
    median_acquisition_s: float
    last_iteration_s: float
    capped: int
    traces: list[BOTrace] = field(repr=False, default_factory=list)


def run(budget_name: str = "small", progress: bool = True) -> list[Row]:
    r"""Run every method of a budget on every problem and seed.

    Methods take turns within each seed, so that a change in the machine's load
    during a long run falls on all of them alike.
    """
    budget = BUDGETS[budget_name]
    rows = []
    for problem_name in budget.problems:
        traces: dict[str, list[BOTrace]] = {method: [] for method in budget.methods}
        for seed in budget.seeds:
            for method in budget.methods:
                trace = _run_one(problem_name, method, budget, seed, progress)
                traces[method].append(trace)
                print(
                    f"{problem_name} seed {seed} {method}: simple regret "
                    f"{float(trace.simple_regret[-1]):.4g}, "
                    f"{float(trace.cumulative_time[-1]):.1f} s",
                    flush=True,
                )
        for method in budget.methods:
            rows.append(_row(problem_name, method, traces[method], budget))
            print(_line(rows[-1]), flush=True)
    return rows


def _run_one(
    problem: str, method: str, budget: Budget, seed: int, progress: bool
) -> BOTrace:
    if method in TURBO:
        return _turbo(problem, method, budget, seed, progress)
    return run_bo(
        PROBLEMS[problem](),
        _spec(method, budget, seed),
        iterations=budget.iterations,
        num_initial=budget.num_initial,
        acquisition=budget.acquisition,
        q=budget.q,
        seed=seed,
        num_restarts=budget.num_restarts,
        raw_samples=budget.raw_samples,
        progress=progress,
        time_cap=budget.time_cap,
    )


def _turbo(
    problem: str, method: str, budget: Budget, seed: int, progress: bool
) -> BOTrace:
    acquisition = "ts" if budget.acquisition == "ts" else "qlognei"
    return run_turbo(
        PROBLEMS[problem](),
        _spec(method, budget, seed),
        iterations=budget.iterations,
        num_initial=budget.num_initial,
        batch_size=budget.q,
        acquisition=acquisition,
        seed=seed,
        num_restarts=budget.num_restarts,
        raw_samples=budget.raw_samples,
        progress=progress,
    )


def _median(values: list[float]) -> float:
    return float(torch.tensor(values, dtype=torch.double).median())


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _row(problem: str, method: str, traces: list[BOTrace], budget: Budget) -> Row:
    done = [t for t in traces if t.num_iterations > 0]
    return Row(
        problem=problem,
        method=method,
        evaluations=_mean(
            [budget.num_initial + budget.q * t.num_iterations for t in done]
        ),
        simple_regret=_mean([float(t.simple_regret[-1]) for t in done]),
        seconds=_mean([float(t.cumulative_time[-1]) for t in done]),
        median_fit_s=_median([s for t in done for s in t.fit_time]),
        median_acquisition_s=_median([s for t in done for s in t.acquisition_time]),
        last_iteration_s=_mean([float(t.iteration_time[-1]) for t in done]),
        capped=sum(t.stopped_at_cap for t in traces),
        traces=traces,
    )


def _line(row: Row) -> str:
    capped = f" ({row.capped} stopped at the cap)" if row.capped else ""
    return (
        f"{row.problem:14s} {row.method:22s} evaluations {row.evaluations:.0f} "
        f"simple regret {row.simple_regret:.4g} time {row.seconds:.1f} s "
        f"(median fit {row.median_fit_s:.2f} s, acquisition "
        f"{row.median_acquisition_s:.2f} s){capped}"
    )


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b > 0 else ("1 (both 0)" if a == 0 else "inf")


def render(rows: list[Row], machine: str, budget_name: str = "small") -> str:
    r"""Markdown: ratios against ``SingleTaskGP`` first, then absolute figures."""
    budget = BUDGETS[budget_name]
    exact = {r.problem: r for r in rows if r.method == EXACT}
    lines = [
        f"{budget.acquisition} with q = {budget.q}, {budget.num_initial} Sobol "
        f"points, up to {budget.evaluations} evaluations, seeds {budget.seeds}; "
        "ratios are method / SingleTaskGP (regret: mean final simple regret over "
        "seeds; time: mean cumulative fit + acquisition seconds; iteration: the "
        "medians of fit and acquisition seconds over all iterations and seeds).",
        "",
        "| problem | method | regret ratio | time ratio | median fit ratio | "
        "median acquisition ratio |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ref = exact.get(row.problem)
        if ref is None or row.method == EXACT:
            continue
        lines.append(
            f"| {row.problem} | {row.method} | "
            f"{_ratio(row.simple_regret, ref.simple_regret)} | "
            f"{_ratio(row.seconds, ref.seconds)} | "
            f"{_ratio(row.median_fit_s, ref.median_fit_s)} | "
            f"{_ratio(row.median_acquisition_s, ref.median_acquisition_s)} |"
        )
    lines += [
        "",
        f"Absolute figures ({machine}):",
        "",
        "| problem | method | evaluations | final simple regret | total s | "
        "median fit s | median acquisition s | last iteration s | stopped at cap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.problem} | {r.method} | {r.evaluations:.0f} | {r.simple_regret:.4g} "
        f"| {r.seconds:.1f} | {r.median_fit_s:.2f} | {r.median_acquisition_s:.2f} "
        f"| {r.last_iteration_s:.2f} | {r.capped} of {len(r.traces)} |"
        for r in rows
    ]
    return "\n".join(lines)


def plot(rows: list[Row], stem: str, budget_name: str = "small") -> list[str]:
    r"""Per problem: regret against evaluations and seconds; time per iteration."""
    from matplotlib.figure import Figure

    budget = BUDGETS[budget_name]
    paths = []
    for problem in dict.fromkeys(r.problem for r in rows):
        fig = Figure(figsize=(15, 4))
        axes = fig.subplots(1, 3)
        for row in (r for r in rows if r.problem == problem):
            length = min(t.num_iterations for t in row.traces)
            if length == 0:
                continue
            n = budget.num_initial + budget.q * torch.arange(1, length + 1)
            regret = torch.stack([t.simple_regret[:length] for t in row.traces])
            seconds = torch.stack([t.cumulative_time[:length] for t in row.traces])
            per_iteration = torch.stack([t.iteration_time[:length] for t in row.traces])
            axes[0].plot(n, regret.mean(0), label=row.method)
            axes[1].plot(seconds.mean(0), regret.mean(0), label=row.method)
            axes[2].plot(n, per_iteration.median(0).values, label=row.method)
        axes[0].set(xlabel="evaluations", ylabel="simple regret (mean)", yscale="log")
        axes[1].set(
            xlabel="cumulative seconds (fit + acquisition)",
            ylabel="simple regret (mean)",
            xscale="log",
            yscale="log",
        )
        axes[2].set(
            xlabel="evaluations (n)",
            ylabel="seconds per iteration (median)",
            yscale="log",
        )
        axes[0].legend(fontsize="small")
        fig.suptitle(f"{problem}: {budget.acquisition}, q = {budget.q}")
        fig.tight_layout()
        path = f"{stem}-{problem}.png"
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths


def report(budget_name: str, stem: str, machine: str) -> tuple[str, list[str]]:
    r"""Run a budget, return its markdown and write its figures."""
    rows = run(budget_name, progress=os.environ.get("CI") is None)
    return render(rows, machine, budget_name), plot(rows, stem, budget_name)
