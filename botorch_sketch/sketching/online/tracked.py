#!/usr/bin/env python3
r"""Read-outs of a fixed candidate set kept current under online updates.

Between changes of the inducing set, a new observation is a rank-one term of the
statistics, absorbed by the Woodbury step of the weight posterior
(:class:`~botorch_sketch.sketching.posterior.WeightPosterior`) in ``O(q m^2)``.
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

import math

import torch
from botorch.exceptions.errors import UnsupportedError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.embedding.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.embedding.kernels import kernel_matrix
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.embedded import EmbeddedPoints
from botorch_sketch.sketching.posterior.updates import Border, RankUpdate
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior

__all__ = [
    "TrackedCandidates",
]


class TrackedCandidates(EmbeddedPoints):
    r"""Posterior means and variances of ``A`` fixed candidates, kept current.

    The candidates are held embedded
    (:class:`~botorch_sketch.sketching.posterior.EmbeddedPoints`, with spare
    columns, so growing the inducing set
    does not copy them every time), with the DTC mean (minus the prior mean)
    and variance under a :class:`WeightPosterior`.

    With :attr:`lazy_pulls` above zero, rank-one updates (:meth:`apply_one`)
    are held back and applied ``lazy_pulls`` at a time, one ``A x m' x k``
    matrix product instead of ``k`` passes over the embedding (each a
    memory-bound ``A x m'`` matrix-vector product at ``10^5`` arms). Reading
    :attr:`mean` or :attr:`variance`, or changing the embedding, applies them
    first; :meth:`ucb_argmax` and :meth:`variance_at` answer without doing so.
    """

    #: Rank-one updates held back before one product applies them all (0: each
    #: is applied at once).
    lazy_pulls: int = 0

    def __init__(
        self,
        embedding: NystromEmbedding,
        posterior: WeightPosterior | None,
        X: Tensor,
        chunk_size: int | None = None,
        prior_variance: Tensor | None = None,
        embedded: Tensor | None = None,
        by_point: bool = False,
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
            by_point: Store the embedding one candidate per row (for
                :attr:`lazy_pulls`, whose exact scores gather a few candidates).
        """
        # The updates held back: columns ``P_j`` and ``1 / s_j``, the mean
        # coefficients, and the bound ``sum_j |coefficient_j| sqrt(q_j)`` on how
        # far any mean can have moved, per unit of its standard deviation.
        self._held = 0
        self._held_P: Tensor | None = None
        self._held_inv_s: list[float] = []
        self._held_coefficients: list[float] = []
        self._held_drift = 0.0
        # ``Z P`` of :meth:`apply_one`, written in place (one allocation less
        # per pull).
        self._product_buffer: Tensor | None = None
        super().__init__(
            embedding, X, chunk_size, prior_variance, embedded, by_point=by_point
        )
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
        by_point: bool = False,
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
            by_point: Store the embedding one candidate per row.

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
        tracked = cls(
            embedding, None, X, chunk_size, prior_variance, embedded, by_point
        )
        return embedding, tracked

    def refresh(self, posterior: WeightPosterior) -> None:
        r"""Recompute means and variances from the posterior (``O(A m^2)``)."""
        self._drop_held()  # the posterior already holds them
        self._mean = posterior.mean(self.Z)
        self._variance = self.posterior_variance(posterior)

    @property
    def mean(self) -> Tensor:
        r"""The ``A`` posterior means (minus the prior mean), held updates applied."""
        self.flush()
        return self._mean

    @mean.setter
    def mean(self, value: Tensor) -> None:
        self.flush()
        self._mean = value

    @property
    def variance(self) -> Tensor:
        r"""The ``A`` posterior variances (GP units), held updates applied."""
        self.flush()
        return self._variance

    @variance.setter
    def variance(self, value: Tensor) -> None:
        self.flush()
        self._variance = value

    @property
    def num_held(self) -> int:
        r"""The rank-one updates held back (see :attr:`lazy_pulls`)."""
        return self._held

    def flush(self) -> None:
        r"""Apply the held rank-one updates: one ``A x m' x k`` product."""
        k = self._held
        if not k:
            return
        P = self._held_P[: self.dim, :k]
        c = self.product(P)  # A x k
        inv_s = P.new_tensor(self._held_inv_s)
        coefficients = P.new_tensor(self._held_coefficients)
        self._drop_held()
        self._variance.sub_(c.pow(2) @ inv_s).clamp_min_(0)
        self._mean.add_(c @ coefficients)

    def _drop_held(self) -> None:
        self._held = 0
        self._held_inv_s.clear()
        self._held_coefficients.clear()
        self._held_drift = 0.0

    def _hold(self, P: Tensor, s: float, coefficient: float, q: float) -> None:
        buffer = self._held_P
        if (
            buffer is None
            or buffer.shape[0] < self.dim
            or buffer.shape[1] <= self._held
        ):
            self.flush()  # (a changed lazy_pulls) before a new buffer
            buffer = self._held_P = self._Z.new_empty(
                max(self.dim, 1), max(self.lazy_pulls, 1)
            )
        k = self._held
        buffer[: self.dim, k] = P
        self._held_inv_s.append(1.0 / s)
        self._held_coefficients.append(coefficient)
        self._held_drift += abs(coefficient) * math.sqrt(max(q, 0.0))
        self._held = k + 1
        if self._held >= self.lazy_pulls:
            self.flush()

    def _held_variance(self, index: Tensor) -> tuple[Tensor, Tensor]:
        # ``c_ij = z_i^T P_j`` of candidates ``index`` with the held columns,
        # and their variances with the held updates applied.
        c = self.Z[index] @ self._held_P[: self.dim, : self._held]
        inv_s = c.new_tensor(self._held_inv_s)
        return c, (self._variance[index] - c.pow(2) @ inv_s).clamp_min(0)

    def variance_at(self, index: Tensor) -> Tensor:
        r"""The current variances of candidates ``index``, held updates included.

        ``O(|index| m' k)`` for ``k`` held updates; :attr:`variance` would
        apply them to every candidate first.

        Args:
            index: A 1-d long tensor of candidates.

        Returns:
            Their variances (GP units), as :attr:`variance` would give them up to
            rounding.
        """
        if not self._held:
            return self._variance[index]
        return self._held_variance(index)[1]

    def ucb_argmax(self, alpha: float, buffer: Tensor) -> Tensor:
        r"""The candidate of largest ``mean + alpha sqrt(variance)``, updates held.

        With no update held this is one fused pass. Otherwise every candidate's
        score is bounded without the embedding: a held update moved candidate
        ``i``'s mean by ``coefficient_j z_i^T C_j z`` with ``|z_i^T C_j z| <=
        sqrt(q_i q)`` (Cauchy-Schwarz in the posterior covariance ``C_j``), and
        ``q_i`` and the variance only fall between refreshes, so ``score_i <=
        mean_i + (alpha + D) sqrt(variance_i)`` at the last flush, with ``D`` the
        held drift. The candidate with the largest bound is scored exactly, and
        then only the candidates whose bound reaches that score (a few per cent
        of them within 16 pulls of a flush, measured at ``10^5`` arms).

        Args:
            alpha: The weight of the standard deviation.
            buffer: A ``A`` tensor to write the bounds (or the scores) into.

        Returns:
            A one-element long tensor: the first maximiser among equal scores.
        """
        torch.sqrt(self._variance, out=buffer)
        if not self._held:
            torch.add(self._mean, buffer, alpha=alpha, out=buffer)
            return torch.argmax(buffer, dim=0, keepdim=True)
        # Rounding: the bound is widened, and the threshold lowered, by a
        # relative slack far above the difference between the two routes' sums
        # of k terms (1e-9 in float64).
        slack = max(1e-9, 100 * torch.finfo(buffer.dtype).eps)
        widen = (alpha + self._held_drift) * (1 + slack)
        torch.add(self._mean, buffer, alpha=widen, out=buffer)
        first = torch.argmax(buffer, dim=0, keepdim=True)
        threshold = self._exact_scores(first, alpha)
        threshold = threshold - slack * (threshold.abs() + 1)
        candidates = (buffer >= threshold).nonzero().squeeze(-1)
        if candidates.numel() > self.num_points // 8:
            # A loose bound (early, or long after a flush): applying the held
            # updates costs less than gathering that many candidates.
            self.flush()
            return self.ucb_argmax(alpha, buffer)
        scores = self._exact_scores(candidates, alpha)
        return candidates[torch.argmax(scores, dim=0, keepdim=True)]

    def _exact_scores(self, index: Tensor, alpha: float) -> Tensor:
        c, variance = self._held_variance(index)
        coefficients = c.new_tensor(self._held_coefficients)
        return self._mean[index] + c @ coefficients + alpha * variance.sqrt()

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

    def apply_one(
        self, P: Tensor, s: float, coefficient: float, q: float | None = None
    ) -> None:
        r"""Follow :meth:`WeightPosterior.update_one_` in ``O(A m)``, in place.

        With ``c = Z_A P``: ``var <- var - c^2 / s`` and ``mean <- mean + c
        coefficient`` (the rank-one case of :meth:`apply`). The :attr:`mean` and
        :attr:`variance` tensors are updated in place, or, with
        :attr:`lazy_pulls` set, once that many updates are held.

        Args:
            P: The ``m'`` vector ``C z`` of the pulled point.
            s: ``z^T C z`` plus the noise.
            coefficient: The mean's coefficient.
            q: ``z^T C z``, for the bound of :meth:`ucb_argmax`; ``s`` (a looser
                bound) if not given.
        """
        Z = self.Z
        P = P if P.dtype == Z.dtype else P.to(Z)
        if self.lazy_pulls > 0:
            self._hold(P, s, coefficient, s if q is None else q)
            return
        c = self._product_buffer
        if c is None or c.dtype != Z.dtype or c.device != Z.device:
            c = self._product_buffer = Z.new_empty(Z.shape[0])
        torch.mv(Z, P, out=c)
        self._variance.addcmul_(c, c, value=-1.0 / s).clamp_min_(0)
        self._mean.add_(c, alpha=coefficient)

    def apply(self, update: RankUpdate) -> None:
        r"""Follow a rank-``q`` update of the posterior in ``O(A m q)``."""
        # The posterior's algebra runs in float64; the arms' tensors may not.
        P, chol, coefficients = (
            t.to(self.Z) for t in (update.P, update.chol, update.coefficients)
        )
        c = self.product(P)  # A x q
        W = torch.linalg.solve_triangular(chol, c.mT, upper=False)
        self.variance = (self.variance - W.pow(2).sum(0)).clamp_min(0)
        self.mean = self.mean + c @ coefficients

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

    def add_coordinate(self, embedding: NystromEmbedding) -> Tensor:
        r"""See :meth:`EmbeddedPoints.add_coordinate`; applies held updates first."""
        self.flush()
        return super().add_coordinate(embedding)

    def reembed(
        self, embedding: NystromEmbedding, embedded: Tensor | None = None
    ) -> None:
        r"""See :meth:`EmbeddedPoints.reembed`; held updates are applied first."""
        self.flush()
        super().reembed(embedding, embedded)

    def append(self, x: Tensor, z: Tensor, prior_variance: Tensor) -> int:
        r"""Not supported: the candidate set is fixed (its means are tracked)."""
        raise UnsupportedError(
            "TrackedCandidates tracks a fixed candidate set; build a new one to "
            "add candidates."
        )

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
