#!/usr/bin/env python3
r"""The mixed task from scratch: whole studies from an empty study, by seed.

The ``mixed-scratch`` budget of :mod:`~benchmarks.suggest`:
``SketchSampler``, ``GPSampler`` and ``TPESampler`` each run whole 100-trial
studies (maximised) on the mixed task (a log-scaled float, three floats, an
integer and a categorical; ``_mixed_space``, ``_mixed_score``, noise sd 0.01
from a generator seeded with the seed), seeds 0 to 4. A trial whose objective
raises ``Failed`` (the corner ``a + b > 1.7``) is ``FAIL`` in Optuna: the
objective raises inside ``study.optimize`` with ``catch=(Failed,)``. Each
study runs in a spawned process of its own with one thread, at most two at a
time; each records the best value found, the number of failed trials (and
how many of them are distinct points, the longest run of consecutive ones and
how many fall in the second half of the study) and the CPU seconds of the
study (suggestions and evaluations).

Each study is appended, as it finishes, to a JSON-lines file of cells
(``benchmark-results/suggest-mixed-scratch.jsonl`` by default), so that a
crash keeps what was done; a later run skips the cells the file holds, and
``--collect`` renders the report from the file without running anything.

``python -m benchmarks suggest --budget mixed-scratch``, or
``python -m benchmarks.suggest_scratch [--cells FILE]
[--workers K] [--methods M ...] [--seeds S ...] [--collect] [--to REPORT]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from benchmarks.suggest import (
    BUDGETS,
    SKETCH,
    Failed,
    _mixed_score,
    make_sampler,
)

#: The budget of :mod:`~benchmarks.suggest` this module runs.
BUDGET = "mixed-scratch"
#: Where the cells go by default (the benchmark CLI's default ``--out``).
CELLS = os.path.join("benchmark-results", f"suggest-{BUDGET}.jsonl")


def _machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with 1 thread per study"
    )


def _objective(rng: np.random.Generator) -> Any:
    # The mixed task through Optuna's public suggest API (``_mixed_space``).
    def objective(trial: Any) -> float:
        p = {
            "lr": trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            "a": trial.suggest_float("a", 0.0, 1.0),
            "b": trial.suggest_float("b", 0.0, 1.0),
            "c": trial.suggest_float("c", 0.0, 1.0),
            "depth": trial.suggest_int("depth", 1, 20),
            "act": trial.suggest_categorical("act", ["relu", "tanh", "gelu"]),
        }
        return _mixed_score(p, rng)

    return objective


def _longest_run(flags: list[bool]) -> int:
    longest = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        longest = max(longest, current)
    return longest


def scratch_run(method: str, trials: int, seed: int) -> dict[str, Any]:
    r"""One whole study of the mixed task, from an empty study (maximised).

    Returns:
        The cell: ``method``, ``seed``, ``trials``, ``best`` (the best value
        of the completed trials, NaN if none completed), ``failed`` (trials
        ``FAIL``), ``failed_distinct`` (distinct points among them, to 3
        significant digits), ``first_failed`` (the number of the first failed
        trial, None if none failed), ``failed_second_half``,
        ``longest_fail_run`` (consecutive ``FAIL`` trials), ``seconds`` (CPU
        seconds of the study) and ``machine``.
    """
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rng = np.random.default_rng(seed)
    study = optuna.create_study(
        direction="maximize", sampler=make_sampler(method, seed)
    )
    start = time.process_time()
    study.optimize(_objective(rng), n_trials=trials, catch=(Failed,))
    seconds = time.process_time() - start
    done = study.trials
    failed = [t.state == TrialState.FAIL for t in done]
    values = [t.value for t in done if t.state == TrialState.COMPLETE]
    # Points the same to 3 significant digits count once: a sampler whose
    # model ignores failed trials proposes the same failing point again and
    # again, up to the last digits of its optimiser.
    points = {
        tuple(
            sorted(
                (k, float(f"{v:.3g}") if isinstance(v, float) else v)
                for k, v in t.params.items()
            )
        )
        for t, f in zip(done, failed, strict=True)
        if f
    }
    return {
        "method": method,
        "seed": seed,
        "trials": trials,
        "best": max(values) if values else math.nan,
        "failed": sum(failed),
        "failed_distinct": len(points),
        "first_failed": failed.index(True) if any(failed) else None,
        "failed_second_half": sum(failed[len(done) // 2 :]),
        "longest_fail_run": _longest_run(failed),
        "seconds": seconds,
        "machine": _machine(),
    }


def _scratch_alone(method: str, trials: int, seed: int) -> dict[str, Any]:
    # One study in this (spawned) process, one thread.
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - NumPy's BLAS keeps its threads
        limits = None
    else:
        limits = threadpool_limits(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return scratch_run(method, trials, seed)
    finally:
        if limits is not None:
            limits.restore_original_limits()


def read_cells(path: str) -> list[dict[str, Any]]:
    r"""The cells of a JSON-lines file (none if it does not exist).

    A cell recorded twice is read from its last line; a line cut short by a
    crash is skipped.
    """
    if not os.path.exists(path):
        return []
    cells: dict[tuple[str, int, int], dict[str, Any]] = {}
    with open(path) as f:
        for line in f:
            try:
                cell = json.loads(line)
            except json.JSONDecodeError:
                continue
            cells[cell["method"], cell["seed"], cell["trials"]] = cell
    return list(cells.values())


def _append(path: str, cell: dict[str, Any]) -> None:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(cell) + "\n")
        f.flush()
        os.fsync(f.fileno())


def default_workers() -> int:
    r"""Two studies at a time, or one where the machine is already busy."""
    busy = os.getloadavg()[0] >= 1.0 if hasattr(os, "getloadavg") else False
    return 1 if busy or (os.cpu_count() or 1) < 2 else 2


@dataclass
class ScratchRow:
    r"""One method's whole studies of the mixed task, one cell per seed."""

    method: str
    trials: int
    cells: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        r"""The seeds of the cells, in order."""
        return [c["seed"] for c in self.cells]

    def median(self, key: str) -> float:
        r"""The median of one entry of the cells over seeds (NaNs left out)."""
        values = [c[key] for c in self.cells if not math.isnan(c[key])]
        return statistics.median(values) if values else math.nan


def rows_from(
    cells: list[dict[str, Any]],
    methods: list[str],
    trials: int,
    seeds: list[int] | None = None,
) -> list[ScratchRow]:
    r"""The rows of ``methods`` (in that order) from cells of ``trials`` trials."""
    rows = []
    for m in methods:
        mine = [
            c
            for c in cells
            if c["method"] == m
            and c["trials"] == trials
            and (seeds is None or c["seed"] in seeds)
        ]
        rows.append(ScratchRow(m, trials, sorted(mine, key=lambda c: c["seed"])))
    return rows


def run_scratch(
    budget_name: str = BUDGET,
    workers: int | None = None,
    cells: str = CELLS,
    methods: list[str] | None = None,
    seeds: list[int] | None = None,
) -> list[ScratchRow]:
    r"""Whole studies of every method and seed of a budget, each alone.

    Each study runs in a spawned process of its own (one thread), ``workers``
    at a time (:func:`default_workers` if not given), and is appended to the
    JSON-lines file ``cells`` as it finishes; the cells the file already
    holds are not run again.
    """
    budget = BUDGETS[budget_name]
    methods = budget.methods if methods is None else methods
    seeds = budget.regret_seeds if seeds is None else seeds
    trials = budget.regret_trials
    workers = default_workers() if workers is None else workers
    have = {
        (c["method"], c["seed"]) for c in read_cells(cells) if c["trials"] == trials
    }
    # Seed by seed, so that a cut-short run holds every method's first seeds.
    jobs = [(m, s) for s in seeds for m in methods if (m, s) not in have]
    print(
        f"{len(have)} cells in {cells}; running {len(jobs)} studies of {trials} "
        f"trials, {workers} at a time",
        flush=True,
    )
    errors = []
    if jobs:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=context, max_tasks_per_child=1
        ) as pool:
            futures = {
                pool.submit(_scratch_alone, m, trials, s): (m, s) for m, s in jobs
            }
            for future in concurrent.futures.as_completed(futures):
                m, s = futures[future]
                try:
                    cell = future.result()
                except Exception as error:  # kept going: the rest still run
                    errors.append(f"{m}, seed {s}: {error!r}")
                    print(f"FAILED {m} seed {s}: {error!r}", flush=True)
                    continue
                _append(cells, cell)
                print(_line(cell), flush=True)
    if errors:
        raise RuntimeError(
            f"{len(errors)} studies failed (the others are in {cells}): "
            + "; ".join(errors)
        )
    return rows_from(read_cells(cells), methods, trials, seeds)


def _line(c: dict[str, Any]) -> str:
    return (
        f"{c['method']:16s} seed {c['seed']}  best {c['best']:7.3f}  failed "
        f"{c['failed']:3d} ({c['failed_distinct']} distinct, first {_first(c)}, "
        f"longest run {c['longest_fail_run']})  {c['seconds']:6.1f} CPU s"
    )


def _number(x: float, digits: int) -> str:
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


def _first(cell: dict[str, Any]) -> str:
    first = cell.get("first_failed", "?")
    return "-" if first is None else str(first)


def render_scratch(rows: list[ScratchRow]) -> str:
    r"""Markdown: medians over seeds by method, SketchSampler's margins, seeds."""
    trials = rows[0].trials if rows else 0
    seeds = sorted({s for r in rows for s in r.seeds})
    lines = [
        f"The mixed task from scratch: whole studies of {trials} trials from an "
        "empty study, maximised (a trial whose objective raises is `FAIL`), "
        f"seeds {', '.join(map(str, seeds))}, each in a process of its own with "
        "one thread: the best value found and the failed trials, median over "
        "seeds, and CPU seconds per study (suggestions and evaluations), median.",
        "",
        "| method | seeds | best value | failed trials | CPU s per study |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.method} | {len(r.cells)} | {_number(r.median('best'), 3)} | "
        f"{_number(r.median('failed'), 1)} | {_number(r.median('seconds'), 1)} |"
        for r in rows
    ]
    ours = next((r for r in rows if r.method == SKETCH), None)
    if ours is not None and len(rows) > 1:
        lines += ["", f"{SKETCH}'s median best value minus each peer's:", ""]
        lines += [
            f"- {r.method}: {ours.median('best') - r.median('best'):+.3f} "
            f"({'no worse' if ours.median('best') >= r.median('best') else 'worse'})"
            for r in rows
            if r is not ours
        ]
    lines += [
        "",
        "Per seed (failed trials: all, distinct points among them to 3 "
        "significant digits, the number of the first (trials count from 0), "
        "those in the second half of the study, and the longest run of "
        "consecutive ones):",
        "",
        "| method | seed | best value | failed | distinct | first | second half "
        "| longest run | CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.method} | {c['seed']} | {_number(c['best'], 3)} | {c['failed']} | "
        f"{c['failed_distinct']} | {_first(c)} | {c['failed_second_half']} | "
        f"{c['longest_fail_run']} | {c['seconds']:.1f} |"
        for r in rows
        for c in r.cells
    ]
    machines = sorted({c["machine"] for r in rows for c in r.cells})
    if machines:
        lines += ["", f"Machine: {'; '.join(machines)}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    r"""Run the studies not yet in the cells file, or ``--collect`` them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suggest_scratch")
    parser.add_argument("--budget", default=BUDGET, help=f"[{BUDGET}]")
    parser.add_argument("--cells", default=CELLS, help=f"JSON-lines file [{CELLS}]")
    parser.add_argument(
        "--workers", type=int, help="studies at a time [2, or 1 on a busy machine]"
    )
    parser.add_argument("--methods", nargs="+", help="some of the budget's methods")
    parser.add_argument("--seeds", nargs="+", type=int, help="some other seeds")
    parser.add_argument(
        "--collect", action="store_true", help="render the cells file, run nothing"
    )
    parser.add_argument("--to", help="also write the report here (markdown)")
    args = parser.parse_args(argv)
    if args.budget not in BUDGETS or BUDGETS[args.budget].task != "mixed":
        parser.error(f"--budget {args.budget!r} is no whole-study mixed budget.")
    budget = BUDGETS[args.budget]
    if not budget.regret_trials:
        parser.error(f"--budget {args.budget!r} runs no whole studies.")
    methods = args.methods or budget.methods
    unknown = [m for m in methods if m not in budget.methods]
    if unknown:
        parser.error(f"--methods: not in the budget: {unknown}.")
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}.")
    if args.collect:
        seeds = args.seeds or None
        rows = rows_from(read_cells(args.cells), methods, budget.regret_trials, seeds)
    else:
        rows = run_scratch(args.budget, args.workers, args.cells, methods, args.seeds)
    text = render_scratch(rows)
    print(text)
    if args.to:
        how = (
            "`python -m benchmarks.suggest_scratch "
            f"--cells {args.cells} --collect --to {args.to}`"
        )
        with open(args.to, "w") as f:
            f.write(
                f"# suggest benchmark ({args.budget} budget)\n\n{text}\n\n"
                f"Rendered from the cells by {how}.\n"
            )
        print(f"\nwrote {args.to}")
    return 0


if __name__ == "__main__":
    from benchmarks.suggest_scratch import main as _main

    sys.exit(_main())
