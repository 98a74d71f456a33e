#!/usr/bin/env python3
r"""BKB's inducing-set rule: Bernoulli resampling by ridge leverage scores.

:class:`RidgeLeverageSampler` keeps each distinct input by a coin whose
probability grows with the input's ridge leverage score ``var_i / lambda_i``
(:func:`leverage_scores`), its posterior variance given the current set over
its noise [Calandriello2019bkb]_. :func:`expected_size` is the expected size
of such a draw.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.exceptions.errors import InputDataError
from botorch.exceptions.warnings import BotorchWarning
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.checks import checked_count, checked_optional_count
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.dtc import posterior_variance
from botorch_sketch.sketching.posterior.statistics import DTCStatistics
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior
from botorch_sketch.sketching.rules.bernoulli import BernoulliRule, inclusion
from botorch_sketch.sketching.rules.rule import Candidates


class InducingSetCapWarning(BotorchWarning):
    r"""The expected inducing-set size exceeded its cap, so ``qbar`` was scaled down."""


def leverage_scores(
    X: Tensor,
    kernel: Kernel,
    noise: Tensor,
    counts: Tensor | None,
    inducing: Tensor,
) -> Tensor:
    r"""Approximate ridge leverage scores ``var_i / lambda_i`` from a DTC posterior.

    ``var_i`` is the DTC posterior variance at ``x_i`` given all observations (with
    their multiplicities) and the inducing set ``X[inducing]``: the papers'
    ``sigma_tilde^2`` [Calandriello2019bkb]_.

    Args:
        X: A ``n x d`` tensor of distinct inputs.
        kernel: The kernel.
        noise: A ``n`` tensor of per-observation noise variances.
        counts: A ``n`` tensor of multiplicities, or None.
        inducing: Indices into ``X`` of the inducing set.

    Returns:
        A ``n`` tensor of scores in ``[0, k(x, x) / lambda]``.
    """
    effective_noise = noise if counts is None else noise / counts.to(noise)
    with torch.no_grad():
        embedding = NystromEmbedding(kernel, X[inducing])
        zeros = torch.zeros_like(effective_noise)
        stats = DTCStatistics.from_data(embedding, X, zeros, effective_noise)
        var = posterior_variance(embedding, WeightPosterior(stats), X)
    return var / noise


class RidgeLeverageSampler(BernoulliRule):
    r"""BKB's posterior-variance (ridge leverage score) Bernoulli resampling.

    Each distinct input is kept independently with probability
    ``1 - (1 - p_i)^{c_i}``, where ``p_i = min(1, qbar * var_i / lambda_i)`` is the
    per-observation inclusion probability of Algorithm 1 of
    [Calandriello2019bkb]_ and ``c_i`` the number of observations at ``x_i`` (each
    observation is a coin; the set keeps one copy). ``var_i`` is the DTC posterior
    variance given the *current* inducing set. The set is never empty: if no coin
    comes up, the input with the largest ``p_i`` is kept.

    Without a current set (a model built from scratch rather than grown one point
    at a time), the rule starts from a uniform subset and resamples
    ``num_passes`` times, each pass using the previous set's variances; since a
    poor set overestimates the variance where it is thin, it over-samples there
    and the next pass corrects it.

    If the expected set size exceeds ``max_size``, ``qbar`` is scaled down for this
    draw (warning :class:`InducingSetCapWarning` unless ``warn_at_cap=False``, as
    for ``NystromGP``'s default rule), which bounds the cost at
    ``O(n max_size^2)`` at the price of the theoretical guarantee.

    A caller that already holds the scores ``var_i / lambda_i`` (a bandit tracks
    them for every arm) passes them as ``Candidates(scores=..., counts=...)``: the
    rule is then one draw, without recomputing them. Its online method is one
    pull's coin, ``min(1, qbar s)`` (BKB's adaptive mode).
    """

    def __init__(
        self,
        qbar: float = 2.0,
        max_size: int | None = 1024,
        num_passes: int = 3,
        initial_size: int = 64,
        generator: torch.Generator | None = None,
        warn_at_cap: bool = True,
    ) -> None:
        r"""Configure the sampler.

        Args:
            qbar: The oversampling factor ``qbar`` of [Calandriello2019bkb]_. The
                expected set size is about ``qbar * d_eff``; ``qbar >= 10`` gives
                variances within a factor 3 of exact in practice.
            max_size: Cap on the expected set size; None for no cap.
            num_passes: Resampling passes when there is no current set.
            initial_size: Size of the uniform subset the passes start from.
            generator: The random generator.
            warn_at_cap: Warn (:class:`InducingSetCapWarning`) at each draw
                whose cap scales ``qbar`` down. ``NystromGP``'s default rule
                does not: the cap is the package's, not the caller's, and its
                warning came at every draw of a fit (three times in the
                README's Ray example) with nothing for the caller to do.
        """
        super().__init__(generator=generator)
        if not isinstance(warn_at_cap, bool):
            raise InputDataError(
                f"warn_at_cap must be True or False, got {warn_at_cap!r}."
            )
        self.warn_at_cap = warn_at_cap
        # ``not qbar > 0`` alone would let infinity through; NaN fails every
        # comparison, so ``qbar <= 0`` let it through and kept one point.
        if not (math.isfinite(qbar) and qbar > 0):
            raise InputDataError(f"qbar must be finite and positive, got {qbar}.")
        self.qbar = qbar
        # NaN passed ``max_size < 1``, True capped the set at one point, 2.5
        # at three; a negative number of passes or starting points was kept.
        self.max_size = checked_optional_count(max_size, "max_size")
        self.num_passes = checked_count(num_passes, "num_passes")
        self.initial_size = checked_count(initial_size, "initial_size")

    @property
    def oversampling(self) -> float:
        r"""The oversampling factor, ``qbar``."""
        return self.qbar

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""Draw from known scores, resample from ``current``, or bootstrap.

        Args:
            candidates: Either ``scores`` (and optionally ``counts``), or the
                distinct inputs ``X``, the ``kernel`` and the ``noise`` (and
                optionally ``counts``) to compute them from.
            size: Keep at most this many (a prefix of the random order).
            current: Indices of the current inducing set, whose variances the
                draw uses; None starts from a uniform subset and resamples
                ``num_passes`` times. Not used with ``scores``.
            forced: Must be None or empty (coins cannot guarantee points).

        Returns:
            Indices into the candidates of the new set, never empty, in random
            order.
        """
        self._refuse_forced(forced, "its coins are independent")
        if candidates.scores is not None:
            chosen = self._draw(candidates.scores, candidates.counts)
        else:
            candidates.require(self, "X", "kernel", "noise")
            passes = 1
            if current is None:
                X = candidates.X
                current = self._permutation(X.shape[0], X)[: self.initial_size]
                passes = self.num_passes
            for _ in range(passes):
                current = self.resample(candidates, current)
            chosen = current
        return chosen if size is None else chosen[:size]

    def inclusion_probabilities(
        self, candidates: Candidates, current: Tensor
    ) -> Tensor:
        r"""Per-observation probabilities ``p_i = min(1, qbar * var_i / lambda_i)``.

        Args:
            candidates: The distinct inputs ``X``, the ``kernel``, the ``noise``
                and optionally the ``counts``.
            current: Indices into ``X`` of the current inducing set.

        Returns:
            A ``n`` tensor of probabilities, before any ``max_size`` scaling.
        """
        return self.probability(self._scores(candidates, current))

    def resample(self, candidates: Candidates, current: Tensor) -> Tensor:
        r"""One Bernoulli resampling step from the current set's variances.

        Args:
            candidates: The distinct inputs ``X``, the ``kernel``, the ``noise``
                and optionally the ``counts``.
            current: Indices into ``X`` of the current inducing set.

        Returns:
            Indices into ``X`` of the new inducing set, never empty.
        """
        return self._draw(self._scores(candidates, current), candidates.counts)

    def _scores(self, candidates: Candidates, current: Tensor) -> Tensor:
        candidates.require(self, "X", "kernel", "noise")
        c = candidates
        return leverage_scores(c.X, c.kernel, c.noise, c.counts, current)

    def _draw(self, scores: Tensor, counts: Tensor | None) -> Tensor:
        # The Bernoulli draw from known scores: never empty, in random order.
        p = self.probability(scores)
        c = torch.ones_like(p) if counts is None else counts.to(p)
        keep_prob = inclusion(p, c, 1.0)
        if self.max_size is not None and keep_prob.sum() > self.max_size:
            scale = _scale_to_budget(p, c, self.max_size)
            # Absent from a rule pickled before the switch: it warned.
            if getattr(self, "warn_at_cap", True):
                warnings.warn(
                    f"Expected inducing-set size {keep_prob.sum():.0f} exceeds "
                    f"max_size={self.max_size}; qbar scaled by {scale:.3g} for "
                    "this draw.",
                    InducingSetCapWarning,
                    stacklevel=3,
                )
            keep_prob = inclusion(p, c, scale)
        keep = self._uniform(p.shape[0], p) < keep_prob
        if not bool(keep.any()):
            keep[p.argmax()] = True
        kept = keep.nonzero().squeeze(-1)
        # Random order: a prefix is then a smaller draw of the same kind.
        return kept[self._permutation(kept.shape[0], kept)]


def _scale_to_budget(p: Tensor, counts: Tensor, budget: float) -> float:
    # The expected size is increasing in the scale: bisect on it.
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if inclusion(p, counts, mid).sum() > budget:
            hi = mid
        else:
            lo = mid
    return lo


def expected_size(p: Tensor, counts: Tensor | None = None) -> float:
    r"""Expected size of a Bernoulli-resampled set, ``sum_i 1 - (1 - p_i)^{c_i}``.

    Args:
        p: Per-observation inclusion probabilities.
        counts: Multiplicities, or None for one each.

    Returns:
        The expected number of distinct inputs kept.
    """
    c = torch.ones_like(p) if counts is None else counts.to(p)
    return float(inclusion(p, c, 1.0).sum())


__all__ = [
    "InducingSetCapWarning",
    "RidgeLeverageSampler",
    "expected_size",
    "leverage_scores",
]
