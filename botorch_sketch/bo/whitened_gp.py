#!/usr/bin/env python3
r"""A local GP in CMA-ES's own metric, with a linear-quadratic mean.

CMA-ES's search distribution ``N(m, sigma^2 C)`` knows the problem's scale and
orientation: on a rotated valley of condition 10^6 its ``C`` has learnt the
valley, where no axis-aligned lengthscale can. :class:`WhitenedResidualGP`
fits where CMA-ES samples, in CMA-ES's coordinates, as DTS-CMA-ES does
[Bajer2019gaussian]_:

- inputs are whitened by the distribution, ``u = C^{-1/2} (x - m) / sigma``
  (:func:`whiten`), so an isotropic kernel on ``u`` is a kernel with the
  Mahalanobis metric of ``sigma^2 C`` on ``x``;
- its mean is lq-CMA-ES's linear-quadratic regression [Hansen2019global]_
  (``cma.fitness_models.LQModel``: linear, then diagonal, then full quadratic
  as data permit, weighted by rank), held as a :class:`Trend` snapshot: with
  no residual left (an exact quadratic) the GP is that regression, and the GP
  adds what the quadratic misses;
- the residuals are an exact GP (Matern-5/2 on ``u``) on the ``local_size``
  observations nearest the mean in that metric; its lengthscale (relative to
  ``sqrt(d)``, the distance of a draw from the mean) and nugget are chosen by
  the marginal likelihood over a small grid, with the signal variance
  profiled out, in one batched Cholesky.

Observations are minimised values (CMA-ES's convention). Leave-one-out
predictions (the residual GP's closed form) give the rank check an honest
score: an interpolating GP ranks its own training points perfectly.

References:

.. [Bajer2019gaussian]
    L. Bajer, Z. Pitra, J. Repicky, M. Holena. Gaussian process surrogate
    models for the CMA evolution strategy. Evolutionary Computation 27(4), 2019.
.. [Hansen2019global]
    N. Hansen. A global surrogate assisted CMA-ES. GECCO 2019.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch
from gpytorch.kernels import MaternKernel
from torch import Tensor

if TYPE_CHECKING:
    import cma
    from cma.fitness_models import LQModel

#: Lengthscales of the residual GP, in units of ``sqrt(d)`` of the whitened space.
LENGTHSCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
#: Nuggets (noise over signal variance) of the residual GP.
NUGGETS = (1e-6, 1e-3, 1e-1)
#: The hyperparameters are chosen on this many observations nearest the mean.
CHOOSE_SIZE = 100


def search_metric(es: cma.CMAEvolutionStrategy) -> tuple[Tensor, Tensor]:
    r"""The centre ``m`` and whitening matrix ``W`` of a CMA-ES distribution.

    ``W`` is ``(sigma S C S)^{-1/2}`` in ``x``'s coordinates (``S`` CMA-ES's
    diagonal ``sigma_vec``), so that ``(x - m) W`` has identity covariance
    under the search distribution.

    Args:
        es: A ``cma.CMAEvolutionStrategy``.

    Returns:
        A ``d`` tensor (the distribution's mean, in bounds) and a ``d x d``
        symmetric tensor.
    """
    mean = torch.as_tensor(np.asarray(es.result.xfavorite), dtype=torch.double)
    C = torch.as_tensor(np.asarray(es.sm.C), dtype=torch.double)
    scaling = torch.tensor(
        np.broadcast_to(es.sigma_vec.scaling, mean.shape), dtype=torch.double
    )
    covariance = float(es.sigma) ** 2 * scaling[:, None] * C * scaling[None, :]
    return mean, inverse_root(covariance)


def inverse_root(covariance: Tensor) -> Tensor:
    r"""``covariance^{-1/2}`` by eigendecomposition (eigenvalues floored at 1e-300).

    Args:
        covariance: A ``d x d`` symmetric positive definite tensor.

    Returns:
        The ``d x d`` symmetric inverse square root.
    """
    values, vectors = torch.linalg.eigh(covariance)
    return (vectors * values.clamp_min(1e-300).rsqrt()) @ vectors.T


def whiten(X: Tensor, mean: Tensor, root: Tensor) -> Tensor:
    r"""Whitened coordinates ``(X - mean) root``.

    Args:
        X: A ``n x d`` tensor.
        mean: The ``d`` centre.
        root: The ``d x d`` whitening matrix (:func:`search_metric`).

    Returns:
        A ``n x d`` tensor.
    """
    return (X - mean) @ root


def lq_features(X: Tensor, types: list[str]) -> Tensor:
    r"""``LQModel``'s features of each row: ``1, x, x^2, x_i x_j (i < j)``.

    The squares enter with ``"quadratic"`` in ``types``, the products with
    ``"full"``, in ``LQModel.expand_x``'s order.

    Args:
        X: A ``n x d`` tensor.
        types: ``LQModel.types``.

    Returns:
        A ``n x p`` tensor.
    """
    parts = [X.new_ones(X.shape[0], 1), X]
    if "quadratic" in types:
        parts.append(X.square())
        if "full" in types:
            i, j = _pairs(X.shape[-1], X.device)
            parts.append(X[:, i] * X[:, j])
    return torch.cat(parts, dim=-1)


_PAIRS: dict[tuple[int, torch.device], tuple[Tensor, Tensor]] = {}


def _pairs(d: int, device: torch.device) -> tuple[Tensor, Tensor]:
    # The index pairs i < j of a d x d upper triangle, built once per d.
    key = (d, device)
    if key not in _PAIRS:
        _PAIRS[key] = tuple(torch.triu_indices(d, d, 1, device=device))
    return _PAIRS[key]


def _least_squares(A: Tensor, b: Tensor) -> Tensor:
    # min |A c - b| by QR where A has full column rank (deterministic, unlike
    # LAPACK's pivoted gelsy), else the minimum-norm solution by SVD.
    if A.shape[0] >= A.shape[1]:
        Q, R = torch.linalg.qr(A)
        diagonal = R.diagonal().abs()
        if bool(diagonal.min() > 1e-10 * diagonal.max()):
            return torch.linalg.solve_triangular(R, Q.T @ b[:, None], upper=True)[:, 0]
    return torch.linalg.lstsq(A, b[:, None], driver="gelsd").solution[:, 0]


class Trend:
    r"""A snapshot of ``LQModel``'s regression: its coefficients and feature types.

    ``LQModel`` refits (a pseudo-inverse) whenever its data change; a snapshot
    keeps one fit for as long as the caller wants it.
    """

    def __init__(self, coefficients: Tensor | None, types: list[str]) -> None:
        r"""Hold ``coefficients`` of :func:`lq_features` with ``types`` (None: 0)."""
        self.coefficients, self.types = coefficients, list(types)

    @classmethod
    def of(cls, model: LQModel) -> Trend:
        r"""``LQModel``'s own current fit (its pseudo-inverse; 0 before data)."""
        if model.count <= 0:
            return cls(None, [])
        coefficients = np.array(model.coefficients, dtype=float)
        return cls(torch.as_tensor(coefficients), model.types)

    @classmethod
    def fit(cls, model: LQModel) -> Trend:
        r"""``LQModel``'s regression on its data, solved by QR rather than SVD.

        The same rank-weighted least squares on the same rows as
        :meth:`of` (``LQModel.weighted_array``), by a QR factorisation:
        several times cheaper than the pseudo-inverse, and equal to it where
        the rows determine the coefficients (else by SVD, as it).
        """
        if model.count <= 0:
            return cls(None, [])
        A = torch.as_tensor(np.asarray(model.weighted_array(model.Z), dtype=float))
        b = torch.as_tensor(np.asarray(model.weighted_array(model.Y), dtype=float))
        return cls(_least_squares(A.T, b), model.types)

    def optimum(self) -> Tensor | None:
        r"""The quadratic's stationary point ``-H^+ b / 2`` (None if linear)."""
        if self.coefficients is None or not self.types:
            return None
        c = self.coefficients
        d = (len(c) - 1) // 2 if "full" not in self.types else None
        if d is None:  # 1 + 2 d + d (d - 1) / 2 terms
            d = int(round((-3 + math.sqrt(9 + 8 * (len(c) - 1))) / 2))
        H = torch.diag(c[d + 1 : 2 * d + 1])
        if "full" in self.types:
            i, j = _pairs(d, c.device)
            H[i, j] = H[j, i] = c[2 * d + 1 :] / 2
        return torch.linalg.pinv(H) @ (-c[1 : d + 1] / 2)

    def __call__(self, X: Tensor) -> Tensor:
        r"""The regression's values at the rows of a ``n x d`` ``X``: a ``n`` tensor."""
        if self.coefficients is None:
            return X.new_zeros(X.shape[0])
        return lq_features(X, self.types) @ self.coefficients.to(X)


_KERNELS: dict[tuple[torch.dtype, torch.device], MaternKernel] = {}


def _unit_matern(X: Tensor) -> MaternKernel:
    # gpytorch's Matern-5/2 with lengthscale 1 (the inputs come scaled), built
    # once per dtype and device: building the module costs more than a fit.
    key = (X.dtype, X.device)
    if key not in _KERNELS:
        kernel = MaternKernel(nu=2.5).to(X)
        kernel.lengthscale = 1.0
        kernel.requires_grad_(False)
        _KERNELS[key] = kernel
    return _KERNELS[key]


class WhitenedResidualGP:
    r"""An LQ regression plus a local GP on its residuals, in CMA-ES's metric."""

    def __init__(
        self,
        trend: Trend,
        X: Tensor,
        Y: Tensor,
        mean: Tensor,
        root: Tensor,
        local_size: int = 300,
        hyperparameters: tuple[float, float] | None = None,
    ) -> None:
        r"""Fit the residual GP on the observations nearest ``mean``.

        Args:
            trend: The regression (the GP's mean).
            X: A ``n x d`` tensor of observed points.
            Y: A ``n`` tensor of their (minimised) values.
            mean: The distribution's centre (:func:`search_metric`).
            root: Its whitening matrix.
            local_size: How many observations (nearest ``mean``) the GP keeps.
            hyperparameters: ``(lengthscale, nugget)`` to keep rather than
                choose (``lengthscale`` in units of ``sqrt(d)``).
        """
        self.trend, self.mean, self.root = trend, mean, root
        U = whiten(X, mean, root)
        keep = U.square().sum(-1).argsort()[:local_size]
        self.index = keep
        self.U = U[keep]
        residual = Y[keep] - trend(X[keep])
        self.scale = float(residual.square().mean().sqrt()) or 1.0
        self.residual = residual / self.scale
        d = X.shape[-1]
        self._kernel = _unit_matern(X)
        if hyperparameters is None:
            hyperparameters = self._choose(d)
        self.hyperparameters = hyperparameters
        lengthscale, nugget = hyperparameters
        R = self._correlation(self.U, self.U, lengthscale * d**0.5)
        R.diagonal().add_(nugget)
        self._cholesky = torch.linalg.cholesky(R)
        alpha = torch.cholesky_solve(self.residual[:, None], self._cholesky)
        self._alpha = alpha.squeeze(-1)
        self.signal = float(self.residual @ self._alpha) / max(len(keep), 1)
        self._lengthscale = lengthscale * d**0.5

    def _correlation(self, A: Tensor, B: Tensor, lengthscale: float) -> Tensor:
        # Matern-5/2 with unit variance, through gpytorch's kernel.
        with torch.no_grad():
            return self._kernel.forward(A / lengthscale, B / lengthscale)

    def _choose(self, d: int) -> tuple[float, float]:
        # Profiled marginal likelihood over the grid, one batched Cholesky.
        n = min(self.U.shape[0], CHOOSE_SIZE)
        if n < 3:
            return (1.0, NUGGETS[-1])
        U, residual = self.U[:n], self.residual[:n]  # the nearest
        R = torch.stack(
            [self._correlation(U, U, s * d**0.5) for s in LENGTHSCALES]
        )  # L x n x n
        eye = torch.eye(n, dtype=U.dtype, device=U.device)
        nuggets = torch.tensor(NUGGETS, dtype=U.dtype, device=U.device)
        K = R[:, None] + nuggets[None, :, None, None] * eye  # L x G x n x n
        L, info = torch.linalg.cholesky_ex(K)
        alpha = torch.cholesky_solve(residual.expand(*K.shape[:-1])[..., None], L)
        quad = (residual * alpha.squeeze(-1)).sum(-1).clamp_min(1e-300)
        logdet = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        loss = 0.5 * n * quad.log() + logdet
        loss = torch.where(info == 0, loss, torch.inf)
        best = int(loss.flatten().argmin())
        return (LENGTHSCALES[best // len(NUGGETS)], NUGGETS[best % len(NUGGETS)])

    def predict(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior means and standard deviations at ``X``.

        Args:
            X: A ``b x d`` tensor.

        Returns:
            Two ``b`` tensors (values' units; the standard deviation is the
            residual GP's, the regression's own error excluded).
        """
        U = whiten(X, self.mean, self.root)
        cross = self._correlation(U, self.U, self._lengthscale)  # b x n
        mean = self.trend(X) + self.scale * (cross @ self._alpha)
        v = torch.linalg.solve_triangular(self._cholesky, cross.T, upper=False)
        var = (1.0 - v.square().sum(0)).clamp_min(0.0) * self.signal
        return mean, self.scale * var.sqrt()

    def loo_means(self, X: Tensor, positions: Tensor) -> Tensor:
        r"""Leave-one-out means at observed points.

        Args:
            X: A ``b x d`` tensor of observed points.
            positions: A ``b`` long tensor: each point's row in the ``X`` the
                GP was fitted on.

        Returns:
            A ``b`` tensor: where the point is one of the GP's, its mean
            without it (the residual GP's closed form; the regression is not
            refitted), else its plain mean.
        """
        mean, _ = self.predict(X)
        where = positions[:, None] == self.index[None, :]
        inside = where.any(-1)
        if bool(inside.any()):
            rows = where[inside].long().argmax(-1)
            # The rows' diagonal entries of K^{-1}: |L^{-1} e_i|^2, O(n^2) each.
            unit = torch.zeros(
                len(self.index), len(rows), dtype=X.dtype, device=X.device
            )
            unit[rows, torch.arange(len(rows), device=X.device)] = 1.0
            w = torch.linalg.solve_triangular(self._cholesky, unit, upper=False)
            held_out = self.residual[rows] - self._alpha[rows] / w.square().sum(0)
            mean[inside] = self.trend(X[inside]) + self.scale * held_out
        return mean
