#!/usr/bin/env python3
r"""The large-budget grid: BO where the exact GP stops, in cells that run in parallel.

``python -m botorch_sketch.benchmarks bo --budget headline [--out DIR]`` runs
every (regime, problem, method, seed) cell of :data:`GRID` as a single-thread
process, two at a time (``--workers``), timed in CPU seconds
(``time.process_time``), and writes each cell to ``DIR/bo-headline-cells/`` as
it finishes; a cell already there is not run again, so a killed run resumes
and several machines can share a grid (``--shard I/K`` runs every K-th cell).
``python -m botorch_sketch.benchmarks --collect DIR1 DIR2 --budget headline``
merges the cells of several runs into one report with its figures.

Regime B, large-batch Thompson sampling (:func:`~botorch_sketch.bo.run_large_batch`,
``q = 100`` to ``10^4`` evaluations), against what a user would pick instead:

- ``IncrementalGP``: the carried sketch, inducing set capped at 512;
- ``SingleTaskGP (warm)``: the exact GP rebuilt each batch from the last
  hyperparameters and refitted every 5 batches, the expert's anchor;
- ``SVGP``: BoTorch's ``SingleTaskVariationalGP`` (512 inducing points placed
  by ``GreedyVarianceReduction``), its ELBO fitted each batch from the last
  batch's parameters;
- ``TuRBO-1 (exact, local)``: the same Thompson sampling inside a TuRBO-1 trust
  region, with a warm exact GP on the newest 1000 observations (TuRBO's local
  model; its restarts keep the data, the region's length is reset);
- ``Sobol``: the model-free floor.

Methods other than the sketch and Sobol stop at a CPU cap, and the report
compares regret at equal evaluations and at equal CPU seconds. One run of
``q = 1000`` to ``10^5`` evaluations (``IncrementalGP``) checks the 30-minute
target.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP, SingleTaskVariationalGP
from botorch.models.model import Model
from botorch.models.utils.inducing_point_allocators import GreedyVarianceReduction
from botorch.test_functions import Ackley, Hartmann
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from botorch_sketch.bo.large_batch import (
    LargeBatchTrace,
    default_surrogate,
    run_large_batch,
)

#: Problems, maximised.
PROBLEMS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "Hartmann-6": lambda: Hartmann(dim=6, noise_std=0.5, negate=True),
    "Ackley-20": lambda: Ackley(dim=20, noise_std=0.5, negate=True),
}

SKETCH, EXACT, SVGP, TURBO, SOBOL = (
    "IncrementalGP",
    "SingleTaskGP (warm)",
    "SVGP",
    "TuRBO-1 (exact, local)",
    "Sobol",
)
METHODS = [SKETCH, EXACT, SVGP, TURBO, SOBOL]


@dataclass(frozen=True)
class Cell:
    r"""One run of the grid.

    Attributes:
        regime: ``"B"`` (q = 100) or ``"B-long"`` (q = 1000 to 10^5).
        problem: A name of :data:`PROBLEMS`.
        method: A name of :data:`METHODS`.
        seed: The run's seed.
        evaluations: Evaluations in all.
        q: Points per batch.
        time_cap: CPU seconds after which the run stops (None: never).
    """

    regime: str
    problem: str
    method: str
    seed: int
    evaluations: int
    q: int
    time_cap: float | None = None

    @property
    def key(self) -> str:
        r"""The cell's file name (without ``.json``)."""
        name = f"{self.regime}__{self.problem}__{self.method}__{self.seed}"
        return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


@dataclass
class Grid:
    r"""A budget: its cells."""

    cells: list[Cell] = field(default_factory=list)


def _regime_b(
    problems: list[str],
    seeds: list[int],
    evaluations: int,
    q: int,
    cap: float,
    methods: list[str] = METHODS,
) -> list[Cell]:
    return [
        Cell("B", p, m, s, evaluations, q, None if m in (SKETCH, SOBOL) else cap)
        for p in problems
        for s in seeds
        for m in methods
    ]


GRIDS: dict[str, Grid] = {
    # Seconds: what the test suite runs (SVGP's first ELBO fit alone takes
    # minutes, so it is left to the real grid).
    "headline-small": Grid(
        _regime_b(
            ["Hartmann-6"],
            [0],
            evaluations=60,
            q=20,
            cap=30.0,
            methods=[SKETCH, EXACT, TURBO, SOBOL],
        )
    ),
    # About 30 minutes of two cores: the capped peers stop at 90 CPU s, past the
    # sketch's whole run (60-70 CPU s on Hartmann-6), so regret at equal CPU is
    # read where every method still runs.
    "headline": Grid(
        _regime_b(
            ["Hartmann-6", "Ackley-20"],
            [0, 1, 2],
            evaluations=10_000,
            q=100,
            cap=90.0,
            methods=[SKETCH, EXACT, TURBO, SOBOL],
        )
        # One seed of SVGP: one ELBO fit at a few hundred points takes a minute
        # or more, and the cap is read between batches.
        + _regime_b(
            ["Hartmann-6", "Ackley-20"],
            [0],
            evaluations=10_000,
            q=100,
            cap=90.0,
            methods=[SVGP],
        )
        + [Cell("B-long", "Hartmann-6", SKETCH, 0, 100_000, 1000)]
    ),
}


def _copy_parameters(source: Model, target: Model) -> None:
    # Parameters of the same name and shape, copied in place.
    values = dict(source.named_parameters())
    with torch.no_grad():
        for name, parameter in target.named_parameters():
            if name in values and values[name].shape == parameter.shape:
                parameter.copy_(values[name])


class WarmExactGP:
    r"""``SingleTaskGP`` rebuilt each call from the last hyperparameters.

    The expert's exact GP in a long loop (BoTorch's closed-loop tutorial starts
    from the previous state): a Cholesky per call, a refit every
    ``refit_every`` calls, optionally on the newest ``max_points`` only.
    """

    def __init__(self, refit_every: int = 5, max_points: int | None = None) -> None:
        r"""Refit every ``refit_every`` calls; keep the newest ``max_points``."""
        self.refit_every = refit_every
        self.max_points = max_points
        self.calls = 0
        self.previous: SingleTaskGP | None = None

    def __call__(self, X: Tensor, Y: Tensor) -> SingleTaskGP:
        r"""The exact GP of (the newest of) ``X``, ``Y``."""
        if self.max_points is not None:
            X, Y = X[-self.max_points :], Y[-self.max_points :]
        model = SingleTaskGP(X, Y)
        if self.previous is not None:
            _copy_parameters(self.previous, model)
        if self.previous is None or self.calls % self.refit_every == 0:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        self.calls += 1
        self.previous = model
        return model


class WarmVariationalGP:
    r"""``SingleTaskVariationalGP`` fitted each call from the last parameters."""

    def __init__(self, num_inducing: int = 512) -> None:
        r"""Use ``num_inducing`` inducing points."""
        self.num_inducing = num_inducing
        self.previous: SingleTaskVariationalGP | None = None

    def __call__(self, X: Tensor, Y: Tensor) -> SingleTaskVariationalGP:
        r"""The SVGP of ``X``, ``Y``, its ELBO fitted."""
        model = SingleTaskVariationalGP(
            X,
            Y,
            inducing_points=min(self.num_inducing, X.shape[0]),
            inducing_point_allocator=GreedyVarianceReduction(),
        )
        if self.previous is not None:
            # The last batch's kernel, likelihood and variational parameters
            # (parameters only: BoTorch's load_state_dict re-reads training
            # targets, which a variational model does not keep).
            _copy_parameters(self.previous, model)
        mll = VariationalELBO(model.likelihood, model.model, num_data=X.shape[0])
        fit_gpytorch_mll(mll)
        self.previous = model
        return model


def _sobol(problem: SyntheticTestFunction, cell: Cell) -> LargeBatchTrace:
    # The floor: the same budget as a scrambled Sobol sequence, in batches.
    d = problem.dim
    unit = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    start = time.process_time()
    X = draw_sobol_samples(unit, n=cell.evaluations, q=1, seed=cell.seed).squeeze(1)
    values = problem(unnormalize(X, problem.bounds), noise=False)
    seconds = (time.process_time() - start) / math.ceil(cell.evaluations / cell.q)
    trace = LargeBatchTrace(
        optimal_value=float(problem.optimal_value),
        initial_best=float(values[: cell.q].max()),
        q=cell.q,
    )
    for i in range(cell.q, cell.evaluations, cell.q):
        batch = values[i : i + cell.q]
        trace.values.extend(batch.tolist())
        trace.batch_best.append(float(batch.max()))
        trace.model_seconds.append(0.0)
        trace.batch_seconds.append(seconds)
        trace.train_size.append(i)
        trace.inducing_size.append(0)
        trace.distinct_argmaxes.append(batch.numel())
        trace.distinct_points.append(batch.numel())
        trace.X.append(X[i : i + cell.q])
    return trace


def run_cell(cell: Cell) -> dict:
    r"""Run one cell single-threaded and return its record."""
    torch.set_num_threads(1)
    problem = PROBLEMS[cell.problem]()
    start = time.process_time()
    if cell.method == SOBOL:
        trace = _sobol(problem, cell)
    else:
        surrogate, trust_region = {
            SKETCH: (default_surrogate, False),
            EXACT: (WarmExactGP, False),
            SVGP: (WarmVariationalGP, False),
            TURBO: (lambda: WarmExactGP(max_points=1000), True),
        }[cell.method]
        trace = run_large_batch(
            problem,
            problem.bounds,
            evaluations=cell.evaluations,
            q=cell.q,
            surrogate=surrogate(),
            trust_region=trust_region,
            seed=cell.seed,
            time_cap=cell.time_cap,
            progress=False,
        )
    return {
        "cell": asdict(cell),
        "total_cpu_seconds": time.process_time() - start,
        "threads": torch.get_num_threads(),
        "evaluations": trace.evaluations.tolist(),
        "cumulative_seconds": trace.cumulative_seconds.tolist(),
        "iteration_seconds": trace.iteration_seconds.tolist(),
        "model_seconds": trace.model_seconds,
        "simple_regret": trace.simple_regret.tolist(),
        "distinct_argmaxes": trace.distinct_argmaxes,
        "distinct_points": trace.distinct_points,
        "inducing_size": trace.inducing_size,
        "stopped_at_cap": trace.stopped_at_cap,
    }


def cells_dir(out: str) -> str:
    r"""Where a run writes its cells."""
    return os.path.join(out, "bo-headline-cells")


def write_cell(directory: str, record: dict) -> str:
    r"""Write a cell's record once (atomically); return its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, Cell(**record["cell"]).key + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)
    return path


def run_grid(
    budget: str,
    out: str,
    workers: int = 2,
    shard: tuple[int, int] = (0, 1),
    progress: bool = True,
) -> list[dict]:
    r"""Run the cells of ``budget`` not yet in ``out``, ``workers`` at a time.

    Args:
        budget: A name of :data:`GRIDS`.
        out: The run's folder; cells go to :func:`cells_dir`.
        workers: Processes at once (each single-threaded).
        shard: ``(i, k)``: run only cells ``i, i + k, i + 2k, ...`` of the grid.
        progress: Print each cell as it finishes.

    Returns:
        The records of every cell now in ``out`` (this run's and earlier ones).
    """
    directory = cells_dir(out)
    i, k = shard
    todo = [
        c
        for j, c in enumerate(GRIDS[budget].cells)
        if j % k == i and not os.path.exists(os.path.join(directory, c.key + ".json"))
    ]
    # Longest first, so that the pool ends together.
    todo.sort(key=lambda c: (c.time_cap or 1e9) * c.evaluations, reverse=True)
    if workers <= 1:
        for cell in todo:
            _done(directory, run_cell(cell), progress)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_cell, cell) for cell in todo]
            for future in as_completed(futures):
                _done(directory, future.result(), progress)
    return read_cells([out])


def _done(directory: str, record: dict, progress: bool) -> None:
    write_cell(directory, record)
    if progress:
        cell = record["cell"]
        print(
            f"{cell['regime']} {cell['problem']} {cell['method']} seed "
            f"{cell['seed']}: {record['evaluations'][-1]:.0f} evaluations, regret "
            f"{record['simple_regret'][-1]:.4g}, {record['total_cpu_seconds']:.0f} "
            "CPU s",
            flush=True,
        )


def read_cells(outs: list[str]) -> list[dict]:
    r"""The cells of several runs' folders, each cell once (the first found)."""
    records: dict[str, dict] = {}
    for out in outs:
        directory = cells_dir(out)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if name.endswith(".json") and name not in records:
                with open(os.path.join(directory, name)) as f:
                    records[name] = json.load(f)
    return list(records.values())


def _at(xs: list[float], ys: list[float], x: float) -> float:
    # ys at the last point whose x is at most ``x`` (NaN before the first).
    value = math.nan
    for xi, yi in zip(xs, ys, strict=True):
        if xi > x:
            break
        value = yi
    return value


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _per_batch_near(record: dict, n: float) -> float:
    # Median CPU seconds of the batches whose data size is within 20% of n.
    times = [
        t
        for e, t in zip(record["evaluations"], record["iteration_seconds"], strict=True)
        if 0.8 * n <= e <= 1.2 * n
    ]
    return float(torch.tensor(times).median()) if times else math.nan


def render(records: list[dict], machine: str) -> str:
    r"""Markdown: per problem, regret at equal evaluations and equal CPU seconds."""
    lines: list[str] = []
    by_problem: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        c = r["cell"]
        by_problem.setdefault((c["regime"], c["problem"]), []).append(r)
    for (regime, problem), rows in sorted(by_problem.items()):
        q = rows[0]["cell"]["q"]
        total = rows[0]["cell"]["evaluations"]
        sketch = [r for r in rows if r["cell"]["method"] == SKETCH]
        budget_s = _mean([r["total_cpu_seconds"] for r in sketch]) if sketch else 0
        caps = [r["cell"]["time_cap"] for r in rows if r["cell"]["time_cap"]]
        if caps:
            # Where every method still runs: the capped ones stop at their cap.
            budget_s = min(budget_s, min(caps))
        seeds = sorted({r["cell"]["seed"] for r in rows})
        lines += [
            f"### {problem}, regime {regime}: q = {q}, {total} evaluations, seeds "
            f"{seeds}",
            "",
            "Regret is the mean simple regret over seeds (noise-free values); "
            f"'at equal CPU' reads each run at {budget_s:.0f} CPU s (the sketch's "
            "mean total, or the peers' CPU cap if smaller); 'per batch' is the "
            "median CPU seconds of the batches near that many evaluations; "
            "'distinct' is the mean fraction of distinct "
            "path argmaxes before the batch is filled (evaluated batches are all "
            "distinct).",
            "",
            "| method | evaluations reached | regret at end | regret at equal "
            "evaluations | regret at equal CPU | CPU s | "
            f"per batch near {total // 10} | per batch near {total} | growth | "
            "distinct argmaxes | max inducing | "
            "stopped at cap |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        reached_all = min(r["evaluations"][-1] for r in rows)
        for method in [*METHODS]:
            runs = [r for r in rows if r["cell"]["method"] == method]
            if not runs:
                continue
            end = _mean([r["evaluations"][-1] for r in runs])
            regret = _mean([r["simple_regret"][-1] for r in runs])
            equal_n = _mean(
                [_at(r["evaluations"], r["simple_regret"], reached_all) for r in runs]
            )
            equal_s = _mean(
                [
                    _at(r["cumulative_seconds"], r["simple_regret"], budget_s)
                    for r in runs
                ]
            )
            seconds = _mean([r["total_cpu_seconds"] for r in runs])
            small = _mean([_per_batch_near(r, total / 10) for r in runs])
            large = _mean([_per_batch_near(r, total) for r in runs])
            distinct = _mean(
                [
                    sum(r["distinct_argmaxes"]) / (len(r["distinct_argmaxes"]) * q)
                    for r in runs
                    if r["distinct_argmaxes"]
                ]
            )
            inducing = max(max(r["inducing_size"] or [0]) for r in runs)
            capped = sum(r["stopped_at_cap"] for r in runs)
            lines.append(
                f"| {method} | {end:.0f} | {regret:.4g} | {equal_n:.4g} | "
                f"{equal_s:.4g} | {seconds:.0f} | {small:.3g} | {large:.3g} | "
                f"{large / small if small > 0 else math.nan:.2f} | "
                f"{distinct:.2f} | {inducing} | {capped} of {len(runs)} |"
            )
        lines += [
            "",
            f"('Regret at equal evaluations' reads every run at {reached_all:.0f} "
            "evaluations, the fewest any run reached.)",
            "",
        ]
    lines.append(f"Machine: {machine}; one thread per cell, CPU seconds.")
    return "\n".join(lines)


def plot(records: list[dict], stem: str) -> list[str]:
    r"""Per problem: regret against evaluations and CPU seconds; seconds per batch."""
    from matplotlib.figure import Figure

    paths = []
    keys = sorted({(r["cell"]["regime"], r["cell"]["problem"]) for r in records})
    for regime, problem in keys:
        rows = [
            r
            for r in records
            if (r["cell"]["regime"], r["cell"]["problem"]) == (regime, problem)
        ]
        fig = Figure(figsize=(15, 4))
        axes = fig.subplots(1, 3)
        for method in METHODS:
            runs = [r for r in rows if r["cell"]["method"] == method]
            if not runs:
                continue
            length = min(len(r["evaluations"]) for r in runs)
            if length == 0:
                continue
            n = runs[0]["evaluations"][:length]
            regret = torch.tensor([r["simple_regret"][:length] for r in runs]).mean(0)
            seconds = torch.tensor(
                [r["cumulative_seconds"][:length] for r in runs]
            ).mean(0)
            per = torch.tensor([r["iteration_seconds"][:length] for r in runs])
            axes[0].plot(n, regret, label=method)
            axes[1].plot(seconds.clamp_min(1e-3), regret, label=method)
            axes[2].plot(n, per.median(0).values.clamp_min(1e-4), label=method)
        axes[0].set(xlabel="evaluations", ylabel="simple regret (mean)", yscale="log")
        axes[1].set(
            xlabel="CPU seconds",
            ylabel="simple regret (mean)",
            xscale="log",
            yscale="log",
        )
        axes[2].set(xlabel="evaluations", ylabel="CPU s per batch", yscale="log")
        axes[0].legend(fontsize="small")
        fig.suptitle(f"{problem}, regime {regime}: large-batch Thompson sampling")
        fig.tight_layout()
        path = f"{stem}-{regime}-{problem}.png"
        fig.savefig(path, dpi=100)
        paths.append(path)
    return paths


def report(
    budget: str,
    stem: str,
    out: str,
    machine: str,
    workers: int = 2,
    shard: tuple[int, int] = (0, 1),
) -> tuple[str, list[str]]:
    r"""Run the grid's missing cells, then render every cell in ``out``."""
    records = run_grid(budget, out, workers=workers, shard=shard)
    return render(records, machine), plot(records, stem)
