#!/usr/bin/env python3
r"""Statistics of data held elsewhere, in place of a ``NystromGP``'s training rows.

The data enter the DTC posterior only through sums over points
(:class:`~botorch_sketch.sketching.posterior.DTCStatistics`), so data too large for
one process are summarised where they live: :func:`observation_statistics`
(``NystromGP.observation_statistics``) sums a shard under the model's
transforms, kernel, noise and inducing set, the shards' sums add, and
``NystromGP.set_data_statistics`` makes the posterior that of the summarised
data (plus any training rows after them), kept as a :class:`DataSummary`. The
summary holds for the hyperparameters, transforms and inducing set it was
computed with, so these are frozen and fingerprinted (:func:`statistics_key`);
the model compares the fingerprint on every rebuild of its posterior state
(:func:`check_key`). :mod:`botorch_sketch.integrations.ray_statistics` drives
this on Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from torch import Tensor

from botorch_sketch.models.nystrom.data import transform_like_training
from botorch_sketch.models.nystrom.state import nystrom_embedding
from botorch_sketch.models.validation import check_training_data
from botorch_sketch.sketching.posterior import DTCStatistics


@dataclass
class DataSummary:
    r"""Statistics of data a model does not hold, and what they were computed with.

    Attributes:
        statistics: The unbatched statistics of the data.
        rows: How many leading rows of the model's training data they include.
        key: The fingerprint of the model when they were set
            (:func:`statistics_key`).
    """

    statistics: DTCStatistics
    rows: int
    key: dict[str, Tensor]

    @classmethod
    def of(
        cls,
        statistics: DTCStatistics,
        rows: int,
        state_dict: Mapping[str, Tensor],
        inducing_inputs: Tensor,
        like: Tensor,
    ) -> DataSummary:
        r"""The summary of ``statistics``, cast like ``like``, fingerprinted.

        Args:
            statistics: The statistics.
            rows: How many leading training rows they include.
            state_dict: The model's state dict.
            inducing_inputs: Its fixed inducing inputs (in the space of the data).
            like: A tensor of the model's dtype and device.

        Returns:
            The summary.
        """
        key = statistics_key(state_dict, inducing_inputs)
        return cls(statistics.map(lambda t: t.to(like)), rows, key)

    def map(self, fn: Callable[[Tensor], Tensor]) -> DataSummary:
        r"""The summary with ``fn`` applied to its tensors (``Module.to``)."""
        key = {k: fn(v) for k, v in self.key.items()}
        return DataSummary(self.statistics.map(fn), self.rows, key)


def statistics_key(
    state_dict: Mapping[str, Tensor], inducing_inputs: Tensor
) -> dict[str, Tensor]:
    r"""Everything the statistics depend on but the data: a detached copy.

    Args:
        state_dict: The model's state dict (hyperparameters and transforms).
        inducing_inputs: The ``m x d`` inducing inputs, in the space of the data.

    Returns:
        The fingerprint.
    """
    key = {k: v.detach().clone() for k, v in state_dict.items()}
    key["<inducing inputs>"] = inducing_inputs.detach().clone()
    return key


def changed_keys(key: Mapping[str, Tensor], now: Mapping[str, Tensor]) -> list[str]:
    r"""The entries in which two fingerprints differ.

    Args:
        key: The fingerprint the statistics were computed with.
        now: The model's fingerprint now.

    Returns:
        The names of entries changed, added or removed.
    """
    changed = [k for k in key if k not in now or not torch.equal(key[k], now[k])]
    return changed + [k for k in now if k not in key]


def summarised_rows(
    statistics: DTCStatistics, rows_included: int | None, n: int, m: int
) -> int:
    r"""Validate ``set_data_statistics``'s arguments.

    Args:
        statistics: The statistics: unbatched, of an embedding of at most ``m``
            dimensions.
        rows_included: How many leading training rows they include (None: all).
        n: The number of training rows.
        m: The size of the inducing set.

    Returns:
        The number of training rows included.
    """
    rows_included = n if rows_included is None else rows_included
    if not 0 <= rows_included <= n:
        raise InputDataError(f"rows_included must be in [0, {n}], got {rows_included}.")
    if len(statistics.batch_shape) != 0 or statistics.gram.shape[-1] > m:
        raise InputDataError(
            "statistics must be unbatched and of an embedding of at most "
            f"{m} dimensions; got gram {tuple(statistics.gram.shape)}."
        )
    return rows_included


def check_key(key: Mapping[str, Tensor], now: Mapping[str, Tensor]) -> None:
    r"""Raise ``UnsupportedError`` if the fingerprints differ.

    Args:
        key: The fingerprint the statistics were computed with.
        now: The model's fingerprint now.
    """
    changed = changed_keys(key, now)
    if changed:
        raise UnsupportedError(
            "This model holds statistics of data it does not have, computed "
            f"with other values of {', '.join(sorted(changed)[:3])}: its "
            "hyperparameters and transforms cannot change. Rebuild it (for "
            "sharded data, build_sharded_nystrom_gp) to refit."
        )


def refuse_if_summarised(summary: DataSummary | None, what: str) -> None:
    r"""Raise ``UnsupportedError`` for ``what`` on a model with data statistics.

    Args:
        summary: The model's data summary, or None.
        what: What needs the training data, for the message.
    """
    if summary is not None:
        raise UnsupportedError(
            f"{what} needs the training data, and this model holds statistics "
            "of data it does not have (set_data_statistics). Rebuild it (for "
            "sharded data, build_sharded_nystrom_gp) to refit."
        )


def observation_statistics(
    model: Model, X: Tensor, Y: Tensor, chunk_size: int | None = None
) -> DTCStatistics:
    r"""The DTC statistics of observations under a ``NystromGP``, without its data.

    The observations are transformed by the model's (eval-mode) input and
    outcome transforms and embedded with its kernel, noise level and inducing
    set, exactly as its own training data are. Statistics of disjoint
    observations add, so a data set too large for one process is summed shard by
    shard (on Ray workers: :mod:`botorch_sketch.integrations.ray_statistics`) and
    handed to ``set_data_statistics``.

    Args:
        model: A ``NystromGP`` with an inferred noise level (not a fantasy).
        X: A ``n x d`` tensor of inputs (in the space of the model's ``train_X``).
        Y: A ``n x 1`` tensor of observations.
        chunk_size: Rows per chunk; by default about 8 MB per block.

    Returns:
        The statistics, with an ``m' x m'`` ``gram`` (``m'`` the embedding
        dimension).
    """
    check_training_data(type(model).__name__, X, Y, None)
    model.eval()
    with torch.no_grad():
        inducing, noise = model.inducing_points, model.train_noise()
        embedding = nystrom_embedding(model.covar_module, inducing, noise)
        X_tf = transform_like_training(getattr(model, "input_transform", None), X)
        Y_tf, outcome_transform = Y, getattr(model, "outcome_transform", None)
        if outcome_transform is not None:
            Y_tf, _ = outcome_transform(Y, None, X=X_tf)
        residual = Y_tf.squeeze(-1) - model.mean_module(X_tf)
        noise = model.likelihood.noise.expand(residual.shape)
        return DTCStatistics.from_data(embedding, X_tf, residual, noise, chunk_size)


def refuse_fixed_noise(likelihood: Likelihood, what: str) -> None:
    r"""Raise ``UnsupportedError`` for ``what`` with a fixed-noise likelihood.

    Args:
        likelihood: The model's likelihood.
        what: The method, for the message.
    """
    if isinstance(likelihood, FixedNoiseGaussianLikelihood):
        raise UnsupportedError(
            f"{what} needs an inferred noise level (a GaussianLikelihood)."
        )
