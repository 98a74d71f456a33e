#!/usr/bin/env python3
r"""Offline replay evaluation of contextual policies on uniformly logged data.

The replay method [Li2011unbiased]_ turns a log of events ``(context,
logged action, reward)`` whose actions were drawn uniformly at random into an
unbiased simulator: at each event the policy chooses among the candidates; if
its choice equals the logged action, it sees the logged reward and learns,
otherwise the event is skipped. The accepted events are distributed as if the
policy had run online, so the click-through rate (mean reward per accepted
event) estimates its online reward. About one event in ``K`` is accepted.

The paper's Yahoo! front-page log [Korda2015fast]_ cannot be shipped, so
:func:`digits_log` simulates a uniformly logged log from scikit-learn's
handwritten digits: the context is an image, the ten actions are the classes,
the reward is 1 for the true class (a "click") and 0 otherwise. Candidate
features are *disjoint*: action ``a``'s vector is the context's features placed
in block ``a`` of ``K`` blocks (LinUCB's disjoint model written as one shared
``theta``), so the feature dimension is ``K`` times the context dimension.

References

.. [Li2011unbiased]
    L. Li, W. Chu, J. Langford, X. Wang. Unbiased offline evaluation of
    contextual-bandit-based news article recommendation algorithms. WSDM 2011.
.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import RBFKernel
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.bandits.loop import BanditTrace
from botorch_sketch.bandits.policy import ContextualPolicy
from botorch_sketch.sketching.embedding import RandomFourierFeatures


@dataclass
class ReplayLog:
    r"""A log of uniformly random actions with disjoint per-action features.

    Attributes:
        contexts: A ``E x p`` tensor of the events' context features.
        actions: A ``E`` tensor of the logged actions, uniform on ``[0, K)``.
        rewards: A ``E`` tensor of the logged rewards.
        num_actions: The number ``K`` of actions.
    """

    contexts: Tensor
    actions: Tensor
    rewards: Tensor
    num_actions: int

    def __post_init__(self) -> None:
        E = self.contexts.shape[0]
        if self.contexts.ndim != 2 or self.actions.shape != (E,):
            raise InputDataError("contexts must be E x p and actions E.")
        if self.rewards.shape != (E,):
            raise InputDataError("rewards must be a tensor of E rewards.")
        if E and (
            int(self.actions.min()) < 0 or int(self.actions.max()) >= self.num_actions
        ):
            raise InputDataError(f"actions must lie in [0, {self.num_actions}).")
        if not bool(
            torch.isfinite(self.contexts).all() and torch.isfinite(self.rewards).all()
        ):
            raise InputDataError("The log contains NaN or infinite values.")

    @property
    def num_events(self) -> int:
        r"""The number ``E`` of logged events."""
        return self.contexts.shape[0]

    @property
    def dim(self) -> int:
        r"""The candidate feature dimension ``K p``."""
        return self.num_actions * self.contexts.shape[-1]

    def candidates(self, t: int) -> Tensor:
        r"""The ``K x (K p)`` candidates of event ``t``: context in block ``a``."""
        K, p = self.num_actions, self.contexts.shape[-1]
        blocks = self.contexts.new_zeros(K, K, p)
        blocks.diagonal(dim1=0, dim2=1).copy_(self.contexts[t].unsqueeze(-1))
        return blocks.reshape(K, K * p)


@dataclass
class ReplayResult:
    r"""The outcome of a replay run.

    Attributes:
        trace: One step per accepted event; ``step_time`` charges each accepted
            event with the policy time spent since the previous one (the
            ``select`` calls of rejected events included), and ``regret`` is NaN
            (a log does not know the best action's reward).
        num_events: The number of events replayed.
    """

    trace: BanditTrace
    num_events: int

    @property
    def num_accepted(self) -> int:
        r"""The number of accepted events."""
        return self.trace.num_steps

    @property
    def ctr(self) -> float:
        r"""Mean reward per accepted event (the click-through rate)."""
        return float(sum(self.trace.reward)) / max(self.num_accepted, 1)

    @property
    def time_per_event(self) -> float:
        r"""Policy seconds per replayed event."""
        return self.trace.total_time / max(self.num_events, 1)


def replay(
    policy: ContextualPolicy,
    log: ReplayLog,
    num_events: int | None = None,
    progress: bool = True,
    name: str | None = None,
) -> ReplayResult:
    r"""Replay a uniformly logged log through a contextual policy [Li2011unbiased]_.

    Args:
        policy: The policy, on ``log.dim`` features.
        log: The log.
        num_events: Replay only the first events; defaults to all.
        progress: Show a progress bar.
        name: The trace's name; defaults to the policy's.

    Returns:
        The result, with the trace of the accepted events.
    """
    return replay_side_by_side([policy], log, num_events, progress, [name])[0]


def replay_side_by_side(
    policies: list[ContextualPolicy],
    log: ReplayLog,
    num_events: int | None = None,
    progress: bool = True,
    names: list[str | None] | None = None,
) -> list[ReplayResult]:
    r"""Replay one log through several policies, event by event, in lockstep.

    Each policy is replayed independently (it is updated only on the events it
    accepts); interleaving them makes their timings comparable on a machine
    whose load changes during the run.

    Args:
        policies: The policies, on ``log.dim`` features.
        log: The log.
        num_events: Replay only the first events; defaults to all.
        progress: Show a progress bar.
        names: The traces' names; default to the policies'.

    Returns:
        One result per policy.
    """
    names = names or [None] * len(policies)
    traces = [
        BanditTrace(name=name or policy.name)
        for policy, name in zip(policies, names, strict=True)
    ]
    total = log.num_events if num_events is None else min(num_events, log.num_events)
    logged = log.actions.tolist()
    pending = [0.0] * len(policies)
    for t in tqdm(range(total), desc="replay", disable=not progress, leave=False):
        candidates = log.candidates(t)
        for k, (policy, trace) in enumerate(zip(policies, traces, strict=True)):
            start = time.perf_counter()
            choice = int(policy.select(candidates))
            pending[k] += time.perf_counter() - start
            if choice != logged[t]:
                continue
            reward = log.rewards[t : t + 1]
            start = time.perf_counter()
            policy.update(candidates[choice : choice + 1], reward)
            pending[k] += time.perf_counter() - start
            trace.step_time.append(pending[k])
            pending[k] = 0.0
            trace.reward.append(float(reward))
            trace.regret.append(float("nan"))
            trace.dictionary_size.append(policy.dictionary_size)
            trace.indices.append(torch.tensor([choice]))
    for k, trace in enumerate(traces):
        if pending[k] and trace.step_time:
            trace.step_time[-1] += pending[k]
    return [ReplayResult(trace=trace, num_events=total) for trace in traces]


def digits_log(
    num_events: int,
    context_dim: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.double,
) -> ReplayLog:
    r"""A uniformly logged bandit log simulated from scikit-learn's digits.

    Each event draws an image uniformly (with replacement) from the 1797
    8 x 8 digits, a logged action uniformly from the 10 classes, and the reward
    ``1[action == label]``. The context is ``context_dim`` random Fourier
    features of the standardised pixels (RBF kernel with lengthscale
    ``sqrt(64)``), scaled to unit norm, so every candidate has ``||x|| = 1`` and
    the feature dimension is ``10 * context_dim``.

    Args:
        num_events: The number ``E`` of events.
        context_dim: The context dimension ``p``.
        generator: The random generator (features, images, actions).
        dtype: The floating point type.

    Returns:
        The log.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = torch.as_tensor(digits.data, dtype=dtype)
    labels = torch.as_tensor(digits.target, dtype=torch.long)
    pixels = (pixels - pixels.mean(0)) / pixels.std(0).clamp_min(1e-6)
    kernel = RBFKernel().to(dtype)
    kernel.lengthscale = pixels.shape[-1] ** 0.5
    features = RandomFourierFeatures(
        kernel, pixels.shape[-1], context_dim, generator=generator, dtype=dtype
    )
    with torch.no_grad():
        Z = features(pixels)
    Z = Z / Z.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    K = int(labels.max()) + 1
    rows = torch.randint(pixels.shape[0], (num_events,), generator=generator)
    actions = torch.randint(K, (num_events,), generator=generator)
    rewards = (actions == labels[rows]).to(dtype)
    return ReplayLog(contexts=Z[rows], actions=actions, rewards=rewards, num_actions=K)
