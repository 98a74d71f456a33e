#!/usr/bin/env python3
r"""Contextual bandit environments: the EK-UCB paper's three and a real-data one.

Each round draws a context ``x`` and offers ``C`` candidate states ``[x, a]``,
one per action, with their expected rewards; regret is booked against the best
*available* action of the round (:func:`~botorch_sketch.bandits.loop.
run_contextual`), not against a constant 1 as the authors' code does (for
Chessboard and Step Diagonal no action attains 1 in many rounds, so their
"oracle" has linear regret).

- :class:`Bump`: ``x ~ U[0, 1]^5``, ``a`` in a fixed set of 10 actions drawn
  once from ``{0, 0.01, ..., 0.99}``; ``r = max(0, 1 - |a - a*| - <w*, x - x*>)``
  with ``a*`` one of the actions, ``x* ~ U[0, 1]^5``, ``w* ~ U[-1, 1]^5``.
- :class:`Chessboard` (the code's "squares"): ``x ~ U[0, 1]``, a 4 x 4 board on
  ``[0, 1]^2`` with rewards in ``{0, 0.5, 1}``.
- :class:`StepDiagonal`: ``x ~ U[0, 1]``; ``r = 1`` if ``|x - (a + 0.15)| < 0.1``,
  ``0.5`` if ``|x - (a - 0.15)| < 0.1``, else 0.
- :class:`DigitsBandit`: scikit-learn's digits as a 10-action bandit (the
  supervised-to-bandit conversion): context = an image (64 pixels in
  ``[0, 1]``), action = a class (one-hot), reward 1 for the true class.

The synthetic problems are drawn from ``problem_seed`` (123 in the authors'
code), the rounds and the reward noise (``N(0, 0.1^2)``) from ``generator``.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.bandits.environments import ContextualEnvironment

#: The authors' code draws every problem from this seed.
PROBLEM_SEED = 123


def _grid_actions(num_actions: int, generator: torch.Generator) -> Tensor:
    if not 1 <= num_actions <= 100:
        raise InputDataError(f"num_actions must lie in [1, 100], got {num_actions}.")
    idx = torch.randperm(100, generator=generator)[:num_actions]
    return idx.double() / 100


def _bump_parameters(
    actions: Tensor, context_dim: int, generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    r"""Draw Bump's ``a*`` in ``actions``, ``x* ~ U[0, 1]^c``, ``w* ~ U[-1, 1]^c``.

    One draw order for :class:`Bump` and its continuous-action version
    (:class:`~botorch_sketch.bandits.continuous_environments.ContinuousBump`), so
    that one problem seed gives both the same function.
    """
    pick = torch.randint(actions.shape[0], (1,), generator=generator)
    best_action = actions[pick].squeeze(0)
    x_star = torch.rand(context_dim, generator=generator, dtype=torch.double)
    w_star = 2 * torch.rand(context_dim, generator=generator, dtype=torch.double) - 1
    return best_action, x_star, w_star


def bump_reward(
    x: Tensor, a: Tensor, best_action: Tensor, x_star: Tensor, w_star: Tensor
) -> Tensor:
    r"""Bump's expected reward ``max(0, 1 - |a - a*| - <w*, x - x*>)``.

    Args:
        x: A ``n x c`` tensor of contexts.
        a: A ``n`` tensor of scalar actions.
        best_action: The scalar ``a*``.
        x_star: The ``c`` tensor ``x*``.
        w_star: The ``c`` tensor ``w*``.

    Returns:
        A ``n`` tensor of expected rewards.
    """
    # The problem's parameters live on the CPU; follow the inputs' device.
    shift = (x - x_star.to(x)) @ w_star.to(x)
    return (1 - (a - best_action.to(a)).abs() - shift).clamp_min(0)


class GridActionEnvironment(ContextualEnvironment):
    r"""Uniform contexts and a fixed finite set of scalar actions."""

    def __init__(
        self,
        context_dim: int,
        num_actions: int = 10,
        noise_std: float = 0.1,
        problem_seed: int = PROBLEM_SEED,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Draw the action set.

        Args:
            context_dim: The context dimension.
            num_actions: The number ``C`` of actions, drawn without replacement
                from ``{0, 0.01, ..., 0.99}``.
            noise_std: The reward noise standard deviation.
            problem_seed: The seed of the problem (actions and parameters).
            generator: The random generator of contexts and noise.
        """
        super().__init__(noise_std=noise_std, generator=generator)
        self.problem_generator = torch.Generator().manual_seed(problem_seed)
        self.context_dim = context_dim
        self.actions = _grid_actions(num_actions, self.problem_generator)

    @property
    def dim(self) -> int:
        r"""The state dimension (context plus one action coordinate)."""
        return self.context_dim + 1

    def expected_reward(self, x: Tensor, a: Tensor) -> Tensor:
        r"""Expected rewards of states.

        Args:
            x: A ``n x context_dim`` tensor of contexts.
            a: A ``n`` tensor of actions.

        Returns:
            A ``n`` tensor.
        """
        raise NotImplementedError

    def candidates(self) -> tuple[Tensor, Tensor]:
        r"""A uniform context joined with each action, and the expected rewards.

        The actions come in a fresh random order each round, so that a policy's
        tie rule (the lowest index among equal scores) carries no information.
        """
        x = torch.rand(self.context_dim, generator=self.generator, dtype=torch.double)
        C = self.actions.shape[0]
        actions = self.actions[torch.randperm(C, generator=self.generator)]
        contexts = x.expand(C, -1)
        states = torch.cat([contexts, actions.unsqueeze(-1)], dim=-1)
        return states, self.expected_reward(contexts, actions)


class Bump(GridActionEnvironment):
    r"""The Bump problem: ``max(0, 1 - |a - a*| - <w*, x - x*>)``."""

    def __init__(self, context_dim: int = 5, **kwargs) -> None:
        r"""Draw ``a*`` (one of the actions), ``x*`` and ``w*``; see the base."""
        super().__init__(context_dim, **kwargs)
        self.best_action, self.x_star, self.w_star = _bump_parameters(
            self.actions, context_dim, self.problem_generator
        )

    def expected_reward(self, x: Tensor, a: Tensor) -> Tensor:
        r"""``max(0, 1 - |a - a*| - <w*, x - x*>)`` (``n x 5`` and ``n`` inputs)."""
        return bump_reward(x, a, self.best_action, self.x_star, self.w_star)


class Chessboard(GridActionEnvironment):
    r"""The 4 x 4 board of rewards in ``{0, 0.5, 1}`` (the code's "squares")."""

    def __init__(self, **kwargs) -> None:
        r"""One-dimensional contexts; see the base."""
        super().__init__(1, **kwargs)

    def expected_reward(self, x: Tensor, a: Tensor) -> Tensor:
        r"""The board's value at ``(x, a)`` (``n x 1`` and ``n`` inputs)."""
        x = x.reshape(a.shape)

        def within(v: Tensor, lo: float, hi: float) -> Tensor:
            return (v >= lo) & (v < hi)

        # Row and column bands as in the paper's App. (hi = 1 closed for x).
        one = (within(x, 0.25, 0.5) & (within(a, 0.0, 0.25) | within(a, 0.5, 0.75))) | (
            (x >= 0.75) & within(a, 0.5, 0.75)
        )
        half = (within(x, 0.0, 0.25) & within(a, 0.25, 0.5)) | (
            within(x, 0.5, 0.75) & (within(a, 0.25, 0.5) | (a >= 0.75))
        )
        return one.double() + 0.5 * (half & ~one).double()


class StepDiagonal(GridActionEnvironment):
    r"""Reward 1 on a band above the diagonal, 0.5 on a band below it."""

    def __init__(self, **kwargs) -> None:
        r"""One-dimensional contexts; see the base."""
        super().__init__(1, **kwargs)

    def expected_reward(self, x: Tensor, a: Tensor) -> Tensor:
        r"""1 above the diagonal band, 0.5 below it (``n x 1`` and ``n`` inputs)."""
        x = x.reshape(a.shape)
        one = (x - (a + 0.15)).abs() < 0.1
        half = (x - (a - 0.15)).abs() < 0.1
        return one.double() + 0.5 * (half & ~one).double()


class DigitsBandit(ContextualEnvironment):
    r"""scikit-learn's digits as a contextual bandit (reward 1 for the true class).

    Each round draws an image uniformly (with replacement); the candidates are
    ``[pixels / 16, one_hot(a)]`` for the 10 classes (``10 x 74``). The reward is
    exact (``noise_std = 0`` by default), so the cumulative reward is the number
    of correct guesses.
    """

    def __init__(
        self, noise_std: float = 0.0, generator: torch.Generator | None = None
    ) -> None:
        r"""Load the data (scikit-learn is imported here, on first use)."""
        super().__init__(noise_std=noise_std, generator=generator)
        try:
            from sklearn.datasets import load_digits
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "DigitsBandit needs scikit-learn (the package's 'bandits' extra)."
            ) from e
        data = load_digits()
        self.images = torch.as_tensor(data.data, dtype=torch.double) / 16
        self.labels = torch.as_tensor(data.target, dtype=torch.long)
        self.num_actions = 10
        self.actions = torch.eye(self.num_actions, dtype=torch.double)

    @property
    def context_dim(self) -> int:
        r"""The number of pixels, 64."""
        return self.images.shape[-1]

    @property
    def dim(self) -> int:
        r"""The state dimension, 64 pixels plus 10 one-hot coordinates."""
        return self.context_dim + self.num_actions

    def candidates(self) -> tuple[Tensor, Tensor]:
        r"""One image joined with each class, and the 0/1 expected rewards."""
        i = int(torch.randint(self.images.shape[0], (1,), generator=self.generator))
        x = self.images[i].expand(self.num_actions, -1)
        states = torch.cat([x, self.actions], dim=-1)
        expected = (torch.arange(self.num_actions) == self.labels[i]).double()
        return states, expected
