r"""The surrogate-assisted CMA-ES grid's report, regenerated whole from its cells."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

#: The evaluation counts each setting's tables compare at.
CHECKPOINTS = {
    "q1": (1000, 2000),
    "q100": (1000, 3000, 10_000),
    "high": (1000, 3000, 10_000),
}
#: COCO's targets: 10^k above the optimum, k from 2 down to -8.
TARGETS = 10.0 ** np.linspace(2, -8, 51)
#: Regrets below this are the optimum (COCO's final target).
REACHED = 1e-8
#: The names in the report.
NAMES = {
    "gp": "GP (SurrogateCMAES)",
    "gp-always": "GP throughout (select=False)",
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
    "high": "rover-60 and Levy-100, batches of q = 100 to 10^4 evaluations",
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
    problems = sorted(
        {(f, d) for f, d, _ in by["gp"]},
        key=lambda p: (p[1], isinstance(p[0], str), str(p[0]).zfill(3)),
    )
    checkpoints = (
        CHECKPOINTS[setting] if setting in CHECKPOINTS else (1000, 3000, 10_000)
    )

    def shared(method: str, f: object, d: int) -> list[int]:
        # The instances both the GP and ``method`` ran (pairs compare on these).
        mine = {i for g, e, i in by["gp"] if (g, e) == (f, d)}
        return sorted(mine & {i for g, e, i in by[method] if (g, e) == (f, d)})

    def median(method: str, f: object, d: int, count: int, among: list[int]) -> float:
        return float(np.median([_at(by[method][(f, d, i)], count) for i in among]))

    instances = sorted({i for _, _, i in by["gp"]})
    dims = sorted({d for _, d in problems})
    lines = [
        f"## {SETTING_TITLES[setting][0].upper()}{SETTING_TITLES[setting][1:]}",
        "",
        f"{len(problems)} problems (d = {', '.join(map(str, dims))}); instances "
        f"{', '.join(map(str, instances))}, one run each, seeded by the instance; "
        "a method is compared with the GP on the instances both ran. Values are "
        "the best true value found minus the optimum (`opt`: below 1e-8), the "
        "median over instances; smaller is better.",
        "",
    ]
    complete = [
        (f, d, i)
        for f, d in problems
        for i in instances
        if all((f, d, i) in by[m] for m in methods)
    ]
    if complete:
        figure = docs / f"surrogate-cma-{setting}.png"
        _figure({m: [by[m][p] for p in complete] for m in methods}, setting, figure)
        lines += [
            f"![ECDF of {len(complete)} runs per method, {setting}]({figure.name})",
            "",
            f"The figure: the fraction of (run, target) pairs reached, targets "
            f"10^k above the optimum for k from 2 to -8, over the {len(complete)} "
            "runs every method finished; left against evaluations, right "
            "against proposing CPU seconds.",
            "",
        ]
    # Win counts of the GP against each method, per evaluation and per CPU,
    # per dimension.
    head = " | ".join(f"@{c} evaluations" for c in checkpoints)
    lines += [
        f"| the GP at least as good as | d | {head} | at the method's CPU seconds "
        "for its budget | its runs |",
        "|---|---|" + "---|" * (len(checkpoints) + 2),
    ]
    for other in methods:
        if other == "gp":
            continue
        for dim in dims:
            pairs = [(f, d, shared(other, f, d)) for f, d in problems if d == dim]
            pairs = [(f, d, a) for f, d, a in pairs if a]
            if not pairs:
                continue
            counts = [
                sum(
                    _better_or_equal(
                        median("gp", f, d, c, a), median(other, f, d, c, a)
                    )
                    for f, d, a in pairs
                )
                for c in checkpoints
            ]
            at_cpu = 0
            for f, d, among in pairs:
                ours = [
                    _at_cpu(by["gp"][(f, d, i)], by[other][(f, d, i)]["cpu"][-1])
                    for i in among
                ]
                theirs = [by[other][(f, d, i)]["regret"][-1] for i in among]
                at_cpu += _better_or_equal(
                    float(np.median(ours)), float(np.median(theirs))
                )
            runs = sum(len(a) for _, _, a in pairs)
            lines.append(
                f"| {NAMES[other]} | {dim} | "
                + " | ".join(f"{k} of {len(pairs)}" for k in counts)
                + f" | {at_cpu} of {len(pairs)} | {runs} |"
            )
    lines.append("")
    lines += _paired_table(by, methods, dims, checkpoints)
    # CPU per evaluation.
    lines += [
        "| proposing CPU per evaluation, ms (median over runs) | "
        + " | ".join(f"d = {d}" for d in dims)
        + " |",
        "|---|" + "---|" * len(dims),
    ]
    for m in methods:
        cells = []
        for dim in dims:
            per = [
                r["cpu"][-1] / r["evaluations"][-1]
                for (_, d, _), r in by[m].items()
                if d == dim
            ]
            cells.append(f"{1000 * float(np.median(per)):.2f}" if per else "-")
        lines.append(f"| {NAMES[m]} | " + " | ".join(cells) + " |")
    lines.append("")
    # One table per checkpoint.
    short = {m: NAMES[m].split(" (")[0] for m in methods}
    for c in checkpoints:
        lines += [
            f"Best value minus the optimum after {c} evaluations (bold: the "
            "smallest of the row):",
            "",
            "| problem | " + " | ".join(short[m] for m in methods) + " |",
            "|---|" + "---|" * len(methods),
        ]
        for f, d in problems:
            values = {}
            for m in methods:
                among = [i for i in instances if (f, d, i) in by[m]]
                values[m] = median(m, f, d, c, among) if among else None
            finite = [v for v in values.values() if v is not None]
            best = min(finite)
            cells = []
            for m in methods:
                v = values[m]
                if v is None:
                    cells.append("-")
                    continue
                text = _fmt(v)
                cells.append(f"**{text}**" if _better_or_equal(v, best) else text)
            label = f"f{f} d{d}" if isinstance(f, int) else f"{f}"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _paired_table(
    by: dict[str, dict[tuple, dict]],
    methods: list[str],
    dims: list[int],
    checkpoints: tuple[int, ...],
) -> list[str]:
    # Run by run (same problem, same instance): the mean of log10 of the GP's
    # regret over the method's, regrets floored at COCO's final target; with
    # its standard error. It pools every run, where a win count compares
    # medians of a few.
    head = " | ".join(f"@{c}" for c in checkpoints)
    lines = [
        "Run by run (same problem and instance), the mean of log10(the GP's "
        "regret / the method's), regrets floored at 1e-8, with its standard "
        "error; negative: the GP is ahead (-1: ten times closer to the optimum).",
        "",
        f"| the GP against | d | {head} | runs |",
        "|---|---|" + "---|" * (len(checkpoints) + 1),
    ]
    for other in methods:
        if other == "gp":
            continue
        for dim in dims:
            keys = [k for k in by["gp"] if k[1] == dim and isinstance(k[0], int)]
            keys = [k for k in keys if k in by[other]]
            if len(keys) < 2:
                continue
            cells = []
            for c in checkpoints:
                ratios = np.log10(
                    [
                        max(_at(by["gp"][k], c), REACHED)
                        / max(_at(by[other][k], c), REACHED)
                        for k in keys
                    ]
                )
                error = ratios.std(ddof=1) / np.sqrt(len(ratios))
                cells.append(f"{ratios.mean():+.2f} ± {error:.2f}")
            lines.append(
                f"| {NAMES[other]} | {dim} | " + " | ".join(cells) + f" | {len(keys)} |"
            )
    return lines + [""] if len(lines) > 4 else []


def write_report(folder: Path, docs: Path) -> Path:
    r"""Write ``docs/surrogate-cma.md`` and its figures from the cells in ``folder``."""
    records = _load(folder)
    docs.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Does the GP earn its place in surrogate-assisted CMA-ES?",
        "",
        "The question: on COCO's `bbob` functions (rotated, ill-conditioned, "
        "multimodal), does CMA-ES whose populations a GP in CMA-ES's own metric "
        "mostly evaluates (`SurrogateCMAES`, which predicts with the regression "
        "alone where that ranks the recent points at least as well) beat "
        "lq-CMA-ES, the same pipeline with lq-CMA-ES's regression alone, the "
        "GP throughout, and the batch peers, per evaluation and per CPU second? "
        "Regenerate with "
        "`python -m benchmarks.surrogate_cma run --setting q1` (and `q100`), then "
        "`python -m benchmarks.surrogate_cma report`. CPU seconds are one "
        "thread's `time.process_time` of proposing (the objective excluded; "
        "torch and BLAS on one thread), on a 2-core machine running two cells "
        "at a time; they move with the machine's load, and a method's cells ran "
        "together, so CPU compares best in "
        "[the methods timed side by side in one process](surrogate-cma-cpu.md).",
        "",
    ]
    for setting in CHECKPOINTS:
        lines += _setting_section(
            setting, [r for r in records if r.get("setting") == setting], docs
        )
    path = docs / "surrogate-cma.md"
    path.write_text("\n".join(lines))
    return path
