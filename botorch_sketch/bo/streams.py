#!/usr/bin/env python3
r"""An optimizer's own torch random stream, swapped in for torch's global one.

BoTorch's path draws, ``optimize_acqf``'s raw samples and the surrogates'
rules draw from torch's global generator. An ask/tell optimizer that must be
reproducible and checkpointable keeps a stream of its own (the state of a
seeded generator), swaps it in around its draws and saves it with its data;
the caller's stream is restored on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor


class TorchStream:
    r"""A mixin: the object's torch random state, and a block that draws from it.

    A subclass calls :meth:`_seed_torch` before its first draw; a checkpoint
    saves and restores ``_torch_state``.
    """

    _torch_state: Tensor

    def _seed_torch(self, seed: int) -> None:
        # The state of a generator seeded with ``seed``, torch's own untouched.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._torch_state = torch.get_rng_state()

    @contextlib.contextmanager
    def random_state(self) -> Iterator[None]:
        r"""Swap the object's torch random state in for torch's global one.

        Inside this block torch's global generator draws from the object's
        stream, which is saved with it; the caller's stream is restored on exit.
        """
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_state)
            try:
                yield
            finally:
                self._torch_state = torch.get_rng_state()
