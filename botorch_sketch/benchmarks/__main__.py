#!/usr/bin/env python3
r"""``python -m botorch_sketch.benchmarks inference|linear [--budget small|large]``."""

from __future__ import annotations

import argparse
import os
import platform
import sys

import torch

from botorch_sketch.benchmarks import inference, linear


def machine() -> str:
    r"""A one-line description of this machine, for the absolute figures."""
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with {torch.get_num_threads()} threads"
    )


def main(argv: list[str] | None = None) -> int:
    r"""Run a benchmark, print its tables and write them with a plot."""
    parser = argparse.ArgumentParser(prog="python -m botorch_sketch.benchmarks")
    parser.add_argument("benchmark", choices=["inference", "linear"])
    parser.add_argument("--budget", choices=sorted(inference.BUDGETS), default="small")
    parser.add_argument("--out", default="benchmark-results")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.benchmark == "linear":
        rows = linear.run(args.budget)
        text = linear.render(rows, machine())
        plot = linear.plot
    else:
        rows, d_eff = inference.run(args.budget)
        text = inference.render(rows, d_eff, machine())
        plot = inference.plot
    print(text)
    stem = os.path.join(args.out, f"{args.benchmark}-{args.budget}")
    with open(stem + ".md", "w") as f:
        f.write(f"# {args.benchmark} benchmark ({args.budget} budget)\n\n{text}\n")
    plot(rows, stem + ".png")
    print(f"\nwrote {stem}.md and {stem}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
