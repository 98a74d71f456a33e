#!/usr/bin/env python3
r"""A BoTorch ``Model`` view of an online Nystrom/DTC model.

:class:`IncrementalNystromModel` exposes
:class:`~botorch_sketch.sketching.online.IncrementalNystrom` (the model of
EK-UCB [Zenati2022efficient]_ and of the contextual policies in
:mod:`botorch_sketch.bandits.contextual`) to BoTorch's acquisition functions and
optimisers, so that a contextual round with a continuous action can be solved
by ``optimize_acqf`` on a ``FixedFeatureAcquisitionFunction`` (context fixed,
action free): see :func:`~botorch_sketch.acquisition.contextual_ucb.ucb_action`.
The view holds no state of its own; the policy keeps updating the wrapped model.

References:

.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_sketch.models.single_output import NoFantasiesMixin, SingleOutputMixin
from botorch_sketch.sketching.online import IncrementalNystrom


class IncrementalNystromModel(SingleOutputMixin, NoFantasiesMixin, Model):
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
