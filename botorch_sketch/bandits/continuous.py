#!/usr/bin/env python3
r"""Contextual kernel UCB with a continuous action: a grid refined by ``optimize_acqf``.

:class:`ContinuousActionUCB` wraps any of the contextual policies of
:mod:`botorch_sketch.bandits.contextual` (:class:`~botorch_sketch.bandits.
contextual.KernelUCB`, :class:`~botorch_sketch.bandits.contextual.EKUCB`,
:class:`~botorch_sketch.bandits.contextual.CBKB`,
:class:`~botorch_sketch.bandits.contextual.CBBKB`): their model and score
``mu + beta sqrt(var / lambda)`` on the joint state ``[context, action]`` stay
as they are; only the maximisation over actions changes. [Zenati2022efficient]_
maximise over a finite action set; with a box of actions each round

1. scores a fixed scrambled Sobol grid of ``G`` actions at the context with the
   wrapped policy's :meth:`~botorch_sketch.bandits.contextual.OnlineKernelUCB.
   scores` (one batched call, ``O(G m^2)``), and
2. if ``refine``, starts ``optimize_acqf`` (L-BFGS-B on the action, context
   fixed) from the best grid action via
   :func:`~botorch_sketch.acquisition.contextual_ucb.ucb_action`, keeping whichever of
   the two scores higher, so the refinement never loses to the grid.

The grid is drawn once: a fixed grid makes ``refine=False`` the finite-action
policy on ``G`` actions, and makes rounds comparable. The first round, with no
data, plays a uniform action.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor
from torch.quasirandom import SobolEngine

from botorch_sketch.acquisition.contextual_ucb import ucb_action
from botorch_sketch.bandits.contextual import OnlineKernelUCB
from botorch_sketch.bandits.continuous_environments import check_action_bounds
from botorch_sketch.bandits.policy import argmax_first
from botorch_sketch.checks import checked_count


class ContinuousActionUCB:
    r"""Play the UCB-maximising action in a box, for any :class:`OnlineKernelUCB`.

    ``select(context)`` returns an action, ``update(state, reward)`` takes the
    played ``[context, action]``; ``name`` is the wrapped policy's with
    ``-continuous`` appended (``-continuous-grid`` without refinement).
    """

    def __init__(
        self,
        policy: OnlineKernelUCB,
        action_bounds: Tensor,
        grid_size: int = 64,
        generator: torch.Generator | None = None,
        refine: bool = True,
    ) -> None:
        r"""Wrap a contextual policy.

        Args:
            policy: The contextual policy on ``d = c + a`` dimensional states
                (context first, then action). It keeps its model and scores;
                this wrapper calls its ``scores`` and ``update``, never its
                ``select``.
            action_bounds: A ``2 x a`` tensor of lower and upper action bounds.
                Its device is the device of the grid and of the actions
                returned; the dtype is the wrapped model's (float64 by default).
            grid_size: The number ``G`` of grid actions.
            generator: The random generator of the grid's scrambling seed and of
                the first round's uniform action.
            refine: Refine the best grid action with ``optimize_acqf``; if
                False, play the best grid action.
        """
        if not isinstance(policy, OnlineKernelUCB):
            raise InputDataError(
                f"policy must be an OnlineKernelUCB, got {type(policy).__name__}."
            )
        check_action_bounds(action_bounds)
        d = policy.model.input_dim
        a = action_bounds.shape[-1]
        if not 1 <= a < d:
            raise InputDataError(
                f"action_bounds has {a} action columns but the policy's states "
                f"have {d} dimensions; need 1 <= action_dim < {d} so that a "
                "context remains."
            )
        bounds = action_bounds.to(dtype=policy.model.X.dtype)
        grid_size = checked_count(grid_size, "grid_size")
        self.policy = policy
        self.action_bounds = bounds
        self.generator = generator
        self.refine = bool(refine)
        self.name = f"{policy.name}-continuous" + ("" if refine else "-grid")
        # One scrambled Sobol grid for the whole run, seeded from the generator
        # so that a run is reproducible without touching the global state.
        seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
        unit = SobolEngine(a, scramble=True, seed=seed).draw(
            grid_size, dtype=bounds.dtype
        )
        self.grid = bounds[0] + (bounds[1] - bounds[0]) * unit.to(bounds.device)

    @property
    def context_dim(self) -> int:
        r"""The context dimension ``c``."""
        return self.policy.model.input_dim - self.action_dim

    @property
    def action_dim(self) -> int:
        r"""The action dimension ``a``."""
        return self.action_bounds.shape[-1]

    @property
    def grid_size(self) -> int:
        r"""The number ``G`` of grid actions."""
        return self.grid.shape[0]

    @property
    def dictionary_size(self) -> int:
        r"""The wrapped policy's dictionary size."""
        return self.policy.dictionary_size

    def join(self, context: Tensor, action: Tensor) -> Tensor:
        r"""The ``c + a`` state ``[context, action]``."""
        context = self._check_context(context)
        return torch.cat([context, action.to(context).reshape(-1)])

    def grid_states(self, context: Tensor) -> Tensor:
        r"""The context joined with each grid action, ``G x (c + a)``."""
        context = self._check_context(context)
        return torch.cat([context.expand(self.grid_size, -1), self.grid], dim=-1)

    @torch.no_grad()
    def grid_scores(self, context: Tensor) -> Tensor:
        r"""The wrapped policy's UCB scores of the ``G`` grid actions at ``context``."""
        return self.policy.scores(self.grid_states(context))

    def select(self, context: Tensor) -> Tensor:
        r"""The action to play at ``context``.

        Args:
            context: A ``c`` tensor.

        Returns:
            An ``a`` tensor within the bounds: uniform in the first round, else
            the best grid action, refined by ``optimize_acqf`` if ``refine``.
        """
        context = self._check_context(context)
        lower, upper = self.action_bounds
        if self.policy.model.num_observations == 0:
            # No data: every action scores alike, so draw one uniformly.
            device = self.generator.device if self.generator is not None else None
            u = torch.rand(
                self.action_dim,
                generator=self.generator,
                dtype=lower.dtype,
                device=device,
            )
            return lower + (upper - lower) * u.to(lower.device)
        scores = self.grid_scores(context)
        best = int(argmax_first(scores))
        if not self.refine:
            return self.grid[best].clone()
        # Only the best grid action goes on: the grid is scored already, and
        # ucb_action would score every row it is given once more.
        action, _ = ucb_action(
            self.policy.model,
            context,
            self.action_bounds,
            self.policy.beta,
            grid=self.grid[best : best + 1],
        )
        action = torch.minimum(torch.maximum(action.detach(), lower), upper)
        # ucb_action scores through BoTorch's posterior (a dense covariance);
        # rescoring with the policy's own scores makes "never worse than the
        # grid" hold exactly on the scale the policy ranks by.
        with torch.no_grad():
            refined = self.policy.scores(self.join(context, action).unsqueeze(0))
        if float(refined) < float(scores[best]):
            return self.grid[best].clone()
        return action

    def update(self, state: Tensor, reward: Tensor) -> None:
        r"""Pass the played ``c + a`` state (or ``q x (c + a)``) and reward(s) on."""
        d = self.policy.model.input_dim
        if state.shape[-1] != d:
            raise InputDataError(
                f"States must end in {d} (context and action), got shape "
                f"{tuple(state.shape)}."
            )
        self.policy.update(state.reshape(-1, d), reward)

    def _check_context(self, context: Tensor) -> Tensor:
        c = self.context_dim
        if context.ndim != 1 or context.shape[0] != c:
            raise InputDataError(
                f"context must be a tensor of length {c}, got shape "
                f"{tuple(context.shape)}."
            )
        # A NaN context was played uniformly in the first round (no model to
        # evaluate it) and scored NaN after it.
        if not bool(torch.isfinite(context).all()):
            raise InputDataError("context contains NaN or infinite values.")
        return context.to(self.action_bounds)
