#!/usr/bin/env python3
r"""The DTC (deterministic training conditional) posterior in Nystrom coordinates.

This is the one implementation of the DTC/Nystrom algebra in the package. With
the Nystrom embedding ``z`` of an inducing set (:class:`NystromEmbedding`),
residuals ``r_i = y_i - mu_0(x_i)`` and noise variances ``lambda_i``, the
weights ``w`` of ``f(x) ~ z(x)^T w``, ``w ~ N(0, I)``, have the posterior
precision ``B = I + Z^T Lambda^{-1} Z`` and mean ``B^{-1} Z^T Lambda^{-1} r``. Then

- mean:        ``mu(x) = mu_0(x) + z(x)^T B^{-1} Z^T Lambda^{-1} r``,
- covariance:  ``k(x, x') - z(x)^T z(x') + z(x)^T B^{-1} z(x')``.

With homoskedastic noise ``lambda``, ``B = V / lambda`` for the papers'
``V = Z^T Z + lambda I``. The exact prior variance ``k(x, x)`` is kept; replacing
it by ``||z(x)||^2`` would be the subset-of-regressors model, whose variance
collapses away from the inducing set [Quinonero2005unifying]_.

The data enter only through the sums in :class:`DTCStatistics`, so chunked
accumulation, online updates and fantasies are one mechanism: adding statistics.
Everything costs ``O(n m^2 + m^3)``; nothing of size ``n x n`` is formed.

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

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from botorch_sketch.sketching.chunks import chunk_size_for, row_chunks
from botorch_sketch.sketching.nystrom import NystromEmbedding

if TYPE_CHECKING:
    from botorch_sketch.sketching.online import OnlineDTC


@dataclass
class DTCStatistics:
    r"""Sufficient statistics of data ``(X, r, lambda)`` in Nystrom coordinates.

    All fields share a ``batch_shape`` (empty for ordinary data, non-empty for
    fantasies), and statistics of disjoint data add.

    Attributes:
        gram: ``batch_shape x m' x m'``, ``sum_i z_i z_i^T / lambda_i``.
        moment: ``batch_shape x m'``, ``sum_i z_i r_i / lambda_i``.
        sq_residual: ``batch_shape``, ``sum_i r_i^2 / lambda_i``.
        log_noise: ``batch_shape``, ``sum_i log lambda_i``.
        trace_gap: ``batch_shape``, ``sum_i (k(x_i, x_i) - ||z_i||^2) / lambda_i``, the
            Titsias trace term.
        num_data: ``batch_shape``, the number of observations.
    """

    gram: Tensor
    moment: Tensor
    sq_residual: Tensor
    log_noise: Tensor
    trace_gap: Tensor
    num_data: Tensor

    @property
    def batch_shape(self) -> torch.Size:
        r"""The batch shape of the statistics."""
        return self.moment.shape[:-1]

    def __add__(self, other: DTCStatistics) -> DTCStatistics:
        r"""Statistics of the union of two disjoint data sets (batches broadcast)."""
        return DTCStatistics(
            gram=self.gram + other.gram,
            moment=self.moment + other.moment,
            sq_residual=self.sq_residual + other.sq_residual,
            log_noise=self.log_noise + other.log_noise,
            trace_gap=self.trace_gap + other.trace_gap,
            num_data=self.num_data + other.num_data,
        )

    @classmethod
    def empty(cls, dim: int, like: Tensor) -> DTCStatistics:
        r"""Statistics of no data in an embedding of dimension ``dim``."""
        zero = like.new_zeros(())
        return cls(
            gram=like.new_zeros(dim, dim),
            moment=like.new_zeros(dim),
            sq_residual=zero,
            log_noise=zero,
            trace_gap=zero,
            num_data=zero,
        )

    @classmethod
    def from_embedded(
        cls, Z: Tensor, residual_var: Tensor, r: Tensor, noise: Tensor
    ) -> DTCStatistics:
        r"""Statistics of already-embedded data.

        Args:
            Z: A ``batch_shape x n x m'`` tensor of embedded inputs.
            residual_var: A ``batch_shape x n`` tensor ``k(x_i, x_i) - ||z_i||^2``.
            r: A ``batch_shape x n`` tensor of residuals ``y_i - mu_0(x_i)``.
            noise: A ``batch_shape x n`` tensor of noise variances.

        Returns:
            The statistics; batch dimensions of the arguments broadcast.
        """
        precision = noise.reciprocal()
        weighted = Z * precision.unsqueeze(-1)
        # (Not torch.broadcast_shapes: its first call imports sympy, ~0.5 s.)
        shape = (r + noise + residual_var).shape
        return cls(
            gram=weighted.mT @ Z,
            moment=(weighted * r.unsqueeze(-1)).sum(-2),
            sq_residual=(r.pow(2) * precision).sum(-1),
            log_noise=noise.log().expand(shape).sum(-1),
            trace_gap=(residual_var * precision).expand(shape).sum(-1),
            num_data=torch.full(shape[:-1], shape[-1], dtype=r.dtype, device=r.device),
        )

    @classmethod
    def from_data(
        cls,
        embedding: NystromEmbedding,
        X: Tensor,
        r: Tensor,
        noise: Tensor,
        chunk_size: int | None = None,
    ) -> DTCStatistics:
        r"""Statistics of raw data, accumulated over row chunks.

        Memory stays at one ``chunk_size x m`` block. When gradients are being
        recorded, each chunk is checkpointed (recomputed in the backward pass), so
        fitting hyperparameters on large ``n`` is memory-bounded as well.

        Args:
            embedding: The Nystrom embedding.
            X: A ``n x d`` tensor of (input-transformed) inputs.
            r: A ``batch_shape x n`` tensor of residuals ``y_i - mu_0(x_i)``.
            noise: A ``batch_shape x n`` (or ``n``) tensor of noise variances.
            chunk_size: Rows per chunk; by default about 8 MB per block.

        Returns:
            The statistics of all ``n`` observations.
        """
        n = X.shape[-2]
        if chunk_size is None:
            chunk_size = chunk_size_for(embedding.num_inducing)
        if n <= chunk_size:
            return _chunk_statistics(embedding, X, r, noise)
        noise = noise.expand(r.shape)
        total = DTCStatistics.empty(embedding.dim, like=r)
        use_checkpoint = torch.is_grad_enabled()
        for rows in row_chunks(n, chunk_size):
            args = (embedding, X[..., rows, :], r[..., rows], noise[..., rows])
            if use_checkpoint:
                fields = checkpoint(_chunk_fields, *args, use_reentrant=False)
                total = total + DTCStatistics(*fields)
            else:
                total = total + _chunk_statistics(*args)
        return total


def _chunk_statistics(
    embedding: NystromEmbedding, X: Tensor, r: Tensor, noise: Tensor
) -> DTCStatistics:
    Z = embedding(X)
    return DTCStatistics.from_embedded(
        Z, embedding.residual_variance(X, Z), r, noise.expand(r.shape)
    )


def _chunk_fields(
    embedding: NystromEmbedding, X: Tensor, r: Tensor, noise: Tensor
) -> tuple[Tensor, ...]:
    # ``checkpoint`` needs a function returning tensors, not a dataclass.
    s = _chunk_statistics(embedding, X, r, noise)
    return s.gram, s.moment, s.sq_residual, s.log_noise, s.trace_gap, s.num_data


class DTCPosterior:
    r"""The posterior over Nystrom weights given :class:`DTCStatistics`.

    The ``m' x m'`` factorisation is done in float64 whatever the data type: it
    costs nothing next to the ``n x m`` work and keeps float32 models stable when
    ``B`` is ill-conditioned (small noise, many points).
    """

    def __init__(self, statistics: DTCStatistics) -> None:
        r"""Factorise ``B = I + gram``.

        Args:
            statistics: The sufficient statistics of the conditioning data.
        """
        self.statistics = statistics
        self.dtype = statistics.moment.dtype
        gram = statistics.gram.double()
        eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
        self._chol = torch.linalg.cholesky(eye + 0.5 * (gram + gram.mT))
        # c = L^{-1} Z^T Lambda^{-1} r; weights = B^{-1} Z^T Lambda^{-1} r = L^{-T} c.
        self._whitened_moment = torch.linalg.solve_triangular(
            self._chol, statistics.moment.double().unsqueeze(-1), upper=False
        )
        #: The weights in float64, for :class:`~botorch_sketch.sketching.online.
        #: OnlineDTC` to start from.
        self.weights64 = torch.linalg.solve_triangular(
            self._chol.mT, self._whitened_moment, upper=True
        ).squeeze(-1)
        self.weights = self.weights64.to(self.dtype)

    @property
    def batch_shape(self) -> torch.Size:
        r"""The batch shape of the conditioning data."""
        return self.statistics.batch_shape

    @property
    def weight_covariance(self) -> Tensor:
        r"""``C = B^{-1}`` in float64 (``batch_shape x m' x m'``)."""
        return torch.cholesky_inverse(self._chol)

    def mean(self, Z: Tensor) -> Tensor:
        r"""Posterior mean minus the prior mean.

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded test points.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q`` tensor ``Z w``.
        """
        return (Z @ self.weights.unsqueeze(-1)).squeeze(-1)

    def _whiten(self, Z: Tensor) -> Tensor:
        # G = L^{-1} Z^T, so that Z B^{-1} Z^T = G^T G. Solved in float64 (see the
        # class docstring); the result is cast back to the data type. The batch
        # dimensions that Z has and L has not (b x q x m' test points against an
        # unbatched posterior: every acquisition function's raw samples) are
        # folded into the columns of one triangular solve: expanding L to them
        # would copy an m' x m' matrix per test batch.
        chol = self._chol
        lead = chol.shape[:-2]
        q, m = Z.shape[-2:]
        batch = torch.broadcast_shapes(lead, Z.shape[:-2])
        k = len(batch) - len(lead)
        Zd = Z.double().expand(batch + (q, m))
        order = [*range(k, len(batch)), *range(k), len(batch), len(batch) + 1]
        cols = Zd.permute(order).reshape(batch[k:] + (-1, m))  # inner x (E q) x m'
        G = torch.linalg.solve_triangular(
            chol.expand(batch[k:] + chol.shape[-2:]), cols.mT, upper=False
        )  # inner x m' x (E q)
        G = G.reshape(batch[k:] + (m,) + batch[:k] + (q,))
        back = [*range(len(batch) - k + 1, len(batch) + 1), *range(len(batch) - k)]
        G = G.permute(back + [len(batch) - k, len(batch) + 1])
        return G.to(Z.dtype)

    def covariance(self, Z: Tensor, K: Tensor) -> Tensor:
        r"""Posterior covariance ``K - Z Z^T + Z B^{-1} Z^T``.

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded test points.
            K: A ``batch_shape x q x q`` prior covariance of the test points.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q x q`` PSD matrix. Its
            diagonal is raised (never lowered) where rounding made it negative.
        """
        G = self._whiten(Z)
        return lift_diagonal(K - Z @ Z.mT + G.mT @ G)

    def variance(self, Z: Tensor, residual_var: Tensor) -> Tensor:
        r"""Posterior variance ``k(x, x) - ||z||^2 + z^T B^{-1} z`` (GP units).

        Args:
            Z: A ``batch_shape x q x m'`` tensor of embedded test points.
            residual_var: A ``batch_shape x q`` tensor ``k(x, x) - ||z(x)||^2``.

        Returns:
            A ``broadcast(batch_shape, self.batch_shape) x q`` tensor, at least zero.
        """
        G = self._whiten(Z)
        return residual_var + G.pow(2).sum(-2)

    def matheron_update(
        self, prior_weights: Tensor, generator: torch.Generator | None = None
    ) -> Tensor:
        r"""Matheron's rule in Nystrom coordinates: posterior minus prior weights.

        With the data ``y = Z w + eps``, a prior draw ``w_0 ~ N(0, I)`` becomes a
        posterior draw ``w_0 + v``, ``v = B^{-1} Z^T Lambda^{-1} (r - Z w_0 - eps)``
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
        v = torch.cholesky_solve(rhs.unsqueeze(-1), self._chol).squeeze(-1)
        return v.to(prior_weights.dtype)

    def log_marginal_likelihood(self, titsias: bool = True) -> Tensor:
        r"""The DTC log marginal likelihood of the data, or Titsias' bound.

        ``log N(r | 0, Z Z^T + Lambda)`` in ``O(m^3)`` from the statistics; with
        ``titsias=True`` minus ``trace_gap / 2``, the collapsed variational bound of
        [Titsias2009variational]_, which penalises inducing sets that explain
        the prior variance poorly.

        Args:
            titsias: Subtract the trace term.

        Returns:
            A ``batch_shape`` tensor (not normalised by ``n``).
        """
        s = self.statistics
        quad = s.sq_residual.double() - self._whitened_moment.pow(2).sum((-2, -1))
        log_det = s.log_noise.double() + 2 * self._chol.diagonal(
            dim1=-2, dim2=-1
        ).log().sum(-1)
        value = -0.5 * (quad + log_det + s.num_data.double() * math.log(2 * math.pi))
        if titsias:
            value = value - 0.5 * s.trace_gap.double()
        return value.to(self.dtype)


class DTCReadout:
    r"""The DTC posterior at test points, read from their kernel rows.

    With ``z(x) = R^T k_S(x)`` (``R`` the embedding's ``root``) and the weight
    posterior ``N(w, C)``, the posterior mean is ``k_S(x)^T (R w)`` and the
    covariance ``k(x, x') - z^T z' + z^T C z' = k(x, x') - k_S(x)^T P P^T
    k_S(x')`` with ``P = R S``, ``S S^T = I - C`` (PSD, as ``C = B^{-1} <= I``).
    Folding ``R`` and ``S`` into ``P`` once leaves one ``m x m'`` product per
    test point, where embedding and whitening cost a product and a triangular
    solve: the per-point cost of an exact GP's cached posterior, which is what
    ``optimize_acqf``'s hundreds of evaluations of one model pay. The ``O(m^3)``
    eigendecomposition is done once per posterior.

    A batched posterior (one per fantasised outcome, ``O(b m'^2)`` to fold) is
    read through the embedding and the posterior's own methods instead.
    """

    def __init__(
        self, embedding: NystromEmbedding, posterior: DTCPosterior | OnlineDTC
    ) -> None:
        r"""Fold the embedding and the weight posterior.

        Args:
            embedding: The Nystrom embedding the posterior is expressed in.
            posterior: The weight posterior, a :class:`DTCPosterior` or an
                :class:`~botorch_sketch.sketching.online.OnlineDTC`.
        """
        self.embedding = embedding
        self.posterior = posterior
        self.mean_weights: Tensor | None = None
        self.covariance_root: Tensor | None = None
        if len(posterior.batch_shape) > 0:
            return
        dtype = embedding.root.dtype
        root = embedding.root.double()
        C = posterior.weight_covariance.double()
        eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
        evals, evecs = torch.linalg.eigh(eye - 0.5 * (C + C.mT))
        S = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
        self.covariance_root = (root @ S).to(dtype)  # m x m'
        self.mean_weights = (root @ posterior.weights.double()).to(dtype)  # m

    def __call__(self, X: Tensor, K: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior mean (minus the prior mean) and covariance.

        Args:
            X: A ``batch_shape x q x d`` tensor of (input-transformed) points.
            K: Their ``batch_shape x q x q`` prior covariance.

        Returns:
            A ``broadcast(batch_shape, posterior batch) x q`` mean and a
            ``... x q x q`` PSD covariance, its diagonal raised (never lowered)
            where rounding made it negative.
        """
        if self.covariance_root is None:
            Z = self.embedding(X)
            return self.posterior.mean(Z), self.posterior.covariance(Z, K)
        rows = self.embedding.kernel_rows(X)
        F = rows @ self.covariance_root
        mean = (rows @ self.mean_weights.unsqueeze(-1)).squeeze(-1)
        return mean, lift_diagonal(K - F @ F.mT)


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
    :meth:`DTCPosterior.matheron_update`): ``Z^T Lambda^{-1} eps`` is drawn as
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


def posterior_variance(
    embedding: NystromEmbedding,
    posterior: DTCPosterior,
    X: Tensor,
    chunk_size: int | None = None,
) -> Tensor:
    r"""DTC posterior variance at many points, chunked.

    Args:
        embedding: The Nystrom embedding the posterior is expressed in.
        posterior: The DTC posterior.
        X: A ``n x d`` tensor of points.
        chunk_size: Rows per chunk; by default about 8 MB per block.

    Returns:
        A ``posterior.batch_shape x n`` tensor of variances (GP units).
    """
    if chunk_size is None:
        chunk_size = chunk_size_for(embedding.num_inducing)
    parts = []
    for rows in row_chunks(X.shape[-2], chunk_size):
        Xc = X[..., rows, :]
        Zc = embedding(Xc)
        parts.append(posterior.variance(Zc, embedding.residual_variance(Xc, Zc)))
    return torch.cat(parts, dim=-1)
