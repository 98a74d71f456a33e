#!/usr/bin/env python3
r"""The DTC posterior covariance as a linear operator that computes rows on demand.

The DTC posterior covariance of ``N`` points is ``K - F F^T`` with ``K`` their
prior covariance and ``F = k_S(X)^T P``
(:class:`~botorch_sketch.sketching.posterior.DTCReadout`: ``k_S`` the kernel
rows against the inducing set, ``P`` the folded
``m x m'`` covariance root). Forming it costs ``N m m' + N^2 m'``. Much of the
time only ``q`` of its rows are read: BoTorch's ``qLogNoisyExpectedImprovement``
(and the other acquisition functions with ``cache_root``) factorise the rows of
the baseline once and, per evaluation, read only the ``q`` bottom rows of the
joint covariance over ``baseline + q`` points
(``botorch.utils.low_rank.sample_cached_cholesky``). Those rows are ``K[rows] -
(k_S(X)[rows] P P^T) k_S(X)``: ``q m^2 + q N m`` with the ``m x m`` Gram matrix
``P P^T`` formed once per posterior state
(:attr:`~botorch_sketch.sketching.posterior.DTCReadout.covariance_gram`), with no
product of the ``N`` kernel rows by ``P``. With 150 baseline points, ``q = 1`` and
``m = 400``, that is 100x fewer flops per evaluation than the dense matrix. The
``q`` rows of every batch element go through one ``(batch q) x m`` by ``m x m``
product: a batched product with an unbatched ``m x m`` matrix would copy that
matrix once per batch element (20 restarts, or 1024 raw samples, of
``optimize_acqf``), which cost more than the product itself.

Everything else (the dense matrix, the diagonal, products) is what the dense
covariance gives, up to rounding.
"""

from __future__ import annotations

import torch
from linear_operator.operators import LinearOperator, to_linear_operator
from linear_operator.utils.getitem import _noop_index
from linear_operator.utils.memoize import cached
from torch import Tensor

from botorch_sketch.sketching.posterior.linalg import lift_diagonal, variance_floor


def _is_noop(index: object) -> bool:
    return index is _noop_index or (
        isinstance(index, slice)
        and index.start is None
        and index.stop is None
        and index.step is None
    )


class DTCCovarianceOperator(LinearOperator):
    r"""``K - F F^T`` with ``F = rows @ root``, rows computed on demand.

    Example:
        >>> readout = DTCReadout(embedding, posterior)
        >>> rows = embedding.kernel_rows(X)  # batch_shape x N x m
        >>> covar = DTCCovarianceOperator(
        ...     kernel(X), rows, readout.covariance_root, readout.covariance_gram
        ... )
        >>> covar[..., -1:, :].to_dense()  # one row: O(m^2 + N m)
    """

    def __init__(
        self,
        prior: LinearOperator | Tensor,
        rows: Tensor,
        root: Tensor,
        gram: Tensor | None = None,
    ):
        r"""Hold the pieces; nothing of size ``N x N`` is computed.

        Args:
            prior: The ``batch_shape x N x N`` prior covariance (a lazily
                evaluated kernel: its rows are computed when read).
            rows: The ``batch_shape x N x m`` kernel rows against the inducing set.
            root: The ``m x m'`` folded covariance root ``P``.
            gram: Its ``m x m`` Gram matrix ``P P^T``, if formed (once per
                posterior state); rows are then read with one product by it
                instead of two by ``P``.
        """
        prior = to_linear_operator(prior)
        # ``root`` and ``gram`` have no batch dimensions: keywords, which
        # linear_operator's batch reshaping (expand, unsqueeze, permute) passes
        # through as they are.
        super().__init__(prior, rows, root=root, gram=gram)
        self.prior = prior
        self.rows = rows
        self.root = root
        self.gram = gram
        # Once: a lazily evaluated kernel's shape is worked out anew at each
        # call, and linear_operator asks for the size at every operation.
        batch = torch.broadcast_shapes(prior.batch_shape, rows.shape[:-2])
        self._shape = batch + prior.shape[-2:]

    def _size(self) -> torch.Size:
        return self._shape

    def _transpose_nonbatch(self) -> DTCCovarianceOperator:
        return self  # symmetric

    def _factor(self) -> Tensor:
        # F = rows @ P: batch_shape x N x m'.
        return self.rows @ self.root

    @cached(name="dense")
    def to_dense(self) -> Tensor:  # noqa: D102
        F = self._factor()
        K = self.prior.to_dense()
        floor = variance_floor(F.dtype)
        return lift_diagonal(K - F @ F.mT, floor).expand(self.shape)

    def _matmul(self, rhs: Tensor) -> Tensor:
        F = self._factor()
        return self.prior._matmul(rhs) - F @ (F.mT @ rhs)

    def _diagonal(self) -> Tensor:
        F = self._factor()
        diagonal = self.prior._diagonal() - F.pow(2).sum(-1)
        # Raised to GPyTorch's smallest variance where rounding made it smaller
        # (GPyTorch would round it so, with a warning each time), with no
        # gradient in the lift, as ``lift_diagonal`` does for the dense matrix.
        floor = variance_floor(diagonal.dtype)
        lifted = diagonal.detach().clamp_min(floor)
        diagonal = diagonal - diagonal.detach() + lifted  # exactly ``lifted``
        return diagonal.expand(self.shape[:-1])

    def _getitem(self, row_index, col_index, *batch_indices) -> LinearOperator:
        # Rows of the full column range, the batch untouched: the cheap route.
        if (
            isinstance(row_index, slice)
            and _is_noop(col_index)
            and all(_is_noop(i) for i in batch_indices)
        ):
            rows = self.rows.expand(*self.batch_shape, *self.rows.shape[-2:])
            picked = rows[..., row_index, :]  # batch x r x m
            flat = picked.reshape(-1, picked.shape[-1])  # (batch r) x m
            if self.gram is not None:
                flat = flat @ self.gram
            else:
                flat = (flat @ self.root) @ self.root.mT
            cross = flat.reshape(picked.shape) @ rows.mT  # batch x r x N
            prior = self.prior._getitem(row_index, col_index, *batch_indices)
            return to_linear_operator(prior.to_dense() - cross)
        return to_linear_operator(self.to_dense())._getitem(
            row_index, col_index, *batch_indices
        )

    def _get_indices(self, row_index, col_index, *batch_indices) -> Tensor:
        return to_linear_operator(self.to_dense())._get_indices(
            row_index, col_index, *batch_indices
        )

    def _expand_batch(self, batch_shape: torch.Size) -> DTCCovarianceOperator:
        rows = self.rows.expand(*batch_shape, *self.rows.shape[-2:])
        prior = self.prior._expand_batch(batch_shape)
        return type(self)(prior, rows, root=self.root, gram=self.gram)
