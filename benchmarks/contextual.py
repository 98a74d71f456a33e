#!/usr/bin/env python3
r"""EK-UCB against KernelUCB, CBKB and CBBKB on contextual kernel bandits.

Three experiments, in one run, every policy on the same environment and seed:

1. *bump*: the Bump problem of [Zenati2022efficient]_ (5-d context, 10 actions,
   noise 0.1), Gaussian kernel of width 0.1 on ``[x, a]``, ``lambda = 10``,
   ``beta = 0.1`` (the authors' settings), EK-UCB with ``mu = lambda``,
   ``eps = 1/2``, ``gamma = 2`` (chosen from ``{1, 2, 3}`` on seeds 0-2: the
   dictionary, and with it the time, grows with ``gamma`` and the regret
   falls; the large budget adds seeds 3-9, which played no part in the
   choice); CBKB and CBBKB redraw with ``qbar = 1`` (``p = min(1,
   sigma_tilde^2)``), which keeps their dictionaries near EK-UCB's size.
2. *long*: one long EK-UCB run on Chessboard (2-d state, where ``d_eff``
   saturates), to show the time per round staying flat as ``t`` grows. (On Bump
   with this kernel ``d_eff`` itself grows almost linearly with ``t``: contexts
   in 5 dimensions rarely come within a lengthscale of each other.)
3. *digits*: scikit-learn's digits as a 10-action bandit, a context kernel
   (RBF on the 64 pixels) times an action kernel (RBF on the one-hot action),
   EK-UCB (``gamma = 1``, ``lambda = 1``) against KernelUCB: cumulative reward
   (correct guesses).

Time ratios are KernelUCB's policy time over the method's (higher is faster);
regret ratios are the method's cumulative regret over KernelUCB's; reward
ratios the method's cumulative reward over KernelUCB's.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from gpytorch.kernels import Kernel, ProductKernel, RBFKernel
from tqdm.auto import tqdm

from benchmarks.metrics import BanditRow, reference_row, trace_columns
from botorch_sketch.bandits.contextual import CBBKB, CBKB, EKUCB, KernelUCB
from botorch_sketch.bandits.contextual_environments import (
    Bump,
    Chessboard,
    DigitsBandit,
)
from botorch_sketch.bandits.environments import ContextualEnvironment
from botorch_sketch.bandits.loop import BanditTrace, plot_experiments, run_contextual

EXACT = "kernel-ucb"
ALL = ("ek-ucb", EXACT, "cbbkb", "cbkb")


@dataclass(frozen=True)
class Case:
    r"""One problem: environment, horizon, seed and the policies to run."""

    experiment: str
    env: str
    num_rounds: int
    seed: int
    methods: tuple[str, ...]
    noise_var: float = 10.0
    gamma: float = 2.0


BUDGETS: dict[str, list[Case]] = {
    "small": [
        Case("bump", "bump", 1000, 0, ALL),
        Case("long", "chessboard", 5000, 0, ("ek-ucb",), noise_var=1.0),
        Case("digits", "digits", 1000, 0, ("ek-ucb", EXACT), 1.0, gamma=1.0),
    ],
    "large": [
        # Seeds 0-2 are the issue's; 3-9 were not used to choose gamma.
        *(Case("bump", "bump", 2000, s, ALL) for s in range(10)),
        Case("long", "chessboard", 20_000, 0, ("ek-ucb",), noise_var=1.0),
        Case("digits", "digits", 2000, 0, ("ek-ucb", EXACT), 1.0, gamma=1.0),
    ],
}


@dataclass
class Row(BanditRow):
    r"""One policy on one case (steps are rounds)."""

    case: Case
    reward: float  #: cumulative observed reward


def _rbf(lengthscale: float, **kwargs) -> RBFKernel:
    k = RBFKernel(**kwargs).double()
    k.lengthscale = lengthscale
    return k


def make_problem(case: Case) -> tuple[ContextualEnvironment, Kernel, int]:
    r"""The environment, the (fixed) kernel and the state dimension of ``case``."""
    g = torch.Generator().manual_seed(case.seed)
    if case.env == "digits":
        env = DigitsBandit(generator=g)
        kernel = ProductKernel(
            _rbf(2.0, active_dims=torch.arange(64)),
            _rbf(0.3, active_dims=torch.arange(64, 74)),
        )
    else:
        env = {"bump": Bump, "chessboard": Chessboard}[case.env](generator=g)
        # The authors' Gaussian kernel exp(-|s - s'|^2 / (2 * 0.1^2)).
        kernel = _rbf(0.1)
    kernel.requires_grad_(False)
    return env, kernel, env.dim


def _factories(kernel: Kernel, case: Case, dim: int) -> dict[str, Callable[[], object]]:
    def gen() -> torch.Generator:
        return torch.Generator().manual_seed(case.seed + 1)

    lam = case.noise_var
    return {
        "ek-ucb": lambda: EKUCB(kernel, lam, dim, gamma=case.gamma, generator=gen()),
        EXACT: lambda: KernelUCB(kernel, lam, dim, generator=gen()),
        "cbkb": lambda: CBKB(kernel, lam, dim, qbar=1.0, generator=gen()),
        "cbbkb": lambda: CBBKB(kernel, lam, dim, qbar=1.0, generator=gen()),
    }


def run(budget_name: str = "small") -> tuple[list[Row], dict[str, list[BanditTrace]]]:
    r"""Run every case of a budget.

    Returns:
        The rows, and the traces of each experiment's first case (for plots).
    """
    rows: list[Row] = []
    traces: dict[str, list[BanditTrace]] = {}
    for case in tqdm(BUDGETS[budget_name], desc="contextual"):
        case_traces = []
        for method in case.methods:
            # A fresh environment per method: the same contexts and noise.
            env, kernel, dim = make_problem(case)
            policy = _factories(kernel, case, dim)[method]()
            trace = run_contextual(policy, env, case.num_rounds, name=method)
            row = Row(
                case=case,
                method=method,
                reward=float(trace.cumulative_reward[-1]),
                dictionary=policy.dictionary_size,
                **trace_columns(trace),
            )
            rows.append(row)
            case_traces.append(trace)
            tqdm.write(
                f"{case.experiment} {case.env} T={case.num_rounds} seed={case.seed} "
                f"{method}: {row.seconds:.2f} s, regret {row.regret:.1f}, "
                f"reward {row.reward:.0f}, dictionary {row.dictionary}"
            )
        traces.setdefault(case.experiment, case_traces)
    return rows, traces


def render(rows: list[Row], machine: str) -> str:
    r"""Markdown: ratios against KernelUCB first (with seed means), then absolutes."""
    lines = [
        "Ratios are against KernelUCB (exact) on the same problem and seed in the "
        "same run: time ratio = its policy time / this policy's (higher is "
        "faster); regret ratio = this policy's cumulative regret / its; reward "
        "ratio = this policy's cumulative reward / its. ms/step: mean over the "
        "first 10%, steps 40-50% and the last 10% of the run (T steps in all).",
        "",
        "| experiment | env | T | seed | method | time ratio | regret ratio | "
        "reward ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in rows:
        ex = reference_row(rows, r.case, EXACT)
        if ex is None or r.method == EXACT:
            continue
        ratios = (
            ex.seconds / r.seconds,
            r.regret / max(ex.regret, 1e-12),
            r.reward / max(ex.reward, 1e-12),
        )
        summary.setdefault((r.case.experiment, r.method), []).append(ratios)
        lines.append(
            f"| {r.case.experiment} | {r.case.env} | {r.case.num_rounds} | "
            f"{r.case.seed} | {r.method} | {ratios[0]:.1f} | {ratios[1]:.2f} | "
            f"{ratios[2]:.3f} |"
        )
    lines += [
        "",
        "Over seeds (ratio of the seed totals):",
        "",
        "| experiment | method | seeds | time ratio | regret ratio | reward ratio |",
        "|---|---|---|---|---|---|",
    ]
    for (experiment, method), _ in summary.items():
        mine = [
            r for r in rows if r.case.experiment == experiment and r.method == method
        ]
        exact = [reference_row(rows, r.case, EXACT) for r in mine]
        t = sum(e.seconds for e in exact) / sum(r.seconds for r in mine)
        g = sum(r.regret for r in mine) / max(sum(e.regret for e in exact), 1e-12)
        w = sum(r.reward for r in mine) / max(sum(e.reward for e in exact), 1e-12)
        lines.append(
            f"| {experiment} | {method} | {len(mine)} | {t:.1f} | {g:.2f} | {w:.3f} |"
        )
    lines += [
        "",
        "Time per step of EK-UCB (flat in t where the dictionary saturates):",
        "",
        "| experiment | env | T | seed | dictionary | ms/step early, mid, late | "
        "late / early |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.method == "ek-ucb":
            lines.append(
                f"| {r.case.experiment} | {r.case.env} | {r.case.num_rounds} | "
                f"{r.case.seed} | {r.dictionary} | {r.ms_early:.2f}, {r.ms_mid:.2f}, "
                f"{r.ms_late:.2f} | {r.ms_late / r.ms_early:.2f} |"
            )
    lines += [
        "",
        f"Absolute figures ({machine}):",
        "",
        "| experiment | env | T | seed | method | seconds | regret | reward | "
        "dictionary | ms/step early, mid, late |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case.experiment} | {r.case.env} | {r.case.num_rounds} | "
            f"{r.case.seed} | {r.method} | {r.seconds:.2f} | {r.regret:.1f} | "
            f"{r.reward:.0f} | {r.dictionary} | {r.ms_early:.2f}, {r.ms_mid:.2f}, "
            f"{r.ms_late:.2f} |"
        )
    return "\n".join(lines)


def plot(traces: dict[str, list[BanditTrace]], stem: str) -> list[str]:
    r"""One figure per experiment: cumulative regret, time per step, dictionary.

    Returns:
        The paths written.
    """
    return plot_experiments(traces, stem)
