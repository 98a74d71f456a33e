#!/usr/bin/env python3
r"""Time per step of the online loops on a device, beside the same run on the CPU.

    PYTHONPATH=. python scripts/online_loops_on_device.py [--device cuda] [--steps 1000]

The finite-arm UCB loops at setting 2 of the bandits benchmark (10^5 arms, RBF
lengthscale 0.5, d = 3), eager and with held pulls, and the linear loops
(``LinUCB`` against ``SGDLinUCB``, d = 1000, 20 arms on the sphere), each for
``--steps`` single-pull rounds on ``--device`` and on the CPU with the same
generators, so that the picks can be compared. Clocks wait for the device
(``metrics.synchronize``). Prints a markdown table: ms per step over the first
and last tenth of the run (medians), the whole run, and the CPU's time over the
device's. Not part of the benchmark suite: it needs a GPU to say anything.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from benchmarks.bandits import FAST, Case, make_problem
from benchmarks.metrics import synchronize
from botorch_sketch.bandits import BKB, GPUCB, LinUCB, SGDLinUCB
from botorch_sketch.bandits.linear_environments import sphere_arms_environment
from botorch_sketch.sketching.linear import InverseRidge

#: Seconds of the whole run, seconds of each step, and the arm of each step.
Result = tuple[float, list[float], list[int]]


def _timed(
    policy: object,
    step: Callable[[object, int], int],
    steps: int,
    device: torch.device,
) -> Result:
    # ``steps`` rounds of ``step(policy, t)``, each clocked to the device's end.
    times, picks = [], []
    synchronize(device)
    begin = time.perf_counter()
    for t in range(steps):
        start = time.perf_counter()
        picks.append(step(policy, t))
        synchronize(device)
        times.append(time.perf_counter() - start)
    return time.perf_counter() - begin, times, picks


def _finite(device: torch.device, steps: int) -> dict[str, Callable[[], Result]]:
    arms, kernel, env = make_problem(Case("setting-2", 100_000, 3, 0.5, steps, 0, FAST))
    arms, kernel = arms.to(device), kernel.to(device)
    means = env.means.to(device)
    lam = env.noise_std**2
    noise = env.noise_std * torch.randn(
        steps, generator=torch.Generator().manual_seed(0), dtype=torch.double
    ).to(device)

    def step(policy: object, t: int) -> int:
        i = policy.select(1)
        policy.update(i, means[i] + noise[t : t + 1])
        return int(i)

    def loop(make: Callable[[], object]) -> Result:
        return _timed(make(), step, steps, device)

    def gen() -> torch.Generator:
        return torch.Generator().manual_seed(2)

    common = dict(beta="authors")
    return {
        f"{name} ({route})": (
            lambda cls=cls, kw=kw, lazy=lazy: loop(
                lambda: cls(
                    arms,
                    kernel,
                    lam,
                    generator=gen(),
                    lazy_updates=lazy,
                    **kw,
                    **common,
                )
            )
        )
        for name, cls, kw in (
            ("bkb-adaptive", BKB, {"resample": "adaptive"}),
            ("gp-ucb", GPUCB, {}),
        )
        for route, lazy in (("eager", False), ("held", True))
    }


def _linear(
    device: torch.device, steps: int, dim: int = 1000
) -> dict[str, Callable[[], Result]]:
    env = sphere_arms_environment(
        20, dim, 0.3, generator=torch.Generator().manual_seed(1)
    )
    arms = env.arms.to(device)
    means = env.means.to(device)
    noise = 0.3 * torch.randn(steps, generator=torch.Generator().manual_seed(2)).to(
        arms
    )

    def step(policy: object, t: int) -> int:
        i = int(policy.select(arms))
        policy.update(arms[i : i + 1], (means[i] + noise[t]).reshape(1))
        return i

    def loop(make: Callable[[], object]) -> Result:
        return _timed(make(), step, steps, device)

    return {
        f"LinUCB d={dim}": lambda: loop(lambda: LinUCB(dim, noise_var=1.0, width=0.5)),
        f"SGDLinUCB d={dim}": lambda: loop(
            lambda: SGDLinUCB(
                dim,
                width=0.5,
                ridge=InverseRidge(1.0),
                generator=torch.Generator().manual_seed(1),
            )
        ),
    }


def _ms(times: list[float]) -> str:
    # Medians over the first and the last tenth of the run, in ms.
    tenth = max(len(times) // 10, 1)
    first = 1e3 * statistics.median(times[:tenth])
    last = 1e3 * statistics.median(times[-tenth:])
    return f"{first:.2f}, {last:.2f}"


def main() -> None:
    r"""Run every loop on the device and on the CPU; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    device = torch.device(args.device)
    cpu = torch.device("cpu")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
        + (f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else "")
    )
    print(
        "| loop | device ms/step first 10%, last 10% | device s | CPU ms/step "
        "first, last | CPU s | CPU / device | same picks |"
    )
    print("|---|---|---:|---|---:|---:|---|")
    for build in (_finite, _linear):
        on_device, on_cpu = build(device, args.steps), build(cpu, args.steps)
        for name in on_device:
            try:
                dev = on_device[name]()
                host = on_cpu[name]()
            except Exception as error:  # noqa: BLE001 (reported, the others go on)
                print(f"| {name} | failed: {type(error).__name__}: {error} | | | | | |")
                continue
            print(
                f"| {name} | {_ms(dev[1])} | {dev[0]:.2f} | {_ms(host[1])} | "
                f"{host[0]:.2f} | {host[0] / dev[0]:.2f}x | {dev[2] == host[2]} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
