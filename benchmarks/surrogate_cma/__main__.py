r"""Does the GP earn its place in surrogate-assisted CMA-ES? The grid and its report.

Run the grid (each cell a single-threaded process, written as it finishes;
cells already written are skipped), then regenerate the report whole::

    python -m benchmarks.surrogate_cma run --setting q1 --dims 20 --instances 2 3
    python -m benchmarks.surrogate_cma run --setting q100 --dims 20 --instances 2 3
    python -m benchmarks.surrogate_cma run --setting high --instances 2 3
    python -m benchmarks.surrogate_cma report
    python -m benchmarks.surrogate_cma cpu --dims 5 10 20  # side by side, one process

``--functions`` narrows the 24 ``bbob`` functions, ``--workers`` sets the
processes (default 2), ``--out`` the cells' folder, ``--docs`` where the
report and its figures go.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from pathlib import Path

from benchmarks.surrogate_cma.run import HIGH, SETTINGS, cell_path, run_and_write

#: The cost order of the methods (the dearest first, for the pool's balance).
COST = (
    "lq-cma-es",
    "gp",
    "gp-lcb",
    "gp-always",
    "lq",
    "turbo-enn",
    "screened",
    "cma-es",
)


def main(argv: list[str] | None = None) -> None:
    r"""The command line: ``run`` a grid's cells or ``report`` them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.surrogate_cma")
    parser.add_argument("command", choices=("run", "report", "cpu"))
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="q1")
    parser.add_argument("--dims", type=int, nargs="+", default=[20])
    parser.add_argument("--instances", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--functions", type=int, nargs="+", default=range(1, 25))
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--budget", type=int, default=None, help="evaluations (default: the setting's)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("benchmark-results/surrogate-cma"),
        help="the folder of the cells' records (one JSON file each)",
    )
    parser.add_argument(
        "--docs", type=Path, default=Path("docs"), help="where the report goes"
    )
    args = parser.parse_args(argv)
    if args.command == "cpu":
        from benchmarks.surrogate_cma import cpu

        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")  # before NumPy's BLAS starts
        times = cpu.time_cells(
            args.dims, list(args.functions), args.instances[0], args.budget or 2000
        )
        print(cpu.write(times, args.docs))
        return
    if args.command == "report":
        from benchmarks.surrogate_cma.report import write_report

        print(write_report(args.out, args.docs))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    methods = args.methods or SETTINGS[args.setting][2]
    functions = HIGH if args.setting == "high" else args.functions
    dims = [0] if args.setting == "high" else args.dims  # the problems' own
    cells = [
        (m, f, d, i)
        for m in methods
        for d in dims
        for f in functions
        for i in args.instances
        if not cell_path(args.out, args.setting, (m, f, d, i)).exists()
    ]
    cells.sort(key=lambda c: (COST.index(c[0]), -c[2]))
    print(f"{len(cells)} cells to run", flush=True)
    # One thread per cell, BLAS included: the workers read these as they
    # start, before NumPy loads (multithreaded BLAS counts its spinning
    # threads as process time).
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.workers, maxtasksperchild=1) as pool:
        jobs = [(str(args.out), args.setting, c, args.budget) for c in cells]
        for k, name in enumerate(pool.imap_unordered(run_and_write, jobs), 1):
            print(f"[{k}/{len(cells)}] {name}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
