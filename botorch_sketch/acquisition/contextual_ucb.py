#!/usr/bin/env python3
r"""The continuous action maximising UCB at a fixed context.

A contextual round with a continuous action (EK-UCB [Zenati2022efficient]_ on a
continuous action set, :mod:`botorch_sketch.bandits.continuous`) is one BoTorch
acquisition problem: UCB on the
:class:`~botorch_sketch.models.IncrementalNystromModel` view of the online
model, the context held fixed by a ``FixedFeatureAcquisitionFunction`` and the
action optimised by ``optimize_acqf``.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

import torch
from botorch.acquisition import FixedFeatureAcquisitionFunction, UpperConfidenceBound
from botorch.exceptions.errors import InputDataError
from botorch.optim import optimize_acqf
from torch import Tensor

from botorch_sketch.models.incremental_nystrom_model import IncrementalNystromModel
from botorch_sketch.sketching.online import IncrementalNystrom


def ucb_action(
    model: IncrementalNystrom,
    context: Tensor,
    action_bounds: Tensor,
    beta: float,
    grid: Tensor | None = None,
    num_restarts: int = 4,
    raw_samples: int = 64,
) -> tuple[Tensor, Tensor]:
    r"""The continuous action maximising ``mu + beta sqrt(var / lambda)`` at a context.

    The state is ``[context, action]``; the context is held fixed by a
    ``FixedFeatureAcquisitionFunction`` and the action optimised by
    ``optimize_acqf`` (BoTorch's UCB uses ``sqrt(beta') sigma``, so
    ``beta' = beta^2 / lambda``).

    Args:
        model: The online model on ``(context_dim + action_dim)``-dim states.
        context: A ``context_dim`` tensor.
        action_bounds: A ``2 x action_dim`` tensor of lower and upper bounds.
        beta: The UCB width on the ``sqrt(var / lambda)`` scale.
        grid: An optional ``n x action_dim`` candidate grid: its best action
            starts the gradient optimiser (one restart), and is returned if the
            optimiser does not improve on it. Without it, ``optimize_acqf``
            draws ``raw_samples`` initial points for ``num_restarts`` restarts.
        num_restarts: Restarts of the gradient optimiser (without a grid).
        raw_samples: Raw samples for its initial points (without a grid).

    Returns:
        The ``action_dim`` best action and its score.
    """
    c = context.shape[-1]
    a = action_bounds.shape[-1]
    if c + a != model.input_dim or action_bounds.shape[0] != 2:
        raise InputDataError(
            f"context ({c}) and action_bounds (2 x {a}) do not match the model's "
            f"{model.input_dim}-dimensional states."
        )
    acqf = UpperConfidenceBound(
        IncrementalNystromModel(model), beta=beta**2 / model.noise_var
    )
    fixed = FixedFeatureAcquisitionFunction(
        acqf, d=c + a, columns=list(range(c)), values=context.tolist()
    )
    if grid is None:
        action, value = optimize_acqf(
            fixed,
            bounds=action_bounds,
            q=1,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
        )
        return action.reshape(-1), value.reshape(())
    if grid.ndim != 2 or grid.shape[-1] != a:
        raise InputDataError(f"grid must be n x {a}, got shape {tuple(grid.shape)}.")
    with torch.no_grad():
        grid_scores = fixed(grid.unsqueeze(-2))
    best = int(grid_scores.argmax())
    action, value = optimize_acqf(
        fixed,
        bounds=action_bounds,
        q=1,
        num_restarts=1,
        batch_initial_conditions=grid[best].reshape(1, 1, a),
    )
    if float(value) < float(grid_scores[best]):
        return grid[best], grid_scores[best]
    return action.reshape(-1), value.reshape(())
