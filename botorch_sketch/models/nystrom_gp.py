#!/usr/bin/env python3
r"""A DTC/Nystrom Gaussian process with an adaptively chosen inducing set.

``NystromGP`` is a drop-in replacement for ``SingleTaskGP`` whose cost grows with
the size ``m`` of its inducing set rather than with the number ``n`` of
observations: ``O(n m^2 + m^3)`` to fit, ``O(q m^2 + q^2 m)`` per posterior over
``q`` points. The inducing set is a subset of the distinct training inputs chosen
by a rule (:mod:`botorch_sketch.sketching.rules`), by default BKB's
posterior-variance resampling [Calandriello2019bkb]_, so that its size follows
the effective dimension of the data. The posterior is DTC with the exact prior
variance [Quinonero2005unifying]_, and hyperparameters are fitted on Titsias'
collapsed bound [Titsias2009variational]_.

The class holds the data, an inducing set
(:class:`~botorch_sketch.models.nystrom.inducing.InducingSet`) and one posterior
state (:class:`~botorch_sketch.models.nystrom.state.NystromState`); functions in
:mod:`botorch_sketch.models.nystrom` do the work, one idea a module. Several
outcomes are modelled by
:class:`~botorch_sketch.models.nystrom_outcomes.MultiOutputNystromGP`, which
``NystromGP(train_X, train_Y)`` builds when ``train_Y`` has several columns, as
``SingleTaskGP`` models them.

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

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import FantasizeMixin
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import MarginalLogLikelihood
from gpytorch.models import GP
from torch import Tensor

from botorch_sketch.models.nystrom import data, data_statistics, fitting
from botorch_sketch.models.nystrom.fitting import ExactRegimeWarning
from botorch_sketch.models.nystrom.inducing import STATE_KEYS as INDUCING_STATE_KEYS
from botorch_sketch.models.nystrom.inducing import InducingSet
from botorch_sketch.models.nystrom.posterior import (
    absorbed,
    check_new_data,
    checked_output_and_points,
    dtc_posterior,
    fantasy_noise,
    latent_distribution,
    new_noise,
)
from botorch_sketch.models.nystrom.state import (
    NystromState,
    nystrom_embedding,
    training_statistics,
)
from botorch_sketch.models.single_output import SingleOutputMixin
from botorch_sketch.models.validation import (
    check_fit_subset_size,
    check_test_inputs,
    check_training_data,
    check_transformed_test_inputs,
    floor_fixed_noise,
    one_input_points,
)
from botorch_sketch.sketching.embedding import NystromEmbedding
from botorch_sketch.sketching.posterior import (
    DTCStatistics,
    WeightPosterior,
    posterior_variance,
)
from botorch_sketch.sketching.rules import FixedSelector, SelectionRule

__all__ = ["ExactRegimeWarning", "NystromGP"]


class NystromGP(SingleOutputMixin, GPyTorchModel, GP, FantasizeMixin):
    r"""A single-output GP with a DTC/Nystrom posterior and an adaptive inducing set.

    The rule chooses the inducing set when a posterior or a fit first needs one.
    ``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))``
    then alternates: fit the hyperparameters on Titsias' bound with the set
    fixed, re-run the rule at them, fit again (the shortcuts, and the fitting
    options below, are in :mod:`botorch_sketch.models.nystrom.fitting`).

    ``condition_on_observations`` and ``fantasize`` keep the inducing set fixed
    and absorb the new observations into the weight posterior by a Woodbury
    step, ``O(n' m^2)`` and batched over fantasies, so ``qKnowledgeGradient``
    and online use need no new ``m x m`` factorisation. DTC is not the posterior
    of a single GP prior, so a fantasy model is the DTC model of the augmented
    data, not the DTC predictive conditioned on the fantasy. With every distinct
    training input inducing, the posterior and the fitting objective are those
    of ``SingleTaskGP``.

    ``NystromGP(train_X, train_Y)`` with ``t > 1`` columns of ``train_Y``
    builds a :class:`~botorch_sketch.models.nystrom_outcomes.MultiOutputNystromGP`
    of ``t`` independent outputs, as ``SingleTaskGP`` models them.

    Example:
        >>> model = NystromGP(train_X, train_Y)
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> acqf = LogExpectedImprovement(model, best_f=train_Y.max())
    """

    _num_outputs = 1
    fit_rounds: int = 2
    titsias: bool = True
    initial_max_inducing: int | None = 256
    fit_subset_size: int | None = None
    automatic_fit_subset_size: int | None = 1000
    exact_fraction: float | None = 0.5
    exact_fit_size: int | None = 600
    warn_exact_regime: bool = True
    _nystrom_state: NystromState | None
    #: What ``NystromGP(train_X, train_Y)`` builds for ``n x t`` observations
    #: and for ``b x n x d`` inputs: ``MultiOutputNystromGP`` and
    #: ``BatchedNystromGP``, which set them (their modules import this one).
    _multi_output_class: ClassVar[type[GPyTorchModel] | None] = None
    _batched_class: ClassVar[type[GPyTorchModel] | None] = None

    def __new__(
        cls,
        train_X: Tensor | None = None,
        train_Y: Tensor | None = None,
        train_Yvar: Tensor | None = None,
        inducing: SelectionRule | Tensor | None = None,
        covar_module: Kernel | None = None,
        mean_module: Mean | None = None,
        likelihood: Likelihood | None = None,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        input_transform: InputTransform | None = None,
        fit_subset_size: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> GPyTorchModel:
        r"""A ``NystromGP``, or a container of them, as ``SingleTaskGP`` models data.

        As ``SingleTaskGP(train_X, train_Y)`` models the ``t`` columns of
        ``train_Y`` as independent outputs on shared inputs, so does
        ``NystromGP(train_X, train_Y)``: it builds
        :class:`~botorch_sketch.models.nystrom_outcomes.MultiOutputNystromGP`,
        one sketch per outcome, with the same arguments. For batched data
        (``b x n x d``, as ``batch_cross_validation`` passes its folds) it builds
        :class:`~botorch_sketch.models.nystrom_batched.BatchedNystromGP`, one
        sketch per batch element. The parameters are
        ``__init__``'s, named here too, so that Ax (which reads the
        constructor's signature) sees them; subclasses model one outcome.

        Args:
            train_X: As for ``__init__``; ``b x n x d`` builds a
                ``BatchedNystromGP``.
            train_Y: As for ``__init__``; ``n x t`` with ``t > 1`` builds a
                ``MultiOutputNystromGP``.
            train_Yvar: As for ``__init__`` (``n x t``).
            inducing: As for ``__init__`` (a rule is copied per outcome).
            covar_module: As for ``__init__`` (copied per outcome).
            mean_module: As for ``__init__`` (copied per outcome).
            likelihood: As for ``__init__`` (copied per outcome).
            outcome_transform: As for ``__init__`` (``Standardize(m=t)`` by
                default).
            input_transform: As for ``__init__``.
            fit_subset_size: As for ``__init__``.
            args: A subclass's further constructor arguments.
            kwargs: A subclass's further constructor arguments.

        Returns:
            The new, not yet initialised, ``NystromGP`` (Python then calls
            ``__init__``), or the built container.
        """
        several, batched = cls._multi_output_class, cls._batched_class
        if cls is not NystromGP:
            return super().__new__(cls)
        if batched is not None and isinstance(train_X, Tensor) and train_X.dim() > 2:
            return batched(
                train_X,
                train_Y,
                train_Yvar,
                inducing,
                covar_module,
                mean_module,
                likelihood,
                outcome_transform,
                input_transform,
                fit_subset_size,
            )
        if (
            several is not None
            and isinstance(train_Y, Tensor)
            and train_Y.dim() >= 2
            and train_Y.shape[-1] > 1
        ):
            return several(
                train_X,
                train_Y,
                train_Yvar,
                inducing,
                covar_module,
                mean_module,
                likelihood,
                outcome_transform,
                input_transform,
                fit_subset_size,
            )
        return super().__new__(cls)

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        train_Yvar: Tensor | None = None,
        inducing: SelectionRule | Tensor | None = None,
        covar_module: Kernel | None = None,
        mean_module: Mean | None = None,
        likelihood: Likelihood | None = None,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        input_transform: InputTransform | None = None,
        fit_subset_size: int | None = None,
    ) -> None:
        r"""Build the model; the inducing set is chosen when first needed.

        Args:
            train_X: A ``n x d`` tensor of training inputs.
            train_Y: A ``n x 1`` tensor of training observations (``n x t``
                builds a ``MultiOutputNystromGP``: see ``__new__``).
            train_Yvar: An optional ``n x 1`` tensor of observed noise variances; if
                given, the noise is fixed to it (``FixedNoiseGaussianLikelihood``).
            inducing: A :class:`~botorch_sketch.sketching.rules.SelectionRule`, a
                ``m x d`` tensor of fixed inducing inputs (in the space of
                ``train_X``), or None for ``RidgeLeverageSampler()`` (at most
                1024 points, a cap it does not warn of: pass a
                ``RidgeLeverageSampler(max_size=...)`` to set another, which
                warns when it binds). A rule without a generator draws from
                one seeded from ``torch.initial_seed()`` and the data: building
                and fitting leave torch's global random state as they found it.
            covar_module: An unbatched kernel; defaults to BoTorch's RBF kernel
                with a dimension-scaled lengthscale prior, as ``SingleTaskGP``.
            mean_module: The prior mean; defaults to ``ConstantMean()``.
            likelihood: A ``GaussianLikelihood`` or ``FixedNoiseGaussianLikelihood``;
                defaults as in ``SingleTaskGP``.
            outcome_transform: An outcome transform, fitted on the data here and
                inverted on posteriors; defaults to ``Standardize(m=1)``.
            input_transform: An input transform, applied to training and test
                inputs (e.g. ``Normalize(d)``).
            fit_subset_size: Sets :attr:`fit_subset_size` for this model.
        """
        name = type(self).__name__
        data.check_one_outcome(name, train_Y)
        check_training_data(name, train_X, train_Y, train_Yvar)
        check_fit_subset_size(fit_subset_size)
        transformed_X, outcome_transform, _, _ = data.fit_training_transforms(
            train_X, train_Y, train_Yvar, outcome_transform, input_transform
        )
        super().__init__()
        modules = (likelihood, mean_module, covar_module, train_Yvar)
        dim = transformed_X.shape[-1]
        self.likelihood, self.mean_module, self.covar_module = data.default_modules(
            name, *modules, dim
        )
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        if input_transform is not None:
            self.input_transform = input_transform
        # The raw data, plain attributes (see :mod:`.nystrom.data`).
        self.train_X, self.train_Y, self.train_Yvar = train_X, train_Y, train_Yvar
        self._inducing = InducingSet.from_argument(inducing, train_X)
        # Statistics of fantasies (batched fantasy models only), their
        # (transformed) inputs and targets, and of data held elsewhere
        # (``set_data_statistics``); the posterior state.
        self._extra_statistics: DTCStatistics | None = None
        self._fantasy_inputs: tuple[Tensor, ...] = ()
        self._fantasy_targets: tuple[Tensor, ...] = ()
        self._summary: data_statistics.DataSummary | None = None
        self._replace_state()
        # The inducing set is part of the state dict (see ``load_state_dict``).
        self.register_state_dict_post_hook(_save_inducing_set)
        self.register_load_state_dict_pre_hook(_take_inducing_set)
        self.to(train_X)
        self.retransform_targets()
        if fit_subset_size is not None:
            self.fit_subset_size = fit_subset_size

    def _replace_state(self, state: NystromState | None = None) -> None:
        # The one place the posterior state changes: None (rebuilt on next use)
        # after any change of data, hyperparameters (training mode), inducing
        # set, dtype or device; an updated state after conditioning.
        self._nystrom_state = state

    @property
    def nystrom_state(self) -> NystromState:
        r"""The embedding, weight posterior and read-out behind ``posterior``.

        Built on first use after a change of data, hyperparameters or inducing
        set (``O(n m^2 + m^3)``), then kept.
        """
        if self._nystrom_state is None:
            with torch.no_grad():
                embedding, stats = self._embedding_and_statistics()
                self._replace_state(NystromState(embedding, WeightPosterior(stats)))
        return self._nystrom_state

    def posterior_state(self) -> tuple[NystromEmbedding, WeightPosterior]:
        r"""The embedding and the weight posterior (pathwise sampling reads them)."""
        return self.nystrom_state.embedding, self.nystrom_state.posterior

    def clear_posterior_state(self) -> None:
        r"""Drop the posterior state (rebuilt on next use), e.g. to ship the model."""
        self._replace_state()

    def _embedding_and_statistics(self) -> tuple[NystromEmbedding, DTCStatistics]:
        X, noise, summary = self.transformed_train_X, self.train_noise(), self._summary
        inputs = self._inducing_inputs(X)
        embedding = nystrom_embedding(self.covar_module, inputs, noise)
        self.check_data_statistics()
        skip = 0 if summary is None else summary.rows
        before = None if summary is None else summary.statistics
        rest = (self.mean_module, noise, skip, before, self._extra_statistics)
        stats = training_statistics(embedding, X, self._train_targets, *rest)
        return embedding, stats

    @property
    def batch_shape(self) -> torch.Size:
        r"""Empty, except for fantasy models (the fantasy batch shape)."""
        if self._extra_statistics is not None:
            return self._extra_statistics.batch_shape
        return torch.Size()

    @property
    def transformed_train_X(self) -> Tensor:
        r"""The ``n x d`` training inputs as the kernel sees them."""
        return data.transform_like_training(self._input_transform(), self.train_X)

    @property
    def train_inputs(self) -> tuple[Tensor]:
        r"""The input-transformed training inputs, as ``ExactGP`` exposes them.

        ``n x d``; for a fantasy model ``batch_shape x (n + n') x d``, the
        fantasies' inputs after the training inputs, as ``SingleTaskGP``'s
        fantasy models lay them out (formed on each access: the model itself
        keeps only the fantasies' statistics and inputs).
        """
        X = self.transformed_train_X
        if not self._fantasy_inputs:
            return (X,)
        batch = self.batch_shape
        parts = [X, *self._fantasy_inputs]
        return (torch.cat([p.expand(*batch, *p.shape[-2:]) for p in parts], -2),)

    @property
    def train_targets(self) -> Tensor:
        r"""The outcome-transformed training targets, as ``ExactGP`` exposes them.

        ``n``; for a fantasy model ``batch_shape x (n + n')``, the fantasised
        observations (outcome-transformed) after the training targets, as
        ``SingleTaskGP``'s fantasy models lay them out (formed on each access:
        the model's own algebra reads the ``n`` training targets alone).
        """
        y = self._train_targets
        if not self._fantasy_targets:
            return y
        batch = self.batch_shape
        parts = [y, *self._fantasy_targets]
        return torch.cat([p.expand(*batch, p.shape[-1]) for p in parts], -1)

    def train_noise(self) -> Tensor:
        r"""The ``n`` per-observation noise variances, in outcome-transformed units.

        Of the training rows only: a fixed-noise fantasy model's likelihood
        holds ``batch_shape x (n + n')`` noise variances, the training rows'
        first, as ``SingleTaskGP``'s does.
        """
        noise, n = self.likelihood.noise, self.train_X.shape[0]
        if noise.dim() > 1:
            noise = noise.reshape(-1, noise.shape[-1])[0]
        return noise[..., :n].expand(n)

    def retransform_targets(self) -> None:
        r"""Re-derive ``train_targets`` (and fixed noise) from the raw data.

        Call it after changing the outcome transform's statistics in place.
        """
        transform, X = self._outcome_transform(), self.transformed_train_X
        Y, Yvar = data.transformed_targets(self.train_Y, self.train_Yvar, transform, X)
        self._train_targets = Y.squeeze(-1)
        if Yvar is not None:
            self.likelihood.noise = floor_fixed_noise(Yvar.squeeze(-1))
        self._replace_state()

    def _input_transform(self) -> InputTransform | None:
        return getattr(self, "input_transform", None)

    def _outcome_transform(self) -> OutcomeTransform | None:
        return getattr(self, "outcome_transform", None)

    @property
    def inducing_points(self) -> Tensor:
        r"""The ``m x d`` (input-transformed) inducing inputs."""
        return self._inducing_inputs(self.transformed_train_X)

    @property
    def inducing_index(self) -> Tensor | None:
        r"""Training rows of the inducing inputs (None for given inducing inputs).

        The rule's first choice, if none was made yet, is made here (of at most
        ``initial_max_inducing`` points).
        """
        if self._inducing.pending:
            self.select_inducing_points(max_size=self.initial_max_inducing)
        return self._inducing.rows

    @inducing_index.setter
    def inducing_index(self, rows: Tensor | None) -> None:
        self._inducing.set_rows(rows, self._inducing.every_input)
        self._replace_state()

    @property
    def inducing_rule(self) -> SelectionRule | None:
        r"""The rule choosing the inducing set (None for fixed inducing inputs)."""
        return self._inducing.rule

    @property
    def is_exact(self) -> bool:
        r"""Whether every distinct training input is inducing (the exact GP)."""
        return self._inducing.every_input and self._extra_statistics is None

    def _inducing_inputs(self, transformed_X: Tensor) -> Tensor:
        if self._inducing.fixed is not None:
            transform = self._input_transform()
            return data.transform_like_training(transform, self._inducing.fixed)
        return transformed_X[self.inducing_index]

    def select_inducing_points(self, max_size: int | None = None) -> None:
        r"""Run the inducing rule at the current hyperparameters.

        The rule sees the distinct training inputs (of the fitting subset), their
        multiplicities and noise. Fixed inducing inputs stay as they are.

        Args:
            max_size: Keep at most this many of the rule's picks (its first ones),
                for rules that depend on the hyperparameters.
        """
        self._refuse_if_fantasy("keeps the inducing set it was conditioned with")
        rule, rows = self._inducing.rule, None
        if rule is not None and not isinstance(rule, FixedSelector):
            rows = fitting.rule_rows(self)
        args = (self.covar_module, self.train_noise(), self._train_targets, rows)
        self._inducing.choose(self.train_X, self.transformed_train_X, *args, max_size)
        self._replace_state()

    def add_inducing_points(self, rows: Tensor) -> None:
        r"""Add training observations' inputs to the inducing set (``O(n m^2)``).

        Args:
            rows: A 1-d long tensor of row indices into ``train_X``.
        """
        if self._inducing.rule is None or self.inducing_index is None:
            raise UnsupportedError(
                "add_inducing_points needs a model whose inducing set is chosen "
                "by a rule (not fixed inducing inputs)."
            )
        self._refuse_if_fantasy("keeps the inducing set it was conditioned with")
        self._inducing.add(rows, self.transformed_train_X)
        self._replace_state()

    def effective_dimension(self) -> Tensor:
        r"""BKB's estimate ``sum_i var(x_i) / lambda_i`` of the effective dimension.

        The ridge leverage scores of the training inputs (not of fantasies),
        summed with repeats: a scalar tensor.
        """
        data_statistics.refuse_if_summarised(self._summary, "effective_dimension")
        with torch.no_grad():
            state, X = self.nystrom_state, self.transformed_train_X
            var = posterior_variance(state.embedding, state.posterior, X)
            return (var / self.train_noise()).sum(-1)

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
            X: A ``batch_shape x q x d`` tensor of inputs (for one input
                dimension, also a ``q`` tensor, as ``SingleTaskGP`` takes).
            output_indices: None or ``[0]`` (the model has one output).
            observation_noise: If True, add the likelihood's noise (for fixed noise,
                the mean training noise, as BoTorch's ``fantasize`` does); if a
                ``batch_shape x q x 1`` tensor, add it (outcome-transformed units).
            posterior_transform: An optional ``PosteriorTransform``.
            kwargs: Ignored.

        Returns:
            A ``GPyTorchPosterior`` over ``broadcast(batch_shape, model.batch_shape)
            x q x 1``.
        """
        name, d = type(self).__name__, self.train_X.shape[-1]
        X = checked_output_and_points(name, X, d, output_indices)
        self.eval()
        X = self._transformed_test_points(X)
        modules = (self.mean_module, self.covar_module, self.likelihood)
        transform = self._outcome_transform()
        posterior = dtc_posterior(
            self.nystrom_state, X, *modules, transform, observation_noise
        )
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def _transformed_test_points(self, X: Tensor) -> Tensor:
        r"""``X`` input-transformed, its width checked on what the kernel sees.

        An input transform may change the width (``AppendFeatures`` appends
        environmental variables, in BoTorch's risk-averse BO tutorial): raw
        test points narrower than the training inputs were refused.
        """
        d = self.train_X.shape[-1]
        if X.dim() < 2:
            check_test_inputs(X, d)  # The usual message, before the transform's.
        try:
            transformed = self.transform_inputs(X)
        except (RuntimeError, BotorchTensorDimensionError):
            # A transform of d inputs fails on others with a message about
            # tensor sizes: name the input dimensions where that is the cause.
            check_test_inputs(X, d)
            raise
        width = self.nystrom_state.embedding.inducing_points.shape[-1]
        check_transformed_test_inputs(X, transformed, width)
        return transformed

    def forward(self, x: Tensor) -> MultivariateNormal:
        r"""The prior at ``x`` in training mode; in eval mode the latent posterior.

        As ``SingleTaskGP(x)`` (GIBBON reads it): in eval mode ``x`` is taken as
        input-transformed, and the latent posterior is in transformed units.
        """
        if self.training:
            x = self.transform_inputs(x)
            return MultivariateNormal(self.mean_module(x), self.covar_module(x))
        state = self.nystrom_state
        width = state.embedding.inducing_points.shape[-1]
        # A ``q`` tensor of a one-input model, as ``SingleTaskGP(x)`` takes it.
        x = one_input_points(x, width)
        check_test_inputs(x, width)
        return latent_distribution(state, x, self.mean_module, self.covar_module)

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
        check_new_data(X, Y, noise, self.train_X.shape[-1])
        self.eval()  # the transforms apply their fitted statistics
        if not bool(torch.isfinite(Y).all()):
            raise InputDataError("Y contains NaN or infinite values.")
        X_tf = self.transform_inputs(X)
        noise_tf = new_noise(noise, self.likelihood, X)
        Y_tf, transform = Y, self._outcome_transform()
        if transform is not None:
            Y_tf, _ = transform(Y, None, X=X_tf)
        graph = any(t is not None and t.requires_grad for t in (X, Y, noise))
        graph = graph and torch.is_grad_enabled()
        args = (self.mean_module, noise_tf, graph)
        state, new = absorbed(self.nystrom_state, X_tf, Y_tf, *args)
        shared = [getattr(self, name) for name in data.DATA_ATTRIBUTES]
        # A fantasy model's statistics, inputs and fixed noise may carry a graph
        # (fantasies sampled with gradients), which deepcopy refuses: the
        # statistics are replaced below, the others shared (never changed).
        shared += [*self._fantasy_inputs, *self._fantasy_targets]
        shared.append(self.likelihood.noise)
        dropped = [self._nystrom_state, self._extra_statistics]
        model = data.copy_sharing(self, shared, dropped=dropped)
        if len(state.posterior.batch_shape) == 0:
            raw = (self.train_X, self.train_Y, self.train_Yvar)
            raw = data.appended_data(raw, X, Y, noise_tf.unsqueeze(-1), transform)
            model.train_X, model.train_Y, model.train_Yvar = raw
            model._inducing.every_input = False  # the new inputs are not inducing
            model.retransform_targets()
        else:
            extra = self._extra_statistics
            model._extra_statistics = new if extra is None else extra + new
            model._fantasy_inputs = (*self._fantasy_inputs, X_tf)
            model._fantasy_targets = (*self._fantasy_targets, Y_tf.squeeze(-1))
            if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
                model.likelihood.noise = fantasy_noise(self.likelihood.noise, noise_tf)
        model._replace_state(state)
        return model

    def _refuse_if_fantasy(self, what: str) -> None:
        if self._extra_statistics is not None:
            raise UnsupportedError(f"A fantasy model {what}.")

    def log_marginal_likelihood(self) -> Tensor:
        r"""Titsias' bound (DTC's for ``titsias = False``) of all the observations.

        Without priors, not over ``n``: a scalar (``batch_shape`` for fantasies).
        """
        with torch.no_grad():
            weights = self.nystrom_state.posterior
            return weights.log_marginal_likelihood(titsias=self.titsias)

    def compute_custom_loss(
        self, mll: MarginalLogLikelihood | None = None, **kwargs: Any
    ) -> Tensor:
        r"""The negative objective over ``n`` (BoTorch's loss closure calls it).

        See :func:`~botorch_sketch.models.nystrom.fitting.custom_loss`.
        """
        data_statistics.refuse_if_summarised(self._summary, "Fitting")
        stats = None if self.is_exact else self._embedding_and_statistics()[1]
        return fitting.custom_loss(self, stats)

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit the hyperparameters, alternating with the inducing rule.

        ``fit_gpytorch_mll`` calls it; the arguments are those of
        :func:`~botorch_sketch.models.nystrom.fitting.fit_alternating`.
        """
        self._refuse_if_fantasy("cannot be refitted")
        data_statistics.refuse_if_summarised(self._summary, "Fitting")
        options = (closure, closure_kwargs, optimizer_kwargs)
        return fitting.fit_alternating(
            self, self._inducing, NystromGP, mll, *options, **kwargs
        )

    def observation_statistics(
        self, X: Tensor, Y: Tensor, chunk_size: int | None = None
    ) -> DTCStatistics:
        r"""The DTC statistics of observations, summed as the model's own data are.

        ``X`` (``n x d``) and ``Y`` (``n x 1``) need not be the model's data: see
        :func:`~botorch_sketch.models.nystrom.data_statistics.observation_statistics`.
        """
        data_statistics.refuse_fixed_noise(self.likelihood, "observation_statistics")
        self._refuse_if_fantasy("has no statistics of its own")
        return data_statistics.observation_statistics(self, X, Y, chunk_size)

    def set_data_statistics(
        self, statistics: DTCStatistics, rows_included: int | None = None
    ) -> None:
        r"""Condition on the statistics of data held elsewhere, not on ``train_X``.

        The posterior becomes that of the data ``statistics`` summarise plus the
        training rows after the first ``rows_included`` (the data need then only
        be a sample). They must come from :meth:`observation_statistics` under
        this model's hyperparameters, transforms and inducing set, which are then
        frozen: the set becomes fixed inputs, refitting raises, and so does the
        posterior once they change (:meth:`check_data_statistics`).

        Args:
            statistics: Unbatched statistics of the data.
            rows_included: How many leading rows of ``train_X`` the statistics
                already include; all of them by default.
        """
        self._refuse_if_fantasy("cannot take data statistics")
        data_statistics.refuse_fixed_noise(self.likelihood, "set_data_statistics")
        n, m = self.train_X.shape[0], self.inducing_points.shape[0]
        rows = data_statistics.summarised_rows(statistics, rows_included, n, m)
        self.check_data_statistics()
        if self._inducing.rule is not None:
            # The statistics are coordinates in this inducing set's embedding.
            self._inducing.fix(self.train_X[self.inducing_index])
        args = (self.state_dict(), self._inducing.fixed, self.train_X)
        self._summary = data_statistics.DataSummary.of(statistics, rows, *args)
        self._replace_state()

    def check_data_statistics(self) -> None:
        r"""Raise ``UnsupportedError`` if the data statistics no longer apply.

        That is, if their hyperparameters, transforms or inducing inputs changed.
        """
        if self._summary is not None:
            state, fixed = self.state_dict(), self._inducing.fixed
            now = data_statistics.statistics_key(state, fixed)
            data_statistics.check_key(self._summary.key, now)

    def train(self, mode: bool = True) -> NystromGP:
        r"""Set training mode; entering it drops the posterior state."""
        if mode:
            self._replace_state()
        return super().train(mode)

    def _set_transformed_inputs(self) -> None:
        pass  # inputs are transformed on use: nothing to swap on eval()

    def _revert_to_original_inputs(self) -> None:
        pass

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        super()._apply(fn, *args, **kwargs)
        if self._extra_statistics is not None:
            self._extra_statistics = self._extra_statistics.map(fn)
            self._fantasy_inputs = tuple(fn(X) for X in self._fantasy_inputs)
            self._fantasy_targets = tuple(fn(y) for y in self._fantasy_targets)
        if self._summary is not None:
            self._summary = self._summary.map(fn)
        moved = self._inducing.apply(fn)
        if data.apply_to_data(self, fn) or moved:
            self._replace_state()
        return self

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        keep_transforms: bool = True,
        assign: bool = False,
    ) -> None:
        r"""Load hyperparameters, transforms and the inducing set.

        The state holds no data, so it loads into a model on other data (Ax's
        cross-validation): the targets follow the loaded outcome transform
        (whatever ``keep_transforms``), and the inducing set is restored as
        ``InducingSet.restore`` says: on the same data the saved set, so the
        posterior is the saved model's; in a fold, those of its inputs the
        fold holds (every input of the fold if the saved set held every
        input). A state without a set (a ``SingleTaskGP``'s) leaves the rule
        to choose at the loaded hyperparameters.
        """
        torch.nn.Module.load_state_dict(self, state_dict, strict=strict, assign=assign)
        if self._input_transform() is not None:
            self.input_transform.eval()
        self.retransform_targets()
        self.restore_loaded_inducing()

    def restore_loaded_inducing(self) -> None:
        r"""Restore the inducing set a state dict loaded, once the data are set.

        ``load_state_dict`` calls it; a container that loads the model as a
        submodule calls it after re-deriving the model's targets. Without a
        loaded set, a rule that depends on the hyperparameters chooses again.
        """
        loaded = self.__dict__.pop("_loaded_inducing", None)
        restored = loaded is not None and self._inducing.restore(
            loaded, self.train_X, self.transformed_train_X
        )
        if not restored and self._inducing.adaptive:
            self.select_inducing_points()
        self._replace_state()

    construct_inputs = classmethod(data.construct_inputs)


def _save_inducing_set(
    model: NystromGP,
    state_dict: dict[str, Any],
    prefix: str,
    local_metadata: dict[str, Any],
) -> None:
    # The inducing set joins the hyperparameters and transforms (see
    # ``InducingSet.state``): tensors, sized by the set, not by the data.
    for name, value in model._inducing.state(model.train_X).items():
        state_dict[prefix + name] = value


def _take_inducing_set(
    model: NystromGP,
    state_dict: dict[str, Any],
    prefix: str,
    local_metadata: dict[str, Any],
    strict: bool,
    missing_keys: list[str],
    unexpected_keys: list[str],
    error_msgs: list[str],
) -> None:
    # The set's entries are taken out of (torch's copy of) the state and kept
    # until the transforms they are read through have loaded
    # (``NystromGP.restore_loaded_inducing``). They may all be missing: a
    # ``SingleTaskGP``'s state loads, as before.
    keys = {prefix + name: name for name in INDUCING_STATE_KEYS}
    own = {keys[k]: state_dict.pop(k) for k in list(state_dict) if k in keys}
    if 0 < len(own) < len(keys):
        absent = sorted(set(keys.values()) - set(own))
        error_msgs.append(f"The inducing set's entries {absent} are missing.")
    model._loaded_inducing = own if len(own) == len(keys) else None
