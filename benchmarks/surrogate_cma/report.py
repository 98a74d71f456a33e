r"""The surrogate-assisted CMA-ES grid's report, regenerated whole from its cells."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

#: The evaluation counts each setting's tables compare at.
CHECKPOINTS = {"q1": (1000, 2000), "q100": (1000, 3000, 10_000)}
#: COCO's targets: 10^k above the optimum, k from 2 down to -8.
TARGETS = 10.0 ** np.linspace(2, -8, 51)
#: Regrets below this are the optimum (COCO's final target).
REACHED = 1e-8
#: The names in the report.
NAMES = {
    "gp": "GP (SurrogateCMAES)",
    "gp-lcb": "GP, kappa = 1",
    "lq": "LQ pipeline (residual=False)",
    "lq-cma-es": "lq-CMA-ES (pycma, sequential)",
    "cma-es": "CMA-ES (IPOP)",
    "turbo-enn": "TuRBO-ENN",
    "screened": "ScreenedCMAES (sparse GP screen)",
}
SETTING_TITLES = {
    "q1": "sequential (q = 1) to 2000 evaluations",
    "q100": "batches of q = 100 to 10^4 evaluations",
}


def _load(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))]


def _at(record: dict[str, Any], count: int) -> float:
    # The best regret after ``count`` evaluations (the last recorded before).
    evaluations = np.asarray(record["evaluations"])
    i = np.searchsorted(evaluations, count, side="right") - 1
    return float(record["regret"][i]) if i >= 0 else float("inf")


def _at_cpu(record: dict[str, Any], seconds: float) -> float:
    # The best regret once ``seconds`` of proposing CPU are spent.
    cpu = np.asarray(record["cpu"])
    i = np.searchsorted(cpu, seconds, side="right") - 1
    return float(record["regret"][i]) if i >= 0 else float("inf")


def _fmt(value: float) -> str:
    return "opt" if value < REACHED else f"{value:.3g}"


def _better_or_equal(a: float, b: float) -> bool:
    return a <= b or (a < REACHED and b < REACHED)


def _ecdf(records: list[dict[str, Any]], grid: np.ndarray, key: str) -> np.ndarray:
    # The fraction of (cell, target) pairs reached by each point of ``grid``.
    reached = np.zeros(len(grid))
    for r in records:
        x = np.asarray(r["evaluations"] if key == "evaluations" else r["cpu"])
        regret = np.asarray(r["regret"])
        for t in TARGETS:
            hit = np.nonzero(regret <= t)[0]
            if hit.size:
                reached += grid >= x[hit[0]]
    return reached / max(1, len(records) * len(TARGETS))


def _figure(groups: dict[str, list], setting: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    budget = max(r["budget"] for rs in groups.values() for r in rs)
    evaluations = np.geomspace(1, budget, 200)
    top = max(max(r["cpu"][-1] for r in rs) for rs in groups.values())
    seconds = np.geomspace(1e-3, max(top, 1e-2), 200)
    for method, records in groups.items():
        label = NAMES.get(method, method)
        axes[0].plot(
            evaluations, _ecdf(records, evaluations, "evaluations"), label=label
        )
        axes[1].plot(seconds, _ecdf(records, seconds, "cpu"), label=label)
    axes[0].set_xlabel("evaluations")
    axes[1].set_xlabel("proposing CPU seconds (one thread)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction of (function, target) pairs reached")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"bbob, {SETTING_TITLES[setting]}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _setting_section(setting: str, records: list[dict], docs: Path) -> list[str]:
    by: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for r in records:
        by[r["method"]][(r["function"], r["dim"], r["instance"])] = r
    methods = [m for m in NAMES if m in by]
    if "gp" not in methods:
        return []
    problems = sorted(set.intersection(*(set(by[m]) for m in methods)))
    if not problems:
        return []
    dims = sorted({p[1] for p in problems})
    instances = sorted({p[2] for p in problems})
    functions = sorted({p[0] for p in problems})
    checkpoints = CHECKPOINTS[setting]
    lines = [
        f"## {SETTING_TITLES[setting].capitalize()}",
        "",
        f"d = {', '.join(map(str, dims))}; instances {', '.join(map(str, instances))} "
        f"(one run each, seeded by the instance); {len(functions)} functions. "
        "Values are the best true value found minus the optimum (`opt`: below "
        "1e-8), the median over instances.",
        "",
    ]
    figure = docs / f"surrogate-cma-{setting}.png"
    _figure({m: [by[m][p] for p in problems] for m in methods}, setting, figure)
    lines += [f"![ECDF, {setting}]({figure.name})", ""]

    def median(method: str, f: int, d: int, count: int) -> float:
        return float(np.median([_at(by[method][(f, d, i)], count) for i in instances]))

    # Win counts of the GP against each method.
    lines += [
        "| GP at least as good as | " + " | ".join(f"@{c}" for c in checkpoints) + " |",
        "|---|" + "---|" * len(checkpoints),
    ]
    pairs = [(f, d) for d in dims for f in functions]
    for other in methods:
        if other == "gp":
            continue
        counts = [
            sum(
                _better_or_equal(median("gp", f, d, c), median(other, f, d, c))
                for f, d in pairs
            )
            for c in checkpoints
        ]
        lines.append(
            f"| {NAMES[other]} | "
            + " | ".join(f"{k} of {len(pairs)}" for k in counts)
            + " |"
        )
    lines.append("")
    # CPU per evaluation.
    lines += ["| method | proposing CPU per evaluation (median, ms) |", "|---|---|"]
    for m in methods:
        per = [by[m][p]["cpu"][-1] / by[m][p]["evaluations"][-1] for p in problems]
        lines.append(f"| {NAMES[m]} | {1000 * float(np.median(per)):.2f} |")
    lines.append("")
    # Equal CPU against TuRBO-ENN.
    if "turbo-enn" in by:
        wins = 0
        for f, d in pairs:
            ours, theirs = [], []
            for i in instances:
                peer = by["turbo-enn"][(f, d, i)]
                ours.append(_at_cpu(by["gp"][(f, d, i)], peer["cpu"][-1]))
                theirs.append(peer["regret"][-1])
            wins += _better_or_equal(float(np.median(ours)), float(np.median(theirs)))
        lines += [
            f"At TuRBO-ENN's proposing CPU seconds for the whole budget, the GP's "
            f"best is at least TuRBO-ENN's on {wins} of {len(pairs)} problems.",
            "",
        ]
    # The table.
    head = " | ".join(
        f"{NAMES[m].split(' (')[0]} @{c}" for c in checkpoints for m in methods
    )
    lines += [f"| f | {head} |", "|---|" + "---|" * (len(checkpoints) * len(methods))]
    for d in dims:
        for f in functions:
            cells = []
            for c in checkpoints:
                values = {m: median(m, f, d, c) for m in methods}
                best = min(values.values())
                for m in methods:
                    text = _fmt(values[m])
                    cells.append(
                        f"**{text}**" if _better_or_equal(values[m], best) else text
                    )
            lines.append(f"| f{f} d{d} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def write_report(folder: Path, docs: Path) -> Path:
    r"""Write ``docs/surrogate-cma.md`` and its figures from the cells in ``folder``."""
    records = _load(folder)
    docs.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Does the GP earn its place in surrogate-assisted CMA-ES?",
        "",
        "The question: on COCO's `bbob` functions (rotated, ill-conditioned, "
        "multimodal), does CMA-ES whose populations a GP in CMA-ES's own metric "
        "mostly evaluates (`SurrogateCMAES`) beat lq-CMA-ES, the same pipeline "
        "with lq-CMA-ES's regression alone, and the batch peers, per evaluation "
        "and per CPU second? Regenerate with "
        "`python -m benchmarks.surrogate_cma run --setting q1` (and `q100`), then "
        "`python -m benchmarks.surrogate_cma report`. CPU seconds are one "
        "thread's `time.process_time` of proposing (the objective excluded), "
        "on a 2-core machine running two cells at a time.",
        "",
    ]
    for setting in CHECKPOINTS:
        lines += _setting_section(
            setting, [r for r in records if r.get("setting") == setting], docs
        )
    path = docs / "surrogate-cma.md"
    path.write_text("\n".join(lines))
    return path
