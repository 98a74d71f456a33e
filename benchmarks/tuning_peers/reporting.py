r"""The ``tuning-peers`` report: ratios and verdicts, tables and figures."""

from __future__ import annotations

import math
import statistics

from benchmarks.tuning_peers.config import (
    AX_DEFAULT,
    AX_OURS,
    BUDGETS,
    GP,
    METHODS,
    PAIRS,
    SKETCH,
    TASKS,
    TPE,
    Budget,
    RunResult,
    TimeResult,
)
from benchmarks.tuning_peers.runner import run


def _at(values: list[float], index: int) -> float:
    return values[index - 1] if len(values) >= index else float("nan")


def best_at_trials(
    runs: list[RunResult], task: str, method: str, n: int
) -> list[float]:
    r"""The best scores of a method's runs on a task after ``n`` trials (by seed)."""
    return [_at(r.best, n) for r in runs if r.task == task and r.method == method]


def best_at_seconds(run: RunResult, seconds: float) -> float:
    r"""The best score a run had reached after ``seconds`` of wall clock."""
    reached = [b for b, s in zip(run.best, run.seconds, strict=True) if s <= seconds]
    return reached[-1] if reached else float("nan")


def _mean_sd(values: list[float]) -> tuple[float, float]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd


def _noise(runs: list[RunResult], task: str, method: str) -> float:
    # Split-to-split sd of the best settings, and the standard error over seeds.
    mine = [r for r in runs if r.task == task and r.method == method]
    split = statistics.fmean(r.noise_sd for r in mine)
    seeds = _mean_sd([r.best[-1] for r in mine])[1] / math.sqrt(len(mine))
    return math.hypot(split, seeds)


def render(
    runs: list[RunResult], times: list[TimeResult], budget_name: str, machine: str
) -> str:
    r"""Ratios and verdicts first, then the tables."""
    budget = BUDGETS[budget_name]
    seconds = {t.method: t.seconds for t in times}
    timed = TASKS[budget.timed_task].name
    lines = [
        f"Seconds to suggest trial N on {timed}, peer over ours (median of "
        f"{budget.repeats} suggestions; '-' where the peer passed the "
        f"{budget.suggest_cap_s:g} s cap at a smaller N; "
        + (
            "the methods took turns in one process, whose peak memory the "
            "table gives for all):"
            if budget.interleave
            else "each method in a process of its own):"
        ),
        "",
    ]
    for ours, peer in PAIRS:
        if ours not in seconds or peer not in seconds:
            continue
        ratios = []
        for n in sorted(budget.sizes):
            a, b = seconds[ours].get(n), seconds[peer].get(n)
            ratios.append(f"N = {n}: " + (f"{b / a:.1f}x" if a and b else "-"))
        lines.append(f"- {peer} / {ours}: " + ", ".join(ratios))
    lines += [
        "",
        "| method | "
        + " | ".join(f"N = {n}" for n in budget.sizes)
        + " | peak MiB (added) |",
    ]
    lines.append("|---|" + "---:|" * (len(budget.sizes) + 1))
    for t in times:
        cells = [f"{t.seconds[n]:.2f}" if n in t.seconds else "-" for n in budget.sizes]
        lines.append(
            f"| {t.method} | "
            + " | ".join(cells)
            + f" | {t.peak_mib:.0f} ({t.added_mib:.0f}) |"
        )
    for task in budget.tasks:
        name = TASKS[task].name
        points = [n for n in budget.checkpoints if n <= budget.trials]
        lines += [
            "",
            f"Best accuracy on {name} after N trials, mean (sd) over seeds "
            f"{list(budget.seeds)}; noise: split-to-split sd of the best setting "
            f"({budget.noise_splits} other fold splits) with the seeds' standard "
            "error; peak memory of the run:",
            "",
            "| method | "
            + " | ".join(f"N = {n}" for n in points)
            + " | noise | trials run | wall s | peak MiB (added) |",
            "|---|" + "---:|" * (len(points) + 4),
        ]
        for method in budget.methods:
            mine = [r for r in runs if r.task == task and r.method == method]
            if not mine:
                continue
            cells = []
            for n in points:
                mean, sd = _mean_sd(best_at_trials(runs, task, method, n))
                cells.append("-" if math.isnan(mean) else f"{mean:.4f} ({sd:.4f})")
            lines.append(
                f"| {method} | "
                + " | ".join(cells)
                + f" | {_noise(runs, task, method):.4f}"
                + f" | {min(len(r.best) for r in mine)}"
                + f" | {statistics.fmean(r.seconds[-1] for r in mine):.0f}"
                + f" | {max(r.peak_mib for r in mine):.0f}"
                + f" ({max(r.added_mib for r in mine):.0f}) |"
            )
        # Equal wall clock: the time the fastest method needed for all its trials.
        finished = [r.seconds[-1] for r in runs if r.task == task]
        clock = min(finished)
        cells = []
        for method in budget.methods:
            mine = [r for r in runs if r.task == task and r.method == method]
            if mine:
                mean, _ = _mean_sd([best_at_seconds(r, clock) for r in mine])
                cells.append(f"{method} {mean:.4f}")
        lines += [
            "",
            f"Best accuracy on {name} after {clock:.0f} s of wall clock: "
            + "; ".join(cells)
            + ".",
        ]
        lines += _verdicts(runs, task, budget)
    lines += [
        "",
        f"Absolute figures are from {machine}; every method ran with one torch "
        "and one BLAS/OpenMP thread, one trial at a time.",
    ]
    return "\n".join(lines)


def _verdicts(runs: list[RunResult], task: str, budget: Budget) -> list[str]:
    out = []
    n = max(
        (c for c in budget.checkpoints if c <= budget.trials), default=budget.trials
    )
    for ours in (SKETCH, AX_OURS):
        for peer in (GP, TPE, AX_DEFAULT):
            a, _ = _mean_sd(best_at_trials(runs, task, ours, n))
            b, _ = _mean_sd(best_at_trials(runs, task, peer, n))
            if math.isnan(a) or math.isnan(b):
                continue
            noise = 2 * math.hypot(_noise(runs, task, ours), _noise(runs, task, peer))
            if abs(a - b) <= noise:
                verdict = "within noise"
            else:
                verdict = "better" if a > b else "worse"
            out.append(
                f"- {ours} against {peer} at N = {n}: {a:.4f} against {b:.4f}, "
                f"{verdict} (twice the combined noise is {noise:.4f})"
            )
    return [""] + out if out else []


def plot(runs: list[RunResult], times: list[TimeResult], stem: str) -> list[str]:
    r"""Best score against trials and wall clock per task, and time per suggestion.

    Args:
        runs: The tuning runs.
        times: The timings.
        stem: The path prefix of the figures.

    Returns:
        The figure paths.
    """
    from matplotlib.figure import Figure

    paths = []
    for task in dict.fromkeys(r.task for r in runs):
        fig = Figure(figsize=(11, 4.2))
        left, right = fig.subplots(1, 2)
        for method in METHODS:
            mine = [r for r in runs if r.task == task and r.method == method]
            if not mine:
                continue
            color = None
            for i, r in enumerate(mine):
                (line,) = left.plot(
                    range(1, len(r.best) + 1),
                    r.best,
                    color=color,
                    label=method if i == 0 else None,
                    alpha=0.8,
                )
                color = line.get_color()
                right.plot(
                    r.seconds,
                    r.best,
                    color=color,
                    alpha=0.8,
                    label=method if i == 0 else None,
                )
        left.set_xlabel("trials")
        left.set_xscale("log")
        right.set_xlabel("wall clock [s]")
        right.set_xscale("log")
        for ax in (left, right):
            ax.set_ylabel("best cross-validated accuracy")
            ax.grid(alpha=0.3, which="both")
        left.legend(loc="lower right", fontsize=7)
        fig.suptitle(TASKS[task].name)
        fig.tight_layout()
        path = f"{stem}-{task}.png"
        fig.savefig(path, dpi=120)
        paths.append(path)
    fig = Figure(figsize=(6, 4.2))
    ax = fig.subplots()
    for t in times:
        ns = sorted(t.seconds)
        ax.plot(ns, [t.seconds[n] for n in ns], "o-", label=t.method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("trial N")
    ax.set_ylabel("seconds to suggest trial N")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = f"{stem}-suggest.png"
    fig.savefig(path, dpi=120)
    paths.append(path)
    return paths


def report(budget_name: str, stem: str, machine: str) -> tuple[str, list[str]]:
    r"""Run, plot and render (the runner for ``python -m benchmarks``).

    Args:
        budget_name: A key of :data:`BUDGETS`.
        stem: The path prefix of the figures.
        machine: A description of this machine.

    Returns:
        The Markdown text and the figure paths.
    """
    runs, times = run(budget_name)
    return render(runs, times, budget_name, machine), plot(runs, times, stem)
