#!/usr/bin/env python3
r"""GSSBO against the full ``SingleTaskGP`` and random subsets, by the library's loop.

The paper's test functions [Wei2025gssbo]_ (EggHolder 2-d, Hartmann 6-d, Levy
20-d, Powell 50-d, Rastrigin 100-d), maximised with UCB from a scrambled Sobol
design of 20 points. Every method is one call of
:func:`botorch_sketch.bo.run_gssbo` with the same design, acquisition, fitting
options (one warm-started L-BFGS-B attempt of at most ``maxiter`` steps, the
paper's setting) and optimiser settings; they differ only in the subset:

- ``full``: no switch (an exact GP on all observations throughout);
- ``gssbo``: the library's defaults (the incumbent and its nearest
  neighbours in every free place but one, which the gradient rule fills; the
  acquisition maximised in a box around the incumbent after the switch);
- ``gssbo-75`` and ``rssbo-75``: the neighbours in three quarters of the free
  places, the last quarter gradient-diverse or random (where the rule has
  places to choose);
- ``gssbo-20``: 20 neighbours, the rest gradient-diverse;
- ``published`` and ``published-rssbo``: the published loop (no forced
  neighbours, no box), gradient-diverse and random rests;
- ``dtc``: the gradient subset as the inducing set of a DTC posterior on all
  observations (the reading the paper's theory bounds);
- ``hyper`` and ``greedy``: other readings of the paper's per-sample gradient
  in the published loop: the gradient in the hyperparameters
  (:func:`~botorch_sketch.models.gradient_subset_gp.hyperparameter_gradients`)
  and the appendix's greedy Nystrom column selection (no gradient).

The switch is the count switch at ``switch_at`` observations (the paper's
``M = |D|`` at the switch, repeatable where its clock rule is not). Each
(problem, method, seed) is a cell: a single-threaded process whose record
(true values, CPU seconds of the model and of the acquisition, subset sizes) is
written as it finishes and skipped when it exists, so an interrupted grid
resumes. The report is regenerated whole from the cells.

``python -m benchmarks gssbo --budget NAME`` (small, large, interpretations,
paper).

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from botorch.test_functions import EggHolder, Hartmann, Levy, Powell, Rastrigin
from botorch.test_functions.synthetic import SyntheticTestFunction

from botorch_sketch.models.gradient_subset_gp import hyperparameter_gradients

#: The paper's functions, maximised.
PROBLEMS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "EggHolder-2": lambda: EggHolder(negate=True),
    "Hartmann-6": lambda: Hartmann(dim=6, negate=True),
    "Levy-20": lambda: Levy(dim=20, negate=True),
    # BoTorch's Powell sums over floor(d / 4) blocks: dimensions 49-50 are inert.
    "Powell-50": lambda: Powell(dim=50, negate=True),
    "Rastrigin-100": lambda: Rastrigin(dim=100, negate=True),
}

_PUBLISHED = {"num_neighbours": 0, "num_best": 0, "region_length": None}
#: Each method: its label and ``run_gssbo``'s options (``switch_at`` apart).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "full": ("SingleTaskGP (all data)", {}),
    "gssbo": ("GSSBO (library defaults)", {}),
    "gssbo-75": ("GSSBO, 3/4 neighbours", {"num_neighbours": "three quarters"}),
    "rssbo-75": (
        "RSSBO, 3/4 neighbours",
        {"num_neighbours": "three quarters", "subset_rule": "random"},
    ),
    "gssbo-20": ("GSSBO, 20 neighbours", {"num_neighbours": 20}),
    "published": ("GSSBO as published", dict(_PUBLISHED)),
    "published-rssbo": (
        "RSSBO as published",
        {**_PUBLISHED, "subset_rule": "random"},
    ),
    "dtc": ("GSS subset as inducing set (DTC)", {"posterior": "dtc"}),
    "hyper": (
        "GSSBO as published, hyperparameter gradients",
        {**_PUBLISHED, "gradient": hyperparameter_gradients},
    ),
    "greedy": (
        "Greedy Nystrom columns as published",
        {**_PUBLISHED, "subset_rule": "greedy"},
    ),
}
FULL = "full"


@dataclass
class Budget:
    r"""What a budget runs."""

    problems: list[str]
    evaluations: int
    seeds: list[int]
    switch_at: int
    num_initial: int = 20
    #: The incumbent's neighbours where a method does not set them (None:
    #: the library's default).
    num_neighbours: int | None = None
    maxiter: int = 100
    num_restarts: int = 4
    raw_samples: int = 256
    methods: list[str] = field(
        default_factory=lambda: ["full", "gssbo", "gssbo-75", "rssbo-75"]
    )
    #: The full GP's seeds where fewer than the others' (its cost is the point).
    full_seeds: list[int] | None = None


BUDGETS = {
    "small": Budget(
        ["Hartmann-6", "Levy-20"],
        40,
        [0],
        switch_at=30,
        num_initial=10,
    ),
    # What fits a 2-core machine in about an hour: Hartmann-6 and Levy-20 to
    # 250 evaluations, switched at 100.
    "large": Budget(
        ["Hartmann-6", "Levy-20"],
        250,
        [0, 1, 2],
        switch_at=100,
        methods=["full", "gssbo", "gssbo-75", "rssbo-75", "gssbo-20", "published"],
    ),
    # Which reading of the paper's per-sample gradient beats random selection?
    "interpretations": Budget(
        ["Levy-20"],
        120,
        [0, 1, 2, 3, 4],
        switch_at=40,
        methods=["published", "hyper", "greedy", "published-rssbo"],
    ),
    # The paper's hardest function three times longer than "large": two to
    # three hours on 2 cores (the full GP's iterations reach 9 s at 750, the
    # subset loops' take about 10 minutes of CPU a run).
    "long": Budget(
        ["Rastrigin-100"],
        750,
        [0, 1, 2],
        switch_at=100,
        methods=["full", "gssbo", "rssbo-75", "published"],
        full_seeds=[0],
    ),
    # The paper's scale: 1000 evaluations on its five functions (many CPU
    # hours: the full GP's iterations grow to seconds).
    "paper": Budget(
        list(PROBLEMS),
        1000,
        [0, 1, 2],
        switch_at=100,
        methods=["full", "gssbo", "gssbo-75", "rssbo-75", "published"],
        full_seeds=[0],
    ),
}


def cells(budget: Budget) -> list[tuple[str, str, int]]:
    r"""The budget's ``(problem, method, seed)`` cells, the dearest first."""
    out = []
    for problem in budget.problems:
        for method in budget.methods:
            seeds = budget.seeds
            if method == FULL and budget.full_seeds is not None:
                seeds = budget.full_seeds
            out += [(problem, method, seed) for seed in seeds]
    order = list(PROBLEMS)
    return sorted(out, key=lambda c: (-order.index(c[0]), c[1] != FULL, c[2]))


def cell_path(folder: Path, cell: tuple[str, str, int]) -> Path:
    r"""The record's file of a cell."""
    problem, method, seed = cell
    return Path(folder) / f"{problem}-{method}-{seed}.json"


def run_cell(budget: Budget, cell: tuple[str, str, int]) -> dict[str, Any]:
    r"""Run one cell on one thread; return its record."""
    import warnings

    from botorch_sketch.bo import run_gssbo

    torch.set_num_threads(1)
    problem_name, method, seed = cell
    problem = PROBLEMS[problem_name]()
    options = dict(METHODS[method][1])
    if method == FULL:
        switch_at = budget.evaluations + 1  # never switches
    else:
        switch_at = budget.switch_at
    if budget.num_neighbours is not None:
        options.setdefault("num_neighbours", budget.num_neighbours)
    if options.get("num_neighbours") == "three quarters":
        # Of the places the design, the newest and the best leave.
        free = switch_at - budget.num_initial - 2
        options["num_neighbours"] = free - math.ceil(free / 4)
    gradient = options.pop("gradient", None)
    options["surrogate_kwargs"] = {
        "gradient": gradient,
        "fit_kwargs": {
            "max_attempts": 1,
            "optimizer_kwargs": {"options": {"maxiter": budget.maxiter}},
        },
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = run_gssbo(
            problem,
            problem.bounds,
            evaluations=budget.evaluations,
            num_initial=budget.num_initial,
            acquisition="ucb",
            switch_at=switch_at,
            num_restarts=budget.num_restarts,
            raw_samples=budget.raw_samples,
            seed=seed,
            progress=False,
            **options,
        )
    return {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "optimal_value": trace.optimal_value,
        "initial_best": trace.initial_best,
        "num_initial": trace.num_initial,
        "values": trace.values,
        "model_seconds": trace.model_seconds,
        "acquisition_seconds": trace.acquisition_seconds,
        "subset_size": trace.subset_size,
        "distance_to_incumbent": trace.distance_to_incumbent,
        "incumbent_in_subset": trace.incumbent_in_subset,
        "switched_at": trace.switched_at,
    }


def _run_and_write(job: tuple[Budget, str, tuple[str, str, int]]) -> str:
    budget, folder, cell = job
    record = run_cell(budget, cell)
    path = cell_path(Path(folder), cell)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    return path.name


def run(
    budget_name: str = "small", folder: str | Path | None = None, workers: int = 2
) -> list[Row]:
    r"""Run the budget's missing cells (one thread each, in parallel); gather them.

    Args:
        budget_name: A key of :data:`BUDGETS`.
        folder: The cells' records (default ``benchmark-results/gssbo-NAME``).
        workers: Processes at a time.

    Returns:
        One :class:`Row` per problem and method.
    """
    budget = BUDGETS[budget_name]
    folder = Path(folder or f"benchmark-results/gssbo-{budget_name}")
    folder.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cells(budget) if not cell_path(folder, c).exists()]
    if todo:
        # One thread per cell, BLAS included (read as the workers start).
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = "1"
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers, maxtasksperchild=1) as pool:
            jobs = [(budget, str(folder), c) for c in todo]
            for k, name in enumerate(pool.imap_unordered(_run_and_write, jobs), 1):
                print(f"[{k}/{len(todo)}] {name}", flush=True)
    return gather(budget, folder)


@dataclass
class Row:
    r"""One method on one problem, over its seeds.

    Attributes:
        problem: The problem's name.
        method: The method's key in :data:`METHODS`.
        seeds: The seeds run.
        regret: ``seeds x evaluations``: simple regret after each evaluation
            (the design's best for the design's).
        seconds: ``seeds x iterations``: cumulative model and acquisition CPU
            seconds.
        switch: The evaluations at the switch (None: no switch).
        improvements: Per seed, the iterations after the switch that improved
            on the best so far.
    """

    problem: str
    method: str
    seeds: list[int]
    regret: torch.Tensor
    seconds: torch.Tensor
    switch: int | None
    improvements: list[int]

    @property
    def label(self) -> str:
        r"""The method's label."""
        return METHODS[self.method][0]

    def at(self, evaluations: int) -> torch.Tensor:
        r"""Each seed's simple regret after ``evaluations`` evaluations."""
        return self.regret[:, min(evaluations, self.regret.shape[1]) - 1]


def _regret(record: dict[str, Any]) -> torch.Tensor:
    values = torch.tensor(record["values"], dtype=torch.double)
    design = torch.full((record["num_initial"],), record["initial_best"])
    best = torch.cat([design, values]).cummax(0).values
    return (record["optimal_value"] - best).clamp_min(0.0)


def gather(budget: Budget, folder: str | Path) -> list[Row]:
    r"""The rows of the cells found in ``folder`` (cells not run are left out)."""
    rows = []
    for problem in budget.problems:
        for method in budget.methods:
            records = [
                json.loads(cell_path(Path(folder), c).read_text())
                for c in cells(budget)
                if c[:2] == (problem, method) and cell_path(Path(folder), c).exists()
            ]
            if not records:
                continue
            records.sort(key=lambda r: r["seed"])
            seconds = [
                torch.tensor(r["model_seconds"], dtype=torch.double)
                + torch.tensor(r["acquisition_seconds"], dtype=torch.double)
                for r in records
            ]
            rows.append(
                Row(
                    problem=problem,
                    method=method,
                    seeds=[r["seed"] for r in records],
                    regret=torch.stack([_regret(r) for r in records]),
                    seconds=torch.stack([s.cumsum(0) for s in seconds]),
                    switch=records[0]["switched_at"],
                    improvements=[_improvements(r) for r in records],
                )
            )
    return rows


def _improvements(record: dict[str, Any]) -> int:
    switched = record["switched_at"]
    if switched is None:
        return 0
    regret = _regret(record)[switched - 1 :]
    return int((regret[1:] < regret[:-1]).sum())


def render(rows: list[Row], machine: str, switch_at: int | None = None) -> str:
    r"""Markdown: regret and time against the full GP, then the subsets' contents.

    Args:
        rows: :func:`gather`'s rows.
        machine: Where the cells ran.
        switch_at: The subset methods' switch (default: the first switched row's).
    """
    if not rows:
        return "No cells were found."
    n = rows[0].regret.shape[1]
    if switch_at is None:
        switch_at = next((r.switch for r in rows if r.switch is not None), n)
    full = {r.problem: r for r in rows if r.method == FULL}
    # The random subset with the same places: RSSBO with the library's
    # neighbourhood share, else RSSBO as published.
    random = {r.problem: r for r in rows if r.method == "published-rssbo"}
    random.update({r.problem: r for r in rows if r.method == "rssbo-75"})
    lines = [
        f"Simple regret (the optimum less the best value found) after {switch_at} "
        f"evaluations (the switch) and after {n}, the mean over seeds; "
        "'kept improving': the method's drop in regret from the switch to the end "
        "as a share of the full GP's (mean over seeds; the target is at least "
        "0.5); the random subset: RSSBO with the same places (3/4 neighbours, "
        "else as published); time: cumulative model and acquisition CPU seconds "
        "at the end, the method's over the full GP's.",
        "",
        "| problem | method | seeds | regret at the switch | regret at the end | "
        "improving iterations after the switch | kept improving | final regret "
        "/ full GP's | / the random subset's | time / full GP's |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ref, rnd = full.get(row.problem), random.get(row.problem)
        start, end = row.at(switch_at).mean(), row.at(n).mean()
        share = math.nan if ref is None else improvement_share(row, ref, switch_at)
        kept = "-" if row is ref or math.isnan(share) else f"{share:.2f}"
        lines.append(
            f"| {row.problem} | {row.label} | {len(row.seeds)} | {float(start):.4g} | "
            f"{float(end):.4g} | "
            f"{', '.join(str(k) for k in row.improvements) if row.switch else '-'} | "
            f"{kept} | "
            f"{_ratio(float(end), float(ref.at(n).mean())) if ref else '-'} | "
            f"{_ratio(float(end), float(rnd.at(n).mean())) if rnd else '-'} | "
            f"{_ratio(_seconds(row), _seconds(ref)) if ref else '-'} |"
        )
    lines += [
        "",
        f"CPU seconds ({machine}, one thread per cell, two cells at a time), the "
        "mean over seeds:",
        "",
        "| problem | method | seconds to the switch | seconds at the end | "
        "ms per iteration, last tenth |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        iterations = row.seconds.shape[1]
        before = switch_at - (n - iterations)  # iterations up to the switch
        early = float(row.seconds[:, before - 1].mean()) if before > 0 else 0.0
        tenth = max(1, iterations // 10)
        last = (row.seconds[:, -1] - row.seconds[:, -1 - tenth]) / tenth
        lines.append(
            f"| {row.problem} | {row.label} | {early:.1f} | "
            f"{float(row.seconds[:, -1].mean()):.1f} | {1e3 * float(last.mean()):.0f} |"
        )
    return "\n".join(lines)


def _seconds(row: Row) -> float:
    return float(row.seconds[:, -1].mean())


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3g}" if b > 0 else ("1 (both 0)" if a == 0 else "inf")


def plot(rows: list[Row], stem: str) -> list[str]:
    r"""One figure per problem: simple regret and cumulative CPU seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for problem in dict.fromkeys(r.problem for r in rows):
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        for row in (r for r in rows if r.problem == problem):
            n = row.regret.shape[1]
            evaluations = torch.arange(1, n + 1)
            mean = row.regret.mean(0).clamp_min(1e-12)
            (line,) = left.plot(evaluations, mean, label=row.label)
            iterations = evaluations[n - row.seconds.shape[1] :]
            right.plot(iterations, row.seconds.mean(0), color=line.get_color())
            if row.switch is not None:
                left.axvline(row.switch, color="grey", lw=0.5, ls=":")
        left.set(
            xlabel="evaluations", ylabel="simple regret (mean over seeds)", yscale="log"
        )
        right.set(xlabel="evaluations", ylabel="cumulative CPU seconds")
        left.legend(fontsize=7)
        fig.suptitle(problem)
        fig.tight_layout()
        path = f"{stem}-{problem}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def improvement_share(row: Row, full: Row, switch_at: int) -> float:
    r"""The row's drop in mean regret from the switch to the end, over the full GP's."""
    n = row.regret.shape[1]
    gain = float(full.at(switch_at).mean() - full.at(n).mean())
    if not gain > 0:
        return math.nan
    return float(row.at(switch_at).mean() - row.at(n).mean()) / gain
