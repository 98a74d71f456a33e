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

This module holds what ``SingleTaskGP``'s holds: the constructor, ``posterior``,
``condition_on_observations`` and ``construct_inputs``. The rest of the class
comes from mixins in :mod:`botorch_sketch.models.nystrom`, one idea a file: the
training data and their transforms, the inducing set, fitting, the posterior
state, and statistics of data held elsewhere.

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

from collections.abc import Callable
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
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
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import ConstantMean, Mean
from gpytorch.models import GP
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_sketch.models.nystrom.data import TrainingDataMixin
from botorch_sketch.models.nystrom.data_statistics import DataStatisticsMixin
from botorch_sketch.models.nystrom.fitting import (
    ExactRegimeWarning,
    NystromFittingMixin,
)
from botorch_sketch.models.nystrom.inducing import InducingSetMixin
from botorch_sketch.models.nystrom.state import PosteriorStateMixin
from botorch_sketch.models.single_output import SingleOutputMixin
from botorch_sketch.models.validation import (
    check_fit_subset_size,
    check_gaussian_likelihood,
    check_new_observations,
    check_observation_noise,
    check_output_indices,
    check_test_inputs,
    check_training_data,
    check_unbatched_kernel,
    floor_fixed_noise,
    inputs_from_dataset,
    one_input_points,
)
from botorch_sketch.sketching.selection import InducingSelector

__all__ = ["ExactRegimeWarning", "NystromGP"]


class NystromGP(
    SingleOutputMixin,
    TrainingDataMixin,
    InducingSetMixin,
    NystromFittingMixin,
    PosteriorStateMixin,
    DataStatisticsMixin,
    GPyTorchModel,
    GP,
    FantasizeMixin,
):
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
                ``train_X``), or None for ``RidgeLeverageSampler()``. A rule
                without a generator draws from one of the model's own, seeded
                from ``torch.initial_seed()`` and the data size: building and
                fitting leave torch's global random state as they found it.
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
        transformed_X, outcome_transform, _, _ = self._transform_training_data(
            train_X, train_Y, train_Yvar, outcome_transform, input_transform
        )
        super().__init__()
        d = transformed_X.shape[-1]
        if likelihood is None:
            if train_Yvar is None:
                likelihood = get_gaussian_likelihood_with_lognormal_prior()
            else:
                likelihood = FixedNoiseGaussianLikelihood(
                    noise=train_Yvar.squeeze(-1).clone()
                )
        check_gaussian_likelihood(type(self).__name__, likelihood, train_Yvar)
        self.likelihood = likelihood
        self.mean_module = ConstantMean() if mean_module is None else mean_module
        self.covar_module = (
            get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
            if covar_module is None
            else covar_module
        )
        check_unbatched_kernel(type(self).__name__, self.covar_module)
        self._keep_training_data(
            train_X, train_Y, train_Yvar, outcome_transform, input_transform
        )
        self._init_inducing(inducing)
        self._init_posterior_state()
        self._init_data_statistics()
        self.to(train_X)
        self._retransform_targets()
        if fit_subset_size is not None:
            self.fit_subset_size = fit_subset_size
        self._initial_selection_pending = True

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
            x q x 1`` with a dense ``q x q`` covariance.
        """
        if output_indices is not None:
            # Integers only: ``[0.0] == [0]`` and ``[False] == [0]`` passed.
            if check_output_indices(output_indices, 1) != [0]:
                raise UnsupportedError(
                    f"{type(self).__name__} has one output; got {output_indices=}."
                )
        self.eval()
        X = one_input_points(X, self.train_X.shape[-1])
        check_test_inputs(X, self.train_X.shape[-1])
        X = self.transform_inputs(X)
        readout = self._posterior_readout()
        transform = getattr(self, "outcome_transform", None)
        scale = None
        if observation_noise is False or observation_noise is None:
            # Rows on demand: acquisition functions with ``cache_root`` read only
            # the q new rows of a joint covariance over baseline and new points.
            # A plain ``Standardize`` is undone on the operator's pieces here:
            # BoTorch's own untransform wraps the covariance in diagonal
            # products, whose rows are read by forming the whole matrix.
            scale = _standardize_scale(transform)
            prior_mean = self.mean_module(X)
            if scale is not None:
                prior_mean = transform.means.reshape(()) + scale * prior_mean
                transform = None
            delta, covar = readout.lazy(X, self.covar_module(X), scale=scale)
        else:
            prior_mean = self.mean_module(X)
            delta, covar = readout(X, self.covar_module(X).to_dense())
        mean = prior_mean + delta
        # Fantasies share a covariance (it does not depend on the outcomes): the
        # expansion over them is a view.
        shape = torch.broadcast_shapes(mean.shape, covar.shape[:-1])
        mean = mean.expand(shape)
        if covar.shape[:-1] != shape:
            covar = covar.expand(shape + covar.shape[-1:])
        noise = self._observation_noise(observation_noise, covar)
        if noise is not None:
            covar = covar + torch.diag_embed(noise)
        # A linear operator, as an exact GP's posterior has: torch's own MVN would
        # factorise the dense matrix eagerly and fail on a singular (but PSD)
        # covariance, where gpytorch's sampling adds jitter as needed.
        distribution = MultivariateNormal(mean, to_linear_operator(covar))
        posterior = GPyTorchPosterior(distribution=distribution)
        if transform is not None:
            posterior = transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def forward(self, x: Tensor) -> MultivariateNormal:
        r"""What ``model(x)`` gives for BoTorch's exact GPs.

        In training mode the prior at the input-transformed ``x``; in eval mode
        the latent posterior at ``x`` taken as already transformed, in the
        model's (outcome-transformed) units, as ``SingleTaskGP(x)``. GIBBON's
        batch term (``qLowerBoundMaxValueEntropy`` at q > 1) reads it; without
        it ``model(x)`` was gpytorch's bare ``NotImplementedError``.

        Args:
            x: A ``batch_shape x q x d`` tensor.

        Returns:
            A ``MultivariateNormal`` over the ``q`` points.
        """
        if self.training:
            x = self.transform_inputs(x)
            return MultivariateNormal(self.mean_module(x), self.covar_module(x))
        delta, covar = self._posterior_readout()(x, self.covar_module(x).to_dense())
        mean = self.mean_module(x) + delta
        shape = torch.broadcast_shapes(mean.shape, covar.shape[:-1])
        covar = covar.expand(shape + covar.shape[-1:])
        return MultivariateNormal(mean.expand(shape), to_linear_operator(covar))

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
        # A graph where the new observations carry one: acquisition functions
        # that look ahead (qKG, qNIPV) differentiate the fantasy model with
        # respect to X (under no_grad, qKG's candidate never moved). A loop
        # that chains conditionings (IncrementalGP) passes plain data and keeps
        # no graph of the hyperparameters from one step to the next.
        needs_graph = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (X, Y, noise)
        )
        with torch.set_grad_enabled(needs_graph):
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
        inputs = inputs_from_dataset(cls.__name__, training_data, kwargs)
        if inducing is not None:
            inputs["inducing"] = inducing
        return inputs


def _standardize_scale(transform: OutcomeTransform | None) -> Tensor | None:
    # The standard deviation of a trained, single-output ``Standardize`` (not a
    # subclass: ``StratifiedStandardize`` scales per input), else None.
    if (
        type(transform) is not Standardize
        or transform._outputs is not None
        or transform.stdvs.numel() != 1
        or not bool(transform._is_trained)
    ):
        return None
    return transform.stdvs.reshape(())
