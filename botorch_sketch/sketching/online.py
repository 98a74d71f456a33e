#!/usr/bin/env python3
r"""Read-outs of a fixed candidate set kept current under online updates.

Between changes of the inducing set, a new observation is a rank-one term of the
statistics, absorbed by the Woodbury step of the weight posterior
(:class:`~botorch_sketch.sketching.weight_posterior.WeightPosterior`, named
:data:`OnlineDTC` here for the online loops) in ``O(q m^2)``.
:class:`TrackedCandidates` keeps the posterior means and variances of a fixed
candidate set (a bandit's arms) current under those updates in ``O(A m q)``,
where recomputing them would cost ``O(A m^2)``: the candidates' variances fall
by the squared entries of ``L^{-1} P^T Z_A^T`` (``S = L L^T``).

The weight posterior is also what :meth:`NystromGP.condition_on_observations
<botorch_sketch.models.nystrom_gp.NystromGP.condition_on_observations>` uses:
a model conditioned on ``q <= m'`` new observations (a BO step, a batch of
fantasies) gets its posterior by the same Woodbury step, batched over the
fantasies, instead of a new ``O(m^3)`` factorisation.

Both also grow by one inducing point whose span contains the data seen so far
(exact GP-UCB, where every observed input is an inducing point): the new
coordinate of every observation is then zero, so the statistics and ``C`` are
bordered by the prior and nothing is refactorised. The statistics are kept
alongside, so :meth:`WeightPosterior.refactorise` can clear the rounding drift
of the recursive updates at any time.
"""

from __future__ import annotations

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.embedded import EmbeddedPoints
from botorch_sketch.sketching.kernels import kernel_matrix
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.weight_posterior import (
    Border,
    RankUpdate,
    WeightPosterior,
)

#: The weight posterior of the online loops: the one :class:`WeightPosterior`.
OnlineDTC = WeightPosterior

__all__ = ["Border", "OnlineDTC", "RankUpdate", "TrackedCandidates"]


class TrackedCandidates(EmbeddedPoints):
    r"""Posterior means and variances of ``A`` fixed candidates, kept current.

    The candidates are held embedded (:class:`~botorch_sketch.sketching.
    embedded.EmbeddedPoints`, with spare columns, so growing the inducing set
    does not copy them every time), with the DTC mean (minus the prior mean)
    and variance under a :class:`WeightPosterior`.
    """

    def __init__(
        self,
        embedding: NystromEmbedding,
        posterior: WeightPosterior | None,
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
        super().__init__(embedding, X, chunk_size, prior_variance, embedded)
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

    def refresh(self, posterior: WeightPosterior) -> None:
        r"""Recompute means and variances from the posterior (``O(A m^2)``)."""
        self.mean = posterior.mean(self.Z)
        self.variance = self.posterior_variance(posterior)

    def covariance_column(
        self, index: int | Tensor, posterior: WeightPosterior
    ) -> Tensor:
        r"""Posterior covariances of every candidate with candidate ``index``.

        ``k(x, x_j) - z(x)^T z_j + z(x)^T C z_j`` in ``O(A m)``: the covariance of
        the DTC posterior process, whose exact prior term makes it positive far
        from the inducing set too (batch rules condition on it).
        """
        x = self.X[index].reshape(1, -1)
        k = kernel_matrix(self.kernel, self.X, x)
        z = self.Z[index].reshape(1, -1)
        return posterior.cross_covariance(self.Z, z, k).squeeze(-1)

    def apply_one(self, P: Tensor, s: float, coefficient: float) -> None:
        r"""Follow :meth:`WeightPosterior.update_one_` in ``O(A m)``, in place.

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
        # ``(P^T Z^T)^T``: the product walks the stored (coordinates by
        # points) buffer row by row; ``Z @ P`` would take it transposed, which
        # for a few columns ran 1.4-1.7x slower at 10^5 arms on an Intel Xeon.
        c = (update.P.mT @ self.Z.mT).mT  # A x q
        W = torch.linalg.solve_triangular(update.chol, c.mT, upper=False)
        self.variance = (self.variance - W.pow(2).sum(0)).clamp_min(0)
        self.mean = self.mean + c @ update.coefficients

    def extend_embedding(self, embedding: NystromEmbedding) -> Tensor:
        r"""Add the new coordinate of ``embedding`` (grown by one point).

        The candidates' new coordinate is
        ``(k(x, s_new) - z(x)^T z(s_new)) / sqrt(schur)``, read from the old
        ones in ``O(A m)`` (:meth:`EmbeddedPoints.add_coordinate`), and their
        residual variances fall by its square. Means and variances are left as
        they were until :meth:`apply_border`.

        Args:
            embedding: The grown embedding, ``NystromEmbedding.extended``'s result.

        Returns:
            The ``A`` new coordinates.
        """
        return self.add_coordinate(embedding)

    def apply_border(self, border: Border) -> None:
        r"""Follow :meth:`WeightPosterior.extend` in ``O(A m)``.

        With ``c`` the new coordinate and ``a = Z_old u``: the variance
        ``k - ||z||^2 + z^T C z`` becomes ``var - c^2 + (a - c)^2 / schur`` and the
        mean ``mu + (c - a) delta`` (the residual variance already lost ``c^2``
        in :meth:`extend_embedding`). With no data along ``c`` (``u = 0``,
        ``schur = 1``, ``delta = 0``) neither changes.
        """
        m = self.dim - 1
        for rows in row_chunks(self.num_points, self._chunk_size()):
            c = self.Z[rows, m]
            a = self.Z[rows, :m] @ border.u.to(c)
            var = self.variance[rows] - c.pow(2) + (a - c).pow(2) / border.schur
            self.variance[rows] = var.clamp_min(0)
            self.mean[rows] = self.mean[rows] + (c - a) * border.delta
