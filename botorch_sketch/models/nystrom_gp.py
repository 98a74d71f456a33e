#!/usr/bin/env python3
r"""A DTC/Nystrom Gaussian process with an adaptively chosen inducing set.

``NystromGP`` is a drop-in replacement for ``SingleTaskGP`` whose cost grows with
the size ``m`` of its inducing set rather than with the number ``n`` of
observations: ``O(n m^2 + m^3)`` to fit, ``O(q m^2 + q^2 m)`` per posterior over
``q`` points. The inducing set is a subset of the distinct training inputs chosen
by a rule (:mod:`botorch_sketch.sketching.selection`), by default BKB's
posterior-variance resampling [Calandriello2019bkb]_, so that its size follows
the effective dimension of the data. The posterior is DTC with the exact prior
variance [Quinonero2005unifying]_, and hyperparameters are fitted on Titsias'
collapsed bound [Titsias2009variational]_.

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
.. [Quinonero2005unifying]
    J. Quinonero-Candela, C. E. Rasmussen. A unifying view of sparse approximate
    Gaussian process regression. JMLR 2005.
.. [Titsias2009variational]
    M. Titsias. Variational learning of inducing variables in sparse Gaussian
    processes. AISTATS 2009.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.exceptions.warnings import BotorchWarning
from botorch.fit import _fit_fallback
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import FantasizeMixin
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_gaussian_likelihood_with_lognormal_prior,
)
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import ConstantMean, Mean
from gpytorch.mlls import ExactMarginalLogLikelihood, MarginalLogLikelihood
from gpytorch.models import GP
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_sketch.models.validation import (
    check_fit_subset_size,
    check_inducing_not_empty,
    check_new_observations,
    check_observation_noise,
    check_test_inputs,
    check_training_data,
    check_unbatched_kernel,
    floor_fixed_noise,
    reject_unsupported_options,
)
from botorch_sketch.sketching.dtc import (
    DTCReadout,
    DTCStatistics,
    posterior_variance,
)
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.rule import Candidates
from botorch_sketch.sketching.selection import (
    FixedSelector,
    InducingSelector,
    RidgeLeverageSampler,
    distinct_rows,
)
from botorch_sketch.sketching.weight_posterior import WeightPosterior

_DATA_ATTRIBUTES = ("train_X", "train_Y", "train_Yvar", "train_targets")


class ExactRegimeWarning(BotorchWarning):
    r"""The inducing set covers most of the data, so the model is the exact GP.

    At that size a sketch costs more than the exact model per likelihood
    evaluation (``O(n m^2)`` with ``m`` near ``n`` against the exact GP's
    ``O(n^3 / 3)`` Cholesky), so :class:`NystromGP` fits the exact marginal
    likelihood and uses every distinct training input as an inducing point.
    """


class NystromGP(GPyTorchModel, GP, FantasizeMixin):
    r"""A single-output GP with a DTC/Nystrom posterior and an adaptive inducing set.

    The inducing set is chosen when the model is built, with the hyperparameters
    it is built with. ``fit_gpytorch_mll(ExactMarginalLogLikelihood(...))`` then
    alternates: fit the hyperparameters on Titsias' bound with the set fixed,
    re-run the rule at the new hyperparameters, and fit again (``fit_rounds``
    fits in all; rules that do not depend on the hyperparameters get one fit).
    Call :meth:`select_inducing_points` to re-run the rule by hand.

    ``condition_on_observations`` and ``fantasize`` keep the inducing set fixed
    and absorb the new observations into the weight posterior by the Woodbury
    step of :class:`~botorch_sketch.sketching.weight_posterior.WeightPosterior`
    (the bandits' online model), ``O(n' m^2)`` for ``n' <= m`` and batched over
    fantasies, so ``qKnowledgeGradient`` and online use work without a new ``m x m``
    factorisation. Note that DTC is not the
    posterior of a single GP prior, so a fantasy model is the DTC model of the
    augmented data, not the DTC predictive conditioned on the fantasy.

    With the inducing set equal to all distinct training inputs, the posterior
    and the fitting objective are those of ``SingleTaskGP``.

    A ``n x t`` ``train_Y`` (``t > 1``) builds a
    :class:`~botorch_sketch.models.nystrom_outcomes.MultiOutputNystromGP`, the
    counterpart of a ``SingleTaskGP`` of ``t`` outputs: independent outcomes, each
    with its own hyperparameters and its own inducing set (one single-output
    model per outcome; see that module for why the sets are not shared).

    Example:
        >>> model = NystromGP(train_X, train_Y)
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> acqf = LogExpectedImprovement(model, best_f=train_Y.max())
    """

    _num_outputs = 1
    #: Hyperparameter fits in ``fit_gpytorch_mll``, with the inducing rule re-run
    #: between them (only for rules that depend on the hyperparameters).
    fit_rounds: int = 2
    #: Fit on Titsias' collapsed bound (True) or the DTC marginal likelihood.
    titsias: bool = True
    #: Largest inducing set chosen at construction by a rule that depends on the
    #: hyperparameters. At that point they are the priors' (the noise prior's mode
    #: is small, so leverage scores are large); the set only has to carry the
    #: first fitting round, and is re-chosen after it.
    initial_max_inducing: int | None = 256
    #: Fit the hyperparameters, and choose the inducing points, on a fixed random
    #: subset of this many training points when there are more (None: all of
    #: them; also a constructor argument). The posterior still uses every point;
    #: at n = 10^6 this turns minutes into seconds, as hyperparameters and a
    #: well-spread inducing set are determined by a few thousand points.
    fit_subset_size: int | None = None
    #: With ``fit_subset_size`` None and an inferred noise level, fit on a random
    #: subset of this many points when there are more (None: never). Measured on
    #: loop-like Hartmann-6 data at n = 2000 (benchmarks ``iteration``): 7x faster
    #: than the exact GP's fit where fitting on all points was 1.7x slower than
    #: it, for 0.04 nats of held-out NLL.
    automatic_fit_subset_size: int | None = 1000
    #: Behave like the exact GP when the rule's inducing set holds at least this
    #: fraction of the distinct fitting inputs (None: never). At ``m = n / 2`` a
    #: Titsias evaluation already costs more than the exact likelihood's
    #: Cholesky, and the sketch would save nothing: the model then fits the exact
    #: marginal likelihood once (no second round), re-runs the rule once at the
    #: fitted hyperparameters, and keeps every input if the set still covers that
    #: fraction (warning :class:`ExactRegimeWarning`; see :attr:`is_exact`).
    exact_fraction: float | None = 0.5
    #: Fit the exact marginal likelihood once, then choose the inducing set once
    #: at the fitted hyperparameters, whenever the fitting data have at most this
    #: many points (None: only in the exact regime). Below about 600 points one
    #: exact fit costs less than two Titsias rounds (``../shared/notes/
    #: bo-iteration-profile.md``: 2.5 s against 3.4 s at n = 350, 1.9 s against
    #: 11.7 s on a loop's own data at n = 400); the posterior is still the sketch
    #: unless the set covers ``exact_fraction`` of the inputs.
    exact_fit_size: int | None = 600

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        train_Yvar: Tensor | None = None,
        inducing: InducingSelector | Tensor | None = None,
        covar_module: Kernel | None = None,
        mean_module: Mean | None = None,
        likelihood: Likelihood | None = None,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        input_transform: InputTransform | None = None,
        fit_subset_size: int | None = None,
    ) -> None:
        r"""Build the model and choose its inducing set.

        Args:
            train_X: A ``n x d`` tensor of training inputs.
            train_Y: A ``n x 1`` tensor of training observations (``n x t`` builds
                a ``MultiOutputNystromGP``).
            train_Yvar: An optional ``n x 1`` tensor of observed noise variances; if
                given, the noise is fixed to it (``FixedNoiseGaussianLikelihood``).
            inducing: How to choose the inducing set: an
                :class:`~botorch_sketch.sketching.selection.InducingSelector`, a
                ``m x d`` tensor of fixed inducing inputs (in the space of
                ``train_X``), or None for ``RidgeLeverageSampler()``.
            covar_module: The kernel; defaults to BoTorch's RBF kernel with a
                dimension-scaled lengthscale prior, as in ``SingleTaskGP``. It must
                have no batch dimensions.
            mean_module: The prior mean; defaults to ``ConstantMean()``.
            likelihood: A ``GaussianLikelihood`` or ``FixedNoiseGaussianLikelihood``;
                defaults as in ``SingleTaskGP``.
            outcome_transform: An outcome transform, applied to the data at
                construction and inverted on posteriors. Defaults to
                ``Standardize(m=1)``; None for no transform.
            input_transform: An input transform, applied to training and test
                inputs (e.g. ``Normalize(d)``).
            fit_subset_size: Sets :attr:`fit_subset_size` for this model.
        """
        if (
            type(self) is NystromGP
            and isinstance(train_Y, Tensor)
            and train_Y.dim() == 2
            and train_Y.shape[-1] > 1
        ):
            # Several outcomes: the instance becomes their model. (Done here,
            # not in ``__new__``, so that the signature Ax inspects is this one.)
            from botorch_sketch.models.nystrom_outcomes import MultiOutputNystromGP

            self.__class__ = MultiOutputNystromGP
            MultiOutputNystromGP.__init__(
                self,
                train_X,
                train_Y,
                train_Yvar=train_Yvar,
                inducing=inducing,
                covar_module=covar_module,
                mean_module=mean_module,
                likelihood=likelihood,
                outcome_transform=outcome_transform,
                input_transform=input_transform,
                fit_subset_size=fit_subset_size,
            )
            return
        check_training_data(type(self).__name__, train_X, train_Y, train_Yvar)
        check_fit_subset_size(fit_subset_size)
        with torch.no_grad():
            transformed_X = self.transform_inputs(
                X=train_X, input_transform=input_transform
            )
        self._validate_tensor_args(X=transformed_X, Y=train_Y, Yvar=train_Yvar)
        if outcome_transform == DEFAULT:
            outcome_transform = Standardize(m=1)
        if outcome_transform is not None:
            outcome_transform.train()
            outcome_transform(train_Y, train_Yvar, X=transformed_X)
            outcome_transform.eval()
        super().__init__()
        d = transformed_X.shape[-1]
        if likelihood is None:
            if train_Yvar is None:
                likelihood = get_gaussian_likelihood_with_lognormal_prior()
            else:
                likelihood = FixedNoiseGaussianLikelihood(
                    noise=train_Yvar.squeeze(-1).clone()
                )
        if not isinstance(
            likelihood, (GaussianLikelihood, FixedNoiseGaussianLikelihood)
        ):
            raise UnsupportedError(
                f"{type(self).__name__} supports GaussianLikelihood and "
                f"FixedNoiseGaussianLikelihood, got {type(likelihood).__name__}."
            )
        if (train_Yvar is not None) != isinstance(
            likelihood, FixedNoiseGaussianLikelihood
        ):
            raise UnsupportedError(
                "Pass train_Yvar together with a FixedNoiseGaussianLikelihood (or no "
                "likelihood), and neither for an inferred noise level."
            )
        self.likelihood = likelihood
        self.mean_module = ConstantMean() if mean_module is None else mean_module
        self.covar_module = (
            get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
            if covar_module is None
            else covar_module
        )
        check_unbatched_kernel(type(self).__name__, self.covar_module)
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        if input_transform is not None:
            self.input_transform = input_transform
        # Data are plain attributes, not buffers: a state_dict then carries no
        # data-sized tensor and loads into a model on other data (Ax's
        # cross-validation does that).
        self.train_X = train_X
        self.train_Y = train_Y
        self.train_Yvar = train_Yvar
        self._fixed_inducing: Tensor | None = None
        self._rule: InducingSelector | None = None
        if isinstance(inducing, Tensor):
            self._fixed_inducing = self._check_fixed_inducing(inducing, train_X)
        elif inducing is None or isinstance(inducing, InducingSelector):
            self._rule = RidgeLeverageSampler() if inducing is None else inducing
        else:
            raise InputDataError(
                "inducing must be an InducingSelector, a tensor of inducing inputs, "
                f"or None; got {type(inducing).__name__}."
            )
        self._inducing_index: Tensor | None = None
        # The first choice waits until a posterior or a fit needs a set: a fit of
        # at most ``exact_fit_size`` points never does (it fits the exact
        # likelihood, then chooses once), and at n = 600 that first choice at
        # the default hyperparameters cost a tenth of the fit.
        self._initial_selection_pending = False
        # Whether ``inducing_index`` holds every distinct training input (set by
        # the rule's choice): the DTC posterior is then the exact GP's.
        self._every_input_inducing = False
        self._inducing_fraction = 0.0
        # Statistics of fantasy observations that are not part of the data (set
        # only on batched fantasy models).
        self._extra_statistics: DTCStatistics | None = None
        # The embedding and weight posterior (updated, not refactorised, once
        # conditioned).
        self._cache: tuple[NystromEmbedding, WeightPosterior] | None = None
        # The readout folded from ``_cache``, with the cache it was folded from.
        self._readout: tuple[tuple, DTCReadout] | None = None
        # Statistics of data held elsewhere (``set_data_statistics``), which
        # include the first ``_rows_in_statistics`` rows of the training data,
        # and the hyperparameters and inducing inputs they were computed with.
        self._data_statistics: DTCStatistics | None = None
        self._rows_in_statistics = 0
        self._statistics_key: dict[str, Tensor] | None = None
        self.to(train_X)
        self._retransform_targets()
        if fit_subset_size is not None:
            self.fit_subset_size = fit_subset_size
        self._initial_selection_pending = True

    # ------------------------------------------------------------------ data

    @staticmethod
    def _check_fixed_inducing(inducing: Tensor, train_X: Tensor) -> Tensor:
        if inducing.dim() != 2 or inducing.shape[-1] != train_X.shape[-1]:
            raise InputDataError(
                f"Inducing inputs must have shape m x {train_X.shape[-1]}, got "
                f"{tuple(inducing.shape)}."
            )
        if not bool(torch.isfinite(inducing).all()):
            raise InputDataError("Inducing inputs contain NaN or infinite values.")
        check_inducing_not_empty(inducing)
        return inducing.to(train_X)

    def _transform_like_training(self, X: Tensor) -> Tensor:
        if hasattr(self, "input_transform"):
            return self.input_transform.preprocess_transform(X)
        return X

    @property
    def transformed_train_X(self) -> Tensor:
        r"""The ``n x d`` training inputs as the kernel sees them."""
        return self._transform_like_training(self.train_X)

    def train_noise(self) -> Tensor:
        r"""The ``n`` per-observation noise variances, in outcome-transformed units."""
        return self._train_noise()

    def posterior_state(self) -> tuple[NystromEmbedding, WeightPosterior]:
        r"""The Nystrom embedding and the weight posterior behind ``posterior``.

        Built on first use after every change of data, hyperparameters or
        inducing set and cached; the pathwise sampler and the bandit-style
        read-outs use it directly.
        """
        return self._posterior_state()

    def _retransform_targets(self) -> None:
        # The model keeps raw data and the outcome transform's image of it, so a
        # loaded state_dict (with other transform statistics) stays consistent.
        Y, Yvar = self.train_Y, self.train_Yvar
        if hasattr(self, "outcome_transform"):
            self.outcome_transform.eval()
            with torch.no_grad():
                Y, Yvar = self.outcome_transform(
                    Y, Yvar, X=self._transform_like_training(self.train_X)
                )
        self.train_targets = Y.squeeze(-1)
        if Yvar is not None:
            self.likelihood.noise = floor_fixed_noise(Yvar.squeeze(-1))

    @property
    def train_inputs(self) -> tuple[Tensor]:
        r"""The input-transformed training inputs, as ``ExactGP`` exposes them."""
        return (self._transform_like_training(self.train_X),)

    @property
    def batch_shape(self) -> torch.Size:
        r"""Empty, except for fantasy models (the fantasy batch shape)."""
        if self._extra_statistics is not None:
            return self._extra_statistics.batch_shape
        return torch.Size()

    @property
    def inducing_points(self) -> Tensor:
        r"""The ``m x d`` (input-transformed) inducing inputs."""
        X = self._transform_like_training(self.train_X)
        return self._inducing_inputs(X)

    @property
    def inducing_index(self) -> Tensor | None:
        r"""Training rows of the inducing inputs (None for given inducing inputs).

        The rule's first choice is made here, at the current hyperparameters and
        of at most ``initial_max_inducing`` points, when nothing has chosen a set
        yet.
        """
        if self._initial_selection_pending:
            self.select_inducing_points(max_size=self.initial_max_inducing)
        return self._inducing_index

    @inducing_index.setter
    def inducing_index(self, value: Tensor | None) -> None:
        self._initial_selection_pending = False
        self._inducing_index = value

    def _inducing_inputs(self, transformed_X: Tensor) -> Tensor:
        if self._fixed_inducing is not None:
            return self._transform_like_training(self._fixed_inducing)
        return transformed_X[self.inducing_index]

    def _train_noise(self) -> Tensor:
        n = self.train_X.shape[0]
        return self.likelihood.noise.expand(n)

    # ------------------------------------------------------------- inducing

    def select_inducing_points(self, max_size: int | None = None) -> None:
        r"""Run the inducing rule at the current hyperparameters.

        The rule sees the distinct training inputs, their multiplicities and the
        per-observation noise; adaptive rules start from the current set. A model
        with fixed inducing inputs keeps them.

        Args:
            max_size: Keep at most this many of the rule's picks (its first ones:
                rules list their picks most important first, or in random order).
                Applies only to rules that depend on the hyperparameters.
        """
        if self._extra_statistics is not None:
            raise UnsupportedError(
                "A fantasy model keeps the inducing set it was conditioned with."
            )
        self._initial_selection_pending = False
        if isinstance(self._rule, FixedSelector):
            # Its indices are row numbers of the data, not positions among the
            # distinct inputs of the fitting subset that other rules choose from.
            self.inducing_index = self._rule.training_rows(self.train_X)
            self._cache = None
            return
        if self._rule is not None:
            with torch.no_grad():
                # With ``fit_subset_size`` the rule chooses among the fitting
                # subset's inputs: its cost is then independent of n.
                rows = self._subset_rows()
                X = self._transform_like_training(self.train_X[rows])
                first, inverse, counts = distinct_rows(X)
                precision = torch.zeros(
                    first.shape[0], dtype=X.dtype, device=X.device
                ).index_add(0, inverse, self._train_noise()[rows].reciprocal())
                current = None
                if self._inducing_index is not None:
                    position = torch.full_like(self.train_X[:, 0], -1, dtype=torch.long)
                    position[rows] = torch.arange(rows.numel(), device=rows.device)
                    inside = position[self._inducing_index]
                    current = inverse[inside[inside >= 0]].unique()
                candidates = Candidates(
                    X=X[first],
                    kernel=self.covar_module,
                    noise=counts.to(X) / precision,
                    counts=counts,
                )
                chosen = self._rule.select(candidates, current=current)
                if max_size is not None and self._rule.depends_on_hyperparameters:
                    chosen = chosen[:max_size]
                self.inducing_index = rows[first[chosen]]
                self._every_input_inducing = bool(
                    rows.numel() == self.train_X.shape[0]
                    and chosen.numel() == first.numel()
                )
                self._inducing_fraction = chosen.numel() / first.numel()
        self._cache = None

    @property
    def inducing_rule(self) -> InducingSelector | None:
        r"""The rule choosing the inducing set (None for fixed inducing inputs)."""
        return self._rule

    @property
    def is_exact(self) -> bool:
        r"""Whether every distinct training input is inducing (the exact GP)."""
        return self._every_input_inducing and self._extra_statistics is None

    def add_inducing_points(self, rows: Tensor) -> None:
        r"""Add training observations' inputs to the inducing set.

        The weight posterior is recomputed from the data on next use
        (``O(n m^2)``); the hyperparameters stay as they are.

        Args:
            rows: A 1-d long tensor of row indices into ``train_X``.
        """
        if self._rule is None or self.inducing_index is None:
            raise UnsupportedError(
                "add_inducing_points needs a model whose inducing set is chosen "
                "by a rule (not fixed inducing inputs)."
            )
        if self._extra_statistics is not None:
            raise UnsupportedError(
                "A fantasy model keeps the inducing set it was conditioned with."
            )
        rows = torch.as_tensor(rows, device=self.train_X.device).reshape(-1)
        n = self.train_X.shape[0]
        if rows.dtype != torch.long or bool(((rows < 0) | (rows >= n)).any()):
            raise InputDataError(
                f"rows must be long indices into the {n} training rows; got {rows}."
            )
        index = torch.cat([self.inducing_index, rows])
        # One row per distinct input, the current set's first.
        first, _, _ = distinct_rows(self._transform_like_training(self.train_X)[index])
        self.inducing_index = index[first.sort().values]
        self._every_input_inducing = False
        self._cache = None

    def log_marginal_likelihood(self) -> Tensor:
        r"""The fitting objective at the current hyperparameters, without priors.

        Titsias' bound (or the DTC marginal likelihood, ``titsias = False``) of
        every observation the posterior holds, conditioned ones included, in the
        model's (outcome-transformed) units; not normalised by ``n``.

        Returns:
            A scalar tensor (``batch_shape`` for fantasy models).
        """
        with torch.no_grad():
            _, state = self._posterior_state()
            return state.log_marginal_likelihood(titsias=self.titsias)

    def _use_every_input(self) -> None:
        # The exact regime: every distinct training input is inducing.
        X = self._transform_like_training(self.train_X)
        first, _, _ = distinct_rows(X)
        self.inducing_index = first
        self._every_input_inducing = True
        self._cache = None

    def _covers_most(self) -> bool:
        # Whether the rule's last choice holds ``exact_fraction`` of the inputs.
        return (
            self.exact_fraction is not None
            and self._rule is not None
            and self._rule.depends_on_hyperparameters
            and self._inducing_fraction >= self.exact_fraction
        )

    def _fit_subset_limit(self) -> int | None:
        # ``fit_subset_size`` if set; else the automatic size, which fixed noise
        # (whose subset would need its own noise) does not take.
        if self.fit_subset_size is not None:
            return self.fit_subset_size
        if self.train_Yvar is None:
            return self.automatic_fit_subset_size
        return None

    def _subset_rows(self) -> Tensor:
        # The fixed random subset of ``fit_subset_size`` rows (all rows if unset).
        n = self.train_X.shape[0]
        check_fit_subset_size(self.fit_subset_size)  # also set after __init__
        size = self._fit_subset_limit()
        if size is None or n <= size:
            return torch.arange(n, device=self.train_X.device)
        g = torch.Generator().manual_seed(0)
        return torch.randperm(n, generator=g)[:size].to(self.train_X.device)

    # --------------------------------------------------------------- algebra

    def _embedding(self, transformed_X: Tensor, noise: Tensor) -> NystromEmbedding:
        # The noise tells the embedding which small directions the data still see.
        return NystromEmbedding(
            self.covar_module,
            self._inducing_inputs(transformed_X),
            noise=noise.detach().min(),
        )

    def _embedding_and_statistics(self) -> tuple[NystromEmbedding, DTCStatistics]:
        X = self._transform_like_training(self.train_X)
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

    # ------------------------------------------------- statistics held elsewhere

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
            train_X = self._transform_like_training(self.train_X)
            embedding = self._embedding(train_X, self._train_noise())
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
        self._data_statistics = DTCStatistics(
            *(getattr(statistics, f).to(like) for f in statistics.__dataclass_fields__)
        )
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

    def _fitting_subset(self, size: int) -> NystromGP:
        # A model on ``size`` random training points that shares this model's
        # kernel, mean and likelihood (fitting it fits them), with inputs and
        # targets already transformed by this model's transforms, which are
        # neither refitted nor learned on the subset.
        if self.train_Yvar is not None:
            raise UnsupportedError(
                "fit_subset_size needs an inferred noise level; with train_Yvar "
                "set fit_subset_size = None."
            )
        rows = self._subset_rows()
        inducing = self._rule
        if self._fixed_inducing is not None or isinstance(inducing, FixedSelector):
            # Fixed rows number this model's data, not the subset's: pass inputs.
            inducing = self.inducing_points
        subset = NystromGP(
            self._transform_like_training(self.train_X[rows]),
            self.train_targets[rows].unsqueeze(-1),
            inducing=inducing,
            covar_module=self.covar_module,
            mean_module=self.mean_module,
            likelihood=self.likelihood,
            outcome_transform=None,
        )
        subset.fit_rounds = self.fit_rounds
        subset.titsias = self.titsias
        return subset

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
            X = self._transform_like_training(self.train_X)
            var = posterior_variance(embedding, posterior, X)
            return (var / self._train_noise()).sum(-1)

    def compute_custom_loss(
        self, mll: MarginalLogLikelihood | None = None, **kwargs: Any
    ) -> Tensor:
        r"""The negative objective per data point, as ``ExactMarginalLogLikelihood``.

        BoTorch's loss closure calls this instead of ``mll(model(X), y)``, so
        ``fit_gpytorch_mll`` never builds an ``n x n`` matrix. The objective is
        Titsias' bound (or the DTC marginal likelihood, ``titsias = False``) plus
        the log densities of the model's priors, divided by ``n``.

        Args:
            mll: The marginal log likelihood object (unused beyond the interface).
            kwargs: Ignored.

        Returns:
            A scalar loss.
        """
        self._refuse_if_summarised("Fitting")
        if self.is_exact:
            # Titsias' bound with every input inducing is the exact marginal
            # likelihood; gpytorch's one Cholesky costs a third of the DTC
            # algebra at m = n.
            X = self._transform_like_training(self.train_X)
            prior = MultivariateNormal(self.mean_module(X), self.covar_module(X))
            value = self.likelihood(prior).log_prob(self.train_targets)
        else:
            embedding, stats = self._embedding_and_statistics()
            value = WeightPosterior(stats).log_marginal_likelihood(titsias=self.titsias)
        for _, module, prior, closure, _ in self.named_priors():
            value = value + prior.log_prob(closure(module)).sum()
        return -value / self.train_X.shape[0]

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit hyperparameters, alternating with the inducing rule.

        Called by ``fit_gpytorch_mll``. Each round is BoTorch's own fitting routine
        (L-BFGS-B with retries) on :meth:`compute_custom_loss`.

        Args:
            mll: The marginal log likelihood whose model is ``self``.
            closure: Forward-backward closure, passed to BoTorch's fitting routine.
            closure_kwargs: Passed to BoTorch's fitting routine.
            optimizer_kwargs: Passed to BoTorch's fitting routine.
            kwargs: Passed to BoTorch's fitting routine (e.g. ``optimizer``).

        Returns:
            The fitted ``mll``, in eval mode on success.
        """
        if self._extra_statistics is not None:
            raise UnsupportedError("A fantasy model cannot be refitted.")
        self._refuse_if_summarised("Fitting")
        size = self._fit_subset_limit()
        if size is not None and self.train_X.shape[0] > size:
            subset = self._fitting_subset(size)
            _ = subset.custom_fit(
                ExactMarginalLogLikelihood(subset.likelihood, subset),
                optimizer_kwargs=optimizer_kwargs,
                **kwargs,
            )
            # The hyperparameters are shared modules: re-choose the inducing set on
            # all the data at the fitted values.
            self.select_inducing_points()
            self._cache = None
            return mll.eval()
        small = (
            self.exact_fit_size is not None
            and self._rule is not None
            and self._rule.depends_on_hyperparameters
            and self.train_X.shape[0] <= self.exact_fit_size
        )
        if not small:
            _ = self.inducing_index  # the first choice, if none was made yet
        if small or self._covers_most():
            return self._fit_exact(
                mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
            )
        adaptive = self._rule is not None and self._rule.depends_on_hyperparameters
        rounds = max(1, self.fit_rounds) if adaptive else 1
        for i in range(rounds):
            if i > 0:
                self.select_inducing_points()
            mll = self._fit_round(
                mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
            )
        self._cache = None
        return mll

    @staticmethod
    def _fit_round(
        mll: MarginalLogLikelihood,
        closure: Callable | None,
        closure_kwargs: dict[str, Any] | None,
        optimizer_kwargs: dict[str, Any] | None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        # ``_fit_fallback`` is what ``fit_gpytorch_mll`` runs for models without
        # ``custom_fit``; botorch is pinned, and this keeps its retry policy.
        return _fit_fallback(
            mll=mll,
            closure=closure,
            closure_kwargs=closure_kwargs,
            optimizer_kwargs=optimizer_kwargs,
            **kwargs,
        )

    def _fit_exact(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None,
        closure_kwargs: dict[str, Any] | None,
        optimizer_kwargs: dict[str, Any] | None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        # Small data, or the rule's set covers most of them: fit the exact
        # likelihood (the best hyperparameters any inducing set could give), then
        # choose the set once at them. No second round: the hyperparameters are
        # already those of the model the sketch approximates.
        self._use_every_input()
        mll = self._fit_round(mll, closure, closure_kwargs, optimizer_kwargs, **kwargs)
        self.select_inducing_points()
        if self._covers_most():
            self._use_every_input()
            warnings.warn(
                f"The inducing set would hold {self._inducing_fraction:.0%} of the "
                f"{self.inducing_index.numel()} distinct inputs (exact_fraction="
                f"{self.exact_fraction}); {type(self).__name__} is the exact GP "
                "here. It becomes a sketch once the data outgrow the effective "
                "dimension.",
                ExactRegimeWarning,
                stacklevel=4,
            )
        self._cache = None
        return mll

    # ------------------------------------------------------------- posterior

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Callable | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior | TransformedPosterior:
        r"""The DTC posterior at ``X``.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs.
            output_indices: None or ``[0]`` (the model has one output).
            observation_noise: If True, add the likelihood's noise (for fixed noise,
                the mean training noise, as BoTorch's ``fantasize`` does); if a
                ``batch_shape x q x 1`` tensor, add it (outcome-transformed units).
            posterior_transform: An optional ``PosteriorTransform``.
            kwargs: Ignored.

        Returns:
            A ``GPyTorchPosterior`` over ``broadcast(batch_shape, model.batch_shape)
            x q x 1`` with a dense ``q x q`` covariance.
        """
        if output_indices is not None and list(output_indices) != [0]:
            raise UnsupportedError(
                f"{type(self).__name__} has one output; got {output_indices=}."
            )
        self.eval()
        check_test_inputs(X, self.train_X.shape[-1])
        X = self.transform_inputs(X)
        readout = self._posterior_readout()
        delta, covar = readout(X, self.covar_module(X).to_dense())
        mean = self.mean_module(X) + delta
        # Fantasies share a covariance (it does not depend on the outcomes): the
        # expansion over them is a view.
        shape = torch.broadcast_shapes(mean.shape, covar.shape[:-1])
        mean = mean.expand(shape)
        covar = covar.expand(shape + covar.shape[-1:])
        noise = self._observation_noise(observation_noise, covar)
        if noise is not None:
            covar = covar + torch.diag_embed(noise)
        # A linear operator, as an exact GP's posterior has: torch's own MVN would
        # factorise the dense matrix eagerly and fail on a singular (but PSD)
        # covariance, where gpytorch's sampling adds jitter as needed.
        distribution = MultivariateNormal(mean, to_linear_operator(covar))
        posterior = GPyTorchPosterior(distribution=distribution)
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def _observation_noise(
        self, observation_noise: bool | Tensor, covar: Tensor
    ) -> Tensor | None:
        if isinstance(observation_noise, Tensor):
            check_observation_noise(observation_noise)
            if observation_noise.shape[-1] == 1:
                observation_noise = observation_noise.squeeze(-1)
            return observation_noise.expand(covar.shape[:-1])
        if not observation_noise:
            return None
        noise = self.likelihood.noise
        if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
            noise = noise.mean(-1, keepdim=True)
        return noise.expand(covar.shape[:-1])

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> NystromGP:
        r"""The model conditioned on more observations, inducing set fixed.

        Args:
            X: A ``batch_shape x n' x d`` tensor of inputs.
            Y: A ``batch_shape' x n' x 1`` tensor of observations; ``batch_shape'``
                broadcasts with ``batch_shape`` (fantasies add leading dimensions).
            noise: Observation noise variances shaped like ``Y``, in
                outcome-transformed units; required for fixed-noise models.
            kwargs: Ignored.

        Returns:
            A new ``NystromGP``. Without batch dimensions the new observations join
            its training data; with them (fantasies) it is a batched model that
            cannot be refitted.
        """
        if Y.dim() < 2 or Y.shape[-1] != 1:
            raise UnsupportedError(
                f"Y must have shape batch_shape x n' x 1, got {tuple(Y.shape)}."
            )
        check_test_inputs(X, self.train_X.shape[-1])
        check_new_observations(X, Y, noise)
        # Transforms must apply their fitted statistics, not re-fit on Y.
        self.eval()
        if not bool(torch.isfinite(Y).all()):
            raise InputDataError("Y contains NaN or infinite values.")
        X_tf = self.transform_inputs(X)
        if noise is None:
            if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
                raise UnsupportedError(
                    "A fixed-noise model needs the noise of new observations."
                )
            # Shaped like the inputs, not the fantasies: see
            # ``WeightPosterior.absorb``.
            noise_tf = self.likelihood.noise.expand(X.shape[:-1])
        else:
            # As gpytorch's fixed-noise likelihood: exact zeros break the update.
            noise_tf = floor_fixed_noise(noise.squeeze(-1))
        Y_tf = Y
        if hasattr(self, "outcome_transform"):
            Y_tf, _ = self.outcome_transform(Y, None, X=X_tf)
        embedding, state = self._posterior_state()
        # One mechanism with the bandits' online model: a Woodbury step on the
        # weight posterior, batched over fantasies (no new m x m factorisation).
        online = state.copy()
        with torch.no_grad():
            residual = Y_tf.squeeze(-1) - self.mean_module(X_tf)
            new = online.absorb(embedding, X_tf, residual, noise_tf)
        model = self._copy_sharing_data()
        if len(online.batch_shape) == 0:
            model._append_data(X, Y, noise_tf)
        else:
            model._extra_statistics = (
                new if self._extra_statistics is None else self._extra_statistics + new
            )
        model._cache = (embedding, online)
        return model

    def _copy_sharing_data(self) -> NystromGP:
        # Deep-copy the modules but not the n-sized data (fantasize runs often).
        memo = {
            id(t): t
            for t in (getattr(self, name) for name in _DATA_ATTRIBUTES)
            if t is not None
        }
        cache, self._cache = self._cache, None
        try:
            return copy.deepcopy(self, memo)
        finally:
            self._cache = cache

    def _append_data(self, X: Tensor, Y: Tensor, noise_tf: Tensor) -> None:
        Yvar = None
        if self.train_Yvar is not None:
            Yvar = noise_tf.unsqueeze(-1)
            if hasattr(self, "outcome_transform"):
                # The data keep raw noise variances; ``noise_tf`` is transformed.
                _, Yvar = self.outcome_transform.untransform(torch.zeros_like(Y), Yvar)
            self.train_Yvar = torch.cat([self.train_Yvar, Yvar], dim=-2)
        self.train_X = torch.cat([self.train_X, X], dim=-2)
        self.train_Y = torch.cat([self.train_Y, Y], dim=-2)
        # The new inputs are not inducing: the posterior is a sketch again.
        self._every_input_inducing = False
        self._retransform_targets()

    # -------------------------------------------------------- module plumbing

    def _set_transformed_inputs(self) -> None:
        # Inputs are transformed on use; nothing to swap on eval().
        pass

    def _revert_to_original_inputs(self) -> None:
        pass

    def train(self, mode: bool = True) -> NystromGP:
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
        super()._apply(fn, *args, **kwargs)
        # BoTorch's acquisition functions call ``self.to(X)`` on every evaluation;
        # the posterior cache (O(n m^2) to rebuild) is dropped only if that moved
        # or cast something (``Tensor.to`` returns the same tensor otherwise).
        moved = False
        for name in (*_DATA_ATTRIBUTES, "_fixed_inducing", "_inducing_index"):
            value = getattr(self, name, None)
            if value is not None:
                converted = fn(value)
                moved = moved or converted is not value
                setattr(self, name, converted)
        for name in ("_extra_statistics", "_data_statistics"):
            stats = getattr(self, name, None)
            if stats is not None:
                setattr(
                    self,
                    name,
                    DTCStatistics(
                        *(fn(getattr(stats, f)) for f in stats.__dataclass_fields__)
                    ),
                )
        key = getattr(self, "_statistics_key", None)
        if key is not None:
            self._statistics_key = {k: fn(v) for k, v in key.items()}
        if moved:
            self._cache = None
        return self

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        keep_transforms: bool = True,
        assign: bool = False,
    ) -> None:
        r"""Load hyperparameters and transforms, then re-derive what depends on them.

        The state holds no data, so a state fitted on all data loads into a model
        built on a subset (as Ax's cross-validation does). The targets are
        re-transformed with the loaded outcome transform and the inducing rule is
        re-run at the loaded hyperparameters.

        Args:
            state_dict: The state, e.g. from ``other_model.state_dict()``.
            strict: Whether the keys must match exactly.
            keep_transforms: Accepted for compatibility with ``GPyTorchModel``;
                the targets always follow the loaded transforms.
            assign: Passed to ``torch.nn.Module.load_state_dict``.
        """
        torch.nn.Module.load_state_dict(self, state_dict, strict=strict, assign=assign)
        if hasattr(self, "input_transform"):
            self.input_transform.eval()
        self._retransform_targets()
        if self._rule is not None and self._rule.depends_on_hyperparameters:
            self.select_inducing_points()
        self._cache = None

    @classmethod
    def construct_inputs(
        cls,
        training_data: SupervisedDataset,
        inducing: InducingSelector | Tensor | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        r"""Constructor arguments from a dataset (the hook Ax calls).

        Args:
            training_data: A ``SupervisedDataset``.
            inducing: The ``inducing`` constructor argument.
            kwargs: Other options Ax passes (``categorical_features`` and the like);
                empty ones are ignored, others are not supported.

        Returns:
            A dict of keyword arguments for ``NystromGP``.
        """
        reject_unsupported_options(cls.__name__, kwargs)
        inputs = super().construct_inputs(training_data=training_data)
        if inducing is not None:
            inputs["inducing"] = inducing
        return inputs
