#!/usr/bin/env python3
r"""SGD tracking of a drifting least-squares solution: fOLS-GD and fRLS-GD.

After the ``n``-th observation, one stochastic gradient step is taken on a
sample ``i_n`` drawn uniformly from the *whole* history [Korda2015fast]_:

``theta <- theta + gamma_n ((y_i - theta^T x_i) x_i - lambda_n theta)``

With ``lambda_n = 0`` (fOLS-GD) the iterate tracks the least-squares solution
``A_n^{-1} b_n``; with a ridge schedule (fRLS-GD) the fixed point of the mean
update is ``(A_n + n lambda_n I)^{-1} b_n``. Each step costs ``O(d)``; the
history is kept (``O(n d)`` memory) because samples are redrawn from it.

Step sizes and ridge schedules are small callables of ``n``, so a policy can
swap them; the random generator is explicit.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from torch import Tensor


class Schedule(ABC):
    r"""A positive sequence indexed by the number of observations ``n >= 1``."""

    @abstractmethod
    def __call__(self, n: int) -> float:
        r"""The value at ``n``."""


class HarmonicStep(Schedule):
    r"""``gamma_n = c / (4 (c + n))``, Theorem 1 of [Korda2015fast]_.

    The ``O(n^{-1/2})`` tracking rate needs ``mu c / 4`` in ``(2/3, 1)``, ``mu`` the
    smallest eigenvalue of the normalised design ``A_n / n`` (``1/d`` for inputs
    uniform on the unit sphere, so ``c = 3.5 d`` is a safe choice there). The step
    never exceeds 1/4, so it is stable for ``||x|| <= 1``.
    """

    def __init__(self, c: float) -> None:
        r"""Configure the schedule.

        Args:
            c: The constant ``c > 0``.
        """
        if c <= 0:
            raise ValueError(f"c must be positive, got {c}.")
        self.c = c

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.c / (4 * (self.c + n))


class OffsetHarmonicStep(Schedule):
    r"""``gamma_n = 1 / (n_0 + n)``, the step of the paper's experiments (n_0 = 100)."""

    def __init__(self, offset: float = 100.0) -> None:
        r"""Configure the schedule.

        Args:
            offset: ``n_0 > 0``.
        """
        if offset <= 0:
            raise ValueError(f"offset must be positive, got {offset}.")
        self.offset = offset

    def __call__(self, n: int) -> float:  # noqa: D102
        return 1.0 / (self.offset + n)


class Constant(Schedule):
    r"""A constant value (a constant step, or a constant ridge per sample)."""

    def __init__(self, value: float) -> None:
        r"""Configure the schedule.

        Args:
            value: The value, at least zero.
        """
        if value < 0:
            raise ValueError(f"value must be non-negative, got {value}.")
        self.value = value

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.value


class InverseRidge(Schedule):
    r"""``lambda_n = lambda / n``: the classic ridge ``A_n + lambda I``.

    With ``lambda`` the noise variance this is the GP/Bayesian posterior mean of a
    linear model with a standard normal prior.
    """

    def __init__(self, ridge: float) -> None:
        r"""Configure the schedule.

        Args:
            ridge: ``lambda >= 0``.
        """
        if ridge < 0:
            raise ValueError(f"ridge must be non-negative, got {ridge}.")
        self.ridge = ridge

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.ridge / n


class PowerRidge(Schedule):
    r"""``lambda_n = scale * n^{-(1 - alpha)}``, fLinUCB-GD's ridge (alpha 0.6).

    The unnormalised ridge ``n lambda_n = scale * n^alpha`` grows with ``n``: this
    is not the posterior of a fixed prior, and the paper proves nothing for it.
    """

    def __init__(self, alpha: float = 0.6, scale: float = 1.0) -> None:
        r"""Configure the schedule.

        Args:
            alpha: The exponent, in ``(0, 1)``.
            scale: A positive multiplier.
        """
        if not 0 < alpha < 1 or scale <= 0:
            raise ValueError(f"need 0 < alpha < 1 and scale > 0, got {alpha}, {scale}.")
        self.alpha = alpha
        self.scale = scale

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.scale * n ** (-(1 - self.alpha))


class SGDLeastSquares:
    r"""fOLS-GD / fRLS-GD: one SGD step per observation on a resampled past sample.

    Example:
        >>> solver = SGDLeastSquares(dim=10, step=HarmonicStep(35.0))
        >>> for x, y in stream:
        ...     solver.observe(x, y)
        >>> solver.theta  # tracks the least-squares solution
    """

    def __init__(
        self,
        dim: int,
        step: Schedule,
        ridge: Schedule | None = None,
        averaging: bool = False,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Set up an empty solver at ``theta = 0``.

        Args:
            dim: The feature dimension ``d``.
            step: The step-size schedule ``gamma_n``.
            ridge: The ridge schedule ``lambda_n``; None for fOLS-GD (no ridge).
            averaging: Keep a Polyak (uniform) average of the iterates and report it
                as :attr:`estimate`.
            generator: The generator for the resampled indices.
            dtype: The floating point type.
            device: The device.
        """
        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}.")
        self.dim = dim
        self.step = step
        self.ridge = ridge
        self.averaging = averaging
        self.generator = generator
        self.theta = torch.zeros(dim, dtype=dtype, device=device)
        self.average = torch.zeros_like(self.theta)
        self._X = torch.empty(64, dim, dtype=dtype, device=device)
        self._y = torch.empty(64, dtype=dtype, device=device)
        self.n = 0

    @property
    def X(self) -> Tensor:
        r"""The ``n x d`` history of features."""
        return self._X[: self.n]

    @property
    def y(self) -> Tensor:
        r"""The ``n`` history of targets."""
        return self._y[: self.n]

    @property
    def estimate(self) -> Tensor:
        r"""The averaged iterate if averaging, else the last one."""
        return self.average if self.averaging else self.theta

    def observe(self, x: Tensor, y: float | Tensor) -> None:
        r"""Append one observation and take one SGD step.

        Args:
            x: A ``d`` tensor of features (``||x|| <= 1`` keeps the steps stable).
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
        if self.n == self._X.shape[0]:
            # Amortised O(d) appends: double the buffer when it is full.
            self._X = torch.cat([self._X, torch.empty_like(self._X)])
            self._y = torch.cat([self._y, torch.empty_like(self._y)])
        self._X[self.n] = x
        self._y[self.n] = y.reshape(())
        self.n += 1
        self.sgd_step()

    def observe_batch(self, X: Tensor, Y: Tensor) -> None:
        r"""Observe rows in order (each step depends on the previous one).

        Args:
            X: A ``k x d`` tensor of features.
            Y: A ``k`` (or ``k x 1``) tensor of targets.
        """
        for x, y in zip(X, Y.reshape(-1), strict=True):
            self.observe(x, y)

    def sgd_step(self) -> None:
        r"""One step on a sample drawn uniformly from the history (no new data)."""
        if self.n == 0:
            return
        device = self.generator.device if self.generator is not None else "cpu"
        i = int(torch.randint(self.n, (1,), generator=self.generator, device=device))
        x_i, y_i = self._X[i], self._y[i]
        gradient = (y_i - self.theta @ x_i) * x_i
        if self.ridge is not None:
            gradient = gradient - self.ridge(self.n) * self.theta
        self.theta = self.theta + self.step(self.n) * gradient
        if self.averaging:
            self.average = self.average + (self.theta - self.average) / self.n

    def reference_solution(self) -> Tensor:
        r"""The exact target ``(A_n + n lambda_n I)^{-1} b_n``, in ``O(n d^2 + d^3)``.

        A diagnostic: what the iterate tracks. For fOLS-GD with a singular ``A_n``
        the minimum-norm least-squares solution is returned.
        """
        X, y = self.X.double(), self.y.double()
        A, b = X.mT @ X, X.mT @ y
        if self.ridge is not None and self.n > 0:
            eye = torch.eye(self.dim, dtype=A.dtype, device=A.device)
            A = A + self.n * self.ridge(self.n) * eye
            return torch.linalg.solve(A, b).to(self.theta)
        return (torch.linalg.pinv(A, hermitian=True) @ b).to(self.theta)
