#!/usr/bin/env python3
r"""PEGE and fPEGE-GD: phased exploration and greedy exploitation on the sphere.

PEGE [Rusmevichientong2010linearly]_ plays in phases ``m = 1, 2, ...``: first
each vector ``b_1, ..., b_d`` of a basis of the action set once (exploration;
only these rewards enter the regression), then ``m`` times the greedy action
``G(theta) = argmax_{||x|| = 1} theta^T x = theta / ||theta||`` for the current
estimate. With ``M`` phases after ``n ~ M^2 / 2`` rounds, exploration costs
``O(d M)`` and exploitation ``O(sum_m m / m)`` regret on a strongly convex set,
so the regret grows like ``d sqrt(n)``.

- :class:`PEGE` re-solves least squares on the exploration data at the end of
  each exploration phase (``O(d^3)``, the paper's ``O(m d^3)`` total).
- :class:`SGDPEGE` (fPEGE-GD, Alg. 1 of [Korda2015fast]_) takes one fOLS-GD
  step per exploration sample instead (``O(d)``), with
  ``gamma_n = c / (4 (c + n))``.

Both return ``q x d`` actions from ``select`` and learn from
``update(actions, rewards)``; with
:class:`~botorch_sketch.bandits.linear_environments.SphereEnvironment` they run
in :func:`~botorch_sketch.bandits.loop.run_finite` unchanged (the "indices" of
that loop are actions here).

References

.. [Rusmevichientong2010linearly]
    P. Rusmevichientong, J. N. Tsitsiklis. Linearly parameterized bandits.
    Mathematics of Operations Research, 2010.
.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

from abc import abstractmethod

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.bandits.policy import _PolicyBase
from botorch_sketch.checks import checked_count
from botorch_sketch.sketching.linear import HarmonicStep, Schedule, SGDLeastSquares


class _PhaseClock:
    r"""Where round ``t`` falls in PEGE's schedule of ``d + m``-round phases."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.phase = 1
        self.position = 0

    def tick(self) -> int:
        r"""Advance one round; return the basis index explored, or -1 to exploit."""
        j = self.position if self.position < self.dim else -1
        self.position += 1
        if self.position == self.dim + self.phase:
            self.phase += 1
            self.position = 0
        return j


class _SpherePEGE(_PolicyBase):
    r"""The schedule and greedy step shared by PEGE and fPEGE-GD."""

    def __init__(
        self,
        dim: int,
        basis: Tensor | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(generator=generator)
        if basis is None:
            basis = torch.eye(dim, dtype=dtype, device=device)
        if basis.shape != (dim, dim):
            raise InputDataError(f"basis must be {dim} x {dim}, got {basis.shape}.")
        if not bool(torch.isfinite(basis).all()):
            raise InputDataError("basis contains NaN or infinite values.")
        norms = basis.norm(dim=-1)
        if bool((norms - 1).abs().max() > 1e-8):
            raise InputDataError("The basis vectors must lie on the unit sphere.")
        # lambda_P = lambda_min(sum_j b_j b_j^T) > 0 is what makes it a basis.
        self.min_eigenvalue = float(torch.linalg.eigvalsh(basis.mT @ basis)[0])
        if self.min_eigenvalue <= 1e-10:
            raise InputDataError("basis is not a basis (singular).")
        self.dim = dim
        self.basis = basis
        self._select_clock = _PhaseClock(dim)
        self._update_clock = _PhaseClock(dim)

    @property
    @abstractmethod
    def theta(self) -> Tensor:
        r"""The estimate the greedy step uses (``d``)."""

    def greedy(self) -> Tensor:
        r"""``argmax_{||x|| = 1} theta^T x = theta / ||theta||`` (``b_1`` at 0)."""
        norm = self.theta.norm()
        return self.theta / norm if float(norm) > 0 else self.basis[0]

    def select(self, q: int = 1) -> Tensor:
        r"""The next ``q`` actions of the schedule (``q x d``)."""
        rows = []
        q = checked_count(q, "q")
        for _ in range(q):
            j = self._select_clock.tick()
            rows.append(self.basis[j] if j >= 0 else self.greedy())
        return torch.stack(rows)

    def update(self, actions: Tensor, rewards: Tensor) -> None:
        r"""Learn from the rewards of the exploration rounds among ``actions``.

        The rounds are matched to the schedule in order, so ``update`` must
        follow ``select`` round for round.
        """
        rewards = torch.as_tensor(rewards, dtype=self.basis.dtype).reshape(-1)
        if actions.ndim != 2 or actions.shape != (rewards.shape[0], self.dim):
            raise InputDataError(
                f"Expected q x {self.dim} actions for q rewards, got "
                f"{tuple(actions.shape)} and {rewards.shape[0]}."
            )
        if not bool(torch.isfinite(rewards).all()):
            raise InputDataError("Rewards contain NaN or infinite values.")
        rewards = rewards.to(self.basis.device)
        for reward in rewards:
            j = self._update_clock.tick()
            if j >= 0:
                self._explore(j, reward)
                if j == self.dim - 1:
                    self._end_exploration()

    @abstractmethod
    def _explore(self, j: int, reward: Tensor) -> None:
        """Learn from the reward of basis vector ``j``."""

    def _end_exploration(self) -> None:
        """Hook at the end of each exploration phase."""


class PEGE(_SpherePEGE):
    r"""PEGE with the exact least-squares estimate of each exploration phase.

    Example:
        >>> env = SphereEnvironment.random(dim=5, generator=g)
        >>> trace = run_finite(PEGE(dim=5), env, num_steps=10_000)
    """

    name = "PEGE"

    def __init__(
        self,
        dim: int,
        basis: Tensor | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Start with no data.

        Args:
            dim: The dimension ``d``.
            basis: A ``d x d`` tensor whose rows are unit vectors spanning
                ``R^d``; defaults to the standard basis.
            dtype: The floating point type.
            device: The device.
        """
        super().__init__(dim, basis, dtype=dtype, device=device)
        self._gram = torch.zeros(dim, dim, dtype=dtype, device=self.basis.device)
        self._moment = torch.zeros(dim, dtype=dtype, device=self.basis.device)
        self._theta = torch.zeros(dim, dtype=dtype, device=self.basis.device)

    @property
    def theta(self) -> Tensor:  # noqa: D102
        return self._theta

    def _explore(self, j: int, reward: Tensor) -> None:
        b = self.basis[j]
        self._gram.addr_(b, b)
        self._moment.add_(b, alpha=float(reward))

    def _end_exploration(self) -> None:
        # After a full phase the Gram matrix is m B^T B, invertible.
        self._theta = torch.linalg.solve(self._gram, self._moment)


class SGDPEGE(_SpherePEGE):
    r"""fPEGE-GD: PEGE whose estimate is tracked by fOLS-GD, ``O(d)`` per round.

    Example:
        >>> policy = SGDPEGE(dim=5, generator=torch.Generator().manual_seed(0))
        >>> trace = run_finite(policy, env, num_steps=10_000)
    """

    name = "SGDPEGE"

    def __init__(
        self,
        dim: int,
        basis: Tensor | None = None,
        step: Schedule | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Start with no data.

        Args:
            dim: The dimension ``d``.
            basis: A ``d x d`` tensor whose rows are unit vectors spanning
                ``R^d``; defaults to the standard basis.
            step: The step schedule; defaults to ``HarmonicStep(c)`` with
                ``c = 3.5 d / lambda_P``, so that ``mu c / 4 = 0.875`` lies in
                Theorem 1's ``(2/3, 1)`` for the design after whole phases,
                ``mu = lambda_P / d``.
            generator: The generator of the resampled history indices.
            dtype: The floating point type.
            device: The device.
        """
        super().__init__(dim, basis, generator=generator, dtype=dtype, device=device)
        c = 3.5 * dim / self.min_eigenvalue
        self.solver = SGDLeastSquares(
            dim,
            step=step or HarmonicStep(c),
            generator=generator,
            dtype=dtype,
            device=self.basis.device,
        )

    @property
    def theta(self) -> Tensor:  # noqa: D102
        return self.solver.theta

    def _explore(self, j: int, reward: Tensor) -> None:
        self.solver.observe(self.basis[j], reward, validate=False)
