#!/usr/bin/env python3
r"""The state of a weight posterior: ``w``, ``C`` and the statistics they are of.

:class:`WeightPosteriorState` keeps what
:class:`~botorch_sketch.sketching.posterior.WeightPosterior` reads and updates
(the mathematics are in :mod:`~botorch_sketch.sketching.posterior.weight_posterior`),
and reads what needs no test points: the weights and their covariance, the
log marginal likelihood and the data's variance sum.

- ``w`` and ``C`` are float64. ``C`` is formed from the Cholesky factor of
  ``B`` on first use, and kept as ``C_0 - G^T G`` after updates that add
  batch dimensions (fantasies).
- The statistics of the data are kept alongside. The observations that a
  rank-one update absorbs in place wait in a buffer of rows and are summed
  into them at their next read, all in one product.
- The gram matrix and ``C`` grow by a row and a column inside growth buffers
  (:mod:`~botorch_sketch.sketching.embedding.growing`). A copy shares its
  tensors until one of the two writes in place, which clones them first.

References:

.. [Titsias2009variational]
    M. Titsias. Variational learning of inducing variables in sparse Gaussian
    processes. AISTATS 2009.
"""

from __future__ import annotations

import copy
import math
from typing import Self

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from botorch_sketch.sketching.embedding.growing import GrowthBuffer, grown_block
from botorch_sketch.sketching.posterior.linalg import factor_precision, folded_matmul
from botorch_sketch.sketching.posterior.statistics import DTCStatistics


class WeightPosteriorState:
    r"""The weights ``w``, their covariance ``C`` and the statistics of the data.

    The base of :class:`~botorch_sketch.sketching.posterior.WeightPosterior`,
    which adds the read-outs at test points and the updates. It keeps the
    tensors (its own or shared with a copy, grown in place while its own), the
    Cholesky factor of ``B`` while it matches them, and the observations not
    yet summed into the statistics.
    """

    def __init__(self, statistics: DTCStatistics) -> None:
        r"""Factorise ``B = I + gram`` (``O(m'^3)``).

        Args:
            statistics: The sufficient statistics of the conditioning data.
        """
        self._gram_buffer: GrowthBuffer | None = None
        self._base_buffer: GrowthBuffer | None = None
        # ``tr(C)`` and the ``C`` it is of (kept by ``update_one_``).
        self._trace: float = 0.0
        self._trace_of: Tensor | None = None
        # ``[z; P; w]`` of ``product_one`` (a row of it is ``w``) and its views.
        self._one_point: tuple[Tensor, ...] | None = None
        self.statistics = statistics
        self.dtype = statistics.moment.dtype
        self._factorise()

    # ----------------------------------------------------------------- state

    @property
    def statistics(self) -> DTCStatistics:
        r"""The statistics of the data seen so far."""
        if self._pending is not None:
            # New tensors (a reader may keep them).
            increment, moment, scalars = self._pending_sums()
            self._statistics = DTCStatistics(
                torch.addmm(self._statistics.gram, *increment), moment, *scalars
            )
            self._clear_pending()
        # Handed out: :meth:`extend` no longer grows the gram matrix in place.
        self._gram_private = False
        return self._statistics

    def _pending_sums(
        self, moment_size: int | None = None
    ) -> tuple[tuple[Tensor, Tensor] | None, Tensor, tuple[Tensor, ...]]:
        r"""What the observations of :meth:`update_one_` add to the statistics.

        Their rows go in with one product and the scalar terms with one op
        each, once per read rather than per observation.

        Args:
            moment_size: The length of the new moment vector, whose leading
                entries are the updated moment (the current length if None).

        Returns:
            The two factors of the gram matrix's increment (None if nothing is
            pending), the new moment and the new scalar statistics.
        """
        st = self._statistics
        m = st.moment.shape[-1]
        moment = st.moment.new_empty(m if moment_size is None else moment_size)
        if self._pending is None:
            moment[:m] = st.moment
            scalars = (st.sq_residual, st.log_noise, st.trace_gap, st.num_data)
            return None, moment, scalars
        sq, log_noise, gap, num = self._pending
        k = self._num_rows
        rows = self._rows[:k, :m]
        weights = rows.new_tensor(self._row_weights[:k])
        targets = rows.new_tensor(self._row_targets[:k])
        torch.addmv(st.moment, rows.mT, weights * targets, out=moment[:m])
        scalars = (
            st.sq_residual + sq,
            st.log_noise + log_noise,
            st.trace_gap + gap,
            st.num_data + num,
        )
        return (rows.mT * weights, rows), moment, scalars

    def _bordered_statistics(
        self, column: Tensor, corner: Tensor, moment_entry: Tensor
    ) -> DTCStatistics:
        r"""The statistics, pending observations included, with a new coordinate.

        The gram matrix grows inside a :class:`GrowthBuffer`, in place while
        no reader holds it (see :attr:`statistics`), so that an insertion costs
        one row and column, not an ``m' x m'`` allocation and copy.
        """
        st = self._statistics
        m = st.moment.shape[-1]
        store = self._gram_buffer if self._gram_private else None
        gram, self._gram_buffer = grown_block(st.gram, store, m + 1, m + 1)
        increment, moment, scalars = self._pending_sums(m + 1)
        if increment is not None:
            gram[:m, :m].addmm_(*increment)
        gram[:m, m] = gram[m, :m] = column
        gram[m, m] = corner
        moment[m] = moment_entry
        sq_residual, log_noise, trace_gap, num_data = scalars
        # The data's residual variance falls by their new coordinate squared.
        return DTCStatistics(
            gram, moment, sq_residual, log_noise, trace_gap - corner, num_data
        )

    @statistics.setter
    def statistics(self, value: DTCStatistics) -> None:
        self._statistics = value
        self._clear_pending()
        self._gram_private = False
        # The tensors may be shared (with a caller, a copy): in-place updates
        # clone them first.
        self._owned = False

    def _clear_pending(self) -> None:
        # The observations :meth:`update_one_` has absorbed into ``w`` and ``C``
        # but not yet into the statistics: the scalar terms, and the embedded
        # inputs (rows of a buffer), ``1 / noise`` and the residuals.
        self._pending: list[float] | None = None
        self._num_rows = 0
        self._gap: float | None = None  # float(trace_gap), read when needed
        self._row_weights: list[float] = []
        self._row_targets: list[float] = []
        if not hasattr(self, "_rows"):
            self._rows: Tensor | None = None

    @property
    def dim(self) -> int:
        r"""The embedding dimension ``m'``."""
        return self._w.shape[-1]

    @property
    def batch_shape(self) -> torch.Size:
        r"""The batch shape of the posterior (empty unless fantasies)."""
        return self._w.shape[:-1]

    @property
    def weights64(self) -> Tensor:
        r"""The posterior mean weights ``w`` in float64 (``batch_shape x m'``)."""
        return self._w

    @property
    def weights(self) -> Tensor:
        r"""The posterior mean weights ``w`` in the data type."""
        return self._w if self._w.dtype == self.dtype else self._w.to(self.dtype)

    @property
    def weight_covariance(self) -> Tensor:
        r"""``C = B^{-1}`` in float64, formed (``batch_shape x m' x m'``)."""
        base = self._covariance_base()
        if self._downdate is None:
            return base
        return base - self._downdate.mT @ self._downdate

    def _factorise(self) -> None:
        self._chol, self._whitened_moment = factor_precision(self.statistics)
        # w = B^{-1} Z^T Lambda^{-1} r = L^{-T} c with c = L^{-1} Z^T Lambda^{-1} r.
        self._w = torch.linalg.solve_triangular(
            self._chol.mT, self._whitened_moment, upper=True
        ).squeeze(-1)
        self._base: Tensor | None = None  # C_0, formed on first use
        self._downdate: Tensor | None = None  # G
        self._owned = False

    def _covariance_base(self) -> Tensor:
        if self._base is None:
            self._base = torch.cholesky_inverse(self._chol)
        return self._base

    def refactorise(self) -> None:
        r"""Recompute ``w`` and ``C`` from the statistics (``O(m'^3)``)."""
        self._factorise()

    def copy(self) -> Self:
        r"""A copy that later updates leave apart.

        Shallow: both share their tensors until one of them updates.
        :meth:`update` never works in place; :meth:`update_one_` does, and
        clones what it writes first when the tensors may be shared.
        """
        self._covariance_base()  # formed once, shared by both
        self.statistics  # noqa: B018 (folds the pending rows: their buffer is not shared)
        other = copy.copy(self)
        other._rows = None
        self._owned = other._owned = False
        return other

    # -------------------------------------------------------------- read-outs

    def _products(self, Zd: Tensor) -> tuple[Tensor, Tensor | None]:
        # Z C_0 and Z G^T (None without a downdate), never forming C.
        ZG = None if self._downdate is None else folded_matmul(Zd, self._downdate.mT)
        return folded_matmul(Zd, self._covariance_base()), ZG

    def _times_covariance(self, Zd: Tensor) -> Tensor:
        ZC, ZG = self._products(Zd)
        return ZC if ZG is None else ZC - ZG @ self._downdate

    def log_marginal_likelihood(self, titsias: bool = True) -> Tensor:
        r"""The DTC log marginal likelihood of the data, or Titsias' bound.

        ``log N(r | 0, Z Z^T + Lambda)`` in ``O(m^3)`` from the statistics; with
        ``titsias=True`` minus ``trace_gap / 2``, the collapsed variational bound of
        [Titsias2009variational]_, which penalises inducing sets that explain
        the prior variance poorly. After updates, the statistics are factorised
        afresh (the posterior itself is left as it is).

        Args:
            titsias: Subtract the trace term.

        Returns:
            A ``batch_shape`` tensor (not normalised by ``n``).
        """
        s = self.statistics
        if self._chol is None:
            chol, whitened_moment = factor_precision(s)
        else:
            chol, whitened_moment = self._chol, self._whitened_moment
        quad = s.sq_residual.double() - whitened_moment.pow(2).sum((-2, -1))
        log_det = s.log_noise.double() + 2 * chol.diagonal(dim1=-2, dim2=-1).log().sum(
            -1
        )
        value = -0.5 * (quad + log_det + s.num_data.double() * math.log(2 * math.pi))
        if titsias:
            value = value - 0.5 * s.trace_gap.double()
        return value.to(self.dtype)

    def data_variance_sum(self) -> float:
        r"""``sum_i sigma^2(x_i) / lambda_i`` over the conditioning data, ``O(m')``.

        Each observation's DTC variance ``k(x_i, x_i) - ||z_i||^2 + z_i^T C z_i``
        over its noise. The first two terms sum to the statistics'
        ``trace_gap``; the last sums to ``tr(C gram) = m' - tr(C)`` because
        ``C = (I + gram)^{-1}``. A bandit's UCB width, a sum over its pulls,
        reads this instead of every pulled arm's variance; it is exact up to
        the rounding of the recursive updates (cleared by :meth:`refactorise`).

        Returns:
            The sum, a Python float (unbatched posteriors only).
        """
        if len(self.batch_shape):
            raise UnsupportedError(
                "data_variance_sum is defined for an unbatched posterior."
            )
        if self._gap is None:
            self._gap = float(self._statistics.trace_gap)
        pending = 0.0 if self._pending is None else self._pending[2]
        explained = self.dim - self._covariance_trace()
        return self._gap + pending + explained

    # ------------------------------------------------------- in-place updates

    def _stale(self) -> None:
        # The factor no longer matches w and C; the statistics still do.
        self._chol = self._whitened_moment = None

    def _own(self) -> None:
        # Private copies of what :meth:`update_one_` writes in place (the
        # statistics it leaves to the next read, which makes new tensors).
        self._base = self._covariance_base().clone()
        self._w = self._w.clone()
        self._owned = True

    def _covariance_trace(self) -> float:
        # ``tr(C)``, recomputed only when ``C`` is a new tensor: ``update_one_``
        # keeps it current through its in-place downdates.
        base = self._covariance_base()
        if self._trace_of is not base:
            self._trace, self._trace_of = float(torch.trace(base)), base
        return self._trace

    def _one_point_rows(self) -> tuple[Tensor, ...]:
        # A ``3 x m'`` buffer of rows ``[z; P; w]`` whose last row *is* ``w``,
        # and its views: one product ``[z; P] [P; w]^T`` then gives ``z^T P``,
        # ``z^T w`` and ``P^T P`` in one call. ``w`` moves into a new buffer
        # whenever it is a new tensor (a factorisation, a border, an owned
        # copy), so a buffer is never shared with a copy of the posterior.
        rows = self._one_point
        if rows is None or rows[3] is not self._w:
            buffer = self._w.new_empty(3, self.dim)
            buffer[2] = self._w
            w = buffer[2]
            rows = (buffer[0], buffer[1], buffer[:2], w, buffer[1:].mT)
            self._one_point, self._w = rows, w
        return rows

    def _push_row(self, z: Tensor, weight: float, target: float) -> None:
        # Copy ``z`` into the pending rows (amortised O(m), one op).
        # The rows are folded before the dimension changes (every route that
        # grows or refactorises reads :attr:`statistics` first).
        k, m = self._num_rows, z.shape[-1]
        rows = self._rows
        full = rows is None or rows.shape[0] <= k
        if full or rows.shape[1] != m or rows.dtype != z.dtype:
            grown = z.new_empty(max(16, 2 * k), m)
            if k:
                grown[:k] = rows[:k]
            rows = self._rows = grown
        rows[k] = z  # (the buffer is m wide: a new width makes a new one)
        self._row_weights.append(weight)
        self._row_targets.append(target)
        self._num_rows = k + 1
