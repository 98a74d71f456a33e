#!/usr/bin/env python3
r"""The DTC (deterministic training conditional) posterior in Nystrom coordinates.

The weights' posterior is the one
:class:`~botorch_sketch.sketching.posterior.WeightPosterior`; this module
reads the DTC posterior process from it. With the Nystrom embedding ``z`` of
an inducing set (:class:`NystromEmbedding`), residuals ``r_i = y_i - mu_0(x_i)``
and noise variances ``lambda_i``, the weights ``w`` of ``f(x) ~ z(x)^T w``,
``w ~ N(0, I)``, have the posterior precision ``B = I + Z^T Lambda^{-1} Z`` and
mean ``B^{-1} Z^T Lambda^{-1} r``. Then

- mean:        ``mu(x) = mu_0(x) + z(x)^T B^{-1} Z^T Lambda^{-1} r``,
- covariance:  ``k(x, x') - z(x)^T z(x') + z(x)^T B^{-1} z(x')``.

With homoskedastic noise ``lambda``, ``B = V / lambda`` for the papers'
``V = Z^T Z + lambda I``. The exact prior variance ``k(x, x)`` is kept; replacing
it by ``||z(x)||^2`` would be the subset-of-regressors model, whose variance
collapses away from the inducing set [Quinonero2005unifying]_.

The data enter only through the sums in :class:`DTCStatistics`, so chunked
accumulation, online updates and fantasies are one mechanism: adding statistics.
Everything costs ``O(n m^2 + m^3)``; nothing of size ``n x n`` is formed.
:class:`DTCReadout` folds the embedding into the weight posterior for the
per-point cost of an exact GP's cached posterior; :func:`posterior_variance`
reads variances at many points in chunks.

References:

.. [Quinonero2005unifying]
    J. Quinonero-Candela, C. E. Rasmussen. A unifying view of sparse approximate
    Gaussian process regression. JMLR 2005.
"""

from __future__ import annotations

import torch
from linear_operator.operators import LinearOperator
from torch import Tensor

from botorch_sketch.sketching.embedding.chunks import chunk_size_for
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.dtc_covariance import DTCCovarianceOperator
from botorch_sketch.sketching.posterior.linalg import lift_diagonal
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior

__all__ = [
    "DTCReadout",
    "posterior_variance",
]


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
    eigendecomposition is done once per posterior, when a covariance is first
    read: means alone (:meth:`mean`) cost one ``m x m'`` product per posterior.

    A batched posterior (one per fantasised outcome, ``O(b m'^2)`` to fold) is
    read through the embedding and the posterior's own methods instead.
    """

    def __init__(self, embedding: NystromEmbedding, posterior: WeightPosterior) -> None:
        r"""Fold the embedding and the weight posterior.

        Args:
            embedding: The Nystrom embedding the posterior is expressed in.
            posterior: The weight posterior, factorised or updated.
        """
        self.embedding = embedding
        self.posterior = posterior
        self.mean_weights: Tensor | None = None
        self._root: Tensor | None = None
        self._gram: Tensor | None = None
        if len(posterior.batch_shape) > 0:
            return
        root = embedding.root.double()
        self.mean_weights = (root @ posterior.weights64).to(embedding.root.dtype)

    @property
    def covariance_root(self) -> Tensor | None:
        r"""``P = R S``, ``m x m'``, folded on first read; None when batched."""
        if self.mean_weights is None:
            return None
        if self._root is None:
            with torch.no_grad():  # as the read-out itself is made
                root = self.embedding.root.double()
                C = self.posterior.weight_covariance.double()
                eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
                evals, evecs = torch.linalg.eigh(eye - 0.5 * (C + C.mT))
                S = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
                self._root = (root @ S).to(self.embedding.root.dtype)
        return self._root

    def mean(self, X: Tensor) -> Tensor:
        r"""The posterior mean minus the prior mean, with no covariance folded.

        Args:
            X: A ``batch_shape x q x d`` tensor of (input-transformed) points.

        Returns:
            A ``broadcast(batch_shape, posterior batch) x q`` tensor, equal to
            the mean :meth:`__call__` returns.
        """
        if self.mean_weights is None:
            return self.posterior.mean(self.embedding(X))
        rows = self.embedding.kernel_rows(X)
        return (rows @ self.mean_weights.unsqueeze(-1)).squeeze(-1)

    @property
    def covariance_gram(self) -> Tensor | None:
        r"""``P P^T``, the ``m x m`` Gram matrix of the folded root, formed once.

        The covariance between points is ``k(x, x') - k_S(x)^T P P^T k_S(x')``:
        with it, ``q`` rows of a covariance over ``N`` points cost one ``q x m``
        by ``m x m`` product. None for a batched posterior.
        """
        if self.covariance_root is None:
            return None
        if self._gram is None:
            P = self.covariance_root
            with torch.no_grad():
                self._gram = P @ P.mT
        return self._gram

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

    def lazy(
        self, X: Tensor, K: LinearOperator, scale: Tensor | None = None
    ) -> tuple[Tensor, Tensor | LinearOperator]:
        r"""Posterior mean and a covariance that computes its rows when read.

        As :meth:`__call__`, but the covariance is a
        :class:`~botorch_sketch.sketching.posterior.DTCCovarianceOperator`:
        ``q`` rows of it cost ``O(q m m' + q N m)`` instead of the dense
        matrix's ``O(N m m' + N^2 m')``. A batched posterior returns the dense
        covariance.

        Args:
            X: A ``batch_shape x N x d`` tensor of (input-transformed) points.
            K: Their ``batch_shape x N x N`` prior covariance, lazily evaluated.
            scale: A 0-dim tensor ``s``: the mean is multiplied by ``s`` and the
                covariance by ``s^2`` (an outcome standardisation undone on the
                operator's pieces, so that its rows stay cheap to read).
        """
        if self.covariance_root is None:
            mean, covar = self(X, K.to_dense())
            if scale is not None:
                mean, covar = scale * mean, scale.square() * covar
            return mean, covar
        rows = self.embedding.kernel_rows(X)
        mean = (rows @ self.mean_weights.unsqueeze(-1)).squeeze(-1)
        if scale is not None:
            mean, rows, K = scale * mean, scale * rows, K * scale.square()
        covar = DTCCovarianceOperator(
            K, rows, self.covariance_root, gram=self.covariance_gram
        )
        return mean, covar


def posterior_variance(
    embedding: NystromEmbedding,
    posterior: WeightPosterior,
    X: Tensor,
    chunk_size: int | None = None,
) -> Tensor:
    r"""DTC posterior variance at many points, embedded chunk by chunk.

    Args:
        embedding: The Nystrom embedding the posterior is expressed in.
        posterior: The weight posterior.
        X: A ``n x d`` tensor of points.
        chunk_size: Rows per chunk; by default about 8 MB per block.

    Returns:
        A ``posterior.batch_shape x n`` tensor of variances (GP units).
    """
    if chunk_size is None:
        chunk_size = chunk_size_for(embedding.num_inducing)

    def embedded(rows: slice) -> tuple[Tensor, Tensor]:
        Xc = X[..., rows, :]
        Zc = embedding(Xc)
        return Zc, embedding.residual_variance(Xc, Zc)

    return posterior.chunked_variance(X.shape[-2], chunk_size, embedded)
