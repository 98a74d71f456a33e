#!/usr/bin/env python3
r"""``python -m botorch_sketch.benchmarks [NAME] [--budget small|large] [--out DIR]``.

Without ``NAME`` every benchmark runs and ``DIR/BENCHMARKS.md`` collects their
tables (ratios first, then absolute figures with the machine they came from).

The large budget of all of them takes hours on 2 cores, so they are usually run
one at a time (``make bench BENCH=name``); ``--collect DIR --to FILE`` then
gathers the reports and figures a set of such runs left in ``DIR`` into one
file, without running anything (the repository's ``BENCHMARKS.md`` is made so
from ``docs/``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable

import torch

from botorch_sketch.benchmarks import (
    bandits,
    bo,
    contextual,
    default_fit,
    fantasies,
    gssbo,
    inference,
    iteration,
    linear,
    scale,
    suggest,
    throughput,
    tuning,
    tuning_peers,
)


def machine(threads: int | None = None) -> str:
    r"""A one-line description of this machine, for the absolute figures.

    Args:
        threads: The torch threads the run used, if it set its own; by default
            the current setting.
    """
    threads = torch.get_num_threads() if threads is None else threads
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with {threads} threads"
    )


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


def _gssbo(budget: str, stem: str) -> tuple[str, list[str]]:
    rows = gssbo.run(budget)
    return gssbo.render(rows, machine()), gssbo.plot(rows, stem)


def _bo(budget: str, stem: str) -> tuple[str, list[str]]:
    return bo.report(budget, stem, machine())


def _iteration(budget: str, stem: str) -> tuple[str, list[str]]:
    return iteration.render(iteration.run(budget), machine()), []


def _default_fit(budget: str, stem: str) -> tuple[str, list[str]]:
    # The rows carry their own thread counts.
    where = machine().rsplit(" with ", 1)[0] + ", threads per row"
    return default_fit.render(default_fit.run(budget), where), []


def _scale(budget: str, stem: str) -> tuple[str, list[str]]:
    text = scale.render(scale.run(budget), machine())
    try:
        import ray  # noqa: F401
    except ImportError:
        return text + "\n\n(The sharded case needs the ray extra.)", []
    sharded = scale.render_sharded(scale.run_sharded(budget), machine(1))
    return text + "\n\n" + sharded, []


def _throughput(budget: str, stem: str) -> tuple[str, list[str]]:
    return throughput.render(throughput.run(budget), machine()), []


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
    "scale": ("NystromGP up to a million observations", _scale),
    "throughput": ("The posterior over many candidates against matmul", _throughput),
    "fantasies": ("Fantasies by Woodbury steps against refactorising", _fantasies),
    "tuning": ("botorch-sketch tune against Ax's default model", _tuning),
    "tuning-peers": (
        "Our samplers against GPSampler, TPESampler, BoTorchSampler and Ax",
        _tuning_peers,
    ),
    "suggest": ("Seconds to suggest trial N: Optuna samplers", _suggest),
}

#: Budgets of one benchmark beyond small and large.
#: The budgets every benchmark has.
BOTH = ("small", "large")
#: Budgets of one benchmark only.
EXTRA: dict[str, list[str]] = {
    "bo": [b for b in bo.BUDGETS if b not in BOTH],
    "gssbo": [b for b in gssbo.BUDGETS if b not in BOTH],
    "iteration": [b for b in iteration.BUDGETS if b not in BOTH],
    "tuning-peers": [b for b in tuning_peers.BUDGETS if b not in BOTH],
    "suggest": [b for b in suggest.BUDGETS if b not in BOTH],
}


def _section(name: str, text: str, figures: list[str], relative_to: str) -> str:
    title = BENCHMARKS[name][0]
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
        report = os.path.join(directory, f"{name}-{budget}.md")
        if not os.path.exists(report):
            missing.append(name)
            continue
        with open(report) as f:
            body = f.read().split("\n", 1)[1]  # drop the heading
        # Its own image links are relative to its folder; the figures are
        # linked below, relative to the gathered file.
        text = "\n".join(
            line for line in body.splitlines() if not line.startswith("![")
        ).strip()
        figures = sorted(
            os.path.join(directory, file)
            for file in os.listdir(directory)
            if file.startswith(f"{name}-{budget}") and file.endswith(".png")
        )
        sections.append(_section(name, text, figures, where))
        found.append(name)
    how = (
        "Each section comes from its own run of "
        f"`python -m botorch_sketch.benchmarks NAME --budget {budget}` "
        "(`make bench BENCH=NAME`), gathered by "
        f"`python -m botorch_sketch.benchmarks --collect {directory} "
        f"--budget {budget} --to {os.path.basename(path)}`."
    )
    if missing:
        how += " Not run: " + ", ".join(f"`{name}`" for name in missing) + "."
    _write_report(path, budget, sections, how)
    return found


def main(argv: list[str] | None = None) -> int:
    r"""Run one benchmark or all of them, print the tables and write them."""
    parser = argparse.ArgumentParser(prog="python -m botorch_sketch.benchmarks")
    parser.add_argument("benchmark", nargs="?", choices=[*BENCHMARKS, "all"])
    parser.add_argument(
        "--budget",
        choices=list(
            dict.fromkeys(["small", "large", *(b for v in EXTRA.values() for b in v)])
        ),
        default="small",
        help="small or large; also "
        + "; ".join(f"{k}: {', '.join(v)}" for k, v in EXTRA.items()),
    )
    parser.add_argument("--out", default="benchmark-results")
    parser.add_argument(
        "--collect",
        metavar="DIR",
        help="gather the reports of earlier runs in DIR instead of running",
    )
    parser.add_argument(
        "--to", default="BENCHMARKS.md", help="the file --collect writes"
    )
    args = parser.parse_args(argv)
    if args.collect is not None:
        if args.benchmark is not None:
            parser.error("--collect runs nothing: give no benchmark name.")
        collect(args.collect, args.budget, args.to)
        return 0
    names = list(BENCHMARKS) if args.benchmark in (None, "all") else [args.benchmark]
    if args.budget not in BOTH:
        owners = [k for k, v in EXTRA.items() if args.budget in v]
        if len(names) != 1 or names[0] not in owners:
            parser.error(
                f"--budget {args.budget} is a budget of the {' and '.join(owners)} "
                "benchmark only."
            )
    os.makedirs(args.out, exist_ok=True)
    sections = []
    for name in names:
        runner = BENCHMARKS[name][1]
        stem = os.path.join(args.out, f"{name}-{args.budget}")
        text, figures = runner(args.budget, stem)
        print(text)
        with open(stem + ".md", "w") as f:
            f.write(f"# {name} benchmark ({args.budget} budget)\n\n{text}\n")
        print("\nwrote " + ", ".join([stem + ".md", *figures]))
        sections.append(_section(name, text, figures, args.out))
    if len(names) > 1:
        how = f"`python -m botorch_sketch.benchmarks --budget {args.budget}`"
        _write_report(
            os.path.join(args.out, "BENCHMARKS.md"), args.budget, sections, how
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
