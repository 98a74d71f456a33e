#!/usr/bin/env python3
r"""``python -m benchmarks NAME [--budget small|large] [--out DIR]``.

Run from the repository's root (``benchmarks`` is not part of the installed
package). Without ``NAME`` it prints the menu: each benchmark with the question
it answers. ``scale`` and ``throughput`` also take ``--device cuda``: their
report is then ``DIR/NAME-BUDGET-cuda.md``, beside the CPU one, and
``--collect`` gathers both.

``NAME`` ``all`` runs every benchmark and ``DIR/BENCHMARKS.md`` collects their
tables (ratios first, then absolute figures with the machine they came from).

The large budget of all of them takes hours on 2 cores, so they are usually run
one at a time (``make bench BENCH=name``); ``--collect DIR --to FILE`` then
gathers the reports and figures a set of such runs left in ``DIR`` into one
file, without running anything (the repository's ``BENCHMARKS.md`` is made so
from ``docs/``).
"""

from __future__ import annotations

import argparse
import inspect
import os
import platform
import sys
from collections.abc import Callable
from functools import partial

import torch

from benchmarks import (
    bandits,
    bo,
    catalogue,
    contextual,
    default_fit,
    demo,
    fantasies,
    gssbo,
    gssbo_cost,
    inference,
    iteration,
    large_batch,
    linear,
    scale,
    suggest,
    throughput,
    tuning,
    tuning_peers,
)

CPU = torch.device("cpu")


def machine(threads: int | None = None, device: torch.device | None = None) -> str:
    r"""A one-line description of this machine, for the absolute figures.

    Args:
        threads: The torch threads the run used, if it set its own; by default
            the current setting.
        device: The GPU the run used, if any; it is named with its CUDA version.
    """
    threads = torch.get_num_threads() if threads is None else threads
    where = (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with {threads} threads"
    )
    if device is not None and device.type == "cuda":
        where += (
            f", on an {torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
        )
    return where


def _inference(budget: str, stem: str) -> tuple[str, list[str]]:
    # The run sets its own thread count (one on the small budget) and restores it.
    rows, d_eff = inference.run(budget)
    inference.plot(rows, stem + ".png")
    text = inference.render(rows, d_eff, machine(inference.BUDGETS[budget].threads))
    return text, [stem + ".png"]


def _bandits(budget: str, stem: str) -> tuple[str, list[str]]:
    rows, traces = bandits.run(budget)
    return bandits.render(rows, machine()), bandits.plot(traces, stem)


def _linear(budget: str, stem: str) -> tuple[str, list[str]]:
    rows = linear.run(budget)
    linear.plot(rows, stem + ".png")
    return linear.render(rows, machine()), [stem + ".png"]


def _contextual(budget: str, stem: str) -> tuple[str, list[str]]:
    rows, traces = contextual.run(budget)
    return contextual.render(rows, machine()), contextual.plot(traces, stem)


def _gssbo(budget: str, stem: str, workers: int = 2) -> tuple[str, list[str]]:
    # The cells' records go to benchmark-results/gssbo-BUDGET (resumable).
    rows = gssbo.run(budget, workers=workers)
    return gssbo.render(rows, machine(1)), gssbo.plot(rows, stem)


def _gssbo_cost(budget: str, stem: str) -> tuple[str, list[str]]:
    spec, rows = gssbo_cost.run(budget)
    return gssbo_cost.render(spec, rows, machine(1)), []


def _bo(budget: str, stem: str) -> tuple[str, list[str]]:
    return bo.report(budget, stem, machine())


def _iteration(budget: str, stem: str) -> tuple[str, list[str]]:
    return iteration.render(iteration.run(budget), machine()), []


def _default_fit(budget: str, stem: str) -> tuple[str, list[str]]:
    # The rows carry their own thread counts.
    where = machine().rsplit(" with ", 1)[0] + ", threads per row"
    return default_fit.render(default_fit.run(budget), where), []


def _scale(budget: str, stem: str, device: torch.device = CPU) -> tuple[str, list[str]]:
    text = scale.render(scale.run(budget, device=device), machine(device=device))
    if device.type != "cpu":
        return text + "\n\n(The sharded case runs on CPU workers only.)", []
    try:
        import ray  # noqa: F401
    except ImportError:
        return text + "\n\n(The sharded case needs the ray extra.)", []
    sharded = scale.render_sharded(scale.run_sharded(budget), machine(1))
    return text + "\n\n" + sharded, []


def _throughput(
    budget: str, stem: str, device: torch.device = CPU
) -> tuple[str, list[str]]:
    rows = throughput.run(budget, device=device)
    return throughput.render(rows, machine(device=device)), []


def _fantasies(budget: str, stem: str) -> tuple[str, list[str]]:
    return fantasies.render(fantasies.run(budget), machine()), []


def _tuning(budget: str, stem: str) -> tuple[str, list[str]]:
    return tuning.report(budget, stem, machine())


def _suggest(budget: str, stem: str) -> tuple[str, list[str]]:
    parts = []
    if suggest.BUDGETS[budget].sizes:
        parts.append(suggest.render(suggest.run(budget), machine(threads=1)))
    if suggest.BUDGETS[budget].regret_trials:
        parts.append(suggest.render_regret(suggest.run_regret(budget)))
    return "\n\n".join(parts), []


def _tuning_peers(budget: str, stem: str) -> tuple[str, list[str]]:
    return tuning_peers.report(budget, stem, machine(threads=1))


def _demo(budget: str, stem: str) -> tuple[str, list[str]]:
    return demo.report(budget, stem, machine())


#: Each benchmark: (title, runner writing its figures and returning its tables).
BENCHMARKS: dict[str, tuple[str, Callable[[str, str], tuple[str, list[str]]]]] = {
    "inference": ("NystromGP against SingleTaskGP, SVGP and SGPR", _inference),
    "bandits": ("BKB against exact GP-UCB", _bandits),
    "linear": ("fLinUCB-GD against LinUCB", _linear),
    "contextual": ("EK-UCB against KernelUCB, CBKB and CBBKB", _contextual),
    "bo": ("Closed-loop BO: NystromGP against SingleTaskGP and the rest", _bo),
    "iteration": ("One BO iteration: fit + optimize_acqf, medians", _iteration),
    "default-fit": ("The default NystromGP fit against SingleTaskGP", _default_fit),
    "gssbo": ("GSSBO against the full SingleTaskGP and a random subset", _gssbo),
    "gssbo-cost": ("One GSSBO iteration against the full GP's, by size", _gssbo_cost),
    "scale": ("NystromGP up to a million observations", _scale),
    "throughput": ("The posterior over many candidates against matmul", _throughput),
    "fantasies": ("Fantasies by Woodbury steps against refactorising", _fantasies),
    "tuning": ("botorch-sketch tune against Ax's default model", _tuning),
    "tuning-peers": (
        "Our samplers against GPSampler, TPESampler, BoTorchSampler and Ax",
        _tuning_peers,
    ),
    "suggest": ("Seconds to suggest trial N: Optuna samplers", _suggest),
    "demo": ("IncrementalGP's iterations stay flat, the exact GP's grow", _demo),
}

#: The benchmarks that run on a GPU as well (``--device``).
ON_DEVICE = ("scale", "throughput")
#: Report suffixes ``--collect`` looks for, after the CPU report.
DEVICE_SUFFIXES = {"-cuda": "on CUDA"}

#: The budgets every benchmark has.
BOTH = ("small", "large")
#: Budgets of one benchmark only.
EXTRA: dict[str, list[str]] = {
    "bo": [b for b in bo.BUDGETS if b not in BOTH] + list(large_batch.GRIDS),
    "gssbo": [b for b in gssbo.BUDGETS if b not in BOTH],
    "iteration": [b for b in iteration.BUDGETS if b not in BOTH],
    "tuning-peers": [b for b in tuning_peers.BUDGETS if b not in BOTH],
    "suggest": [b for b in suggest.BUDGETS if b not in BOTH],
}


def _section(
    name: str, text: str, figures: list[str], relative_to: str, where: str = ""
) -> str:
    title = BENCHMARKS[name][0] + (f", {where}" if where else "")
    images = "\n".join(
        f"![{name}]({os.path.relpath(path, relative_to)})" for path in figures
    )
    return f"## {title} (`{name}`)\n\n{text}\n\n{images}\n"


def _write_report(path: str, budget: str, sections: list[str], how: str) -> None:
    with open(path, "w") as f:
        f.write(f"# Benchmarks ({budget} budget)\n\n{how}\n\n" + "\n".join(sections))
    print(f"wrote {path}")


def collect(directory: str, budget: str, path: str) -> list[str]:
    r"""Gather the reports ``DIR/NAME-BUDGET.md`` of separate runs into one file.

    Each report's heading and image links are dropped and its figures
    (``NAME-BUDGET*.png`` in the same folder) are linked relative to ``path``.
    Benchmarks without a report are listed as not run.

    Args:
        directory: The folder the runs wrote to (their ``--out``).
        budget: ``"small"`` or ``"large"``.
        path: The file to write.

    Returns:
        The names of the benchmarks whose reports were found.
    """
    found, missing, sections = [], [], []
    where = os.path.dirname(os.path.abspath(path))
    for name in BENCHMARKS:
        # The CPU report, then those of other devices (``--device``), if run.
        for suffix, device in {"": "", **DEVICE_SUFFIXES}.items():
            stem = f"{name}-{budget}{suffix}"
            report = os.path.join(directory, stem + ".md")
            if os.path.exists(report):
                sections.append(_gathered(name, report, stem, where, device))
                if name not in found:
                    found.append(name)
        if name not in found:
            missing.append(name)
    how = (
        "Each section comes from its own run of "
        f"`python -m benchmarks NAME --budget {budget}` "
        "(`make bench BENCH=NAME`), gathered by "
        f"`python -m benchmarks --collect {directory} "
        f"--budget {budget} --to {os.path.basename(path)}`."
    )
    if missing:
        how += " Not run: " + ", ".join(f"`{name}`" for name in missing) + "."
    _write_report(path, budget, sections, how)
    return found


def _gathered(name: str, report: str, stem: str, where: str, device: str = "") -> str:
    # A report's heading and image links are dropped: its figures (STEM*.png
    # beside it, not those of another device's report) are linked below,
    # relative to the gathered file.
    directory = os.path.dirname(report)
    others = tuple(stem + suffix for suffix in DEVICE_SUFFIXES)
    with open(report) as f:
        body = f.read().split("\n", 1)[1]
    text = "\n".join(
        line for line in body.splitlines() if not line.startswith("![")
    ).strip()
    figures = sorted(
        os.path.join(directory, file)
        for file in os.listdir(directory)
        if file.startswith(stem)
        and not file.startswith(others)
        and file.endswith(".png")
    )
    return _section(name, text, figures, where, device)


def collect_cells(directories: list[str], budget: str, path: str) -> int:
    r"""Merge the cells of bo's headline grid from several runs into one report.

    Args:
        directories: The runs' ``--out`` folders (a cell in several is read
            from the first).
        budget: A grid of :data:`~benchmarks.large_batch.GRIDS`.
        path: The report to write; its figures go beside it.

    Returns:
        The number of cells merged.
    """
    # Only the budget's own cells, run at its settings (a smaller budget's
    # cells of the same problem, method and seed are not its).
    records = large_batch.cells_of(budget, large_batch.read_cells(directories))
    wanted = large_batch.GRIDS[budget].cells
    stem = os.path.splitext(path)[0]
    text = large_batch.render(records, machine(threads=1))
    figures = large_batch.plot(records, stem)
    missing = len(wanted) - len(records)
    how = (
        f"{len(records)} cells merged from {', '.join(directories)} by "
        f"`python -m benchmarks --collect {' '.join(directories)} "
        f"--budget {budget} --to {os.path.basename(path)}`"
        + (f"; {missing} cells of the grid not run." if missing else ".")
    )
    where = os.path.dirname(os.path.abspath(path))
    _write_report(path, budget, [_section("bo", text, figures, where)], how)
    return len(records)


def _shard(parser: argparse.ArgumentParser, value: str) -> tuple[int, int]:
    try:
        i, k = (int(v) for v in value.split("/"))
    except ValueError:
        i, k = -1, 0
    if not 0 <= i < k:
        parser.error(f"--shard must be I/K with 0 <= I < K, got {value!r}.")
    return i, k


def _device(parser: argparse.ArgumentParser, args: argparse.Namespace) -> torch.device:
    # Checked before anything runs: a typo or a missing GPU is named at once.
    try:
        device = torch.device(args.device)
    except RuntimeError:
        parser.error(f"--device {args.device!r} is not a torch device (cpu or cuda).")
    if device.type == "cpu":
        return device
    if f"-{device.type}" not in DEVICE_SUFFIXES:
        parser.error(f"--device {args.device}: only cpu and cuda are supported.")
    if not torch.cuda.is_available():
        parser.error(f"--device {args.device}: this torch sees no CUDA device.")
    if args.collect is not None:
        parser.error("--collect runs nothing: it takes no --device.")
    if args.benchmark not in ON_DEVICE:
        parser.error(
            f"--device {args.device} applies to {' and '.join(ON_DEVICE)} only; "
            "name one of them."
        )
    return device


def main(argv: list[str] | None = None) -> int:
    r"""Run one benchmark or all of them, print the tables and write them.

    Without a benchmark's name (and without ``--collect``) it prints the menu
    (:func:`~benchmarks.catalogue.menu`) and runs nothing.
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run a benchmark on a budget and write its report to --out.",
        epilog=catalogue.help_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "benchmark",
        nargs="?",
        choices=[*BENCHMARKS, "all"],
        metavar="NAME",
        help="a benchmark (listed below), or all to run every one; without a "
        "name, the menu of benchmarks and the questions they answer",
    )
    parser.add_argument(
        "--budget",
        choices=list(
            dict.fromkeys(["small", "large", *(b for v in EXTRA.values() for b in v)])
        ),
        default="small",
        metavar="BUDGET",
        help="small (the default) or large; also "
        + "; ".join(f"{k}: {', '.join(v)}" for k, v in EXTRA.items())
        + " (what each runs and how long: below)",
    )
    parser.add_argument(
        "--out",
        default="benchmark-results",
        metavar="DIR",
        help="the folder the reports (NAME-BUDGET.md) and figures go to "
        "[benchmark-results]",
    )
    parser.add_argument(
        "--collect",
        metavar="DIR",
        nargs="+",
        help="gather the reports of earlier runs in DIR instead of running (for "
        "bo's headline grids, the cells of one or more runs' folders)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="bo headline grids and gssbo: cells run at once, one thread each [2]",
    )
    parser.add_argument(
        "--shard",
        default="0/1",
        help="bo headline grids: I/K runs every K-th cell from the I-th [0/1]",
    )
    parser.add_argument(
        "--to", default="BENCHMARKS.md", help="the file --collect writes"
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help=f"cpu, or cuda for {' and '.join(ON_DEVICE)} [cpu]",
    )
    args = parser.parse_args(argv)
    device = _device(parser, args)
    if args.collect is not None:
        if args.benchmark is not None:
            parser.error("--collect runs nothing: give no benchmark name.")
        if args.budget in large_batch.GRIDS:
            collect_cells(args.collect, args.budget, args.to)
            return 0
        if len(args.collect) != 1:
            parser.error("--collect takes one folder, except for bo's headline grids.")
        collect(args.collect[0], args.budget, args.to)
        return 0
    if args.benchmark is None:
        print(catalogue.menu())
        return 0
    shard = _shard(parser, args.shard)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}.")
    names = list(BENCHMARKS) if args.benchmark == "all" else [args.benchmark]
    if args.budget not in BOTH:
        owners = [k for k, v in EXTRA.items() if args.budget in v]
        if len(names) != 1 or names[0] not in owners:
            parser.error(
                f"--budget {args.budget} is a budget of the {' and '.join(owners)} "
                "benchmark only."
            )
    os.makedirs(args.out, exist_ok=True)
    sections = []
    suffix = "" if device.type == "cpu" else f"-{device.type}"
    for name in names:
        runner = BENCHMARKS[name][1]
        stem = os.path.join(args.out, f"{name}-{args.budget}{suffix}")
        if device.type != "cpu":  # then name is one of ON_DEVICE
            runner = partial(runner, device=device)
        if name == "bo" and args.budget in large_batch.GRIDS:
            runner = partial(
                large_batch.report,
                out=args.out,
                machine=machine(threads=1),
                workers=args.workers,
                shard=shard,
            )
        if "workers" in inspect.signature(runner).parameters:
            runner = partial(runner, workers=args.workers)  # gssbo's cells
        text, figures = runner(args.budget, stem)
        print(text)
        with open(stem + ".md", "w") as f:
            on = f", {DEVICE_SUFFIXES[suffix]}" if suffix else ""
            heading = f"# {name} benchmark ({args.budget} budget{on})"
            f.write(f"{heading}\n\n{text}\n")
        print("\nwrote " + ", ".join([stem + ".md", *figures]))
        where = DEVICE_SUFFIXES.get(suffix, "")
        sections.append(_section(name, text, figures, args.out, where))
    if len(names) > 1:
        how = f"`python -m benchmarks all --budget {args.budget}`"
        _write_report(
            os.path.join(args.out, "BENCHMARKS.md"), args.budget, sections, how
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
