#!/usr/bin/env python3
r"""The base of every rule that draws random numbers: an explicit generator.

Selection rules (:mod:`~botorch_sketch.sketching.rules.rule`) hold a ``torch.Generator``
and draw on its device, then move the draws to the data's: a CPU generator
serves CUDA data.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: Uniforms drawn at once for the one-coin route (:meth:`RandomRule._uniform_one`).
UNIFORM_BLOCK = 256


class RandomRule:
    r"""Holds a rule's ``torch.Generator`` and draws from it."""

    def __init__(self, generator: torch.Generator | None = None) -> None:
        r"""Store the random generator.

        Args:
            generator: The generator for the rule's random draws; None uses torch's
                global generator (so ``torch.manual_seed`` makes runs repeatable).
        """
        self.generator = generator

    @property
    def generator(self) -> torch.Generator | None:
        r"""The random generator (None: torch's global one)."""
        return self._generator

    @generator.setter
    def generator(self, value: torch.Generator | None) -> None:
        # Uniforms drawn ahead came from the old generator: a new one (a new
        # seed) takes effect at the next coin.
        self._generator = value
        self._uniforms: list[float] = []
        self._uniform_dtype: torch.dtype | None = None

    def _device(self, like: Tensor) -> torch.device:
        return self.generator.device if self.generator is not None else like.device

    def _uniform(self, n: int, like: Tensor) -> Tensor:
        u = torch.rand(
            n, generator=self.generator, device=self._device(like), dtype=like.dtype
        )
        return u.to(like.device)

    def _uniform_one(self, dtype: torch.dtype = torch.double) -> float:
        # One uniform as a float, from a block of ``UNIFORM_BLOCK`` drawn at
        # once: a torch call and a transfer per coin cost more than the
        # bandit step the coin decides. The generator's stream is drawn
        # serially, so a run of coins gets the draws ``_uniform(1, like)``
        # would have given one by one, as long as nothing else draws from
        # the generator in between (otherwise other, equally independent,
        # uniforms). A dtype change discards the block: its uniforms are
        # of the other precision.
        uniforms = self._uniforms
        if not uniforms or self._uniform_dtype != dtype:
            generator = self.generator
            device = generator.device if generator is not None else "cpu"
            block = torch.rand(
                UNIFORM_BLOCK, generator=generator, dtype=dtype, device=device
            )
            uniforms = self._uniforms = block.tolist()[::-1]  # popped from the end
            self._uniform_dtype = dtype
        return uniforms.pop()

    def _normal(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        eps = torch.randn(
            shape, generator=self.generator, device=self._device(like), dtype=like.dtype
        )
        return eps.to(like.device)

    def _permutation(self, n: int, like: Tensor) -> Tensor:
        perm = torch.randperm(n, generator=self.generator, device=self._device(like))
        return perm.to(like.device)
