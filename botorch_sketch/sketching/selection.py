#!/usr/bin/env python3
r"""Inducing-set rules: which of the distinct training inputs become inducing points.

Each rule is a :class:`~botorch_sketch.sketching.rule.SelectionRule`: a small
object with an explicit ``torch.Generator`` whose batch method,
:meth:`~botorch_sketch.sketching.rule.SelectionRule.select`, returns indices
into the :class:`~botorch_sketch.sketching.rule.Candidates` it is given, so that
a model can keep its inducing set as indices into its data (the set then
follows the data through input transforms, devices and dtypes). The greedy and
uniform rules also choose subsets that must contain forced points (GSSBO's,
see :mod:`~botorch_sketch.sketching.subset`).

- :class:`RidgeLeverageSampler`: BKB's posterior-variance (ridge leverage score)
  Bernoulli resampling [Calandriello2019bkb]_.
- :class:`GreedyVarianceSelector`: deterministic greedy maximum residual variance
  (pivoted Cholesky, [Burt2020convergence]_).
- :class:`UniformSelector`: a uniform random subset.
- :class:`FixedSelector`: training rows given by the user.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
.. [Burt2020convergence]
    D. Burt, C. E. Rasmussen, M. van der Wilk. Convergence of sparse variational
    inference in Gaussian process regression. JMLR 2020.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.exceptions.errors import InputDataError
from botorch.exceptions.warnings import BotorchWarning
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.checks import (
    checked_count,
    checked_optional_count,
    checked_real,
)
from botorch_sketch.sketching.bernoulli import BernoulliRule, inclusion
from botorch_sketch.sketching.dtc import DTCPosterior, DTCStatistics, posterior_variance
from botorch_sketch.sketching.kernels import kernel_diagonal, kernel_matrix
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.rule import Candidates, SelectionRule, free_indices


class InducingSetCapWarning(BotorchWarning):
    r"""The expected inducing-set size exceeded its cap, so ``qbar`` was scaled down."""


#: The former name of the inducing-set rules' base class: every
#: :class:`~botorch_sketch.sketching.rule.SelectionRule` chooses inducing sets.
InducingSelector = SelectionRule


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
        var = posterior_variance(embedding, DTCPosterior(stats), X)
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
    draw (warning :class:`InducingSetCapWarning`), which bounds the cost at
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
        """
        super().__init__(generator=generator)
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
            warnings.warn(
                f"Expected inducing-set size {keep_prob.sum():.0f} exceeds max_size="
                f"{self.max_size}; qbar scaled by {scale:.3g} for this draw.",
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


class GreedyVarianceSelector(SelectionRule):
    r"""Greedy maximum residual variance: a pivoted Cholesky of ``K``.

    Starting from the forced points (if any), repeatedly adds the input whose
    prior variance is worst explained by the chosen ones, ``argmax_i (k_ii -
    Q_ii) / lambda_i`` (``/ lambda_i`` when the candidates carry noise), until
    ``num_inducing`` (or the requested size) points are chosen or that score
    falls below ``tolerance``. This is BoTorch's ``GreedyVarianceReduction``
    [Burt2020convergence]_ (the deterministic cousin of ridge-leverage
    sampling), written again only because that class returns points and this
    package keeps inducing sets as indices into the data.
    """

    depends_on_hyperparameters = True

    def __init__(
        self, num_inducing: int | None = 512, tolerance: float | None = 1e-3
    ) -> None:
        r"""Configure the rule.

        Args:
            num_inducing: The largest number of inducing points; None for no
                size of its own (a caller passes one).
            tolerance: Stop when the largest residual variance divided by the noise
                variance is below this; None always picks ``num_inducing`` points.
        """
        super().__init__(generator=None)
        self.num_inducing = checked_optional_count(num_inducing, "num_inducing")
        # A NaN or negative tolerance never stopped the pivoting, silently.
        self.tolerance = (
            None if tolerance is None else checked_real(tolerance, "tolerance", 0.0)
        )

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""The forced points, then greedy picks in order.

        Args:
            candidates: The inputs ``X``, the ``kernel`` and optionally the
                ``noise`` (scores are then divided by it).
            size: The number of points, instead of ``num_inducing``.
            current: Not used.
            forced: Indices to pivot on first.

        Returns:
            At most ``size`` (or ``num_inducing``) distinct indices, in pivot order.
        """
        candidates.require(self, "X", "kernel")
        _, size, forced = self._request(candidates, size, forced, self.num_inducing)
        noise = candidates.noise
        return greedy_variance_pivots(
            candidates.X,
            candidates.kernel,
            size,
            start=forced,
            weights=None if noise is None else 1 / noise,
            tolerance=self.tolerance,
        )


def greedy_variance_pivots(
    X: Tensor,
    kernel: Kernel,
    size: int,
    start: Tensor | None = None,
    weights: Tensor | None = None,
    tolerance: float | None = None,
    check_every: int | None = None,
) -> Tensor:
    r"""Pivots of a greedy pivoted Cholesky of ``K_XX``, in ``O(n size (size + d))``.

    After the ``start`` pivots (taken as given, in order), each step takes
    ``argmax_i w_i (k_ii - Q_ii)``, the input whose prior variance the chosen
    ones explain worst, and stops early when that score is below ``tolerance``.
    No ``n x n`` matrix is formed.

    Args:
        X: A ``n x d`` tensor of inputs.
        kernel: The kernel.
        size: The number of pivots.
        start: Indices to pivot on first (e.g. points a subset must contain).
        weights: A ``n`` tensor of positive score weights (e.g. ``1 / noise``).
        tolerance: Stop when the best weighted residual variance is below this
            (never before the ``start`` pivots and one more).
        check_every: Pivots between reads of the best scores against
            ``tolerance``; by default 1 on the CPU and 16 on other devices. The
            result is the same for every value: pivots past the first score
            below ``tolerance`` are dropped. Reading a score to the host waits
            for the device, so on a GPU a read per pivot was most of a fit's
            synchronisations; a few pivots computed in vain cost less.

    Returns:
        A 1-d long tensor of at most ``size`` distinct indices, in pivot order.
    """
    n = X.shape[0]
    start = X.new_zeros(0, dtype=torch.long) if start is None else start
    if check_every is None:
        check_every = 1 if X.device.type == "cpu" else 16
    if check_every < 1:
        raise InputDataError(f"check_every must be at least 1, got {check_every}.")
    # The tolerance applies from the pivot after the start ones; the best
    # scores wait on the device until ``check_every`` of them are read at once.
    first_checked = start.numel() + 1
    unread = first_checked
    best = X.new_empty(size) if tolerance is not None else None
    with torch.no_grad():
        residual = kernel_diagonal(kernel, X).clone()
        rows = X.new_zeros(size, n)
        chosen = torch.empty(size, dtype=torch.long, device=X.device)
        taken = torch.zeros(n, dtype=torch.bool, device=X.device)
        for j in range(size):
            if j < start.numel():
                i = start[j]
            else:
                score = residual if weights is None else residual * weights
                i = score.masked_fill(taken, -float("inf")).argmax()
                if best is not None and j >= first_checked:
                    best[j] = score[i]
                    if j + 1 - unread >= check_every:
                        stop = _first_below(best, unread, j + 1, tolerance)
                        if stop is not None:
                            return chosen[:stop]
                        unread = j + 1
            column = kernel_matrix(kernel, X, X[i].reshape(1, -1)).squeeze(-1)
            pivot = residual[i].clamp_min(torch.finfo(X.dtype).tiny).sqrt()
            row = (column - rows[:j].mT @ rows[:j, i]) / pivot
            rows[j] = row
            residual = (residual - row.pow(2)).clamp_min(0)
            taken[i] = True
            chosen[j] = i
    if best is not None and unread < size:
        stop = _first_below(best, unread, size, tolerance)
        if stop is not None:
            return chosen[:stop]
    return chosen


def _first_below(best: Tensor, begin: int, end: int, tolerance: float) -> int | None:
    # The first pivot in [begin, end) whose best score was below the tolerance
    # (one read of the scores to the host).
    for offset, value in enumerate(best[begin:end].tolist()):
        if value < tolerance:
            return begin + offset
    return None


class UniformSelector(SelectionRule):
    r"""The forced points and a uniformly random subset of the others."""

    depends_on_hyperparameters = False

    def __init__(
        self, num_inducing: int | None = 512, generator: torch.Generator | None = None
    ) -> None:
        r"""Configure the rule.

        Args:
            num_inducing: The subset size (all inputs if there are fewer); None
                for no size of its own (a caller passes one).
            generator: The random generator.
        """
        super().__init__(generator=generator)
        self.num_inducing = checked_optional_count(num_inducing, "num_inducing")

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""The forced points, then a uniform choice of the others.

        Args:
            candidates: The candidates (only their number is read).
            size: The number of points, instead of ``num_inducing``.
            current: Not used.
            forced: Indices that must be chosen.

        Returns:
            ``size`` (or ``min(num_inducing, n)``) distinct indices, the forced
            ones first, the others in random order.
        """
        n, size, forced = self._request(candidates, size, forced, self.num_inducing)
        free = free_indices(n, forced)
        pick = free[self._permutation(free.numel(), free)[: size - forced.numel()]]
        return torch.cat([forced, pick])


class FixedSelector(SelectionRule):
    r"""Inducing points at training rows chosen by the user.

    The indices are row numbers of the training data: in a model,
    ``FixedSelector(idx)`` makes ``train_X[idx]`` the inducing set, as
    ``inducing=train_X[idx]`` would, but kept as indices (so the set follows
    the data through transforms, devices and dtypes). Rows whose input repeats
    an earlier given row's add nothing and are dropped. Used on its own,
    :meth:`select` takes the indices as row numbers of the ``X`` it is given.
    """

    depends_on_hyperparameters = False

    def __init__(self, indices: Tensor | list[int]) -> None:
        r"""Store the indices.

        Args:
            indices: A non-empty 1-d integer tensor (or list) of distinct,
                non-negative training-row numbers.

        Raises:
            InputDataError: for an empty, non-integer, negative or repeated index.
        """
        super().__init__(generator=None)
        indices = torch.as_tensor(indices)
        if indices.numel() == 0:
            raise InputDataError(
                "FixedSelector needs at least one index: an empty inducing set "
                "has no posterior beyond the prior."
            )
        # Floats were truncated and booleans read as 0 and 1: neither is a row
        # number, so refuse them rather than guess.
        if indices.dtype == torch.bool or indices.is_floating_point():
            raise InputDataError(
                "FixedSelector indices must be an integer tensor of row numbers, "
                f"got dtype {indices.dtype}."
            )
        if indices.dim() > 1:
            raise InputDataError(
                "FixedSelector indices must be a 1-d tensor, got shape "
                f"{tuple(indices.shape)}."
            )
        indices = indices.reshape(-1).long()
        if bool((indices < 0).any()):
            raise InputDataError(
                "FixedSelector indices must be non-negative row numbers, got "
                f"{indices[indices < 0].tolist()}."
            )
        if indices.unique().numel() != indices.numel():
            values, counts = indices.unique(return_counts=True)
            raise InputDataError(
                "FixedSelector indices must be distinct; repeated: "
                f"{values[counts > 1].tolist()}."
            )
        self.indices = indices

    def _check_range(self, n: int) -> None:
        if int(self.indices.max()) >= n:
            raise InputDataError(
                f"FixedSelector indices must lie in [0, {n}) for {n} rows, got "
                f"{self.indices[self.indices >= n].tolist()}."
            )

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""The given indices, in the given order, checked against the candidates.

        Args:
            candidates: The candidates (only their number is read).
            size: Keep at most this many (the first given).
            current: Not used.
            forced: Must be None or empty.

        Returns:
            The given indices.
        """
        self._refuse_forced(forced, "its points are given")
        self._check_range(len(candidates))
        indices = self.indices.to(candidates.device)
        return indices if size is None else indices[:size]

    def training_rows(self, train_X: Tensor) -> Tensor:
        r"""The inducing set as row numbers of ``train_X``, for a model.

        Args:
            train_X: The ``n x d`` training inputs the indices number.

        Returns:
            The given rows in the given order, less those whose input repeats an
            earlier given row's (one inducing point per distinct input).
        """
        self._check_range(train_X.shape[0])
        rows = self.indices.to(train_X.device)
        # The first given row of each distinct input, back in the given order.
        first, _, _ = distinct_rows(train_X[rows])
        return rows[first.sort().values]


def distinct_rows(X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""Distinct rows of ``X``, where each first occurs, and how often each occurs.

    Args:
        X: A ``n x d`` tensor.

    Returns:
        ``(first, inverse, counts)``: ``X[first]`` are the distinct rows, ``inverse``
        maps each row to its distinct row, ``counts`` are the multiplicities.
    """
    _, inverse, counts = torch.unique(X, dim=0, return_inverse=True, return_counts=True)
    n = X.shape[0]
    positions = torch.arange(n, device=X.device)
    first = torch.full((counts.shape[0],), n, dtype=torch.long, device=X.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    return first, inverse, counts


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
    "FixedSelector",
    "GreedyVarianceSelector",
    "InducingSelector",
    "InducingSetCapWarning",
    "RidgeLeverageSampler",
    "UniformSelector",
    "distinct_rows",
    "expected_size",
    "leverage_scores",
]
