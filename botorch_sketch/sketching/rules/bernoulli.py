#!/usr/bin/env python3
r"""Bernoulli selection: keep each point with an oversampled score as probability.

BKB's dictionary [Calandriello2019bkb]_ and KORS [Calandriello2017efficient]_
choose points the same way: a point with score ``s`` (a ridge leverage score,
``var / lambda``) is kept by a coin with probability ``p = min(1, q s)``, ``q``
the oversampling factor (BKB's ``qbar``, KORS's ``gamma``), and a point observed
``c`` times is kept by one of ``c`` coins, with probability ``1 - (1 - p)^c``.
:class:`BernoulliRule` is that rule: its batch method draws every candidate's
coin at once (a redraw), its online method one point's coin as it arrives.
Subclasses say where the scores come from.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
.. [Calandriello2017efficient]
    D. Calandriello, A. Lazaric, M. Valko. Efficient second-order online kernel
    learning with adaptive embedding. NeurIPS 2017.
"""

from __future__ import annotations

import torch
from torch import Tensor

from botorch_sketch.sketching.rules.rule import Candidates, SelectionRule


class BernoulliRule(SelectionRule):
    r"""Keep each point by a coin with probability ``min(1, oversampling * score)``."""

    #: The oversampling factor ``q``.
    oversampling: float

    def probability(self, scores: Tensor, counts: Tensor | None = None) -> Tensor:
        r"""Keep probabilities ``1 - (1 - min(1, q s_i))^{c_i}``.

        Args:
            scores: A ``n`` tensor of scores ``s_i``.
            counts: A ``n`` tensor of multiplicities ``c_i`` (one coin per
                observation, a set keeps one copy), or None for one each.

        Returns:
            A ``n`` tensor of probabilities.
        """
        p = (self.oversampling * scores).clamp(0, 1)
        return p if counts is None else inclusion(p, counts.to(p), 1.0)

    def consider_one(self, score: float, dtype: torch.dtype = torch.double) -> bool:
        r"""One point's coin, ``u < min(1, q s)``, from a float score.

        Args:
            score: The point's score ``s``.
            dtype: The dtype of the uniform draw (that of the data).

        Returns:
            Whether the coin came up.
        """
        return self._uniform_one(dtype) < min(self.oversampling * score, 1.0)

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""Draw every candidate's coins from its score (``candidates.scores``).

        Args:
            candidates: The candidates, with ``scores`` (and optionally
                ``counts``).
            size: Keep at most this many (a prefix of the random order).
            current: Not used: the scores already reflect the current set.
            forced: Must be None or empty (coins cannot guarantee points).

        Returns:
            The indices whose coins came up, in random order (possibly none).
        """
        self._refuse_forced(forced, "its coins are independent")
        candidates.require(self, "scores")
        keep, _ = self.consider(candidates.scores, candidates.counts)
        kept = keep.nonzero().squeeze(-1)
        kept = kept[self._permutation(kept.shape[0], kept)]
        return kept if size is None else kept[:size]


def inclusion(p: Tensor, counts: Tensor, scale: float) -> Tensor:
    r"""``1 - (1 - min(1, scale p))^c``: one coin per observation, one copy kept.

    Args:
        p: Per-observation probabilities.
        counts: Multiplicities, of the dtype of ``p``.
        scale: A factor on ``p`` (1 for none).

    Returns:
        The probabilities that at least one coin comes up.
    """
    return 1 - (1 - (scale * p).clamp(0, 1)).pow(counts)


__all__ = ["BernoulliRule", "inclusion"]
