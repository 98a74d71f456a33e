#!/usr/bin/env python3
r"""BKB against exact GP-UCB and the sketching baselines, side by side.

Three experiments, in one run, on functions drawn from a GP with an RBF kernel
on uniform arms in the unit cube, noise variance 1% of the function's range
unless stated (as in the BKB authors' example), the authors' width
(``beta="authors"``), and every policy on the same environment and seed:

1. *setting-1*: d = 3, lengthscale 0.5, A = 1000 arms, T = 2000: BKB with
   per-step resampling (Algorithm 1) and with adaptive resampling, exact GP-UCB,
   DTC on a fixed uniform dictionary of BKB's size, and random.
2. *setting-2*: the same function class with many arms and steps: adaptive BKB
   against exact GP-UCB; at 10^5 arms both hold pulls back (``DTCUCB.
   lazy_min_arms``), and both also run eagerly, for the side-by-side.
3. *crossover*: lengthscale and noise varied at fixed A and T, to show where
   BKB overtakes exact GP-UCB. Both cost ``O(A m)`` per step here: exact
   GP-UCB with ``m`` the distinct pulled arms not already in the numerical
   span of the earlier ones (it stops at the numerical rank of the arms'
   kernel matrix), BKB with ``m`` about ``qbar d_eff`` plus amortised redraws.
   BKB wins where ``d_eff`` is well below that rank: long lengthscales with
   many arms, and high noise (``d_eff = tr(K (K + lambda I)^{-1})`` falls with
   ``lambda``).

Time ratios are exact GP-UCB's policy time over the method's (higher is
faster); regret ratios are the method's cumulative regret over exact GP-UCB's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from gpytorch.kernels import RBFKernel
from torch import Tensor
from tqdm.auto import tqdm

from benchmarks.metrics import (
    BanditRow,
    TorchCallCounter,
    dtc_step_flops,
    machine_rates,
    reference_row,
    trace_columns,
)
from botorch_sketch.bandits import BanditTrace, FiniteArmEnvironment, run_finite
from botorch_sketch.bandits.bkb import BKB
from botorch_sketch.bandits.dtc_ucb import DTCUCB
from botorch_sketch.bandits.gp_ucb import GPUCB
from botorch_sketch.bandits.loop import plot_experiments
from botorch_sketch.bandits.random_policy import RandomPolicy

EXACT = "gp-ucb"
#: Steps of the untimed run that counts a policy's torch calls per step.
COUNTED_STEPS = 1000


@dataclass(frozen=True)
class Case:
    r"""One problem: arms, lengthscale, horizon, seed and the policies to run."""

    experiment: str
    num_arms: int
    dim: int
    lengthscale: float
    num_steps: int
    seed: int
    methods: tuple[str, ...]
    noise_fraction: float = 0.01


@dataclass
class Row(BanditRow):
    r"""One policy on one case."""

    case: Case
    #: The arithmetic of a steady single-pull step at the run's mean dictionary
    #: size over the machine's measured matrix-vector rate (None: no model).
    floor_ms: float | None = None
    #: Mean torch calls per step of a second, untimed run over the first
    #: :data:`COUNTED_STEPS` steps (None: not counted).
    calls_per_step: float | None = None


ALL = ("bkb", "bkb-adaptive", EXACT, "dtc-uniform", "random")
FAST = ("bkb-adaptive", EXACT)
#: At many arms the policies hold pulls back (``DTCUCB.lazy_min_arms``); the
#: eager route runs beside them for the side-by-side.
MANY = (*FAST, "bkb-adaptive-eager", "gp-ucb-eager")

BUDGETS: dict[str, list[Case]] = {
    "small": [
        Case("setting-1", 1000, 3, 0.5, 2000, 0, ALL),
        Case("setting-2", 20_000, 3, 0.5, 3000, 0, FAST),
        Case("crossover", 5000, 3, 0.2, 1500, 0, FAST),
        Case("crossover", 5000, 3, 0.2, 1500, 0, FAST, noise_fraction=1.0),
    ],
    "large": [
        *(Case("setting-1", 1000, 3, 0.5, 2000, s, ALL) for s in range(3)),
        Case("setting-2", 100_000, 3, 0.5, 10_000, 0, MANY),
        *(
            Case("crossover", 20_000, 3, ls, 3000, 0, FAST, noise_fraction=nf)
            for ls in (0.5, 0.2)
            for nf in (0.01, 1.0)
        ),
    ],
}


def make_problem(case: Case) -> tuple[Tensor, RBFKernel, FiniteArmEnvironment]:
    r"""Arms, the (fixed) kernel, and a GP draw on them for ``case``."""
    g = torch.Generator().manual_seed(case.seed)
    arms = torch.rand(case.num_arms, case.dim, generator=g, dtype=torch.double)
    kernel = RBFKernel().double()
    kernel.lengthscale = case.lengthscale
    kernel.requires_grad_(False)
    env = FiniteArmEnvironment.gp_sample(
        arms,
        kernel,
        noise_fraction=case.noise_fraction,
        generator=torch.Generator().manual_seed(case.seed + 1),
    )
    return arms, kernel, env


def _factories(
    arms: Tensor, kernel: RBFKernel, lam: float, seed: int, bkb_size: int
) -> dict[str, Callable[[], object]]:
    def gen() -> torch.Generator:
        return torch.Generator().manual_seed(seed + 2)

    width = "authors"
    return {
        "bkb": lambda: BKB(arms, kernel, lam, beta=width, generator=gen()),
        "bkb-adaptive": lambda: BKB(
            arms, kernel, lam, resample="adaptive", beta=width, generator=gen()
        ),
        EXACT: lambda: GPUCB(arms, kernel, lam, beta=width, generator=gen()),
        "bkb-adaptive-eager": lambda: BKB(
            arms,
            kernel,
            lam,
            resample="adaptive",
            beta=width,
            generator=gen(),
            lazy_updates=False,
        ),
        "gp-ucb-eager": lambda: GPUCB(
            arms, kernel, lam, beta=width, generator=gen(), lazy_updates=False
        ),
        "dtc-uniform": lambda: DTCUCB(
            arms, kernel, lam, dictionary=bkb_size, beta=width, generator=gen()
        ),
        "random": lambda: RandomPolicy(arms, generator=gen()),
    }


def run(budget_name: str = "small") -> tuple[list[Row], dict[str, list[BanditTrace]]]:
    r"""Run every case of a budget.

    Returns:
        The rows, and the traces of each experiment's first case (for plots).
    """
    rows: list[Row] = []
    traces: dict[str, list[BanditTrace]] = {}
    rates = machine_rates()
    for case in tqdm(BUDGETS[budget_name], desc="bandits"):
        arms, kernel, env = make_problem(case)
        lam = env.noise_std**2
        bkb_size = 64
        case_traces = []
        for method in case.methods:
            factory = _factories(arms, kernel, lam, case.seed, bkb_size)[method]
            policy = factory()
            trace = run_finite(policy, env, case.num_steps, name=method)
            if method == "bkb":
                bkb_size = policy.dictionary_size  # DTC-uniform gets the same size
            floor = None
            if method != "random":
                m = sum(trace.dictionary_size) / max(trace.num_steps, 1)
                flops = dtc_step_flops(case.num_arms, m)
                if policy.lazy_updates:  # every arm's update as a matrix product
                    product = 2 * case.num_arms * m
                    floor = rates.floor_ms(flops - product, matmul_flops=product)
                else:
                    floor = rates.floor_ms(flops)
            calls = calls_per_step(factory(), env, min(case.num_steps, COUNTED_STEPS))
            row = Row(
                case=case,
                method=method,
                dictionary=policy.dictionary_size,
                **trace_columns(trace),
                floor_ms=floor,
                calls_per_step=calls,
            )
            rows.append(row)
            case_traces.append(trace)
            tqdm.write(
                f"{case.experiment} A={case.num_arms} T={case.num_steps} "
                f"ls={case.lengthscale} noise={case.noise_fraction} "
                f"seed={case.seed} {method}: "
                f"{row.seconds:.2f} s, regret {row.regret:.1f}, "
                f"dictionary {row.dictionary}"
            )
        key = f"{case.experiment}-ls{case.lengthscale}-noise{case.noise_fraction}"
        traces.setdefault(key, case_traces)
    return rows, traces


def calls_per_step(policy: object, env: FiniteArmEnvironment, num_steps: int) -> float:
    r"""Mean torch calls per single-pull step of ``policy``, select plus update.

    The policy runs on its own reward noise (seeded), so the environment's
    generator is left as it was; only the policy's calls are counted.
    """
    g = torch.Generator(device="cpu").manual_seed(0)
    noise = env.noise_std * torch.randn(num_steps, generator=g, dtype=env.means.dtype)
    noise = noise.to(env.means.device)
    counter = TorchCallCounter()
    for t in range(num_steps):
        with counter:
            indices = policy.select(1)
        rewards = env.means[indices] + noise[t : t + 1]
        with counter:
            policy.update(indices, rewards)
    return counter.calls / max(num_steps, 1)


def render(rows: list[Row], machine: str) -> str:
    r"""Markdown tables: ratios against exact GP-UCB first, then absolutes."""
    lines = [
        "Ratios are against exact GP-UCB on the same arms, function, noise and "
        "seed in the same run: time ratio = its policy time / this policy's "
        "(higher is faster); regret ratio = this policy's cumulative regret / "
        "its (lower is better). ms/step: mean over the first 10%, steps 40-50% "
        "and the last 10% of the run. floor: the arithmetic of one steady "
        "single-pull step (scores, rank-one update, every arm's mean and "
        "variance: about 2 A m + 6 m^2 + 12 A flops at the run's mean dictionary "
        "size m) over this machine's measured matrix-vector rate (for a policy "
        "that holds pulls back, the 2 A m at its matrix-product rate); x floor = the "
        "mean ms per step over the whole run / floor (insertions and redraws "
        "come on top of the floor by design). calls/step: the torch calls (functions "
        "and tensor methods) of select plus update per step, mean over the first "
        f"min(T, {COUNTED_STEPS}) steps of a second, untimed run.",
        "",
        "| experiment | A | T | lengthscale | noise | seed | method | time ratio | "
        "regret ratio | seconds | regret | dictionary | ms/step early, mid, late | "
        "floor ms/step | x floor | calls/step |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        exact = reference_row(rows, r.case, EXACT)
        c = r.case
        ratio = f"{exact.seconds / r.seconds:.2f}x" if exact else "-"
        regret = f"{r.regret / exact.regret:.2f}" if exact else "-"
        lines.append(
            f"| {c.experiment} | {c.num_arms} | {c.num_steps} | {c.lengthscale} | "
            f"{c.noise_fraction} | {c.seed} | {r.method} | {ratio} | {regret} | "
            f"{r.seconds:.2f} | {r.regret:.1f} | {r.dictionary} | "
            f"{r.ms_early:.2f}, {r.ms_mid:.2f}, {r.ms_late:.2f} | "
            f"{_floor_columns(r.floor_ms, r.seconds / c.num_steps)} | "
            f"{'-' if r.calls_per_step is None else f'{r.calls_per_step:.1f}'} |"
        )
    lines += ["", f"Absolute seconds are from {machine}."]
    return "\n".join(lines)


def _floor_columns(floor_ms: float | None, seconds_per_step: float) -> str:
    if floor_ms is None or floor_ms <= 0:
        return "- | -"
    return f"{floor_ms:.4f} | {1e3 * seconds_per_step / floor_ms:.0f}x"


def plot(traces: dict[str, list[BanditTrace]], stem: str) -> list[str]:
    r"""One figure per experiment: cumulative regret, time per step, dictionary.

    Returns:
        The paths written.
    """
    return plot_experiments(traces, stem)
