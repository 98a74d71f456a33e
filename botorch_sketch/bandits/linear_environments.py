#!/usr/bin/env python3
r"""Linear bandits on the unit sphere, the setting of [Korda2015fast]_.

- :func:`sphere_arms_environment`: a finite arm set uniform on the unit sphere
  in ``R^d`` whose expected rewards ``x^T theta*`` spread evenly over
  ``[-1, 1]``, for LinUCB and fLinUCB-GD.
- :class:`SphereEnvironment`: the whole unit sphere as the action set, reward
  ``x^T theta* + noise``, for PEGE (whose greedy step needs a strongly convex
  action set).

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.bandits.environments import (
    FiniteArmEnvironment,
    check_noise_std,
    with_noise,
)


def _unit(v: Tensor) -> Tensor:
    return v / v.norm(dim=-1, keepdim=True)


def sphere_arms_environment(
    num_arms: int,
    dim: int,
    noise_std: float = 0.1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.double,
) -> FiniteArmEnvironment:
    r"""``num_arms`` arms uniform on the unit sphere, rewards ``x^T theta*``.

    ``theta*`` is the minimum-norm solution of ``x_k^T theta* = w_k`` with ``w_k``
    uniform on ``[-1, 1]``, so that (for ``num_arms <= dim``) the expected
    rewards are exactly the ``w_k``. A ``theta*`` drawn on its own would give
    uniform arms rewards of size ``d^{-1/2}``, gaps far below any noise at
    ``d = 1000``; this keeps the gaps of order ``1 / num_arms`` at every ``d``,
    and a random policy earns zero in expectation. Nearly orthogonal arms (high
    ``d``) make every arm its own problem: the regime where LinUCB explores
    each one, and fLinUCB-GD's per-arm widths must do the same.

    Args:
        num_arms: The number of arms.
        dim: The dimension ``d >= 2``.
        noise_std: The standard deviation of the Gaussian reward noise.
        generator: The random generator (problem and reward noise).
        dtype: The floating point type.

    Returns:
        The environment; ``rkhs_norm`` is ``||theta*||``.
    """
    if dim < 2 or num_arms < 1:
        raise InputDataError(f"need dim >= 2 and num_arms >= 1, got {dim}, {num_arms}.")
    arms = _unit(torch.randn(num_arms, dim, generator=generator, dtype=dtype))
    targets = 2 * torch.rand(num_arms, generator=generator, dtype=dtype) - 1
    theta = torch.linalg.pinv(arms) @ targets
    return FiniteArmEnvironment(
        arms, arms @ theta, noise_std, generator, rkhs_norm=float(theta.norm())
    )


class SphereEnvironment:
    r"""Actions on the unit sphere, reward ``x^T theta* + N(0, noise_std^2)``.

    ``pull`` and ``regret`` take ``q x d`` actions where a finite-arm
    environment takes indices, so :func:`~botorch_sketch.bandits.loop.run_finite`
    runs PEGE on it unchanged.
    """

    def __init__(
        self,
        theta: Tensor,
        noise_std: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Build the environment.

        Args:
            theta: The ``d`` parameter ``theta*``.
            noise_std: The standard deviation of the reward noise.
            generator: The random generator of the reward noise.
        """
        if (
            theta.ndim != 1
            or theta.numel() == 0
            or not bool(torch.isfinite(theta).all())
        ):
            raise InputDataError("theta must be a finite d tensor, d >= 1.")
        check_noise_std(noise_std)
        self.theta = theta
        self.noise_std = float(noise_std)
        self.generator = generator

    @classmethod
    def random(
        cls,
        dim: int,
        norm: float = 1.0,
        noise_std: float = 0.1,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
    ) -> SphereEnvironment:
        r"""``theta*`` uniform on the sphere of radius ``norm``."""
        theta = norm * _unit(torch.randn(dim, generator=generator, dtype=dtype))
        return cls(theta, noise_std, generator)

    @property
    def dim(self) -> int:
        r"""The dimension ``d``."""
        return self.theta.shape[0]

    @property
    def best_mean(self) -> float:
        r"""The best expected reward, ``||theta*||``."""
        return float(self.theta.norm())

    def pull(self, actions: Tensor) -> Tensor:
        r"""Noisy rewards of ``q x d`` actions (``q``)."""
        return with_noise(actions @ self.theta, self.noise_std, self.generator)

    def regret(self, actions: Tensor) -> Tensor:
        r"""Expected regret ``||theta*|| - x^T theta*`` of ``q x d`` actions (``q``)."""
        return self.theta.norm() - actions @ self.theta
