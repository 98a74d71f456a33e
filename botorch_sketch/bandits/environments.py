#!/usr/bin/env python3
r"""Bandit environments with known expected rewards, so regret can be booked.

- :class:`FiniteArmEnvironment`: ``A`` arms with expected rewards and Gaussian
  noise. Constructors build the three standard problems: a function drawn from a
  GP (:meth:`~FiniteArmEnvironment.gp_sample`), the linear example of the BKB
  authors (:meth:`~FiniteArmEnvironment.linear`), and a BoTorch test function on
  a Sobol arm set (:meth:`~FiniteArmEnvironment.from_test_function`).
- :class:`ContextualEnvironment`: each round offers candidate feature vectors and
  knows their expected rewards.
- :class:`NoisyRewards`: the Gaussian reward noise both contextual kinds share
  (continuous actions: :mod:`botorch_sketch.bandits.continuous_environments`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import InputDataError
from botorch.test_functions.synthetic import SyntheticTestFunction
from gpytorch.kernels import Kernel
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_sketch.sketching.embedding import (
    NystromEmbedding,
    chunk_size_for,
    row_chunks,
)


def _seed_from(generator: torch.Generator | None) -> int:
    return int(torch.randint(2**31 - 1, (1,), generator=generator))


def check_noise_std(noise_std: float) -> float:
    r"""``noise_std`` as a float, if finite and non-negative (NaN passed ``< 0``)."""
    if not (0 <= noise_std < math.inf):
        raise InputDataError(
            f"noise_std must be finite and non-negative, got {noise_std}."
        )
    return float(noise_std)


def with_noise(
    values: Tensor, noise_std: float, generator: torch.Generator | None
) -> Tensor:
    r"""``values`` plus independent ``N(0, noise_std^2)`` noise.

    The noise is drawn on the generator's device (the CPU for a CPU generator)
    and moved to that of ``values``, so a seeded run draws the same rewards on
    every device.

    Args:
        values: The expected rewards, any shape.
        noise_std: The noise standard deviation.
        generator: The random generator.

    Returns:
        A tensor like ``values``.
    """
    noise = torch.randn(values.shape, generator=generator, dtype=values.dtype)
    return values + noise_std * noise.to(values.device)


class FiniteArmEnvironment:
    r"""``A`` arms with expected rewards ``means`` and Gaussian reward noise."""

    def __init__(
        self,
        arms: Tensor,
        means: Tensor,
        noise_std: float,
        generator: torch.Generator | None = None,
        rkhs_norm: float | None = None,
    ) -> None:
        r"""Build the environment.

        Args:
            arms: A ``A x d`` tensor of arm features.
            means: A ``A`` tensor of expected rewards.
            noise_std: Standard deviation of the reward noise.
            generator: The random generator of the reward noise.
            rkhs_norm: The RKHS norm of the reward function where it is known
                (the ``F`` of BKB's confidence width), else None.
        """
        if arms.ndim != 2 or means.shape != arms.shape[:1]:
            raise InputDataError(
                f"arms must be A x d and means A, got {tuple(arms.shape)} and "
                f"{tuple(means.shape)}."
            )
        if not bool(torch.isfinite(means).all()):
            raise InputDataError("means contain NaN or infinite values.")
        self.arms = arms
        self.means = means
        self.noise_std = check_noise_std(noise_std)
        self.generator = generator
        self.rkhs_norm = rkhs_norm

    @property
    def best_mean(self) -> float:
        r"""The largest expected reward."""
        return float(self.means.max())

    def pull(self, indices: Tensor) -> Tensor:
        r"""Noisy rewards of the arms ``indices`` (a ``q`` tensor)."""
        means = self.means[self._checked(indices)]
        return with_noise(means, self.noise_std, self.generator)

    def regret(self, indices: Tensor) -> Tensor:
        r"""Expected instantaneous regret ``max_a f(a) - f(x)`` of each pull."""
        return self.means.max() - self.means[self._checked(indices)]

    def _checked(self, indices: Tensor) -> Tensor:
        # A negative index read an arm from the end (a reward and a regret for
        # an arm nobody chose), one past the end was torch's IndexError.
        indices = torch.as_tensor(indices, device=self.means.device)
        if indices.is_floating_point() or indices.dtype == torch.bool:
            raise InputDataError(
                f"Arm indices must be integers, got dtype {indices.dtype}."
            )
        flat = indices.reshape(-1).tolist()
        num_arms = self.means.shape[0]
        if flat and (min(flat) < 0 or max(flat) >= num_arms):
            raise InputDataError(
                f"Arm indices must lie in [0, {num_arms}), got "
                f"[{min(flat)}, {max(flat)}]."
            )
        return indices

    @classmethod
    def gp_sample(
        cls,
        arms: Tensor,
        kernel: Kernel,
        noise_fraction: float = 0.01,
        num_centres: int = 1000,
        generator: torch.Generator | None = None,
    ) -> FiniteArmEnvironment:
        r"""A function drawn from ``GP(0, k)`` on the arms.

        The draw is ``f = z(x)^T xi``, ``xi ~ N(0, I)``, in the Nystrom embedding of
        ``num_centres`` random arms: at the centres this is exactly ``N(0, K)``, and
        elsewhere it is the GP conditioned on those values, which for smooth
        kernels (whose Gram matrices have a numerical rank below
        ``num_centres``) is the GP draw itself. Its RKHS norm is ``||xi||``. The
        noise is set as in the BKB authors' example, ``std = sqrt(noise_fraction
        * (max f - min f))``.

        Args:
            arms: A ``A x d`` tensor of arms.
            kernel: The gpytorch kernel of the prior.
            noise_fraction: The noise variance as a fraction of the range of f.
            num_centres: How many arms the draw is conditioned on.
            generator: The random generator (draw, centres and reward noise).

        Returns:
            The environment.
        """
        A = arms.shape[0]
        perm = torch.randperm(A, generator=generator)[: min(num_centres, A)]
        with torch.no_grad():
            embedding = NystromEmbedding(kernel, arms[perm.to(arms.device)])
            xi = torch.randn(embedding.dim, generator=generator, dtype=arms.dtype)
            xi = xi.to(arms.device)
            chunk = chunk_size_for(embedding.num_inducing)
            means = torch.cat(
                [embedding(arms[rows]) @ xi for rows in row_chunks(A, chunk)]
            )
        noise_std = (noise_fraction * float(means.max() - means.min())) ** 0.5
        return cls(arms, means, noise_std, generator, rkhs_norm=float(xi.norm()))

    @classmethod
    def linear(
        cls,
        num_arms: int = 1000,
        dim: int = 3,
        noise_fraction: float = 0.01,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
    ) -> FiniteArmEnvironment:
        r"""The BKB authors' example: ``f(x) = x^T w`` on Gaussian arms.

        Arms and ``w`` are standard normal; the noise variance is
        ``noise_fraction * (max f - min f)``.
        """
        arms = torch.randn(num_arms, dim, generator=generator, dtype=dtype)
        w = torch.randn(dim, generator=generator, dtype=dtype)
        means = arms @ w
        noise_std = (noise_fraction * float(means.max() - means.min())) ** 0.5
        return cls(arms, means, noise_std, generator, rkhs_norm=float(w.norm()))

    @classmethod
    def from_test_function(
        cls,
        test_function: SyntheticTestFunction,
        num_arms: int,
        noise_fraction: float = 0.01,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
    ) -> FiniteArmEnvironment:
        r"""A BoTorch test function on a scrambled Sobol arm set in its bounds.

        Rewards are the noiseless function values (build the function with
        ``negate=True`` for minimisation problems); arms are scaled to the unit
        cube, as a kernel model expects.
        """
        d = test_function.dim
        sobol = SobolEngine(d, scramble=True, seed=_seed_from(generator))
        unit = sobol.draw(num_arms, dtype=dtype)
        bounds = test_function.bounds.to(dtype)
        with torch.no_grad():
            means = test_function(
                bounds[0] + (bounds[1] - bounds[0]) * unit, noise=False
            )
        noise_std = (noise_fraction * float(means.max() - means.min())) ** 0.5
        return cls(unit, means, noise_std, generator)


class NoisyRewards:
    r"""Gaussian reward noise drawn from an explicit generator.

    Shared by the contextual environments with finite candidate sets
    (:class:`ContextualEnvironment`) and those with continuous actions
    (:class:`~botorch_sketch.bandits.continuous_environments.
    ContinuousActionEnvironment`), so that both draw their noise alike.
    """

    def __init__(self, noise_std: float, generator: torch.Generator | None) -> None:
        r"""Store the reward noise and the random generator."""
        self.noise_std = check_noise_std(noise_std)
        self.generator = generator

    def noisy(self, expected: Tensor) -> Tensor:
        r"""A noisy observation of expected rewards."""
        return with_noise(expected, self.noise_std, self.generator)


class ContextualEnvironment(NoisyRewards, ABC):
    r"""A contextual bandit offering candidates with known expected rewards."""

    @abstractmethod
    def candidates(self) -> tuple[Tensor, Tensor]:
        r"""Draw a round.

        Returns:
            The ``C x d`` candidate features (context joined with each action) and
            their ``C`` expected rewards.
        """
