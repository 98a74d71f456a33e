#!/usr/bin/env python3
r"""The base of every rule that draws random numbers: an explicit generator.

Selection rules (:mod:`~botorch_sketch.sketching.rule`) hold a ``torch.Generator``
and draw on its device, then move the draws to the data's: a CPU generator
serves CUDA data.
"""

from __future__ import annotations

import torch
from torch import Tensor


class RandomRule:
    r"""Holds a rule's ``torch.Generator`` and draws from it."""

    def __init__(self, generator: torch.Generator | None = None) -> None:
        r"""Store the random generator.

        Args:
            generator: The generator for the rule's random draws; None uses torch's
                global generator (so ``torch.manual_seed`` makes runs repeatable).
        """
        self.generator = generator

    def _device(self, like: Tensor) -> torch.device:
        return self.generator.device if self.generator is not None else like.device

    def _uniform(self, n: int, like: Tensor) -> Tensor:
        u = torch.rand(
            n, generator=self.generator, device=self._device(like), dtype=like.dtype
        )
        return u.to(like.device)

    def _uniform_one(self, dtype: torch.dtype = torch.double) -> float:
        # One uniform as a float: the same draw from the generator as
        # ``_uniform(1, like)`` for ``like`` of ``dtype``, without the move.
        device = self.generator.device if self.generator is not None else "cpu"
        return float(
            torch.rand(1, generator=self.generator, dtype=dtype, device=device)
        )

    def _normal(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        eps = torch.randn(
            shape, generator=self.generator, device=self._device(like), dtype=like.dtype
        )
        return eps.to(like.device)

    def _permutation(self, n: int, like: Tensor) -> Tensor:
        perm = torch.randperm(n, generator=self.generator, device=self._device(like))
        return perm.to(like.device)
