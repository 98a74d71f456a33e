#!/usr/bin/env python3
r"""Step-size and ridge schedules of the SGD solvers: small callables of ``n``.

A schedule is a positive sequence indexed by the number of observations, so
a policy can swap one for another. They are written for features of norm at
most 1, the setting of the theorems of [Korda2015fast]_; the solvers
(:class:`~botorch_sketch.sketching.linear.SGDLeastSquares`,
:class:`~botorch_sketch.sketching.linear.WidthTracker`) scale their steps down
for larger features.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from botorch.exceptions.errors import InputDataError


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
    never exceeds 1/4, so it is stable for ``||x|| <= 1``; the solvers scale it
    down for larger features.
    """

    def __init__(self, c: float) -> None:
        r"""Configure the schedule.

        Args:
            c: The constant ``c > 0``.
        """
        if c <= 0:
            raise InputDataError(f"c must be positive, got {c}.")
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
            raise InputDataError(f"offset must be positive, got {offset}.")
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
            raise InputDataError(f"value must be non-negative, got {value}.")
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
            raise InputDataError(f"ridge must be non-negative, got {ridge}.")
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
            raise InputDataError(
                f"need 0 < alpha < 1 and scale > 0, got {alpha}, {scale}."
            )
        self.alpha = alpha
        self.scale = scale

    def __call__(self, n: int) -> float:  # noqa: D102
        return self.scale * n ** (-(1 - self.alpha))
