#!/usr/bin/env python3
r"""The sketched weight posterior: one object for every model and loop.

With features ``z`` (a Nystrom embedding, or the identity for ridge
regression), residuals ``r_i`` and noise variances ``lambda_i``, the weights of
``f(x) ~ z(x)^T w``, ``w ~ N(0, I)``, have the posterior ``N(w, C)`` with
precision ``B = C^{-1} = I + Z^T Lambda^{-1} Z`` and mean ``w = C Z^T Lambda^{-1}
r`` (:mod:`botorch_sketch.sketching.dtc` for the DTC read-outs built on it).

:class:`WeightPosterior` holds ``w`` and ``C`` in float64 next to the
statistics of the data (:class:`~botorch_sketch.sketching.statistics.
DTCStatistics`) and moves between two states of the same posterior:

- *factorised*: a Cholesky factor of ``B`` from the statistics (``O(m^3)``),
  which gives the log marginal likelihood and ``C`` (formed on first use);
- *updated*: ``C`` kept current by the Woodbury identity in ``O(q m^2)`` for
  ``q`` observations (a bandit's pulls, a BO step, a batch of fantasies),
  ``C <- C - P S^{-1} P^T``, ``w <- w + P S^{-1} (r - Z_q w)`` with
  ``P = C Z_q^T``, ``S = Z_q C Z_q^T + Lambda_q``; or grown by one coordinate
  by a bordered inverse (:func:`bordered_inverse`) when the inducing set grows.

:meth:`WeightPosterior.refactorise` goes back from the second to the first and
clears the rounding drift of the recursive updates. Every read-out (mean,
quadratic form, variance, covariance, Matheron update) goes through ``C``, so
both states read alike. Fantasy updates, which add batch dimensions, keep
``C = C_0 - G^T G`` with a ``batch_shape x k x m'`` downdate ``G``: a batch of
``b`` fantasy posteriors of ``q`` points costs ``b q m'`` numbers, not
``b m'^2``.

References:

.. [Quinonero2005unifying]
    J. Quinonero-Candela, C. E. Rasmussen. A unifying view of sparse approximate
    Gaussian process regression. JMLR 2005.
.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
.. [Titsias2009variational]
    M. Titsias. Variational learning of inducing variables in sparse Gaussian
    processes. AISTATS 2009.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from botorch_sketch.sketching.chunks import row_chunks
from botorch_sketch.sketching.growing import GrowthBuffer, grown_block
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.statistics import DTCStatistics


@dataclass
class RankUpdate:
    r"""What a rank-``q`` update did, for tracked read-outs to follow.

    Attributes:
        P: ``m' x q``, ``C Z_q^T`` before the update.
        chol: ``q x q`` lower Cholesky factor of ``S = Z_q C Z_q^T + Lambda_q``.
        coefficients: ``q``, ``S^{-1} (r - Z_q w)``.
    """

    P: Tensor
    chol: Tensor
    coefficients: Tensor


@dataclass
class Border:
    r"""What growing the embedding by one coordinate did to the posterior.

    Attributes:
        u: ``m'``, ``C g`` before growing.
        schur: ``1 + g_nn - g^T C g``.
        delta: The new coordinate's weight, ``(b_new - g^T w) / schur``.
    """

    u: Tensor
    schur: Tensor
    delta: Tensor


class OnePointProducts(NamedTuple):
    r"""One point's products with the posterior (:meth:`WeightPosterior.product_one`).

    Attributes:
        P: ``m'``, ``C z``.
        quadratic: ``z^T C z`` (the point's variance is ``k - ||z||^2`` plus it).
        mean: ``z^T w`` (its posterior mean minus the prior mean).
        squared_norm: ``P^T P`` (what a downdate by the point takes off ``tr(C)``,
            times ``s``).
    """

    P: Tensor
    quadratic: float
    mean: float
    squared_norm: float


def bordered_inverse(
    inverse: Tensor, column: Tensor, corner: Tensor, out: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    r"""The inverse of ``[[M, g], [g^T, c]]`` from ``M^{-1}``, ``O(m^2)``.

    By the Schur complement ``s = c - g^T M^{-1} g``: with ``u = M^{-1} g``, the
    inverse is ``[[M^{-1} + u u^T / s, -u / s], [-u^T / s, 1 / s]]``.

    Args:
        inverse: The ``m x m`` symmetric ``M^{-1}``.
        column: The ``m`` new column ``g``.
        corner: The new diagonal entry ``c`` (0-dim).
        out: A ``(m + 1) x (m + 1)`` tensor to write the result to, or None for
            a new one. ``inverse`` may be its top-left block (a buffer with
            spare rows and columns grows in place, with no ``m x m`` copy).

    Returns:
        The ``(m + 1) x (m + 1)`` inverse, ``u`` and ``s``.
    """
    m = inverse.shape[-1]
    u = inverse @ column
    schur = corner - column @ u
    if out is None:
        out = inverse.new_empty(m + 1, m + 1)
    top = out[:m, :m]
    if not (top.data_ptr() == inverse.data_ptr() and top.stride() == inverse.stride()):
        top.copy_(inverse)
    scaled = u / schur
    top.addr_(scaled, u)  # one pass, no m x m temporary
    out[:m, m] = out[m, :m] = -scaled
    out[m, m] = 1 / schur
    return out, u, schur


def _times(Z: Tensor, M: Tensor) -> Tensor:
    r"""``Z @ M`` for ``... x q x m`` and ``lead x m x k``, without copying ``M``.

    The batch dimensions that ``Z`` has and ``M`` has not (``b x q x m'`` test
    points against a posterior batched over fantasies: an acquisition
    function's raw samples) are folded into the rows of one product, where
    broadcasting would copy an ``m x k`` matrix per test batch.
    """
    lead = M.shape[:-2]
    if len(lead) == 0 or Z.dim() - 2 <= len(lead):
        return Z @ M
    q, m = Z.shape[-2:]
    batch = torch.broadcast_shapes(lead, Z.shape[:-2])
    k, n = len(batch) - len(lead), len(batch)
    order = [*range(k, n), *range(k), n, n + 1]
    rows = Z.expand(batch + (q, m)).permute(order).reshape(batch[k:] + (-1, m))
    out = rows @ M.expand(batch[k:] + M.shape[-2:])  # inner x (E q) x k
    out = out.reshape(batch[k:] + batch[:k] + (q, M.shape[-1]))
    return out.permute([*range(n - k, n), *range(n - k), n, n + 1])


class WeightPosterior:
    r"""The weight posterior ``N(w, C)`` given :class:`DTCStatistics`.

    ``w`` and ``C`` are kept in float64 whatever the data type: the ``m' x m'``
    algebra costs nothing next to the ``n x m`` work, and keeps float32 models
    stable when ``B`` is ill-conditioned (small noise, many points). Read-outs
    are returned in the type of the embedded inputs.

    Example:
        >>> post = WeightPosterior(DTCStatistics.from_data(embedding, X, r, noise))
        >>> Z = embedding(X_test)
        >>> resid = embedding.residual_variance(X_test, Z)
        >>> mean, var = post.mean(Z), post.variance(Z, resid)
        >>> post.update(Z_new, residual_new, r_new, noise_new)  # Woodbury, O(q m^2)
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

    @classmethod
    def prior(cls, dim: int, like: Tensor) -> WeightPosterior:
        r"""The posterior given no data, ``N(0, I)``, in ``dim`` coordinates."""
        return cls(DTCStatistics.empty(dim, like=like))

    @classmethod
    def from_posterior(cls, posterior: WeightPosterior) -> WeightPosterior:
        r"""A copy of ``posterior`` that later updates leave apart."""
        return posterior.copy()

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
        self._chol, self._whitened_moment = _factor(self.statistics)
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

    def copy(self) -> WeightPosterior:
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
        ZG = None if self._downdate is None else _times(Zd, self._downdate.mT)
        return _times(Zd, self._covariance_base()), ZG

    def _times_covariance(self, Zd: Tensor) -> Tensor:
        ZC, ZG = self._products(Zd)
        return ZC if ZG is None else ZC - ZG @ self._downdate

    def mean(self, Z: Tensor) -> Tensor:
        r"""Posterior mean minus the prior mean.

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded points.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q`` tensor ``Z w``.
        """
        w = self._w if self._w.dtype == Z.dtype else self._w.to(Z.dtype)
        return (Z @ w.unsqueeze(-1)).squeeze(-1)

    def quadratic_form(self, Z: Tensor) -> Tensor:
        r"""``z^T C z`` for the rows of ``Z``: the weights' variance along ``z``.

        Args:
            Z: A ``batch_shape x q x m'`` tensor.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q`` tensor.
        """
        Zd = Z if Z.dtype == torch.float64 else Z.double()
        ZC, ZG = self._products(Zd)
        quad = (ZC * Zd).sum(-1)
        if ZG is not None:
            quad = quad - ZG.pow(2).sum(-1)
        return quad.to(Z.dtype)

    def variance(self, Z: Tensor, residual_var: Tensor) -> Tensor:
        r"""Posterior variance ``k(x, x) - ||z||^2 + z^T C z`` (GP units).

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded points.
            residual_var: A ``batch_shape x q`` tensor ``k(x, x) - ||z(x)||^2``.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q`` tensor, at least
            zero.
        """
        return (residual_var + self.quadratic_form(Z)).clamp_min(0)

    def chunked_variance(
        self,
        num_points: int,
        chunk_size: int,
        embedded: Callable[[slice], tuple[Tensor, Tensor]],
    ) -> Tensor:
        r""":meth:`variance` of many points, one chunk of rows at a time.

        Memory stays at a few ``chunk_size x m'`` blocks whether the points are
        held embedded (a bandit's arms) or embedded chunk by chunk (``n = 10^6``
        training inputs).

        Args:
            num_points: The number ``n`` of points.
            chunk_size: Rows per chunk.
            embedded: Maps a slice of rows to their ``... x rows x m'`` embedding
                and ``... x rows`` residual variances ``k(x, x) - ||z||^2``.

        Returns:
            A ``... x n`` tensor of variances (GP units).
        """
        out = None
        for rows in row_chunks(num_points, chunk_size):
            part = self.variance(*embedded(rows))
            if part.shape[-1] == num_points:
                return part
            if out is None:
                out = part.new_empty(part.shape[:-1] + (num_points,))
            out[..., rows] = part
        if out is None:  # no points
            out = self._w.new_zeros(self.batch_shape + (0,)).to(self.dtype)
        return out

    def covariance(self, Z: Tensor, K: Tensor) -> Tensor:
        r"""Posterior covariance ``K - Z Z^T + Z C Z^T``.

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded points.
            K: Their ``batch_shape x q x q`` prior covariance.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q x q`` PSD matrix. Its
            diagonal is raised (never lowered) where rounding made it negative.
        """
        covar = self.cross_covariance(Z, Z, K)
        return lift_diagonal(0.5 * (covar + covar.mT))

    def cross_covariance(self, Z1: Tensor, Z2: Tensor, K12: Tensor) -> Tensor:
        r"""Posterior covariances ``k(x, x') - z^T z' + z^T C z'`` of two point sets.

        ``O(q_2 m'^2 + q_1 q_2 m')``: with a single second point (a column of
        the covariance over a bandit's arms) that is ``O(q_1 m')``.

        Args:
            Z1: A ``batch_shape x q_1 x m'`` tensor of embedded points.
            Z2: A ``batch_shape x q_2 x m'`` tensor of embedded points.
            K12: Their ``batch_shape x q_1 x q_2`` prior covariance.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q_1 x q_2`` tensor.
        """
        Z1d = Z1 if Z1.dtype == torch.float64 else Z1.double()
        Z2d = Z1d if Z2 is Z1 else Z2 if Z2.dtype == torch.float64 else Z2.double()
        C2, G2 = self._products(Z2d)
        quad = Z1d @ C2.mT
        if G2 is not None:
            G1 = G2 if Z2 is Z1 else _times(Z1d, self._downdate.mT)
            quad = quad - G1 @ G2.mT
        return K12 - Z1 @ Z2.mT + quad.to(Z1.dtype)

    def matheron_update(
        self, prior_weights: Tensor, generator: torch.Generator | None = None
    ) -> Tensor:
        r"""Matheron's rule in Nystrom coordinates: posterior minus prior weights.

        With the data ``y = Z w + eps``, a prior draw ``w_0 ~ N(0, I)`` becomes a
        posterior draw ``w_0 + v``, ``v = C Z^T Lambda^{-1} (r - Z w_0 - eps)``
        [Wilson2020efficiently]_. Everything is in the statistics:
        ``Z^T Lambda^{-1} Z`` is ``gram``, ``Z^T Lambda^{-1} r`` is ``moment``, and
        ``Z^T Lambda^{-1} eps ~ N(0, gram)``, so no pass over the data is needed.
        A function drawn from the prior plus ``z(x)^T v`` is then a draw from the
        DTC posterior (the part of the prior outside the embedding is untouched).

        Args:
            prior_weights: A ``sample_shape x m'`` tensor, the prior draw's
                coordinates ``w_0``.
            generator: The random generator of the noise draw.

        Returns:
            A ``sample_shape x m'`` tensor ``v``.
        """
        rhs = matheron_rhs(self.statistics, prior_weights, generator)
        return self._times_covariance(rhs).to(prior_weights.dtype)

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
            chol, whitened_moment = _factor(s)
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

    # ---------------------------------------------------------------- updates

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

    def product_one(self, z: Tensor) -> OnePointProducts:
        r"""The products of one embedded point with the posterior, ``O(m^2)``.

        The point's posterior variance is ``k(x, x) - ||z||^2 + z^T C z`` and
        its mean ``z^T w``: a loop that needs them before absorbing the point
        (BKB's coin) reads them here and hands the result to
        :meth:`update_one_`, which then skips the same products.

        Args:
            z: A ``m'`` tensor, the embedded input.

        Returns:
            ``P = C z`` (a view of a buffer that the next call overwrites),
            ``z^T C z``, ``z^T w`` and ``P^T P``.
        """
        if len(self.batch_shape):
            raise UnsupportedError("A batched (fantasy) posterior has no product_one.")
        base = self._covariance_base()
        z_row, P, z_and_P, _, P_and_w = self._one_point_rows()
        z_row.copy_(z)
        torch.mv(base, z_row, out=P)
        (quadratic, mean), (squared_norm, _) = torch.mm(z_and_P, P_and_w).tolist()
        return OnePointProducts(P, quadratic, mean, squared_norm)

    def update_one_(
        self,
        z: Tensor,
        residual_var: float,
        r: float,
        noise: float,
        product: OnePointProducts | None = None,
    ) -> tuple[Tensor, float, float]:
        r"""Absorb one observation in place, ``O(m^2)`` in a handful of kernels.

        The rank-one case of :meth:`update` (same posterior up to rounding) for
        online loops, where the per-call overhead of the general ``q x q``
        route (a Cholesky, triangular solves, new statistics) is many times
        the arithmetic: ``C <- C - P P^T / s`` and ``w <- w + P (r - z^T w) /
        s`` with ``P = C z``, ``s = z^T P + noise`` (Sherman-Morrison). The
        weights and ``C`` are written in place (cloned first when they may be
        shared: after :meth:`copy` or a factorisation); ``z`` is kept in a
        buffer, and the statistics gain ``z z^T / noise`` and ``z r / noise``
        at their next read, every pending observation in one product.

        Args:
            z: A ``m'`` tensor, the embedded input.
            residual_var: ``k(x, x) - ||z||^2`` (for the statistics).
            r: The residual ``y - mu_0(x)``.
            noise: The noise variance.
            product: :meth:`product_one` of ``z``, read since the last change
                of the posterior, or None to compute it here.

        Returns:
            ``P`` (``m'``, ``C z`` before the update; a view of a buffer that
            the next update overwrites), ``s`` and the coefficient
            ``(r - z^T w) / s``, for :meth:`TrackedCandidates.apply_one
            <botorch_sketch.sketching.online.TrackedCandidates.apply_one>`.
        """
        if len(self.batch_shape):
            raise UnsupportedError("A batched (fantasy) posterior has no update_one_.")
        if not self._owned:
            self._own()
        self._chol = None
        base = self._base
        if product is None:
            product = self.product_one(z)
        P = product.P
        s = product.quadratic + noise
        coefficient = (r - product.mean) / s
        self._w.add_(P, alpha=coefficient)
        base.addr_(P, P, alpha=-1.0 / s)
        if self._trace_of is base:
            self._trace -= product.squared_norm / s
        # The statistics gain ``z z^T / noise`` and ``z r / noise`` at the next
        # read (:attr:`statistics`), all pending rows in one product.
        self._push_row(z, 1.0 / noise, r)
        pending = self._pending or [0.0, 0.0, 0.0, 0]
        pending[0] += r * r / noise
        pending[1] += math.log(noise)
        pending[2] += residual_var / noise
        pending[3] += 1
        self._pending = pending
        return P, s, coefficient

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

    def update(
        self,
        Z: Tensor,
        residual_var: Tensor,
        r: Tensor,
        noise: Tensor,
        statistics: DTCStatistics | None = None,
    ) -> RankUpdate:
        r"""Absorb ``q`` observations by the Woodbury identity, ``O(q m^2)``.

        Updates that add batch dimensions (fantasies) keep their downdate apart
        from ``C_0`` (see the module docstring).

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded inputs.
            residual_var: A ``batch_shape x q`` tensor ``k(x, x) - ||z||^2`` (for
                the statistics).
            r: A ``batch_shape x q`` tensor of residuals ``y - mu_0(x)``.
            noise: A ``batch_shape x q`` tensor of noise variances.
            statistics: The statistics of these observations, if already
                computed.

        Returns:
            The update, to apply to tracked read-outs.
        """
        base = self._covariance_base()
        Zd = Z.to(base)
        P = self._times_covariance(Zd).mT  # C Z^T, ... x m' x q
        S = Zd @ P + torch.diag_embed(noise.to(P))
        chol = torch.linalg.cholesky(0.5 * (S + S.mT))
        innovation = r.to(P) - (Zd @ self._w.unsqueeze(-1)).squeeze(-1)
        coefficients = torch.cholesky_solve(innovation.unsqueeze(-1), chol)
        G = torch.linalg.solve_triangular(chol, P.mT, upper=False)  # ... x q x m'
        self._w = self._w + (P @ coefficients).squeeze(-1)
        if self._downdate is None and G.dim() == 2:
            self._base = base - G.mT @ G
        elif self._downdate is None:
            self._downdate = G
        else:
            batch = torch.broadcast_shapes(self._downdate.shape[:-2], G.shape[:-2])
            self._downdate = torch.cat(
                [
                    self._downdate.expand(batch + self._downdate.shape[-2:]),
                    G.expand(batch + G.shape[-2:]),
                ],
                dim=-2,
            )
        self._stale()
        if statistics is None:
            statistics = DTCStatistics.from_embedded(Z, residual_var, r, noise)
        self.statistics = self.statistics + statistics
        return RankUpdate(P=P, chol=chol, coefficients=coefficients.squeeze(-1))

    def absorb(
        self, embedding: NystromEmbedding, X: Tensor, r: Tensor, noise: Tensor
    ) -> DTCStatistics:
        r"""Absorb raw observations by the cheaper of the two routes.

        Up to ``m'`` observations go through :meth:`update` (``O(q m^2)``); more
        are accumulated in chunks (:meth:`DTCStatistics.from_data`) and the
        posterior refactorised (``O(q m^2 + m^3)``), where the ``q x q`` Woodbury
        system would cost more.

        Args:
            embedding: The Nystrom embedding the posterior is expressed in.
            X: A ``batch_shape x q x d`` tensor of (input-transformed) inputs.
            r: A ``batch_shape' x q`` tensor of residuals (broadcasting with
                ``batch_shape``).
            noise: Noise variances, broadcasting with ``r`` (shaped like the
                inputs' batch, so that fantasies share their Gram matrix).

        Returns:
            The statistics of the new observations.
        """
        if X.shape[-2] > self.dim:
            new = DTCStatistics.from_data(embedding, X, r, noise)
            self.statistics = self.statistics + new
            self.refactorise()
            return new
        # The noise is not expanded to the residuals' shape: the Gram matrix and
        # the downdate then carry the inputs' batch dimensions only, shared by
        # every fantasised outcome at those inputs.
        Z = embedding(X)
        residual_var = embedding.residual_variance(X, Z)
        new = DTCStatistics.from_embedded(Z, residual_var, r, noise)
        self.update(Z, residual_var, r, noise, statistics=new)
        return new

    def extend(
        self,
        gram_column: Tensor | None = None,
        gram_corner: float | Tensor = 0.0,
        moment_entry: float | Tensor = 0.0,
    ) -> Border:
        r"""Add a coordinate (the inducing set grew by one point).

        With ``g`` the new column of ``gram`` (``sum_i z_i c_i / lambda_i``, ``c_i``
        the observations' new coordinate), ``g_nn = sum_i c_i^2 / lambda_i`` and
        ``b_new = sum_i c_i r_i / lambda_i``, the bordered precision
        ``[[B, g], [g^T, 1 + g_nn]]`` is inverted by :func:`bordered_inverse` in
        ``O(m^2)``. All three are zero when every observed input lies in the old
        span (exact GP-UCB).

        Args:
            gram_column: ``g``, a ``m'`` tensor, or None for zeros.
            gram_corner: ``g_nn``.
            moment_entry: ``b_new``.

        Returns:
            The border, for :meth:`TrackedCandidates.apply_border
            <botorch_sketch.sketching.online.TrackedCandidates.apply_border>`.
        """
        if len(self.batch_shape):
            raise UnsupportedError("A batched (fantasy) posterior cannot grow.")
        # Before the statistics are replaced: their setter marks ``C`` shared.
        base = self._covariance_base()
        m = self._statistics.moment.shape[-1]
        # ``C`` grows inside its buffer, in place while private (not shared
        # with a copy): amortised O(m^2) copies, not one per coordinate.
        store = self._base_buffer if self._owned else None
        out, self._base_buffer = grown_block(base, store, m + 1, m + 1)
        g = self._statistics.moment.new_zeros(m) if gram_column is None else gram_column
        g_nn = torch.as_tensor(gram_corner, dtype=g.dtype, device=g.device)
        b_new = torch.as_tensor(moment_entry, dtype=g.dtype, device=g.device)
        self.statistics = self._bordered_statistics(g, g_nn, b_new)
        self._gram_private = True
        g, g_nn, b_new = g.to(base), g_nn.to(base), b_new.to(base)
        self._base, u, schur = bordered_inverse(out[:m, :m], g, 1 + g_nn, out)
        delta = (b_new - g @ self._w) / schur
        self._w = torch.cat([self._w - u * delta, delta.reshape(1)])
        self._stale()
        # Every tensor ``update_one_`` writes was made here.
        self._owned = True
        return Border(u=u, schur=schur, delta=delta)

    def extend_with_data(
        self, Z: Tensor, coordinate: Tensor, r: Tensor, noise: Tensor
    ) -> Border:
        r"""Add a coordinate, given the observations' new coordinate.

        Args:
            Z: A ``n x m'`` tensor, the observations' old coordinates.
            coordinate: A ``n`` tensor, their new coordinate ``c_i``.
            r: A ``n`` tensor of residuals.
            noise: A ``n`` tensor of noise variances.

        Returns:
            The border, for :meth:`TrackedCandidates.apply_border
            <botorch_sketch.sketching.online.TrackedCandidates.apply_border>`.
        """
        weighted = coordinate / noise
        return self.extend(
            gram_column=Z.mT @ weighted,
            gram_corner=(weighted * coordinate).sum(),
            moment_entry=(weighted * r).sum(),
        )


def _factor(statistics: DTCStatistics) -> tuple[Tensor, Tensor]:
    # The Cholesky factor L of B = I + gram and c = L^{-1} Z^T Lambda^{-1} r, in
    # float64 (see the class docstring).
    gram = statistics.gram.double()
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    chol = torch.linalg.cholesky(eye + 0.5 * (gram + gram.mT))
    whitened = torch.linalg.solve_triangular(
        chol, statistics.moment.double().unsqueeze(-1), upper=False
    )
    return chol, whitened


def lift_diagonal(covar: Tensor) -> Tensor:
    r"""Raise the negative diagonal entries of a ``... x q x q`` matrix to zero.

    The DTC covariance is PSD in exact arithmetic; rounding can make a variance
    slightly negative where it is nearly zero (at an inducing point, with little
    noise). Only the diagonal is touched, and the lift carries no gradient.
    """
    diag = covar.diagonal(dim1=-2, dim2=-1)
    lift = (diag.clamp_min(0) - diag).detach()
    return covar + torch.diag_embed(lift)


def matheron_rhs(
    statistics: DTCStatistics,
    prior_weights: Tensor,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""``Z^T Lambda^{-1} (r - Z w_0 - eps)`` from the statistics, in float64.

    The right-hand side of Matheron's rule in Nystrom coordinates (see
    :meth:`WeightPosterior.matheron_update`): ``Z^T Lambda^{-1} eps`` is drawn as
    ``N(0, gram)`` through a symmetric square root of ``gram``.

    Args:
        statistics: The statistics of the conditioning data.
        prior_weights: A ``sample_shape x m'`` tensor ``w_0``.
        generator: The random generator of the noise draw.

    Returns:
        A ``sample_shape x m'`` float64 tensor.
    """
    gram = statistics.gram.double()
    evals, evecs = torch.linalg.eigh(0.5 * (gram + gram.mT))
    sqrt_gram = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
    # Drawn on the generator's device (the CPU without one), then moved.
    device = generator.device if generator is not None else "cpu"
    xi = torch.randn(
        prior_weights.shape, generator=generator, dtype=gram.dtype, device=device
    ).to(gram.device)
    w0 = prior_weights.double()
    return statistics.moment.double() - w0 @ gram - xi @ sqrt_gram.mT
