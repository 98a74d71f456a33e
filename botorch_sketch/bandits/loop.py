#!/usr/bin/env python3
r"""Bandit loops with regret bookkeeping, timing, progress bars and plots."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from botorch_sketch.bandits.continuous import ContinuousActionUCB
from botorch_sketch.bandits.continuous_environments import (
    ContinuousActionEnvironment,
)
from botorch_sketch.bandits.environments import (
    ContextualEnvironment,
    FiniteArmEnvironment,
)
from botorch_sketch.bandits.policy import (
    ContextualPolicy,
    FiniteArmPolicy,
)
from botorch_sketch.checks import checked_count


@dataclass
class BanditTrace:
    r"""What happened in one run, one entry per step.

    Attributes:
        name: The policy's name.
        regret: Expected regret of each step (summed over the batch).
        reward: Observed reward of each step (summed over the batch).
        step_time: Wall time of ``select`` plus ``update`` of each step (s).
        dictionary_size: The policy's dictionary size after each step.
        indices: The arms (finite) or candidate rows (contextual) chosen; for
            continuous actions (:func:`run_continuous_contextual`), the ``1 x a``
            action played, so that :attr:`chosen` is ``T x a``.
    """

    name: str
    regret: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    step_time: list[float] = field(default_factory=list)
    dictionary_size: list[int] = field(default_factory=list)
    indices: list[Tensor] = field(default_factory=list)

    def book(
        self,
        seconds: float,
        regret: Tensor,
        rewards: Tensor,
        policy: FiniteArmPolicy | ContextualPolicy | ContinuousActionUCB,
        played: Tensor,
    ) -> None:
        r"""Record one step: its policy time, regret, rewards and what was played."""
        self.step_time.append(seconds)
        self.regret.append(float(regret))
        self.reward.append(float(rewards.sum()))
        self.dictionary_size.append(policy.dictionary_size)
        self.indices.append(played.detach().cpu())

    @property
    def num_steps(self) -> int:
        r"""The number of steps taken."""
        return len(self.regret)

    @property
    def cumulative_regret(self) -> Tensor:
        r"""Cumulative expected regret after each step."""
        return torch.tensor(self.regret, dtype=torch.double).cumsum(0)

    @property
    def cumulative_reward(self) -> Tensor:
        r"""Cumulative observed reward after each step."""
        return torch.tensor(self.reward, dtype=torch.double).cumsum(0)

    @property
    def total_time(self) -> float:
        r"""Total policy time (s)."""
        return float(sum(self.step_time))

    def mean_step_ms(self, start: float, stop: float) -> float:
        r"""Mean milliseconds per step over a fraction ``[start, stop)`` of the run."""
        t = torch.tensor(self.step_time, dtype=torch.double)
        n = t.numel()
        a, b = int(start * n), max(int(stop * n), int(start * n) + 1)
        return 1e3 * float(t[a:b].mean())

    @property
    def chosen(self) -> Tensor:
        r"""All chosen indices, concatenated."""
        return torch.cat(self.indices) if self.indices else torch.empty(0)


class _PolicyClock:
    r"""The wall time of a step's policy calls, the environment's excluded."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, method: Callable[..., Any], *args: Any) -> Any:
        r"""Call ``method(*args)``, adding its wall time to :attr:`seconds`."""
        start = time.perf_counter()
        out = method(*args)
        self.seconds += time.perf_counter() - start
        return out


def _steps(trace: BanditTrace, num_steps: int, progress: bool) -> range:
    num_steps = checked_count(num_steps, "num_steps", minimum=0)
    return tqdm(range(num_steps), desc=trace.name, disable=not progress, leave=False)


def run_finite(
    policy: FiniteArmPolicy,
    env: FiniteArmEnvironment,
    num_steps: int,
    batch_size: int = 1,
    progress: bool = True,
    name: str | None = None,
) -> BanditTrace:
    r"""Run a finite-arm policy for ``num_steps`` steps of ``batch_size`` pulls.

    Args:
        policy: The policy, on the environment's arms.
        env: The environment.
        num_steps: The number of steps.
        batch_size: Arms pulled per step.
        progress: Show a progress bar.
        name: The trace's name; defaults to the policy's.

    Returns:
        The trace of the run.
    """
    trace = BanditTrace(name=name or policy.name)
    for _ in _steps(trace, num_steps, progress):
        clock = _PolicyClock()
        indices = clock(policy.select, batch_size)
        rewards = env.pull(indices)
        clock(policy.update, indices, rewards)
        trace.book(clock.seconds, env.regret(indices).sum(), rewards, policy, indices)
    return trace


def run_contextual(
    policy: ContextualPolicy,
    env: ContextualEnvironment,
    num_rounds: int,
    progress: bool = True,
    name: str | None = None,
) -> BanditTrace:
    r"""Run a contextual policy for ``num_rounds`` rounds.

    Regret is measured against the best candidate available in each round.

    Args:
        policy: The policy.
        env: The environment.
        num_rounds: The number of rounds.
        progress: Show a progress bar.
        name: The trace's name; defaults to the policy's.

    Returns:
        The trace of the run.
    """
    trace = BanditTrace(name=name or policy.name)
    for _ in _steps(trace, num_rounds, progress):
        candidates, expected = env.candidates()
        clock = _PolicyClock()
        index = clock(policy.select, candidates)
        reward = env.noisy(expected[index].reshape(1))
        clock(policy.update, candidates[index].reshape(1, -1), reward)
        regret = expected.max() - expected[index]
        trace.book(clock.seconds, regret, reward, policy, index.reshape(1))
    return trace


def run_continuous_contextual(
    policy: ContinuousActionUCB,
    env: ContinuousActionEnvironment,
    num_rounds: int,
    progress: bool = True,
    name: str | None = None,
) -> BanditTrace:
    r"""Run a continuous-action contextual policy for ``num_rounds`` rounds.

    Each round draws a context, times ``select`` plus ``update`` (not the
    environment), and books the regret ``best_reward(x) - expected_reward(x, a)``
    against the best action in the whole box, which the environment knows
    exactly. ``indices`` holds the ``1 x a`` actions played.

    Args:
        policy: The policy: ``select(context) -> action`` and
            ``update(state, reward)`` with ``state = [context, action]``.
        env: The environment.
        num_rounds: The number of rounds.
        progress: Show a progress bar.
        name: The trace's name; defaults to the policy's.

    Returns:
        The trace of the run.
    """
    trace = BanditTrace(name=name or policy.name)
    for _ in _steps(trace, num_rounds, progress):
        context = env.context()
        clock = _PolicyClock()
        action = clock(policy.select, context)
        contexts, actions = context.unsqueeze(0), action.reshape(1, -1).to(context)
        expected = env.expected_reward(contexts, actions)
        reward = env.noisy(expected)
        state = torch.cat([context.to(action), action.reshape(-1)])
        clock(policy.update, state, reward.to(action))
        regret = env.best_reward(context) - expected.sum()
        trace.book(clock.seconds, regret, reward, policy, action.reshape(1, -1))
    return trace


def plot_traces(
    traces: list[BanditTrace], path: str | None = None, window: int = 50
) -> Figure:
    r"""Plot cumulative regret, time per step and dictionary size against t.

    Args:
        traces: The runs to compare.
        path: Where to write the figure (any matplotlib format); None writes none.
        window: Steps averaged in the time-per-step curve.

    Returns:
        The figure (a notebook shows it).
    """
    # A Figure of its own: no pyplot state, no backend switch in the caller.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4))
    axes = fig.subplots(1, 3)
    for trace in traces:
        t = torch.arange(1, trace.num_steps + 1)
        axes[0].plot(t, trace.cumulative_regret, label=trace.name)
        step = torch.tensor(trace.step_time, dtype=torch.double)
        w = max(1, min(window, trace.num_steps))
        smooth = step.unfold(0, w, 1).mean(-1) if trace.num_steps >= w else step
        axes[1].plot(t[w - 1 :] if trace.num_steps >= w else t, 1e3 * smooth)
        axes[2].plot(t, trace.dictionary_size)
    axes[0].set(xlabel="t", ylabel="cumulative regret")
    axes[1].set(xlabel="t", ylabel=f"ms per step ({window}-step mean)", yscale="log")
    axes[2].set(xlabel="t", ylabel="dictionary size")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_experiments(traces: dict[str, list[BanditTrace]], stem: str) -> list[str]:
    r"""One :func:`plot_traces` figure per experiment, at ``{stem}-{key}.png``.

    Args:
        traces: The runs to compare, by experiment name.
        stem: The path prefix of the figures.

    Returns:
        The paths written.
    """
    paths = []
    for key, runs in traces.items():
        path = f"{stem}-{key}.png"
        plot_traces(runs, path)
        paths.append(path)
    return paths
