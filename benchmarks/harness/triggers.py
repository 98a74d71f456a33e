#!/usr/bin/env python3
r"""When a subset GP switches from all observations to a subset, and to how many.

GSSBO [Wei2025gssbo]_ fits on all observations until an iteration takes more
than ``Z`` times as long as the first ones, then fixes ``M`` to the number of
observations at that moment. The wall-clock rule is not repeatable, so a count
rule is offered too. A trigger is stateful: use one per run.

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from botorch.exceptions.errors import InputDataError


class SubsetTrigger(ABC):
    r"""Decides the subset size for the next model, from the run so far."""

    @abstractmethod
    def subset_size(self, num_observations: int) -> int | None:
        r"""The subset size for a model on ``num_observations`` (None: all).

        Args:
            num_observations: ``N``, the observations the next model is given.

        Returns:
            ``M``, or None while the trigger has not fired.
        """

    def observe(self, num_observations: int, seconds: float) -> None:
        r"""Record how long an iteration with ``num_observations`` took.

        Args:
            num_observations: The observations the iteration's model was given.
            seconds: Its wall time (fit plus acquisition).
        """
        return None


class CountTrigger(SubsetTrigger):
    r"""Fit on all observations up to ``switch_at``, then on ``size`` of them."""

    def __init__(self, size: int, switch_at: int | None = None) -> None:
        r"""Configure the trigger.

        Args:
            size: ``M``.
            switch_at: The number of observations above which subsets are used;
                defaults to ``size`` (the paper's ``M = N`` at the switch).
        """
        if size < 1:
            raise InputDataError(f"size must be positive, got {size}.")
        self.size = size
        self.switch_at = size if switch_at is None else switch_at
        if self.switch_at < size:
            raise InputDataError(
                f"switch_at ({self.switch_at}) must be at least size ({size})."
            )

    def subset_size(self, num_observations: int) -> int | None:
        r"""``size`` once ``num_observations > switch_at``, else None.

        Args:
            num_observations: ``N``.

        Returns:
            ``M`` or None.
        """
        return self.size if num_observations > self.switch_at else None


class TimeTrigger(SubsetTrigger):
    r"""The paper's rule: switch when an iteration takes ``factor`` times the first.

    ``T_bar`` is the mean wall time of the first ``warmup`` iterations (the paper
    does not define it further). When an iteration takes more than
    ``factor * T_bar``, ``M`` is fixed to the number of observations it was given.
    Not repeatable: it reads the clock.
    """

    def __init__(self, factor: float = 4.0, warmup: int = 3) -> None:
        r"""Configure the trigger.

        Args:
            factor: ``Z`` (4 in the paper).
            warmup: Iterations averaged into ``T_bar``.
        """
        if factor <= 1:
            raise InputDataError(f"factor must exceed 1, got {factor}.")
        if warmup < 1:
            raise InputDataError(f"warmup must be positive, got {warmup}.")
        self.factor = factor
        self.warmup = warmup
        self.baseline: list[float] = []
        self.size: int | None = None

    def subset_size(self, num_observations: int) -> int | None:
        r"""The size fixed when the trigger fired, or None before.

        Args:
            num_observations: ``N``.

        Returns:
            ``M`` or None.
        """
        return self.size

    def observe(self, num_observations: int, seconds: float) -> None:
        r"""Fire if ``seconds`` exceeds ``factor`` times the warm-up mean.

        Args:
            num_observations: The observations the iteration's model was given.
            seconds: Its wall time.
        """
        if self.size is not None:
            return
        if len(self.baseline) < self.warmup:
            self.baseline.append(seconds)
            return
        if seconds > self.factor * sum(self.baseline) / len(self.baseline):
            self.size = num_observations
