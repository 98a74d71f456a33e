#!/usr/bin/env python3
r"""``python -m botorch_sketch.benchmarks NAME [--budget small|large]``."""

from __future__ import annotations

import argparse
import os
import platform
import sys

import torch

from botorch_sketch.benchmarks import bandits, contextual, inference, linear


def machine() -> str:
    r"""A one-line description of this machine, for the absolute figures."""
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__} with {torch.get_num_threads()} threads"
    )


def main(argv: list[str] | None = None) -> int:
    r"""Run a benchmark, print its tables and write them with its plots."""
    parser = argparse.ArgumentParser(prog="python -m botorch_sketch.benchmarks")
    parser.add_argument(
        "benchmark", choices=["inference", "bandits", "linear", "contextual"]
    )
    parser.add_argument("--budget", choices=["small", "large"], default="small")
    parser.add_argument("--out", default="benchmark-results")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{args.benchmark}-{args.budget}")
    if args.benchmark == "inference":
        rows, d_eff = inference.run(args.budget)
        text = inference.render(rows, d_eff, machine())
        inference.plot(rows, stem + ".png")
        figures = [stem + ".png"]
    elif args.benchmark == "linear":
        rows = linear.run(args.budget)
        text = linear.render(rows, machine())
        linear.plot(rows, stem + ".png")
        figures = [stem + ".png"]
    elif args.benchmark == "contextual":
        rows, traces = contextual.run(args.budget)
        text = contextual.render(rows, machine())
        figures = contextual.plot(traces, stem)
    else:
        rows, traces = bandits.run(args.budget)
        text = bandits.render(rows, machine())
        figures = bandits.plot(traces, stem)
    print(text)
    with open(stem + ".md", "w") as f:
        f.write(f"# {args.benchmark} benchmark ({args.budget} budget)\n\n{text}\n")
    print(f"\nwrote {stem}.md and " + ", ".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
