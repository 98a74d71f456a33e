#!/usr/bin/env python3
r"""A BoTorch ``Model`` view of an online Nystrom/DTC model.

:class:`IncrementalNystromModel` exposes
:class:`~botorch_sketch.sketching.incremental.IncrementalNystrom` (the model of
EK-UCB [Zenati2022efficient]_ and of the contextual policies in
:mod:`botorch_sketch.bandits.contextual`) to BoTorch's acquisition functions and
optimisers, so that a contextual round with a continuous action can be solved
by ``optimize_acqf`` on a ``FixedFeatureAcquisitionFunction`` (context fixed,
action free): see :func:`ucb_action`. The view holds no state of its own; the
policy keeps updating the wrapped model.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition import FixedFeatureAcquisitionFunction, UpperConfidenceBound
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_sketch.sketching.incremental import IncrementalNystrom


class IncrementalNystromModel(Model):
    r"""A single-output BoTorch model reading an :class:`IncrementalNystrom`."""

    def __init__(self, model: IncrementalNystrom) -> None:
        r"""Wrap ``model`` (not copied: later observations show through)."""
        super().__init__()
        self.model = model

    @property
    def num_outputs(self) -> int:
        r"""One output."""
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        r"""No batch dimensions."""
        return torch.Size([])

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        r"""The DTC posterior at ``X``.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs.
            output_indices: None or ``[0]``.
            observation_noise: If True, add the noise variance ``lambda``.
            posterior_transform: An optional ``PosteriorTransform``.
            kwargs: Ignored.

        Returns:
            A ``GPyTorchPosterior`` over ``batch_shape x q x 1`` with a dense
            ``q x q`` covariance.
        """
        if output_indices is not None and list(output_indices) != [0]:
            raise UnsupportedError(f"One output only; got {output_indices=}.")
        mean, covar = self.model.mean_and_covariance(X)
        if observation_noise is True:
            covar = covar + self.model.noise_var * torch.eye(
                covar.shape[-1], dtype=covar.dtype, device=covar.device
            )
        elif observation_noise is not False:
            raise UnsupportedError("observation_noise must be True or False.")
        posterior = GPyTorchPosterior(
            MultivariateNormal(mean, to_linear_operator(covar))
        )
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior


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
