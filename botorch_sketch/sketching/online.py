#!/usr/bin/env python3
r"""The DTC posterior updated one observation at a time.

Between changes of the inducing set, a new observation ``(z, r, lambda)`` is a
rank-one term of the statistics (:class:`~botorch_sketch.sketching.dtc.DTCStatistics`).
Instead of refactorising ``B = I + gram`` (``O(m^3)``), :class:`OnlineDTC` keeps the
weight covariance ``C = B^{-1}`` and mean weights ``w`` and applies the Woodbury
identity in ``O(q m^2)`` for ``q`` observations:

``C <- C - P S^{-1} P^T``,  ``w <- w + P S^{-1} (r - Z_q w)``,
``P = C Z_q^T``, ``S = Z_q C Z_q^T + Lambda_q``.

:class:`TrackedCandidates` keeps the posterior means and variances of a fixed
candidate set (a bandit's arms) current under those updates in ``O(A m q)``,
where recomputing them would cost ``O(A m^2)``: the candidates' variances fall
by the squared entries of ``L^{-1} P^T Z_A^T`` (``S = L L^T``).

:class:`OnlineDTC` is also what :meth:`NystromGP.condition_on_observations
<botorch_sketch.models.nystrom_gp.NystromGP.condition_on_observations>` uses:
a model conditioned on ``q <= m'`` new observations (a BO step, a batch of
fantasies) gets its posterior by the same Woodbury step, batched over the
fantasies, instead of a new ``O(m^3)`` factorisation; larger additions fall back
to adding statistics and refactorising, which is then the cheaper route.

Both also grow by one inducing point whose span contains the data seen so far
(exact GP-UCB, where every observed input is an inducing point): the new
coordinate of every observation is then zero, so the statistics and ``C`` are
bordered by the prior and nothing is refactorised. The statistics are kept
alongside, so :meth:`OnlineDTC.refactorise` can clear the rounding drift of the
recursive updates at any time.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from botorch.exceptions.errors import UnsupportedError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.dtc import (
    DTCPosterior,
    DTCStatistics,
    lift_diagonal,
    matheron_rhs,
)
from botorch_sketch.sketching.kernels import kernel_matrix
from botorch_sketch.sketching.nystrom import NystromEmbedding


@dataclass
class RankUpdate:
    r"""What a rank-``q`` update did, for the candidates to follow.

    Attributes:
        P: ``m' x q``, ``C Z_q^T`` before the update.
        chol: ``q x q`` lower Cholesky factor of ``S = Z_q C Z_q^T + Lambda_q``.
        coefficients: ``q``, ``S^{-1} (r - Z_q w)``.
    """

    P: Tensor
    chol: Tensor
    coefficients: Tensor


class OnlineDTC:
    r"""DTC weight posterior ``N(w, C)`` with Woodbury updates.

    ``C`` is held as ``C_0 - G^T G``: an ``m' x m'`` matrix and a ``batch_shape x
    k x m'`` downdate. Unbatched updates (a bandit's rounds, a BO step) fold
    into ``C_0`` at once; updates that add batch dimensions (``fantasize``: one
    posterior per fantasised outcome) stay in ``G``, so a batch of ``b``
    fantasy posteriors of ``q`` points costs ``b q m'`` numbers, not ``b m'^2``.
    The weights and ``C`` are kept in float64, as :class:`~botorch_sketch.
    sketching.dtc.DTCPosterior` keeps its factor, and results are returned in
    the embedded inputs' type.
    """

    def __init__(self, statistics: DTCStatistics) -> None:
        r"""Factorise the posterior of ``statistics``.

        Args:
            statistics: The statistics of the data seen so far.
        """
        self.statistics = statistics
        self.refactorise()

    @property
    def statistics(self) -> DTCStatistics:
        r"""The statistics of the data seen so far."""
        if self._pending is not None:
            # Fold the scalar terms of :meth:`update_one_` in (one tensor op
            # each, once per read rather than per observation).
            st, (sq, log_noise, gap, num) = self._statistics, self._pending
            self._statistics = DTCStatistics(
                gram=st.gram,
                moment=st.moment,
                sq_residual=st.sq_residual + sq,
                log_noise=st.log_noise + log_noise,
                trace_gap=st.trace_gap + gap,
                num_data=st.num_data + num,
            )
            self._pending = None
        # The reader may keep them: the next in-place update writes to copies.
        self._owned = False
        return self._statistics

    @statistics.setter
    def statistics(self, value: DTCStatistics) -> None:
        self._statistics = value
        self._pending: list[float] | None = None
        # The tensors may be shared (with a caller, a copy, a factorised
        # posterior): in-place updates clone them first.
        self._owned = False

    @classmethod
    def prior(cls, dim: int, like: Tensor) -> OnlineDTC:
        r"""The posterior given no data, ``N(0, I)``, in ``dim`` coordinates."""
        return cls(DTCStatistics.empty(dim, like=like))

    @classmethod
    def from_posterior(cls, posterior: DTCPosterior) -> OnlineDTC:
        r"""The same posterior, from a factorised one (one ``O(m^3)`` inverse)."""
        online = cls.__new__(cls)
        online.statistics = posterior.statistics
        online._set_from(posterior)
        return online

    @property
    def dim(self) -> int:
        r"""The embedding dimension ``m'``."""
        return self.weights.shape[-1]

    @property
    def batch_shape(self) -> torch.Size:
        r"""The batch shape of the posterior (empty unless fantasies)."""
        return self.weights.shape[:-1]

    @property
    def weight_covariance(self) -> Tensor:
        r"""``C = C_0 - G^T G``, formed (``batch_shape x m' x m'``)."""
        if self._downdate is None:
            return self._base
        return self._base - self._downdate.mT @ self._downdate

    def copy(self) -> OnlineDTC:
        r"""A copy that later updates leave apart.

        Shallow: both share their tensors until one of them updates.
        :meth:`update` never works in place; :meth:`update_one_` does, and
        clones what it writes first when the tensors may be shared.
        """
        other = copy.copy(self)
        if self._pending is not None:
            other._pending = list(self._pending)
        self._owned = other._owned = False
        return other

    def mean(self, Z: Tensor) -> Tensor:
        r"""Posterior mean minus the prior mean, ``Z w``, of ``... x n x m'`` inputs."""
        w = self.weights.to(Z.dtype).unsqueeze(-1)
        return (Z @ w).squeeze(-1)

    def _times_covariance(self, Zd: Tensor) -> tuple[Tensor, Tensor | None]:
        # Z C_0 and Z G^T (None without a downdate), never forming C.
        ZG = None if self._downdate is None else Zd @ self._downdate.mT
        return Zd @ self._base, ZG

    def variance(self, Z: Tensor, residual_var: Tensor) -> Tensor:
        r"""Posterior variance ``k - ||z||^2 + z^T C z`` (at least zero).

        Args:
            Z: A ``... x n x m'`` tensor of embedded inputs.
            residual_var: The ``... x n`` tensor ``k(x, x) - ||z||^2``.
        """
        Zd = Z.to(self._base)
        ZC, ZG = self._times_covariance(Zd)
        quad = (ZC * Zd).sum(-1)
        if ZG is not None:
            quad = quad - ZG.pow(2).sum(-1)
        return (residual_var + quad.to(Z.dtype)).clamp_min(0)

    def covariance(self, Z: Tensor, K: Tensor) -> Tensor:
        r"""Posterior covariance ``K - Z Z^T + Z C Z^T`` of ``... x q`` inputs.

        Args:
            Z: A ``... x q x m'`` tensor of embedded inputs.
            K: Their ``... x q x q`` prior covariance.

        Returns:
            A ``broadcast(..., batch_shape) x q x q`` PSD matrix; its diagonal is
            raised (never lowered) where rounding made it negative, as
            :meth:`DTCPosterior.covariance` does.
        """
        Zd = Z.to(self._base)
        ZC, ZG = self._times_covariance(Zd)
        quad = ZC @ Zd.mT
        if ZG is not None:
            quad = quad - ZG @ ZG.mT
        covar = K - Z @ Z.mT + quad.to(Z.dtype)
        return lift_diagonal(0.5 * (covar + covar.mT))

    def matheron_update(
        self, prior_weights: Tensor, generator: torch.Generator | None = None
    ) -> Tensor:
        r"""Posterior minus prior weights (see :meth:`DTCPosterior.matheron_update`)."""
        rhs = matheron_rhs(self.statistics, prior_weights, generator)
        v = rhs @ self._base
        if self._downdate is not None:
            v = v - ((rhs.unsqueeze(-2) @ self._downdate.mT) @ self._downdate).squeeze(
                -2
            )
        return v.to(prior_weights.dtype)

    def refactorise(self) -> None:
        r"""Recompute ``C`` and ``w`` from the statistics (``O(m^3)``)."""
        self._set_from(DTCPosterior(self.statistics))

    def _set_from(self, posterior: DTCPosterior) -> None:
        self._base = torch.cholesky_inverse(posterior._chol)
        self._downdate: Tensor | None = None
        self.weights = posterior.weights64
        self._owned = False

    def _own(self) -> None:
        # Private copies of what :meth:`update_one_` writes in place.
        st = self._statistics
        self._statistics = DTCStatistics(
            gram=st.gram.clone(),
            moment=st.moment.clone(),
            sq_residual=st.sq_residual,
            log_noise=st.log_noise,
            trace_gap=st.trace_gap,
            num_data=st.num_data,
        )
        self._base = self._base.clone()
        self.weights = self.weights.clone()
        self._owned = True

    def update_one_(
        self, z: Tensor, residual_var: float, r: float, noise: float
    ) -> tuple[Tensor, float, float]:
        r"""Absorb one observation in place, ``O(m^2)`` in a handful of kernels.

        The rank-one case of :meth:`update` (same posterior up to rounding) for
        online loops, where the per-call overhead of the general ``q x q``
        route (a Cholesky, triangular solves, new statistics) is many times
        the arithmetic: ``C <- C - P P^T / s`` and ``w <- w + P (r - z^T w) /
        s`` with ``P = C z``, ``s = z^T P + noise``, and the statistics
        gain ``z z^T / noise`` and ``z r / noise`` in place. The weights and
        ``C`` are written in place too (cloned first when they may be shared:
        after :meth:`copy`, a factorisation, or a read of :attr:`statistics`).

        Args:
            z: A ``m'`` tensor, the embedded input.
            residual_var: ``k(x, x) - ||z||^2`` (for the statistics).
            r: The residual ``y - mu_0(x)``.
            noise: The noise variance.

        Returns:
            ``P`` (``m'``, ``C z`` before the update), ``s`` and the coefficient
            ``(r - z^T w) / s``, for :meth:`TrackedCandidates.apply_one`.
        """
        if self._downdate is not None:
            raise UnsupportedError("A batched (fantasy) posterior has no update_one_.")
        if not self._owned:
            self._own()
        zd = z if z.dtype == self._base.dtype else z.to(self._base)
        P = torch.mv(self._base, zd)
        s = float(torch.dot(zd, P)) + noise
        coefficient = (r - float(torch.dot(zd, self.weights))) / s
        self.weights.add_(P, alpha=coefficient)
        self._base.addr_(P, P, alpha=-1.0 / s)
        st = self._statistics
        st.gram.addr_(z, z, alpha=1.0 / noise)
        st.moment.add_(z, alpha=r / noise)
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

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded inputs.
            residual_var: A ``batch_shape x q`` tensor ``k(x, x) - ||z||^2`` (for
                the statistics).
            r: A ``batch_shape x q`` tensor of residuals ``y - mu_0(x)``.
            noise: A ``batch_shape x q`` tensor of noise variances.
            statistics: The statistics of these observations, if already
                computed.

        Returns:
            The update, to apply to tracked candidates.
        """
        Zd = Z.to(self._base)
        ZC, ZG = self._times_covariance(Zd)
        if ZG is not None:
            ZC = ZC - ZG @ self._downdate
        P = ZC.mT  # C Z^T, ... x m' x q
        S = Zd @ P + torch.diag_embed(noise.to(P))
        chol = torch.linalg.cholesky(0.5 * (S + S.mT))
        innovation = r.to(P) - (Zd @ self.weights.unsqueeze(-1)).squeeze(-1)
        coefficients = torch.cholesky_solve(innovation.unsqueeze(-1), chol)
        G = torch.linalg.solve_triangular(chol, P.mT, upper=False)  # ... x q x m'
        self.weights = self.weights + (P @ coefficients).squeeze(-1)
        if self._downdate is None and G.dim() == 2:
            self._base = self._base - G.mT @ G
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
        ``[[B, g], [g^T, 1 + g_nn]]`` is inverted by its Schur complement
        ``s = 1 + g_nn - g^T C g`` in ``O(m^2)``. All three are zero when every
        observed input lies in the old span (exact GP-UCB).

        Args:
            gram_column: ``g``, a ``m'`` tensor, or None for zeros.
            gram_corner: ``g_nn``.
            moment_entry: ``b_new``.

        Returns:
            The border, for :meth:`TrackedCandidates.extend`.
        """
        st = self.statistics
        m = st.moment.shape[-1]
        g = st.moment.new_zeros(m) if gram_column is None else gram_column
        g_nn = torch.as_tensor(gram_corner, dtype=g.dtype, device=g.device)
        b_new = torch.as_tensor(moment_entry, dtype=g.dtype, device=g.device)
        gram = st.gram.new_empty(m + 1, m + 1)
        gram[:m, :m] = st.gram
        gram[:m, m] = gram[m, :m] = g
        gram[m, m] = g_nn
        self.statistics = DTCStatistics(
            gram=gram,
            moment=torch.cat([st.moment, b_new.reshape(1)]),
            sq_residual=st.sq_residual,
            log_noise=st.log_noise,
            # The data's residual variance falls by their new coordinate squared.
            trace_gap=st.trace_gap - g_nn,
            num_data=st.num_data,
        )
        if self._downdate is not None:
            raise UnsupportedError("A batched (fantasy) posterior cannot grow.")
        u = self._base @ g
        schur = 1 + g_nn - g @ u
        delta = (b_new - g @ self.weights) / schur
        C = self._base.new_empty(m + 1, m + 1)
        C[:m, :m] = self._base + torch.outer(u, u) / schur
        C[:m, m] = C[m, :m] = -u / schur
        C[m, m] = 1 / schur
        self._base = C
        self.weights = torch.cat([self.weights - u * delta, delta.reshape(1)])
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
            The border, for :meth:`TrackedCandidates.apply_border`.
        """
        weighted = coordinate / noise
        return self.extend(
            gram_column=Z.mT @ weighted,
            gram_corner=(weighted * coordinate).sum(),
            moment_entry=(weighted * r).sum(),
        )


@dataclass
class Border:
    r"""What growing the embedding did to the weight posterior.

    Attributes:
        u: ``m'``, ``C g`` before growing.
        schur: ``1 + g_nn - g^T C g``.
        delta: The new coordinate's weight, ``(b_new - g^T w) / schur``.
    """

    u: Tensor
    schur: Tensor
    delta: Tensor


class TrackedCandidates:
    r"""Posterior means and variances of ``A`` fixed candidates, kept current.

    Holds the ``A x m'`` embedding of the candidates (in a buffer with spare
    columns, so growing the inducing set does not copy it every time), their
    residual prior variances, and the DTC mean (minus the prior mean) and
    variance under an :class:`OnlineDTC`.
    """

    def __init__(
        self,
        embedding: NystromEmbedding,
        posterior: OnlineDTC | None,
        X: Tensor,
        chunk_size: int | None = None,
        prior_variance: Tensor | None = None,
        embedded: Tensor | None = None,
    ) -> None:
        r"""Embed the candidates and compute their posterior, chunked.

        Args:
            embedding: The Nystrom embedding of the inducing set.
            posterior: The weight posterior in that embedding, or None to
                :meth:`refresh` later.
            X: A ``A x d`` tensor of candidates.
            chunk_size: Rows per chunk; by default about 8 MB per block.
            prior_variance: The ``A`` prior variances ``k(x, x)``, if known.
            embedded: The ``A x m'`` embedding of ``X``, if already computed.
        """
        self.X = X
        self.kernel = embedding.kernel
        if chunk_size is None:
            chunk_size = chunk_size_for(max(embedding.num_inducing, 1))
        self.chunk_size = chunk_size
        A, m = X.shape[0], embedding.dim
        self._Z = X.new_empty(A, max(m, 1))
        self._Z_view: Tensor | None = None
        self.dim = m
        self.residual = X.new_empty(A)
        for rows in row_chunks(A, chunk_size):
            Zc = embedding(X[rows]) if embedded is None else embedded[rows]
            self._Z[rows, :m] = Zc
            if prior_variance is None:
                self.residual[rows] = embedding.residual_variance(X[rows], Zc)
            else:
                resid = prior_variance[rows] - Zc.pow(2).sum(-1)
                self.residual[rows] = resid.clamp_min(0)
        if posterior is not None:
            self.refresh(posterior)

    @classmethod
    def from_subset(
        cls,
        kernel: Kernel,
        X: Tensor,
        indices: Tensor,
        prior_variance: Tensor | None = None,
        chunk_size: int | None = None,
    ) -> tuple[NystromEmbedding, TrackedCandidates]:
        r"""The embedding of the candidates ``X[indices]`` and every candidate in it.

        When the candidates fit one chunk, their kernel block against the
        inducing set is computed once and its rows at ``indices`` are the
        inducing Gram matrix, one kernel evaluation instead of two (this is a
        bandit's per-step rebuild).

        Args:
            kernel: The kernel.
            X: A ``A x d`` tensor of candidates.
            indices: The candidates that form the inducing set.
            prior_variance: The ``A`` prior variances, if known.
            chunk_size: Rows per chunk; by default about 8 MB per block.

        Returns:
            The embedding and the tracked candidates (posterior not yet set:
            call :meth:`refresh`).
        """
        S = X[indices]
        if chunk_size is None:
            chunk_size = chunk_size_for(max(S.shape[0], 1))
        embedded = None
        if X.shape[0] <= chunk_size and S.shape[0] > 0:
            K_XS = kernel_matrix(kernel, X, S)
            embedding = NystromEmbedding(kernel, S, gram=K_XS[indices])
            embedded = K_XS @ embedding.root
        else:
            embedding = NystromEmbedding(kernel, S)
        tracked = cls(embedding, None, X, chunk_size, prior_variance, embedded)
        return embedding, tracked

    @property
    def Z(self) -> Tensor:
        r"""The ``A x m'`` embedding of the candidates."""
        # Cached: a slice is a new view (a few microseconds) on every read.
        if self._Z_view is None or self._Z_view.shape[1] != self.dim:
            self._Z_view = self._Z[:, : self.dim]
        return self._Z_view

    def refresh(self, posterior: OnlineDTC) -> None:
        r"""Recompute means and variances from the posterior (``O(A m^2)``)."""
        Z = self.Z
        self.mean = posterior.mean(Z)
        self.variance = torch.empty_like(self.residual)
        for rows in row_chunks(Z.shape[0], self.chunk_size):
            self.variance[rows] = posterior.variance(Z[rows], self.residual[rows])

    def covariance_column(self, index: int | Tensor, posterior: OnlineDTC) -> Tensor:
        r"""Posterior covariances of every candidate with candidate ``index``.

        ``k(x, x_j) - z(x)^T z_j + z(x)^T C z_j`` in ``O(A m)``: the covariance of
        the DTC posterior process, whose exact prior term makes it positive far
        from the inducing set too (batch rules condition on it).
        """
        z = self.Z[index].reshape(-1)
        k = kernel_matrix(self.kernel, self.X, self.X[index].reshape(1, -1))
        return k.squeeze(-1) + self.Z @ (posterior.weight_covariance @ z - z)

    def apply_one(self, P: Tensor, s: float, coefficient: float) -> None:
        r"""Follow :meth:`OnlineDTC.update_one_` in ``O(A m)``, in place.

        With ``c = Z_A P``: ``var <- var - c^2 / s`` and ``mean <- mean + c
        coefficient`` (the rank-one case of :meth:`apply`). The :attr:`mean` and
        :attr:`variance` tensors are updated in place.
        """
        Z = self.Z
        c = torch.mv(Z, P if P.dtype == Z.dtype else P.to(Z))
        self.variance.addcmul_(c, c, value=-1.0 / s).clamp_min_(0)
        self.mean.add_(c, alpha=coefficient)

    def apply(self, update: RankUpdate) -> None:
        r"""Follow a rank-``q`` update of the posterior in ``O(A m q)``."""
        c = self.Z @ update.P  # A x q
        W = torch.linalg.solve_triangular(update.chol, c.mT, upper=False)
        self.variance = (self.variance - W.pow(2).sum(0)).clamp_min(0)
        self.mean = self.mean + c @ update.coefficients

    def extend_embedding(self, embedding: NystromEmbedding) -> Tensor:
        r"""Add the new coordinate of ``embedding`` (grown by one point).

        The candidates' new coordinate is
        ``(k(x, s_new) - z(x)^T z(s_new)) / sqrt(schur)``, read from the last
        column of the grown root in ``O(A m)``. Means and variances are left as
        they were until :meth:`apply_border`.

        Args:
            embedding: The grown embedding, ``NystromEmbedding.extended``'s result.

        Returns:
            The ``A`` new coordinates.
        """
        m = self.dim
        if m + 1 > self._Z.shape[1]:
            grown = self._Z.new_empty(self._Z.shape[0], 2 * self._Z.shape[1])
            grown[:, :m] = self.Z
            self._Z = grown
            self._Z_view = None
        for rows in row_chunks(self.X.shape[0], self.chunk_size):
            self._Z[rows, m] = embedding.new_coordinate(self.X[rows], self._Z[rows, :m])
        self.dim = m + 1
        return self._Z[:, m]

    def apply_border(self, border: Border) -> None:
        r"""Follow :meth:`OnlineDTC.extend` in ``O(A m)``.

        With ``c`` the new coordinate and ``a = Z_old u``: the variance
        ``k - ||z||^2 + z^T C z`` becomes ``var - c^2 + (a - c)^2 / schur`` and the
        mean ``mu + (c - a) delta``. With no data along ``c`` (``u = 0``,
        ``schur = 1``, ``delta = 0``) neither changes.
        """
        m = self.dim - 1
        for rows in row_chunks(self.X.shape[0], self.chunk_size):
            c = self._Z[rows, m]
            a = self._Z[rows, :m] @ border.u
            self.residual[rows] = (self.residual[rows] - c.pow(2)).clamp_min(0)
            var = self.variance[rows] - c.pow(2) + (a - c).pow(2) / border.schur
            self.variance[rows] = var.clamp_min(0)
            self.mean[rows] = self.mean[rows] + (c - a) * border.delta
