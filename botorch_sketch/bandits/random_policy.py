#!/usr/bin/env python3
r"""The uniformly random policy: the baseline every learner must beat."""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_sketch.bandits.policy import FiniteArmPolicy
from botorch_sketch.checks import checked_count


class RandomPolicy(FiniteArmPolicy):
    r"""Pulls arms uniformly at random, learns nothing."""

    name = "random"

    def select(self, q: int = 1) -> Tensor:
        """Draw ``q`` arms uniformly with replacement."""
        q = checked_count(q, "q")
        device = self.generator.device if self.generator is not None else "cpu"
        idx = torch.randint(
            self.num_arms, (q,), generator=self.generator, device=device
        )
        return idx.to(self.arms.device)

    def update(self, indices: Tensor, rewards: Tensor) -> None:
        """Check the feedback and ignore it."""
        self._check_feedback(indices, rewards)
