#!/usr/bin/env python3
r"""The report: best values at equal evaluations and at equal proposing CPU.

Per (budget, problem): the median over seeds of each method's best noise-free
value at 1000, 3000 and 10^4 evaluations (those the budget reaches), read at
two CPU budgets of proposing (TuRBO-ENN's and the sketch's median totals), the
proposing CPU per evaluation and its ratio to TuRBO-ENN's, and the sketch's
refits' share of its proposing CPU; then the ratios in words. Figures: best value
against evaluations and against CPU seconds (log scale).
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from .grid import (
    CMA_ES,
    CMA_ES_SMALL_STEP,
    METHODS,
    SKETCH,
    SOBOL,
    TURBO_ENN,
    TURBO_ONE,
    run_grid,
)
from .sketch import EXACT, SKETCH_CMA

#: The evaluation counts the tables read (those a budget reaches).
CHECKPOINTS = (1000, 3000, 10_000, 30_000, 100_000)

#: One line per method, for the report's preamble.
DESCRIPTIONS = {
    SKETCH: (
        "`run_large_batch(..., strategy='regions')`: pathwise Thompson sampling "
        "of q points per batch in two TuRBO trust regions over one carried "
        "Nystrom GP (`IncrementalGP`, 256 inducing points), refitted when a "
        "batch surprises it or the data double, on 400 rows with at most 20 "
        "L-BFGS-B iterations; a region's points scored by the smaller of "
        "posterior mean and observation (`success='pessimistic'`); half of each "
        "batch's paths reserved to the regions in equal shares "
        "(`region_share=0.5`)."
    ),
    SKETCH_CMA: (
        "`run_large_batch` with its defaults (`strategy='cma'`): CMA-ES (`cma` "
        "4.5.0, population q from the cube's centre with step 0.1) whose every "
        "generation is the q of largest posterior mean among 3q draws of its "
        "distribution (a third of them sparse: the step from the mean kept on "
        "about 5 random coordinates), under the same carried Nystrom GP; "
        "unscreened for a "
        "generation when the last one's Kendall tau between predicted means and "
        "observations fell below 0.2 (`ScreenedCMAES`)."
    ),
    TURBO_ENN: "TuRBO-ENN (`ennbo` 0.2.1, `turbo_enn_config(num_init=q)`; Sweet & "
    "Jadhav 2025): TuRBO's trust region and RAASP candidates scored by an "
    "epistemic-nearest-neighbour surrogate, no hyperparameter fit.",
    TURBO_ONE: "TuRBO-1 (`ennbo`'s `turbo_one_config(num_init=q)`; Eriksson et al. "
    "2019): an exact GP refitted each batch on the data since the last restart, "
    "Thompson sampling over RAASP candidates in the trust region; capped in CPU.",
    CMA_ES: "CMA-ES (`cma` 4.5.0), population q from the cube's centre with step "
    "0.2, restarted with a doubled population when it stops (IPOP).",
    CMA_ES_SMALL_STEP: "The same CMA-ES from sketch-CMA's initial step, 0.1: a "
    "control, not a peer (sketch-CMA against it is what the screening adds).",
    SOBOL: "A scrambled Sobol sequence: the floor.",
    EXACT: "The same loop as the sketch with BoTorch's exact `SingleTaskGP`, "
    "rebuilt each batch from the last hyperparameters and refitted every 5.",
}


def best_at_evaluations(record: dict[str, Any], n: float) -> float:
    r"""The best value after ``n`` evaluations; NaN if the run stopped before."""
    if not record["evaluations"] or record["evaluations"][-1] < n:
        return math.nan
    return _last_at(record["evaluations"], record["best_value"], n)


def best_at_seconds(record: dict[str, Any], seconds: float) -> float:
    r"""The best value once ``seconds`` of proposing CPU are spent (or the run ended).

    NaN if the first batch took longer.
    """
    return _last_at(record["cumulative_seconds"], record["best_value"], seconds)


def cpu_per_evaluation(record: dict[str, Any]) -> float:
    r"""Proposing CPU seconds per evaluation over the whole run."""
    if not record["evaluations"]:
        return math.nan
    return record["cumulative_seconds"][-1] / record["evaluations"][-1]


def refit_share(record: dict[str, Any]) -> float:
    r"""The refits' share of the proposing CPU (NaN without the breakdown)."""
    refits = record.get("refit_seconds")
    total = record["cumulative_seconds"][-1] if record["cumulative_seconds"] else 0
    if refits is None or total <= 0:
        return math.nan
    return sum(refits) / total


def _last_at(xs: list[float], ys: list[float], x: float) -> float:
    # ys at the last entry whose x is at most ``x`` (NaN before the first).
    value = math.nan
    for xi, yi in zip(xs, ys, strict=True):
        if xi > x:
            break
        value = yi
    return value


def _median(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return median(finite) if finite else math.nan


def _fmt(value: float, digits: int = 4) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}g}"


def _groups(
    records: list[dict[str, Any]],
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        c = r["cell"]
        groups.setdefault((c["budget"], c["problem"]), []).append(r)
    return dict(sorted(groups.items()))


def _by_method(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for method in METHODS + sorted({r["cell"]["method"] for r in rows}):
        runs = [r for r in rows if r["cell"]["method"] == method]
        if runs and method not in by:
            by[method] = runs
    return by


def _ratio(a: float, b: float) -> str:
    return "–" if math.isnan(a) or math.isnan(b) or b <= 0 else f"{a / b:.3g}x"


def render(records: list[dict[str, Any]], machine: str) -> str:
    r"""Markdown: per (budget, problem), quality at equal evaluations and CPU.

    Args:
        records: Cell records (see :mod:`~.record`).
        machine: A line on the machine the cells ran on.

    Returns:
        The report's text.
    """
    methods_present = {r["cell"]["method"] for r in records}
    lines = [
        "Methods (each cell one process on one thread; CPU seconds of proposing "
        "only, `time.process_time` around the method's own calls, objective "
        "excluded; best values are noise-free values of evaluated points, "
        "maximised; every method observes the noisy values):",
        "",
    ]
    lines += [
        f"- **{m}**: {DESCRIPTIONS.get(m, '')}" for m in METHODS if m in methods_present
    ]
    lines.append("")
    for (budget, problem), rows in _groups(records).items():
        lines += _render_group(budget, problem, rows)
    lines.append(
        f"Machine: {machine}; one thread per cell. 'at N evaluations' is the median "
        "over the seeds that reached N (k/m when only k of m did); 'at S CPU s' "
        "reads each run at S seconds of proposing (a run that ended sooner keeps "
        "its final value; – where no run had finished its first batch); CPU per "
        "evaluation is the run's proposing CPU over its evaluations (median over "
        "seeds)."
    )
    return "\n".join(lines)


def _render_group(budget: str, problem: str, rows: list[dict[str, Any]]) -> list[str]:
    cell = rows[0]["cell"]
    total = cell["evaluations"]
    checkpoints = [n for n in CHECKPOINTS if n <= total]
    if total not in checkpoints:
        checkpoints.append(total)
    by = _by_method(rows)
    totals = {
        m: _median([r["cumulative_seconds"][-1] for r in runs if r["evaluations"]])
        for m, runs in by.items()
    }
    budgets = [
        (m, totals[m])
        for m in (TURBO_ENN, SKETCH, SKETCH_CMA)
        if m in by and totals[m] > 0
    ]
    per_eval = {
        m: _median([cpu_per_evaluation(r) for r in runs]) for m, runs in by.items()
    }
    seeds = sorted({r["cell"]["seed"] for r in rows})
    optimum = rows[0].get("optimal_value", math.nan)
    head = (
        ["method", "runs", "evaluations reached"]
        + [f"best at {n}" for n in checkpoints]
        + [f"best at {s:.3g} CPU s ({m}'s)" for m, s in budgets]
        + [
            "proposing CPU s",
            "CPU ms per evaluation",
            f"CPU per evaluation / {TURBO_ENN}'s",
            "refits' share",
            "stopped at cap",
        ]
    )
    known = optimum is not None and not math.isnan(optimum)
    lines = [
        f"### {problem} ({budget}): q = {cell['q']}, {total} evaluations, seeds "
        f"{seeds}" + (f"; optimum {optimum:.4g}" if known else ""),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for method, runs in by.items():
        row = [
            method,
            str(len(runs)),
            _fmt(_median([r["evaluations"][-1] for r in runs])),
        ]
        for n in checkpoints:
            values = [best_at_evaluations(r, n) for r in runs]
            reached = sum(not math.isnan(v) for v in values)
            note = "" if reached == len(runs) else f" ({reached}/{len(runs)})"
            row.append(_fmt(_median(values)) + note)
        for _, s in budgets:
            row.append(_fmt(_median([best_at_seconds(r, s) for r in runs])))
        share = _median([refit_share(r) for r in runs])
        row += [
            _fmt(totals[method], 3),
            _fmt(1000 * per_eval[method], 3),
            _ratio(per_eval[method], per_eval.get(TURBO_ENN, math.nan)),
            "–" if math.isnan(share) else f"{100 * share:.0f}%",
            f"{sum(bool(r['stopped_at_cap']) for r in runs)} of {len(runs)}",
        ]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines += _ratios(by, per_eval, totals)
    lines.append("")
    return lines


def _ratios(
    by: dict[str, list[dict[str, Any]]],
    per_eval: dict[str, float],
    totals: dict[str, float],
) -> list[str]:
    # Each sketch against each peer, in words: CPU ratios, quality at the most
    # evaluations every run of both reached, and quality at the peer's CPU.
    lines = []
    for sketch in (SKETCH, SKETCH_CMA):
        if sketch not in by:
            continue
        for peer in (TURBO_ENN, TURBO_ONE, CMA_ES, CMA_ES_SMALL_STEP):
            if peer not in by:
                continue
            runs = by[sketch] + by[peer]
            n = min((r["evaluations"][-1] for r in runs if r["evaluations"]), default=0)
            mine = _median([best_at_evaluations(r, n) for r in by[sketch]])
            theirs = _median([best_at_evaluations(r, n) for r in by[peer]])
            at = totals[peer]
            equal_cpu = _median([best_at_seconds(r, at) for r in by[sketch]])
            final = _median([r["best_value"][-1] for r in by[peer] if r["best_value"]])
            lines.append(
                f"- {sketch} / {peer}: CPU per evaluation "
                f"{_ratio(per_eval[sketch], per_eval[peer])}, total proposing CPU "
                f"{_ratio(totals[sketch], totals[peer])}; best at {n} evaluations "
                f"(reached by every run of both) {_fmt(mine)} vs {_fmt(theirs)}; at "
                f"{peer}'s {_fmt(at, 3)} CPU s the {sketch} had {_fmt(equal_cpu)}, "
                f"{peer} {_fmt(final)}."
            )
    return lines


def plot(records: list[dict[str, Any]], stem: str) -> list[str]:
    r"""Per (budget, problem): best value against evaluations and CPU seconds.

    Medians over seeds; the CPU axis is logarithmic. The figures are
    ``STEM-PROBLEM.png`` (``STEM-BUDGET-PROBLEM.png`` when ``records`` hold
    several budgets).

    Returns:
        The figures' paths.
    """
    import numpy as np
    from matplotlib.figure import Figure

    paths = []
    groups = _groups(records)
    several = len({budget for budget, _ in groups}) > 1
    for (budget, problem), rows in groups.items():
        fig = Figure(figsize=(12, 4.5))
        left, right = fig.subplots(1, 2)
        for method, runs in _by_method(rows).items():
            ns = sorted({n for r in runs for n in r["evaluations"]})
            if not ns:
                continue
            best = [_median([best_at_evaluations(r, n) for r in runs]) for n in ns]
            (line,) = left.plot(ns, best, label=method, drawstyle="steps-post")
            times = [t for r in runs for t in r["cumulative_seconds"] if t > 0]
            if not times:
                continue
            grid = np.geomspace(min(times), max(times), 200)
            best_s = [_median([best_at_seconds(r, s) for r in runs]) for s in grid]
            right.plot(
                grid,
                best_s,
                color=line.get_color(),
                label=method,
                drawstyle="steps-post",
            )
        left.set(xlabel="evaluations", ylabel="best value (median over seeds)")
        right.set(
            xlabel="CPU seconds proposing",
            ylabel="best value (median over seeds)",
            xscale="log",
        )
        left.legend(fontsize="small")
        fig.suptitle(f"{problem} ({budget})")
        fig.tight_layout()
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in problem)
        path = f"{stem}-{budget}-{safe}.png" if several else f"{stem}-{safe}.png"
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
    r"""Run the grid's missing cells, then render every one of its cells in ``out``."""
    records = run_grid(budget, out, workers=workers, shard=shard)
    return render(records, machine), plot(records, stem)
