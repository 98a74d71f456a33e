#!/usr/bin/env python3
r"""Does ``torch.compile`` pay for a finite-arm UCB step on the CPU?

    python scripts/compile_step.py [--threads 1] [--arms 1000] [--dims 60 80 100]

The step of the single-pull path of ``DTCUCB`` (BKB, GP-UCB), written as one
function: the rank-one update of the weight posterior (``P = C z``, ``s``, the
mean's coefficient, ``w`` and ``C`` in place), the same update of every arm's
mean and variance (``c = Z_A P``) and the pick, ``argmax(mean + alpha
sqrt(var))``. It runs eagerly and compiled (inductor), with dynamic shapes (one
compile for every ``m``, the reward a float) and with static ones (a compile per
``m``, the reward a 0-dim tensor so that it does not recompile per value), on
random embeddings of ``--arms`` arms at each ``m`` of ``--dims``, 2000 steps each.
Prints the time per step after the first call, the first call (the compile) and
whether the three routes picked the same arm at the end. Not part of the
benchmark suite: its answer (no, on a 2-core x86_64 machine: see README,
Limits) is a reason for code that is not there.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
from torch import Tensor


def step(
    C: Tensor,
    w: Tensor,
    Z: Tensor,
    z: Tensor,
    mean: Tensor,
    var: Tensor,
    r: float | Tensor,
    noise: float,
    alpha: float,
) -> Tensor:
    r"""One pull of an arm embedded as ``z``, then the next pick (a 0-dim index)."""
    P = C @ z
    s = z @ P + noise
    coefficient = (r - z @ w) / s
    w.add_(P * coefficient)
    C.sub_(torch.outer(P, P) / s)
    c = Z @ P
    var.sub_(c * c / s).clamp_(min=0)
    mean.add_(c * coefficient)
    return torch.argmax(mean + alpha * var.sqrt())


def timed(
    fn: Callable[..., Tensor], arms: int, m: int, tensor_reward: bool, steps: int
) -> tuple[float, float, int]:
    r"""Seconds of the first call, seconds per later step, and the last pick."""
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(arms, m, generator=g, dtype=torch.double) / m**0.5
    C = torch.eye(m, dtype=torch.double)
    w = torch.zeros(m, dtype=torch.double)
    mean = torch.zeros(arms, dtype=torch.double)
    var = torch.ones(arms, dtype=torch.double)
    rewards = torch.randn(steps, generator=g, dtype=torch.double)
    rs = list(rewards.unbind(0)) if tensor_reward else rewards.tolist()
    start = time.perf_counter()
    first = 0.0
    pick = -1
    for t in range(steps):
        pick = int(fn(C, w, Z, Z[t % arms], mean, var, rs[t], 0.01, 1.0))
        if t == 0:
            first = time.perf_counter() - start
    return first, (time.perf_counter() - start - first) / (steps - 1), pick


def main() -> None:
    r"""Time the three routes at every ``m`` and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--arms", type=int, default=1000)
    parser.add_argument("--dims", type=int, nargs="+", default=[60, 80, 100])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    routes = {
        "eager": (step, False),
        "compiled, dynamic shapes": (torch.compile(step, dynamic=True), False),
        "compiled, static shapes": (torch.compile(step, dynamic=False), True),
    }
    print("| m | route | us per step | first call (s) | same pick as eager |")
    print("|---:|---|---:|---:|---|")
    for m in args.dims:
        picks = {}
        for name, (fn, tensor_reward) in routes.items():
            first, per_step, picks[name] = timed(
                fn, args.arms, m, tensor_reward, args.steps
            )
            same = "yes" if picks[name] == picks["eager"] else "no"
            print(f"| {m} | {name} | {1e6 * per_step:.0f} | {first:.1f} | {same} |")


if __name__ == "__main__":
    main()
