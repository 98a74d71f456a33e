#!/usr/bin/env python3
r"""Greedy maximum residual variance: inducing points by a pivoted Cholesky.

:class:`GreedyVarianceSelector` adds, one point at a time, the input whose
prior variance the chosen ones explain worst [Burt2020convergence]_.
:func:`greedy_variance_pivots` is the pivoted Cholesky of ``K_XX`` it runs,
which can start from given pivots (the forced points of
:class:`~botorch_sketch.sketching.rules.GreedyVarianceSubset`).

References:

.. [Burt2020convergence]
    D. Burt, C. E. Rasmussen, M. van der Wilk. Convergence of sparse variational
    inference in Gaussian process regression. JMLR 2020.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.checks import checked_optional_count, checked_real
from botorch_sketch.sketching.embedding.kernels import kernel_diagonal, kernel_matrix
from botorch_sketch.sketching.rules.rule import Candidates, SelectionRule


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


__all__ = [
    "GreedyVarianceSelector",
    "greedy_variance_pivots",
]
