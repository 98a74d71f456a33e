#!/usr/bin/env python3
r"""The interface every bandit policy shares.

A policy proposes arms with ``select`` and learns from their rewards with
``update``; the loop in :mod:`botorch_sketch.bandits.loop` times the two and keeps
the regret books. Two flavours:

- :class:`FiniteArmPolicy`: a fixed arm set given once, ``select(q)`` returns
  indices into it (BKB, GP-UCB, LinUCB on a fixed set, PEGE).
- :class:`ContextualPolicy`: each round brings its own candidate feature vectors
  (context joined with action), ``select(candidates)`` returns an index into them
  (EK-UCB, KernelUCB, LinUCB with contexts, replay evaluation).

Randomised policies draw from an explicit ``torch.Generator`` so that a run is
reproducible from its seed without touching the global random state.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor


class _PolicyBase:
    """State shared by both flavours of policy."""

    name: str = "policy"

    def __init__(self, generator: torch.Generator | None = None) -> None:
        self.generator = generator

    @property
    def dictionary_size(self) -> int:
        r"""Size of the model's inducing set (0 for policies without one)."""
        return 0

    def _uniform(self, n: int, like: Tensor) -> Tensor:
        # The generator lives on the CPU unless the user gave a device one.
        device = self.generator.device if self.generator is not None else like.device
        u = torch.rand(n, generator=self.generator, dtype=like.dtype, device=device)
        return u.to(like.device)


class FiniteArmPolicy(_PolicyBase, ABC):
    r"""A policy on a fixed finite set of ``A`` arms."""

    def __init__(self, arms: Tensor, generator: torch.Generator | None = None) -> None:
        r"""Store the arm set.

        Args:
            arms: A ``A x d`` tensor of arm features.
            generator: The random generator of randomised policies.
        """
        super().__init__(generator=generator)
        if arms.ndim != 2 or arms.shape[0] == 0:
            raise InputDataError(
                f"arms must be a non-empty A x d tensor, got shape {tuple(arms.shape)}."
            )
        if not arms.is_floating_point():
            # Integer features failed inside torch (``finfo``, ``rand``).
            raise InputDataError(
                f"arms must be a floating point tensor, got {arms.dtype}."
            )
        if not bool(torch.isfinite(arms).all()):
            raise InputDataError("arms contain NaN or infinite values.")
        self.arms = arms

    @property
    def num_arms(self) -> int:
        r"""The number ``A`` of arms."""
        return self.arms.shape[0]

    @abstractmethod
    def select(self, q: int = 1) -> Tensor:
        r"""Propose ``q`` arms to pull.

        Args:
            q: The batch size.

        Returns:
            A ``q`` tensor of arm indices (repeats allowed).
        """

    @abstractmethod
    def update(self, indices: Tensor, rewards: Tensor) -> None:
        r"""Learn from observed rewards.

        Args:
            indices: A ``q`` tensor of pulled arm indices.
            rewards: A ``q`` tensor of their noisy rewards.
        """

    def _check_feedback(
        self, indices: Tensor, rewards: Tensor
    ) -> tuple[Tensor, Tensor]:
        indices, rewards, _, _ = self._checked_feedback(indices, rewards)
        return indices, rewards

    def _checked_feedback(
        self, indices: Tensor, rewards: Tensor
    ) -> tuple[Tensor, Tensor, list[int], list[float]]:
        # The checks run on Python lists (one transfer each): a bandit's
        # feedback is a few numbers, and tensor reductions with a sync each
        # cost more than the update they guard.
        arms = self.arms
        if not (
            # The loop's case, a 1-d index tensor from ``select`` and 1-d rewards
            # on the arms' device and dtype, skips the conversions.
            isinstance(indices, Tensor)
            and isinstance(rewards, Tensor)
            and indices.ndim == 1
            and rewards.ndim == 1
            and rewards.dtype == arms.dtype
            and indices.device == arms.device
            and rewards.device == arms.device
        ):
            indices = torch.as_tensor(indices, device=arms.device).reshape(-1)
            rewards = torch.as_tensor(
                rewards, dtype=arms.dtype, device=arms.device
            ).reshape(-1)
        if indices.shape != rewards.shape:
            raise InputDataError(
                f"Got {indices.numel()} arm indices but {rewards.numel()} rewards."
            )
        if indices.dtype.is_floating_point or indices.dtype == torch.bool:
            raise InputDataError("Arm indices must be integers.")
        index_list, reward_list = indices.tolist(), rewards.tolist()
        if index_list and (min(index_list) < 0 or max(index_list) >= self.num_arms):
            raise InputDataError(
                f"Arm indices must lie in [0, {self.num_arms}), got "
                f"[{min(index_list)}, {max(index_list)}]."
            )
        if not all(map(math.isfinite, reward_list)):
            raise InputDataError("Rewards contain NaN or infinite values.")
        if rewards.requires_grad:
            rewards = rewards.detach()
        if indices.dtype != torch.long:
            indices = indices.long()
        return indices, rewards, index_list, reward_list


class ContextualPolicy(_PolicyBase, ABC):
    r"""A policy that chooses among per-round candidate feature vectors."""

    @abstractmethod
    def select(self, candidates: Tensor) -> Tensor:
        r"""Choose one candidate.

        Args:
            candidates: A ``C x d`` tensor, one row per available action (its
                features already include the context).

        Returns:
            A 0-dimensional tensor, the index of the chosen row.
        """

    @abstractmethod
    def update(self, features: Tensor, rewards: Tensor) -> None:
        r"""Learn from observed rewards.

        Args:
            features: A ``q x d`` tensor of the chosen candidates' features.
            rewards: A ``q`` tensor of their rewards.
        """


def argmax_first(scores: Tensor) -> Tensor:
    r"""Index of the largest score, ties going to the lowest index.

    ``torch.argmax`` documents this tie rule; one function keeps every policy on
    it, which is what makes two policies with equal scores pick equal arms.
    """
    return torch.argmax(scores)
