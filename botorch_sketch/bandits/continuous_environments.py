#!/usr/bin/env python3
r"""Contextual bandit environments whose actions are continuous.

Each round draws a context ``x``; the policy answers with an action ``a`` in a
box (:attr:`~ContinuousActionEnvironment.action_bounds`) and observes a noisy
reward. Unlike :class:`~botorch_sketch.bandits.environments.ContextualEnvironment`
there is no candidate list, so regret is booked against the best attainable
expected reward at the context, :meth:`~ContinuousActionEnvironment.best_reward`,
which each environment knows exactly
(:func:`~botorch_sketch.bandits.loop.run_continuous_contextual`).

- :class:`ContinuousBump`: the Bump problem of [Zenati2022efficient]_ with the
  action free in ``[0, 1]`` instead of a set of 10 values:
  ``r = max(0, 1 - |a - a*| - <w*, x - x*>)``, ``x ~ U[0, 1]^5``.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.bandits.contextual_environments import (
    PROBLEM_SEED,
    _bump_parameters,
    _grid_actions,
    bump_reward,
)
from botorch_sketch.bandits.environments import NoisyRewards


def check_action_bounds(action_bounds: Tensor) -> None:
    r"""Raise ``InputDataError`` unless ``action_bounds`` is a finite ``2 x a`` box.

    Args:
        action_bounds: Lower bounds in the first row, upper in the second; each
            lower bound strictly below its upper bound.
    """
    if action_bounds.ndim != 2 or action_bounds.shape[0] != 2:
        raise InputDataError(
            "action_bounds must be a 2 x action_dim tensor, got shape "
            f"{tuple(action_bounds.shape)}."
        )
    if not bool(torch.isfinite(action_bounds).all()):
        raise InputDataError("action_bounds contain NaN or infinite values.")
    if not bool((action_bounds[0] < action_bounds[1]).all()):
        raise InputDataError(
            "action_bounds: every lower bound must be strictly below its upper "
            f"bound, got lower {action_bounds[0].tolist()} and upper "
            f"{action_bounds[1].tolist()}."
        )


class ContinuousActionEnvironment(NoisyRewards, ABC):
    r"""A contextual bandit with actions in a box and known expected rewards."""

    def __init__(
        self,
        context_dim: int,
        action_bounds: Tensor,
        noise_std: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Store the problem's shape, the reward noise and the generator.

        Args:
            context_dim: The context dimension ``c``.
            action_bounds: A ``2 x a`` tensor of lower and upper action bounds.
            noise_std: The reward noise standard deviation.
            generator: The random generator of contexts and reward noise.
        """
        super().__init__(noise_std=noise_std, generator=generator)
        if context_dim < 1:
            raise InputDataError(f"context_dim must be positive, got {context_dim}.")
        check_action_bounds(action_bounds)
        self.context_dim = context_dim
        self.action_bounds = action_bounds.double()

    @property
    def action_dim(self) -> int:
        r"""The action dimension ``a``."""
        return self.action_bounds.shape[-1]

    @property
    def dim(self) -> int:
        r"""The state dimension ``c + a`` (context joined with action)."""
        return self.context_dim + self.action_dim

    @abstractmethod
    def context(self) -> Tensor:
        r"""Draw the round's context, a ``context_dim`` tensor."""

    @abstractmethod
    def expected_reward(self, contexts: Tensor, actions: Tensor) -> Tensor:
        r"""Expected rewards of context-action pairs.

        Args:
            contexts: A ``n x c`` tensor of contexts.
            actions: A ``n x a`` tensor of actions (within the bounds).

        Returns:
            A ``n`` tensor.
        """

    @abstractmethod
    def best_reward(self, context: Tensor) -> Tensor:
        r"""The exact best expected reward over the action box at contexts.

        Args:
            context: A ``batch_shape x c`` tensor (a single ``c`` context gives a
                0-dimensional tensor).

        Returns:
            A ``batch_shape`` tensor of ``max_a expected_reward(x, a)``.
        """

    def regret(self, contexts: Tensor, actions: Tensor) -> Tensor:
        r"""Expected regret ``best_reward(x) - expected_reward(x, a)`` (``n``)."""
        return self.best_reward(contexts) - self.expected_reward(contexts, actions)


class ContinuousBump(ContinuousActionEnvironment):
    r"""Bump with a continuous action: ``max(0, 1 - |a - a*| - <w*, x - x*>)``.

    ``a*``, ``x*`` and ``w*`` are Bump's own draw from ``problem_seed`` (``a*``
    one of Bump's ``num_actions`` grid actions, so on a multiple of 0.01 in
    ``[0, 0.99]``), so that ``ContinuousBump(problem_seed=s)`` is
    :class:`~botorch_sketch.bandits.contextual_environments.Bump`
    ``(problem_seed=s)`` with its action set widened to ``[0, 1]``. Since ``a*``
    lies in the box, the best action at every context is ``a*`` and the best
    reward is ``max(0, 1 - <w*, x - x*>)``.
    """

    def __init__(
        self,
        context_dim: int = 5,
        num_actions: int = 10,
        noise_std: float = 0.1,
        problem_seed: int = PROBLEM_SEED,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Draw the problem.

        Args:
            context_dim: The context dimension (5 in the paper).
            num_actions: The size of Bump's action set ``a*`` is drawn from
                (10 in the paper); it only matters for which ``a*`` a seed gives.
            noise_std: The reward noise standard deviation.
            problem_seed: The seed of the problem (``a*``, ``x*``, ``w*``).
            generator: The random generator of contexts and reward noise.
        """
        bounds = torch.tensor([[0.0], [1.0]], dtype=torch.double)
        super().__init__(context_dim, bounds, noise_std=noise_std, generator=generator)
        # Bump's draw order: its action set, then a*, x*, w*.
        g = torch.Generator().manual_seed(problem_seed)
        actions = _grid_actions(num_actions, g)
        self.best_action, self.x_star, self.w_star = _bump_parameters(
            actions, context_dim, g
        )

    def context(self) -> Tensor:
        r"""A uniform context in ``[0, 1]^c``."""
        return torch.rand(
            self.context_dim, generator=self.generator, dtype=torch.double
        )

    def expected_reward(self, contexts: Tensor, actions: Tensor) -> Tensor:
        r"""Bump's reward (``n x c`` contexts, ``n x 1`` actions; ``n`` output)."""
        self._check(contexts, actions)
        return bump_reward(
            contexts, actions[..., 0], self.best_action, self.x_star, self.w_star
        )

    def best_reward(self, context: Tensor) -> Tensor:
        r"""``max(0, 1 - <w*, x - x*>)``, attained at ``a = a*`` (``... x c``)."""
        if context.shape[-1] != self.context_dim:
            raise InputDataError(
                f"Contexts must end in {self.context_dim}, got shape "
                f"{tuple(context.shape)}."
            )
        return bump_reward(
            context,
            self.best_action.to(context),
            self.best_action,
            self.x_star,
            self.w_star,
        )

    def _check(self, contexts: Tensor, actions: Tensor) -> None:
        if (
            contexts.ndim != 2
            or contexts.shape[-1] != self.context_dim
            or actions.shape != (contexts.shape[0], self.action_dim)
        ):
            raise InputDataError(
                f"Expected n x {self.context_dim} contexts and n x {self.action_dim} "
                f"actions, got {tuple(contexts.shape)} and {tuple(actions.shape)}."
            )
