r"""Proposing CPU per evaluation, the methods side by side in one process.

The grid's cells run in separate processes, at different times, two at a time:
their CPU seconds move with the machine's load (by a third between two
sessions of the same code). Here every method runs the same cells in one
single-threaded process, in turn (the order rotated from cell to cell), so the
ratios compare like with like. Each method first runs a short warm-up cell
(imports and first calls are not counted).

``python -m benchmarks.surrogate_cma cpu --dims 5 10 20`` writes
``docs/surrogate-cma-cpu.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from benchmarks.surrogate_cma.report import NAMES
from benchmarks.surrogate_cma.run import run_cell

#: The methods timed, the first the one the ratios are of.
METHODS = ("gp", "lq", "lq-cma-es")


def time_cells(
    dims: list[int],
    functions: list[int],
    instance: int = 2,
    budget: int = 2000,
    methods: tuple[str, ...] = METHODS,
) -> dict[tuple[str, int, int], float]:
    r"""Milliseconds of proposing CPU per evaluation, ``(method, dim, function)``."""
    for method in methods:  # warm-up: imports and first calls
        run_cell(method, 1, 2, instance, 1, 50, seed=instance)
    out = {}
    for k, (dim, function) in enumerate((d, f) for d in dims for f in functions):
        shift = k % len(methods)
        for method in methods[shift:] + methods[:shift]:
            record = run_cell(method, function, dim, instance, 1, budget, instance)
            out[(method, dim, function)] = 1e3 * record["cpu"][-1] / budget
            print(
                f"{method:10s} f{function:02d} d{dim}: "
                f"{out[(method, dim, function)]:.2f} ms per evaluation",
                flush=True,
            )
    return out


def render(times: dict[tuple[str, int, int], float], methods=METHODS) -> str:
    r"""Markdown: medians per method and dimension, and paired ratios."""
    dims = sorted({d for _, d, _ in times})
    functions = sorted({f for _, _, f in times})
    command = (
        "python -m benchmarks.surrogate_cma cpu --dims "
        + " ".join(map(str, dims))
        + " --functions "
        + " ".join(map(str, functions))
    )
    first = methods[0]
    lines = [
        "# Proposing CPU of `SurrogateCMAES`, side by side",
        "",
        "Every method ran the same `bbob` cells (q = 1, 2000 evaluations, "
        "instance 2) in one single-threaded process, in turn; milliseconds of "
        "proposing CPU (`time.process_time`, the objective excluded) per "
        "evaluation. Absolute figures move with the machine's load; the ratios "
        f"compare like with like. Regenerate with `{command}`.",
        "",
        "| method | d | median ms per evaluation | geometric mean of "
        f"{NAMES[first]}'s / the method's, cell by cell | cells |",
        "|---|---|---|---|---|",
    ]
    for dim in dims:
        for method in methods:
            cells = sorted(f for m, d, f in times if m == method and d == dim)
            if not cells:
                continue
            values = [times[(method, dim, f)] for f in cells]
            ratios = [
                math.log(times[(first, dim, f)] / times[(method, dim, f)])
                for f in cells
                if (first, dim, f) in times
            ]
            ratio = "-" if method == first else f"{math.exp(np.mean(ratios)):.2f}"
            lines.append(
                f"| {NAMES[method]} | {dim} | {np.median(values):.2f} | {ratio} | "
                f"{len(cells)} |"
            )
    return "\n".join(lines) + "\n"


def write(times: dict[tuple[str, int, int], float], docs: Path) -> Path:
    r"""Write ``docs/surrogate-cma-cpu.md``."""
    Path(docs).mkdir(parents=True, exist_ok=True)
    path = Path(docs) / "surrogate-cma-cpu.md"
    path.write_text(render(times))
    return path
