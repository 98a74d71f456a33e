#!/usr/bin/env python3
r"""Run a contextual policy on a fixed finite arm set.

A contextual policy that is offered the same candidates every round *is* a
finite-arm policy; :class:`FixedArmSet` is that adapter, so LinUCB and
fLinUCB-GD are written once, as
:class:`~botorch_sketch.bandits.policy.ContextualPolicy`, and run in both loops.
A policy that keeps per-candidate state (fLinUCB-GD's tracked widths)
recognises the unchanged arm set and keeps that state.
"""

from __future__ import annotations

from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from botorch_sketch.bandits.policy import ContextualPolicy, FiniteArmPolicy


class FixedArmSet(FiniteArmPolicy):
    r"""A contextual policy offered the same ``A x d`` arms every round.

    Example:
        >>> policy = FixedArmSet(LinUCB(dim=d), env.arms)
        >>> trace = run_finite(policy, env, num_steps=1000)
    """

    def __init__(self, policy: ContextualPolicy, arms: Tensor) -> None:
        r"""Wrap a policy.

        Args:
            policy: The contextual policy.
            arms: A ``A x d`` tensor of arm features.
        """
        super().__init__(arms, generator=policy.generator)
        self.policy = policy
        self.name = policy.name

    @property
    def dictionary_size(self) -> int:  # noqa: D102
        return self.policy.dictionary_size

    def select(self, q: int = 1) -> Tensor:
        r"""The wrapped policy's choice among the arms (sequential: ``q = 1``)."""
        if q != 1:
            raise UnsupportedError(
                f"{self.name} is sequential: it selects one arm per round, not {q}."
            )
        return self.policy.select(self.arms).reshape(1)

    def update(self, indices: Tensor, rewards: Tensor) -> None:
        r"""Pass the pulled arms' features and rewards to the wrapped policy."""
        indices, rewards, index_list, _ = self._checked_feedback(indices, rewards)
        if len(index_list) == 1:
            # A view of the arm, which a policy may recognise as one of the
            # candidates it scored (fLinUCB-GD then stores no copy).
            k = index_list[0]
            self.policy.update(self.arms[k : k + 1], rewards)
            return
        self.policy.update(self.arms[indices], rewards)
