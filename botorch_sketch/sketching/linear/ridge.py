#!/usr/bin/env python3
r"""Exact online ridge regression by Sherman-Morrison rank-one updates.

With ``V_n = A_n + lambda I = sum_i x_i x_i^T + lambda I`` and ``b_n = sum_i y_i x_i``,
the ridge solution is ``theta_n = V_n^{-1} b_n``. Keeping ``V_n^{-1}`` itself makes
every observation an ``O(d^2)`` update,

``V^{-1} <- V^{-1} - u u^T / (1 + x^T u)``, ``u = V^{-1} x``,
``theta <- theta + (y - x^T theta) u / (1 + x^T u)``,

and every width ``x^T V^{-1} x`` an ``O(d^2)`` product. This is LinUCB's solver
[Li2010contextual]_ and the exact-variance half of the SGD feature model; the
SGD solvers of :mod:`botorch_sketch.sketching.linear.sgd` are the ``O(d)`` alternative.

It is the weight posterior
(:class:`~botorch_sketch.sketching.posterior.WeightPosterior`) on the identity
features with noise variance ``lambda``:
its covariance is ``C = lambda V^{-1}`` and its mean weights are ``theta``, so
the update above is its rank-one Woodbury step.

References

.. [Li2010contextual]
    L. Li, W. Chu, J. Langford, R. E. Schapire. A contextual-bandit approach to
    personalized news article recommendation. WWW 2010.
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor

from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior


class OnlineRidge:
    r"""``theta_n = (A_n + lambda I)^{-1} b_n`` and ``(A_n + lambda I)^{-1}``, online.

    Example:
        >>> ridge = OnlineRidge(dim=10, noise_var=1.0)
        >>> ridge.observe(x, y)
        >>> ridge.theta, ridge.quadratic_forms(candidates)
    """

    def __init__(
        self,
        dim: int,
        noise_var: float = 1.0,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Start from no data: ``theta = 0``, ``V^{-1} = I / lambda``.

        Args:
            dim: The feature dimension ``d``.
            noise_var: The ridge ``lambda > 0``, the noise variance of the
                Gaussian linear model with a standard normal prior.
            dtype: The floating point type.
            device: The device.
        """
        if dim < 1:
            raise InputDataError(f"dim must be at least 1, got {dim}.")
        if not (math.isfinite(noise_var) and noise_var > 0):
            raise InputDataError(
                f"noise_var must be finite and positive, got {noise_var}."
            )
        self.dim = dim
        self.noise_var = float(noise_var)
        like = torch.empty(0, dtype=dtype, device=device)
        self.posterior = WeightPosterior.prior(dim, like=like)
        self.n = 0

    @property
    def theta(self) -> Tensor:
        r"""The ridge solution ``(A_n + lambda I)^{-1} b_n`` (``d``)."""
        return self.posterior.weights

    @property
    def inverse(self) -> Tensor:
        r"""``(A_n + lambda I)^{-1}`` (``d x d``), formed."""
        return (self.posterior.weight_covariance / self.noise_var).to(self.theta)

    def observe(self, x: Tensor, y: float | Tensor) -> None:
        r"""Add one observation by a Sherman-Morrison update, ``O(d^2)``.

        Args:
            x: A ``d`` tensor of features.
            y: The target.
        """
        x = torch.as_tensor(x, dtype=self.theta.dtype, device=self.theta.device)
        if x.shape != (self.dim,):
            raise BotorchTensorDimensionError(
                f"x must have shape ({self.dim},), got {tuple(x.shape)}."
            )
        y = torch.as_tensor(y, dtype=self.theta.dtype, device=self.theta.device)
        if not bool(torch.isfinite(x).all() and torch.isfinite(y).all()):
            raise InputDataError("Observation contains NaN or infinite values.")
        self._observe_checked(x, float(y))

    def observe_batch(self, X: Tensor, Y: Tensor) -> None:
        r"""Observe the rows of ``X`` (``k x d``) with targets ``Y`` (``k``).

        The batch is checked once, not row by row: a bandit observes one row a
        round, and two finiteness checks per row cost as much as the update at
        ``d = 100``.
        """
        like = {"dtype": self.theta.dtype, "device": self.theta.device}
        X = torch.as_tensor(X, **like).detach()
        Y = torch.as_tensor(Y, **like).detach().reshape(-1)
        if X.ndim != 2 or X.shape != (Y.shape[0], self.dim):
            raise InputDataError(
                f"Expected k x {self.dim} features for k targets, got "
                f"{tuple(X.shape)} and {Y.shape[0]} targets."
            )
        if not bool(torch.isfinite(X).all() and torch.isfinite(Y).all()):
            raise InputDataError("Observations contain NaN or infinite values.")
        for x, y in zip(X, Y.tolist(), strict=True):
            self._observe_checked(x, y)

    def _observe_checked(self, x: Tensor, y: float) -> None:
        # A finite ``d`` tensor in the solver's dtype and device, a finite float.
        self.posterior.update_one_(x, 0.0, y, self.noise_var)
        self.n += 1

    def quadratic_forms(self, X: Tensor) -> Tensor:
        r"""``x^T (A_n + lambda I)^{-1} x`` for the rows of a ``... x d`` tensor."""
        return self.posterior.quadratic_form(X) / self.noise_var

    def clone(self) -> OnlineRidge:
        r"""An independent copy (``O(d^2)``)."""
        other = OnlineRidge.__new__(OnlineRidge)
        other.__dict__.update(self.__dict__)
        other.posterior = self.posterior.copy()
        return other
