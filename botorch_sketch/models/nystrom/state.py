#!/usr/bin/env python3
r"""The posterior state of a ``NystromGP``: embedding, weight posterior, read-out.

Everything ``posterior`` needs from the data is the Nystrom embedding of the
inducing set (:class:`~botorch_sketch.sketching.embedding.NystromEmbedding`) and
the weight posterior (:class:`~botorch_sketch.sketching.posterior.WeightPosterior`)
factorised from the data's sufficient statistics
(:class:`~botorch_sketch.sketching.posterior.DTCStatistics`), ``O(n m^2 + m^3)``
to build, and the read-out folded from the two
(:class:`~botorch_sketch.sketching.posterior.DTCReadout`). :class:`NystromState`
holds the three. The model builds one on first use and drops it on every change
of data, hyperparameters (training mode), inducing set, dtype or device, in one
method (``NystromGP._replace_state``); ``condition_on_observations`` hands its
copy an updated, not refactorised, state
(:func:`~botorch_sketch.models.nystrom.posterior.absorbed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from gpytorch.kernels import Kernel
from gpytorch.means import Mean
from torch import Tensor

from botorch_sketch.sketching.embedding import NystromEmbedding
from botorch_sketch.sketching.posterior import (
    DTCReadout,
    DTCStatistics,
    WeightPosterior,
)


@dataclass(eq=False)
class NystromState:
    r"""The embedding and weight posterior behind a ``NystromGP``'s posterior.

    Attributes:
        embedding: The Nystrom embedding of the inducing set.
        posterior: The weight posterior of the observations the model holds.
    """

    embedding: NystromEmbedding
    posterior: WeightPosterior

    @cached_property
    def readout(self) -> DTCReadout:
        r"""The read-out at test points, folded once per state."""
        with torch.no_grad():
            return DTCReadout(self.embedding, self.posterior)


def nystrom_embedding(
    kernel: Kernel, inducing_inputs: Tensor, noise: Tensor
) -> NystromEmbedding:
    r"""The embedding of ``inducing_inputs``, cut off at the smallest noise.

    Args:
        kernel: The kernel.
        inducing_inputs: A ``m x d`` tensor of (transformed) inducing inputs.
        noise: The ``n`` per-observation noise variances, which tell the
            embedding which small directions the data still see.

    Returns:
        The embedding.
    """
    return NystromEmbedding(kernel, inducing_inputs, noise=noise.detach().min())


def training_statistics(
    embedding: NystromEmbedding,
    X: Tensor,
    targets: Tensor,
    mean_module: Mean,
    noise: Tensor,
    skip_rows: int = 0,
    before: DTCStatistics | None = None,
    after: DTCStatistics | None = None,
) -> DTCStatistics:
    r"""The statistics of the training rows after the first ``skip_rows``.

    Args:
        embedding: The embedding.
        X: The ``n x d`` transformed training inputs.
        targets: The ``n`` (outcome-transformed) training targets.
        mean_module: The prior mean.
        noise: The ``n`` noise variances.
        skip_rows: Leading rows summarised elsewhere.
        before: Statistics to add before the rows' (of data held elsewhere).
        after: Statistics to add after them (of fantasy observations).

    Returns:
        The statistics (with gradients if enabled: the fitting objective's).
    """
    k = skip_rows
    residual = targets[k:] - mean_module(X[k:])
    stats = DTCStatistics.from_data(embedding, X[k:], residual, noise[k:])
    if before is not None:
        stats = before + stats
    if after is not None:
        stats = stats + after
    return stats
