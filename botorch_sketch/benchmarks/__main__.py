#!/usr/bin/env python3
r"""``python -m botorch_sketch.benchmarks [NAME] [--budget small|large] [--out DIR]``.

Without ``NAME`` every benchmark runs and ``DIR/BENCHMARKS.md`` collects their
tables (ratios first, then absolute figures with the machine they came from).
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
    contextual,
    gssbo,
    inference,
    linear,
    scale,
    throughput,
    tuning,
)


def machine() -> str:
    r"""A one-line description of this machine, for the absolute figures."""
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with {torch.get_num_threads()} threads"
    )


def _inference(budget: str, stem: str) -> tuple[str, list[str]]:
    rows, d_eff = inference.run(budget)
    inference.plot(rows, stem + ".png")
    return inference.render(rows, d_eff, machine()), [stem + ".png"]


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


def _scale(budget: str, stem: str) -> tuple[str, list[str]]:
    return scale.render(scale.run(budget), machine()), []


def _throughput(budget: str, stem: str) -> tuple[str, list[str]]:
    return throughput.render(throughput.run(budget), machine()), []


def _tuning(budget: str, stem: str) -> tuple[str, list[str]]:
    return tuning.report(budget, stem, machine())


#: Each benchmark: (title, runner writing its figures and returning its tables).
BENCHMARKS: dict[str, tuple[str, Callable[[str, str], tuple[str, list[str]]]]] = {
    "inference": ("NystromGP against SingleTaskGP, SVGP and SGPR", _inference),
    "bandits": ("BKB against exact GP-UCB", _bandits),
    "linear": ("fLinUCB-GD against LinUCB", _linear),
    "contextual": ("EK-UCB against KernelUCB, CBKB and CBBKB", _contextual),
    "gssbo": ("GSSBO against the full SingleTaskGP and a random subset", _gssbo),
    "scale": ("NystromGP up to a million observations", _scale),
    "throughput": ("The posterior over many candidates against matmul", _throughput),
    "tuning": ("botorch-sketch tune against Ax's default model", _tuning),
}


def main(argv: list[str] | None = None) -> int:
    r"""Run one benchmark or all of them, print the tables and write them."""
    parser = argparse.ArgumentParser(prog="python -m botorch_sketch.benchmarks")
    parser.add_argument("benchmark", nargs="?", choices=[*BENCHMARKS, "all"])
    parser.add_argument("--budget", choices=["small", "large"], default="small")
    parser.add_argument("--out", default="benchmark-results")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    names = list(BENCHMARKS) if args.benchmark in (None, "all") else [args.benchmark]
    sections = []
    for name in names:
        title, runner = BENCHMARKS[name]
        stem = os.path.join(args.out, f"{name}-{args.budget}")
        text, figures = runner(args.budget, stem)
        print(text)
        with open(stem + ".md", "w") as f:
            f.write(f"# {name} benchmark ({args.budget} budget)\n\n{text}\n")
        print("\nwrote " + ", ".join([stem + ".md", *figures]))
        images = "\n".join(f"![{name}]({os.path.basename(path)})" for path in figures)
        sections.append(f"## {title} (`{name}`)\n\n{text}\n\n{images}\n")
    if len(names) > 1:
        path = os.path.join(args.out, "BENCHMARKS.md")
        with open(path, "w") as f:
            f.write(
                f"# Benchmarks ({args.budget} budget)\n\n"
                f"`python -m botorch_sketch.benchmarks --budget {args.budget}`\n\n"
                + "\n".join(sections)
            )
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
