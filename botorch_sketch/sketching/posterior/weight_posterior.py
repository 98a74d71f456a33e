#!/usr/bin/env python3
r"""The sketched weight posterior: one object for every model and loop.

With features ``z`` (a Nystrom embedding, or the identity for ridge
regression), residuals ``r_i`` and noise variances ``lambda_i``, the weights of
``f(x) ~ z(x)^T w``, ``w ~ N(0, I)``, have the posterior ``N(w, C)`` with
precision ``B = C^{-1} = I + Z^T Lambda^{-1} Z`` and mean ``w = C Z^T Lambda^{-1}
r`` (:mod:`botorch_sketch.sketching.posterior.dtc` for the DTC read-outs built on it).

:class:`WeightPosterior` holds ``w`` and ``C`` in float64 next to the
statistics of the data (:class:`~botorch_sketch.sketching.posterior.statistics.
DTCStatistics`) and moves between two states of the same posterior:

- *factorised*: a Cholesky factor of ``B`` from the statistics (``O(m^3)``),
  which gives the log marginal likelihood and ``C`` (formed on first use);
- *updated*: ``C`` kept current by the Woodbury identity in ``O(q m^2)`` for
  ``q`` observations (a bandit's pulls, a BO step, a batch of fantasies),
  ``C <- C - P S^{-1} P^T``, ``w <- w + P S^{-1} (r - Z_q w)`` with
  ``P = C Z_q^T``, ``S = Z_q C Z_q^T + Lambda_q``; or grown by one coordinate
  by a bordered inverse
  (:func:`~botorch_sketch.sketching.posterior.updates.bordered_inverse`) when
  the inducing set grows.

:meth:`WeightPosterior.refactorise` goes back from the second to the first and
clears the rounding drift of the recursive updates. Every read-out (mean,
quadratic form, variance, covariance, Matheron update) goes through ``C``, so
both states read alike. Fantasy updates, which add batch dimensions, keep
``C = C_0 - G^T G`` with a ``batch_shape x k x m'`` downdate ``G``: a batch of
``b`` fantasy posteriors of ``q`` points costs ``b q m'`` numbers, not
``b m'^2``.

The tensors, the statistics and what is read without test points are kept
by the base class,
:class:`~botorch_sketch.sketching.posterior.state.WeightPosteriorState`.

References:

.. [Quinonero2005unifying]
    J. Quinonero-Candela, C. E. Rasmussen. A unifying view of sparse approximate
    Gaussian process regression. JMLR 2005.
.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from botorch_sketch.sketching.embedding.chunks import row_chunks
from botorch_sketch.sketching.embedding.growing import grown_block
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.linalg import (
    folded_matmul,
    lift_diagonal,
    matheron_rhs,
)
from botorch_sketch.sketching.posterior.state import WeightPosteriorState
from botorch_sketch.sketching.posterior.statistics import DTCStatistics
from botorch_sketch.sketching.posterior.updates import (
    Border,
    OnePointProducts,
    RankUpdate,
    bordered_inverse,
)


class WeightPosterior(WeightPosteriorState):
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

    @classmethod
    def prior(cls, dim: int, like: Tensor) -> WeightPosterior:
        r"""The posterior given no data, ``N(0, I)``, in ``dim`` coordinates."""
        return cls(DTCStatistics.empty(dim, like=like))

    @classmethod
    def from_posterior(cls, posterior: WeightPosterior) -> WeightPosterior:
        r"""A copy of ``posterior`` that later updates leave apart."""
        return posterior.copy()

    # -------------------------------------------------------------- read-outs

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
            G1 = G2 if Z2 is Z1 else folded_matmul(Z1d, self._downdate.mT)
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

    # ---------------------------------------------------------------- updates

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
            <botorch_sketch.sketching.online.tracked.TrackedCandidates.apply_one>`.
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
            <botorch_sketch.sketching.online.tracked.TrackedCandidates.apply_border>`.
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
            <botorch_sketch.sketching.online.tracked.TrackedCandidates.apply_border>`.
        """
        weighted = coordinate / noise
        return self.extend(
            gram_column=Z.mT @ weighted,
            gram_corner=(weighted * coordinate).sum(),
            moment_entry=(weighted * r).sum(),
        )
