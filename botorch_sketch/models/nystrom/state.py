#!/usr/bin/env python3
r"""The posterior state of a ``NystromGP``: embedding, statistics, weight posterior.

Everything ``posterior`` needs from the data is the Nystrom embedding of the
inducing set (:class:`~botorch_sketch.sketching.nystrom.NystromEmbedding`) and the
weight posterior (:class:`~botorch_sketch.sketching.weight_posterior.WeightPosterior`)
built from the data's sufficient statistics
(:class:`~botorch_sketch.sketching.dtc.DTCStatistics`), ``O(n m^2 + m^3)`` to
build. They are built on first use and cached in ``_cache``, which every change
of data, hyperparameters (training mode), inducing set, dtype or device sets to
None; ``condition_on_observations`` hands its copy an updated, not refactorised,
state. The statistics are the training rows' plus, where set, those of data held
elsewhere (:mod:`botorch_sketch.models.nystrom.data_statistics`) and of fantasy
observations (``_extra_statistics``, which make a batched fantasy model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from botorch_sketch.sketching.dtc import DTCReadout, DTCStatistics, posterior_variance
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.weight_posterior import WeightPosterior


class PosteriorStateMixin:
    r"""The cached embedding and weight posterior behind the DTC posterior."""

    def _init_posterior_state(self) -> None:
        # Statistics of fantasy observations that are not part of the data (set
        # only on batched fantasy models).
        self._extra_statistics: DTCStatistics | None = None
        # The embedding and weight posterior (updated, not refactorised, once
        # conditioned).
        self._cache: tuple[NystromEmbedding, WeightPosterior] | None = None
        # The readout folded from ``_cache``, with the cache it was folded from.
        self._readout: tuple[tuple, DTCReadout] | None = None

    @property
    def batch_shape(self) -> torch.Size:
        r"""Empty, except for fantasy models (the fantasy batch shape)."""
        if self._extra_statistics is not None:
            return self._extra_statistics.batch_shape
        return torch.Size()

    def posterior_state(self) -> tuple[NystromEmbedding, WeightPosterior]:
        r"""The Nystrom embedding and the weight posterior behind ``posterior``.

        Built on first use after every change of data, hyperparameters or
        inducing set and cached; the pathwise sampler and the bandit-style
        read-outs use it directly.
        """
        return self._posterior_state()

    def _embedding(self, transformed_X: Tensor, noise: Tensor) -> NystromEmbedding:
        # The noise tells the embedding which small directions the data still see.
        return NystromEmbedding(
            self.covar_module,
            self._inducing_inputs(transformed_X),
            noise=noise.detach().min(),
        )

    def _embedding_and_statistics(self) -> tuple[NystromEmbedding, DTCStatistics]:
        X = self.transformed_train_X
        noise = self._train_noise()
        embedding = self._embedding(X, noise)
        k = 0
        if self._data_statistics is not None:
            self._check_statistics_current()
            k = self._rows_in_statistics
        residual = self.train_targets[k:] - self.mean_module(X[k:])
        stats = DTCStatistics.from_data(embedding, X[k:], residual, noise[k:])
        if self._data_statistics is not None:
            stats = self._data_statistics + stats
        if self._extra_statistics is not None:
            stats = stats + self._extra_statistics
        return embedding, stats

    def _posterior_state(
        self,
    ) -> tuple[NystromEmbedding, WeightPosterior]:
        if self._cache is None:
            with torch.no_grad():
                embedding, stats = self._embedding_and_statistics()
                self._cache = (embedding, WeightPosterior(stats))
        return self._cache

    def _posterior_readout(self) -> DTCReadout:
        # Folded once per posterior state: every ``_cache`` change (refit, new
        # data, conditioning) makes a new tuple, which a held reference tells.
        cache = self._posterior_state()
        if self._readout is None or self._readout[0] is not cache:
            with torch.no_grad():
                self._readout = (cache, DTCReadout(*cache))
        return self._readout[1]

    def effective_dimension(self) -> Tensor:
        r"""BKB's estimate ``sum_i var(x_i) / lambda_i`` of the effective dimension.

        The DTC posterior variance at each training input over its noise
        variance (the ridge leverage score), summed over the training data with
        repeats, in the model's (outcome-transformed) units, where it is
        scale-free. Fantasy observations are not counted.

        Returns:
            A scalar tensor.
        """
        self._refuse_if_summarised("effective_dimension")
        with torch.no_grad():
            embedding, posterior = self._posterior_state()
            var = posterior_variance(embedding, posterior, self.transformed_train_X)
            return (var / self._train_noise()).sum(-1)

    def train(self, mode: bool = True) -> Any:
        r"""Set training mode; entering it drops the posterior cache.

        Args:
            mode: True for training mode.

        Returns:
            The model.
        """
        if mode:
            self._cache = None
        return super().train(mode)

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        # The statistics move with the model (the data mixin drops the cache).
        super()._apply(fn, *args, **kwargs)
        for name in ("_extra_statistics", "_data_statistics"):
            stats = getattr(self, name, None)
            if stats is not None:
                setattr(self, name, stats.map(fn))
        key = getattr(self, "_statistics_key", None)
        if key is not None:
            self._statistics_key = {k: fn(v) for k, v in key.items()}
        return self
