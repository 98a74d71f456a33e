#!/usr/bin/env python3
r"""Statistics of data held elsewhere, in place of a ``NystromGP``'s training rows.

The data enter the DTC posterior only through sums over points
(:class:`~botorch_sketch.sketching.dtc.DTCStatistics`), so data too large for
one process are summarised where they live:
:meth:`DataStatisticsMixin.observation_statistics` sums a shard under the
model's transforms, kernel, noise and inducing set, the shards' sums add, and
:meth:`DataStatisticsMixin.set_data_statistics` makes the posterior that of the
summarised data (plus any training rows after them). The summary holds for
the hyperparameters, transforms and inducing set it was computed with, so these
are frozen and fingerprinted; the posterior state
(:mod:`botorch_sketch.models.nystrom.state`) checks the fingerprint on every
rebuild. :mod:`botorch_sketch.integrations.ray_statistics` drives this on Ray.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from torch import Tensor

from botorch_sketch.models.validation import check_training_data
from botorch_sketch.sketching.dtc import DTCStatistics


class DataStatisticsMixin:
    r"""The posterior of data summarised elsewhere, and the summaries of data."""

    def _init_data_statistics(self) -> None:
        # Statistics of data held elsewhere (``set_data_statistics``), which
        # include the first ``_rows_in_statistics`` rows of the training data,
        # and the hyperparameters and inducing inputs they were computed with.
        self._data_statistics: DTCStatistics | None = None
        self._rows_in_statistics = 0
        self._statistics_key: dict[str, Tensor] | None = None

    def observation_statistics(
        self, X: Tensor, Y: Tensor, chunk_size: int | None = None
    ) -> DTCStatistics:
        r"""The DTC statistics of observations under this model, without its data.

        The observations are transformed by the model's (evaluation-mode) input
        and outcome transforms and embedded with its kernel, noise level and
        inducing set, exactly as its own training data are. Statistics of
        disjoint observations add, so a data set too large for one process is
        summed shard by shard (on Ray workers:
        :mod:`botorch_sketch.integrations.ray_statistics`) and handed to
        :meth:`set_data_statistics`.

        Args:
            X: A ``n x d`` tensor of inputs (in the space of ``train_X``).
            Y: A ``n x 1`` tensor of observations.
            chunk_size: Rows per chunk; by default about 8 MB per block.

        Returns:
            The statistics, with an ``m' x m'`` ``gram`` (``m'`` the embedding
            dimension).
        """
        if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
            raise UnsupportedError(
                "observation_statistics needs an inferred noise level (a "
                "GaussianLikelihood)."
            )
        if self._extra_statistics is not None:
            raise UnsupportedError("A fantasy model has no statistics of its own.")
        check_training_data(type(self).__name__, X, Y, None)
        self.eval()
        with torch.no_grad():
            embedding = self._embedding(self.transformed_train_X, self._train_noise())
            X_tf = self._transform_like_training(X)
            Y_tf = Y
            if hasattr(self, "outcome_transform"):
                Y_tf, _ = self.outcome_transform(Y, None, X=X_tf)
            residual = Y_tf.squeeze(-1) - self.mean_module(X_tf)
            noise = self.likelihood.noise.expand(residual.shape)
            return DTCStatistics.from_data(embedding, X_tf, residual, noise, chunk_size)

    def set_data_statistics(
        self, statistics: DTCStatistics, rows_included: int | None = None
    ) -> None:
        r"""Condition on the statistics of data held elsewhere, not on ``train_X``.

        From now on the posterior is the DTC posterior of the data that
        ``statistics`` summarise, plus the training rows after the first
        ``rows_included`` (those added by ``condition_on_observations``, say). The
        training data then need only be a sample of the data, for Ax and
        acquisition functions that look at ``train_inputs``.

        The statistics must come from :meth:`observation_statistics` of a model
        with this one's hyperparameters, transforms and inducing set. These are
        frozen: the inducing set becomes fixed inputs, refitting raises
        ``UnsupportedError``, and so does the posterior if a hyperparameter or
        transform was changed afterwards (by hand or ``load_state_dict``): the
        statistics would no longer describe the data.

        Args:
            statistics: Unbatched statistics of the data.
            rows_included: How many leading rows of ``train_X`` the statistics
                already include; all of them by default.
        """
        if self._extra_statistics is not None:
            raise UnsupportedError("A fantasy model cannot take data statistics.")
        if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
            raise UnsupportedError(
                "set_data_statistics needs an inferred noise level (a "
                "GaussianLikelihood)."
            )
        n = self.train_X.shape[0]
        rows_included = n if rows_included is None else rows_included
        if not 0 <= rows_included <= n:
            raise InputDataError(
                f"rows_included must be in [0, {n}], got {rows_included}."
            )
        m = self.inducing_points.shape[0]
        if len(statistics.batch_shape) != 0 or statistics.gram.shape[-1] > m:
            raise InputDataError(
                "statistics must be unbatched and of an embedding of at most "
                f"{m} dimensions; got gram {tuple(statistics.gram.shape)}."
            )
        if self._data_statistics is not None:
            self._check_statistics_current()
        if self._rule is not None:
            # The statistics are coordinates in this inducing set's embedding.
            self._fixed_inducing = self.train_X[self.inducing_index]
            self._rule = None
            self.inducing_index = None
        like = self.train_X
        self._data_statistics = statistics.map(lambda t: t.to(like))
        self._rows_in_statistics = rows_included
        self._statistics_key = self._statistics_fingerprint()
        self._every_input_inducing = False
        self._cache = None

    def _statistics_fingerprint(self) -> dict[str, Tensor]:
        # Everything the statistics depend on but the data.
        key = {k: v.detach().clone() for k, v in self.state_dict().items()}
        key["<inducing inputs>"] = self._fixed_inducing.detach().clone()
        return key

    def _check_statistics_current(self) -> None:
        key = self._statistics_key
        now = self._statistics_fingerprint()
        changed = [
            k for k in key if k not in now or not torch.equal(key[k], now[k])
        ] + [k for k in now if k not in key]
        if changed:
            raise UnsupportedError(
                "This model holds statistics of data it does not have, computed "
                f"with other values of {', '.join(sorted(changed)[:3])}: its "
                "hyperparameters and transforms cannot change. Rebuild it (for "
                "sharded data, build_sharded_nystrom_gp) to refit."
            )

    def _refuse_if_summarised(self, what: str) -> None:
        if self._data_statistics is not None:
            raise UnsupportedError(
                f"{what} needs the training data, and this model holds statistics "
                "of data it does not have (set_data_statistics). Rebuild it (for "
                "sharded data, build_sharded_nystrom_gp) to refit."
            )
