#!/usr/bin/env python3
r"""Several outcomes: a container of one single-output ``NystromGP`` per outcome.

:class:`MultiOutputNystromGP` is the sparse counterpart of a ``SingleTaskGP`` of
``t`` outputs, what ``NystromGP(train_X, train_Y)`` builds for ``n x t``
observations (or built by name): independent outcomes, each with its own
kernel, mean, noise level and inducing set, and a posterior that is a
``MultitaskMultivariateNormal`` over ``batch_shape x q x t``. Like
``ModelListGP``, it holds a model per outcome
(:attr:`~MultiOutputNystromGP.outcome_models`), here each fitted on its column
of the outcome-transformed data, so every outcome's fit, inducing rule, exact
regime and conditioning are those of the single-output model; unlike it, the
outcome transform (``Standardize(m=t)`` by default) acts on all ``t`` columns,
as in ``SingleTaskGP``, and ``ExactMarginalLogLikelihood(model.likelihood,
model)`` fits it.

Inducing sets are per outcome, not shared. With per-outcome hyperparameters the
Nystrom embedding (``K_SS`` and its ``O(m^3)`` factorisation), the ``O(n m^2)``
statistics and the weight posterior are per outcome whichever set is used, so a
shared set would save only the rule's own pass, and would give every outcome a
set sized for the union of the outcomes' needs (a larger ``m`` for all). Per
outcome, each set follows that outcome's posterior variance at its own fitted
lengthscales and noise, as BKB's rule prescribes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, UnsupportedError
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import FantasizeMixin
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from botorch.sampling.base import MCSampler
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.distributions import MultitaskMultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.gaussian_likelihood import _GaussianLikelihoodBase
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.likelihoods.noise_models import Noise
from gpytorch.means import Mean
from gpytorch.mlls import ExactMarginalLogLikelihood, MarginalLogLikelihood
from gpytorch.models import GP
from torch import Tensor
from torch.nn import ModuleList

from botorch_sketch.models.nystrom import data
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.models.validation import (
    check_output_indices,
    check_training_data,
    floor_fixed_noise,
    one_input_points,
)
from botorch_sketch.sketching.rules import SelectionRule

#: The raw data the container keeps (its outcomes' models keep their columns).
_RAW_DATA = ("train_X", "train_Y", "train_Yvar")


class _OutcomeNoise(Noise):
    r"""The models' noise levels, read from their likelihoods (no parameters).

    Of the outcomes of a ``MultiOutputNystromGP``, or of the batch elements of
    a ``BatchedNystromGP``.
    """

    def __init__(self, likelihoods: list[Likelihood]) -> None:
        r"""Keep the outcomes' likelihoods, unregistered (the models own them).

        Args:
            likelihoods: One likelihood per outcome.
        """
        super().__init__()
        self._likelihoods = tuple(likelihoods)

    @property
    def noise(self) -> Tensor:
        r"""``t x 1`` (``t x n`` for fixed noise), as a batched ``SingleTaskGP``.

        A fixed-noise fantasy model's is ``batch_shape x t x (n + n')``, as
        ``SingleTaskGP``'s.
        """
        noises = torch.broadcast_tensors(*(lik.noise for lik in self._likelihoods))
        return torch.stack(noises, dim=-2)

    def forward(self, *params: Any, **kwargs: Any) -> Tensor:
        r"""Not supported: the models' likelihoods act one by one."""
        raise UnsupportedError(
            "The likelihood of a multi-output or batched NystromGP only exposes its "
            "models' noise levels; use model.outcome_models[j].likelihood or "
            "model.batch_models[i].likelihood."
        )


class OutcomeLikelihoods(_GaussianLikelihoodBase):
    r"""The Gaussian likelihoods of the outcomes of a multi-output ``NystromGP``.

    (Or of the batch elements of a ``BatchedNystromGP``: ``noise`` is then
    ``b x 1``, as a batched ``SingleTaskGP``'s.)

    It makes ``ExactMarginalLogLikelihood(model.likelihood, model)`` (what
    ``fit_gpytorch_mll`` and Ax build) accept the model, and ``noise`` reads the
    outcomes' noise levels. The likelihoods themselves belong to the outcomes'
    models, so the state dict holds them once.
    """

    def __init__(self, likelihoods: list[Likelihood]) -> None:
        r"""Collect the outcomes' likelihoods.

        Args:
            likelihoods: One ``GaussianLikelihood`` or
                ``FixedNoiseGaussianLikelihood`` per outcome.
        """
        super().__init__(noise_covar=_OutcomeNoise(likelihoods))

    @property
    def likelihoods(self) -> tuple[Likelihood, ...]:
        r"""The outcomes' likelihoods."""
        return self.noise_covar._likelihoods

    @property
    def noise(self) -> Tensor:
        r"""The outcomes' noise variances, ``t x 1`` (``t x n`` for fixed noise)."""
        return self.noise_covar.noise


def check_multi_output_data(
    model_name: str, train_X: Tensor, train_Y: Tensor, train_Yvar: Tensor | None
) -> None:
    r"""Validate ``n x d`` inputs with ``n x t`` observations (and noise).

    Args:
        model_name: The class name, for messages.
        train_X: Expected ``n x d``.
        train_Y: Expected ``n x t``.
        train_Yvar: Expected None or ``n x t``, non-negative.

    Raises:
        BotorchTensorDimensionError: for mismatched shapes.
        InputDataError: for empty, NaN, infinite or negative-variance data.
    """
    if train_Yvar is not None and (
        not isinstance(train_Yvar, Tensor) or train_Yvar.shape != train_Y.shape
    ):
        shape = tuple(train_Yvar.shape) if isinstance(train_Yvar, Tensor) else None
        raise BotorchTensorDimensionError(
            f"train_Yvar must have the shape of train_Y, {tuple(train_Y.shape)}; "
            f"got {shape}."
        )
    for j in range(train_Y.shape[-1]):
        check_training_data(
            model_name,
            train_X,
            train_Y[:, j : j + 1],
            None if train_Yvar is None else train_Yvar[:, j : j + 1],
        )


class MultiOutputNystromGP(GPyTorchModel, GP, FantasizeMixin):
    r"""Independent outcomes, one :class:`NystromGP` sketch per outcome.

    It behaves as a ``SingleTaskGP`` of ``t`` outputs: ``num_outputs == t``,
    posteriors over ``batch_shape x q x t`` (``output_indices``,
    ``observation_noise`` and ``posterior_transform`` as there),
    ``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))``,
    ``fantasize``, ``condition_on_observations`` and ``subset_output``. Outcome
    ``j`` is the single-output ``NystromGP`` on column ``j`` of the
    outcome-transformed data (``outcome_models[j]``), so its fit, posterior and
    inducing set are exactly those of that model. Its options (``fit_rounds``,
    ``exact_fit_size``, ...), its inducing set and statistics of data held
    elsewhere are the outcome models' (take ``subset_output([j])`` for the
    last). Pathwise sampling draws one path per outcome model and joins them
    as a ``SingleTaskGP``'s (:class:`~botorch_sketch.models.pathwise.OutcomePaths`).

    Example:
        >>> model = MultiOutputNystromGP(train_X, torch.cat([y1, y2], dim=-1))
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> model.posterior(X).mean.shape  # q x 2
    """

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
        r"""Build one single-output model per outcome.

        Args:
            train_X: A ``n x d`` tensor of training inputs.
            train_Y: A ``n x t`` tensor of training observations.
            train_Yvar: An optional ``n x t`` tensor of observed noise variances.
            inducing: As for ``NystromGP``; a rule is copied per outcome, and
                fixed inducing inputs are shared.
            covar_module: An unbatched kernel, copied per outcome (each outcome
                fits its own copy); defaults as in ``NystromGP``.
            mean_module: An unbatched mean, copied per outcome.
            likelihood: A likelihood without batch dimensions, copied per outcome.
            outcome_transform: An outcome transform of the ``t`` outcomes,
                defaulting to ``Standardize(m=t)``; None for no transform.
            input_transform: An input transform, shared by the outcomes.
            fit_subset_size: Sets ``fit_subset_size`` for every outcome's model.
        """
        check_multi_output_data(type(self).__name__, train_X, train_Y, train_Yvar)
        _, outcome_transform, Y_tf, Yvar_tf = data.fit_training_transforms(
            train_X, train_Y, train_Yvar, outcome_transform, input_transform
        )
        super().__init__()
        self._num_outputs = train_Y.shape[-1]
        models = [
            NystromGP(
                train_X,
                Y_tf[:, j : j + 1].detach(),
                train_Yvar=None if Yvar_tf is None else Yvar_tf[:, j : j + 1].detach(),
                inducing=inducing
                if isinstance(inducing, Tensor)
                else copy_per_model(inducing, "outcome"),
                covar_module=copy_per_model(covar_module, "outcome"),
                mean_module=copy_per_model(mean_module, "outcome"),
                likelihood=copy_per_model(likelihood, "outcome"),
                outcome_transform=None,
                input_transform=input_transform,
                fit_subset_size=fit_subset_size,
            )
            for j in range(self._num_outputs)
        ]
        self.outcome_models = ModuleList(models)
        self.likelihood = OutcomeLikelihoods([m.likelihood for m in models])
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        if input_transform is not None:
            self.input_transform = input_transform
        # Raw data, as NystromGP keeps them; the outcomes' models hold their
        # (outcome-transformed) columns.
        self.train_X, self.train_Y, self.train_Yvar = train_X, train_Y, train_Yvar
        self.to(train_X)

    def _set_outcome_models(self, models: list[NystromGP]) -> None:
        # New outcome models (of a copy): their likelihoods and input transform
        # become this model's.
        self.outcome_models = ModuleList(models)
        self.likelihood = OutcomeLikelihoods([m.likelihood for m in models])
        if hasattr(self, "input_transform"):
            self.input_transform = models[0].input_transform

    # ------------------------------------------------------------ properties

    @property
    def batch_shape(self) -> torch.Size:
        r"""Empty, except for fantasy models (the fantasy batch shape)."""
        return torch.broadcast_shapes(*(m.batch_shape for m in self.outcome_models))

    @property
    def transformed_train_X(self) -> Tensor:
        r"""The ``n x d`` training inputs as the kernels see them."""
        transform = getattr(self, "input_transform", None)
        return data.transform_like_training(transform, self.train_X)

    @property
    def train_inputs(self) -> tuple[Tensor]:
        r"""The input-transformed training inputs, laid out as ``SingleTaskGP``'s.

        ``t x n x d`` (a view: the inputs once per outcome), and for a fantasy
        model ``batch_shape x t x (n + n') x d``: what BoTorch's multi-output
        acquisition functions (``qMultiObjectivePredictiveEntropySearch``)
        read of a ``SingleTaskGP`` of ``t`` outputs.
        """
        X = self.outcome_models[0].train_inputs[0]  # the outcomes share inputs
        t = self.num_outputs
        return (X.unsqueeze(-3).expand(*X.shape[:-2], t, *X.shape[-2:]),)

    @property
    def train_targets(self) -> Tensor:
        r"""The ``t x n`` outcome-transformed training targets.

        For a fantasy model ``batch_shape x t x (n + n')``, the fantasised
        observations after the training targets, as ``SingleTaskGP``'s.
        """
        targets = [m.train_targets for m in self.outcome_models]
        return torch.stack(torch.broadcast_tensors(*targets), dim=-2)

    @property
    def is_exact(self) -> bool:
        r"""Whether every outcome's model is the exact GP."""
        return all(m.is_exact for m in self.outcome_models)

    def select_inducing_points(self, max_size: int | None = None) -> None:
        r"""Run every outcome's inducing rule at its current hyperparameters.

        Args:
            max_size: As for ``NystromGP.select_inducing_points``.
        """
        for model in self.outcome_models:
            model.select_inducing_points(max_size=max_size)

    def log_marginal_likelihood(self) -> Tensor:
        r"""Every outcome's fitting objective (``NystromGP``'s): ``batch_shape x t``."""
        values = [m.log_marginal_likelihood() for m in self.outcome_models]
        return torch.stack(torch.broadcast_tensors(*values), dim=-1)

    def effective_dimension(self) -> Tensor:
        r"""Every outcome's effective dimension (see ``NystromGP``): a ``t`` tensor."""
        return torch.stack([m.effective_dimension() for m in self.outcome_models])

    # ------------------------------------------------------------------ fit

    def compute_custom_loss(
        self, mll: MarginalLogLikelihood | None = None, **kwargs: Any
    ) -> Tensor:
        r"""The sum over outcomes of their losses (as a batched ``SingleTaskGP``)."""
        return sum(m.compute_custom_loss() for m in self.outcome_models)

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit every outcome's model as ``fit_gpytorch_mll`` fits a ``NystromGP``.

        The outcomes share no hyperparameter, so their fits are independent;
        ``closure`` is not supported (each outcome builds its own), the other
        arguments are passed to every fit. ``mll`` is returned in eval mode if
        every outcome's fit succeeded.
        """
        if len(self.batch_shape) > 0:
            raise UnsupportedError("A fantasy model cannot be refitted.")
        if closure is not None:
            raise UnsupportedError(
                "A multi-output NystromGP fits each outcome with its own closure; "
                "pass closure=None."
            )
        fitted = [
            model.custom_fit(
                ExactMarginalLogLikelihood(model.likelihood, model),
                closure_kwargs=closure_kwargs,
                optimizer_kwargs=optimizer_kwargs,
                **kwargs,
            )
            for model in self.outcome_models
        ]
        return mll.train(any(sub.training for sub in fitted))

    # ------------------------------------------------------------- posterior

    def _output_indices(self, output_indices: list[int] | None) -> list[int]:
        t = self.num_outputs
        if output_indices is None:
            return list(range(t))
        # Integers only: ``int(1.7)`` read 1.7 as outcome 1.
        indices = check_output_indices(output_indices, t)
        if not indices or any(not -t <= i < t for i in indices):
            raise UnsupportedError(
                f"output_indices must be a non-empty list of outputs of this "
                f"{t}-output model; got {output_indices}."
            )
        return [i % t for i in indices]

    def _outcome_transform_of(self, indices: list[int]) -> OutcomeTransform | None:
        if not hasattr(self, "outcome_transform"):
            return None
        if indices == list(range(self.num_outputs)):
            return self.outcome_transform
        return self.outcome_transform.subset_output(indices)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Callable | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior | TransformedPosterior:
        r"""The outcomes' DTC posteriors at ``X``, independent across outcomes.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs (for one input
                dimension, also a ``q`` tensor, as ``SingleTaskGP`` takes).
            output_indices: The outcomes to include (all by default).
            observation_noise: If True, add each outcome's noise (as
                ``NystromGP``); if a ``batch_shape x q x t`` tensor, add it
                (outcome-transformed units).
            posterior_transform: An optional ``PosteriorTransform``.
            kwargs: Ignored.

        Returns:
            A ``GPyTorchPosterior`` whose distribution is a
            ``MultitaskMultivariateNormal`` over ``broadcast(batch_shape,
            model.batch_shape) x q x t'`` (``t'`` the number of outcomes included),
            block-diagonal across outcomes; for one outcome, that outcome's
            ``MultivariateNormal`` (``... x q x 1``).
        """
        self.eval()
        X = one_input_points(X, self.train_X.shape[-1])
        indices = self._output_indices(output_indices)
        if isinstance(observation_noise, Tensor):
            if observation_noise.shape[-1] != self.num_outputs:
                raise BotorchTensorDimensionError(
                    "observation_noise must have shape batch_shape x q x "
                    f"{self.num_outputs}; got {tuple(observation_noise.shape)}."
                )
        mvns = []
        for j in indices:
            noise = observation_noise
            if isinstance(noise, Tensor):
                noise = noise[..., j : j + 1]
            outcome = self.outcome_models[j]
            mvns.append(outcome.posterior(X, observation_noise=noise).distribution)
        if len(mvns) == 1:
            # One outcome: its own posterior, ``... x q x 1`` (``SingleTaskGP``
            # raises here: gpytorch needs two to form a multitask normal).
            distribution = mvns[0]
        else:
            shape = torch.broadcast_shapes(*(mvn.batch_shape for mvn in mvns))
            distribution = MultitaskMultivariateNormal.from_independent_mvns(
                [mvn.expand(shape) if mvn.batch_shape != shape else mvn for mvn in mvns]
            )
        posterior = GPyTorchPosterior(distribution=distribution)
        transform = self._outcome_transform_of(indices)
        if transform is not None:
            posterior = transform.untransform_posterior(
                posterior, X=self.transform_inputs(X)
            )
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def fantasize(
        self,
        X: Tensor,
        sampler: MCSampler,
        observation_noise: Tensor | None = None,
        **kwargs: Any,
    ) -> MultiOutputNystromGP:
        r"""A fantasy model, as ``SingleTaskGP.fantasize``.

        With fixed noise and no ``observation_noise``, each outcome's fantasies
        take the mean of its training noise, as BoTorch does for one outcome.

        Args:
            X: A ``batch_shape x n' x d`` tensor of inputs.
            sampler: The sampler of the fantasised observations.
            observation_noise: An optional ``batch_shape x n' x t`` tensor of noise
                variances (outcome-transformed units).
            kwargs: Passed to ``FantasizeMixin.fantasize``.

        Returns:
            The fantasy model, of batch shape ``sample_shape x batch_shape``.
        """
        if observation_noise is None and self.train_Yvar is not None:
            # ``batch_shape x t x n`` -> ``batch_shape x 1 x t``: the mean
            # training noise of each outcome.
            observation_noise = self.likelihood.noise.mean(-1).unsqueeze(-2)
        return super().fantasize(
            X, sampler, observation_noise=observation_noise, **kwargs
        )

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs: Any
    ) -> MultiOutputNystromGP:
        r"""The model conditioned on more observations of every outcome.

        Each outcome's model is conditioned on its column, inducing sets fixed (see
        ``NystromGP.condition_on_observations``).

        Args:
            X: A ``batch_shape x n' x d`` tensor of inputs.
            Y: A ``batch_shape' x n' x t`` tensor of observations.
            noise: Noise variances shaped like ``Y`` (outcome-transformed units);
                required for fixed-noise models.
            kwargs: Ignored.

        Returns:
            A new ``MultiOutputNystromGP``; with batch dimensions (fantasies) a
            batched model that cannot be refitted.
        """
        t = self.num_outputs
        if Y.dim() < 2 or Y.shape[-1] != t:
            raise UnsupportedError(
                f"Y must have shape batch_shape x n' x {t}, got {tuple(Y.shape)}."
            )
        if noise is not None and noise.shape[-1] != t:
            raise UnsupportedError(
                f"noise must have the shape of Y, got {tuple(noise.shape)}."
            )
        self.eval()
        Y_tf = Y
        if hasattr(self, "outcome_transform"):
            Y_tf, _ = self.outcome_transform(Y, None, X=self.transform_inputs(X))
        models = [
            model.condition_on_observations(
                X,
                Y_tf[..., j : j + 1],
                noise=None if noise is None else noise[..., j : j + 1],
            )
            for j, model in enumerate(self.outcome_models)
        ]
        new = self._copy_without_outcome_models()
        new._set_outcome_models(models)
        if len(new.batch_shape) == 0:
            raw = (self.train_X, self.train_Y, self.train_Yvar)
            Yvar_tf = None if noise is None else floor_fixed_noise(noise)
            transform = getattr(self, "outcome_transform", None)
            raw = data.appended_data(raw, X, Y, Yvar_tf, transform)
            new.train_X, new.train_Y, new.train_Yvar = raw
        return new

    def _copy_without_outcome_models(self) -> MultiOutputNystromGP:
        # The outcomes' models are replaced by the caller; copying them (and the
        # n-sized data) would be wasted.
        raw = [getattr(self, name) for name in _RAW_DATA]
        return data.copy_sharing(self, [*self.outcome_models.modules(), *raw])

    def subset_output(self, idcs: list[int]) -> NystromGP | MultiOutputNystromGP:
        r"""The model of some of the outcomes.

        Args:
            idcs: The outcomes to keep.

        Returns:
            A ``NystromGP`` for one index (on the raw column, with the subset
            outcome transform), else a ``MultiOutputNystromGP``, sharing nothing
            with this model.
        """
        indices = self._output_indices(idcs)
        transform = self._outcome_transform_of(indices)
        Yvar = None if self.train_Yvar is None else self.train_Yvar[..., indices]
        if len(indices) == 1:
            new = copy.deepcopy(self.outcome_models[indices[0]])
        else:
            new = self._copy_without_outcome_models()
            new._set_outcome_models(
                [copy.deepcopy(self.outcome_models[j]) for j in indices]
            )
            new._num_outputs = len(indices)
        # Raw data with the outcomes' transform: the same targets.
        new.train_Y, new.train_Yvar = self.train_Y[..., indices], Yvar
        if transform is not None:
            new.outcome_transform = copy.deepcopy(transform)
        if len(indices) == 1:
            new.clear_posterior_state()
        return new

    # -------------------------------------------------------- module plumbing

    def _set_transformed_inputs(self) -> None:
        pass  # inputs are transformed on use: nothing to swap on eval()

    def _revert_to_original_inputs(self) -> None:
        pass

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        # The outcomes' models move their own data; this moves the raw data.
        super()._apply(fn, *args, **kwargs)
        data.apply_to_data(self, fn, _RAW_DATA)
        return self

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        keep_transforms: bool = True,
        assign: bool = False,
    ) -> None:
        r"""Load hyperparameters and transforms, then re-derive what depends on them.

        As ``NystromGP.load_state_dict``, for every outcome: the outcomes' models
        take their columns of the targets under the loaded outcome transform,
        and restore their inducing sets (or re-run their rules at the loaded
        hyperparameters, for a state without them).
        """
        torch.nn.Module.load_state_dict(self, state_dict, strict=strict, assign=assign)
        transform = getattr(self, "input_transform", None)
        if transform is not None:
            transform.eval()
        Y, Yvar = data.transformed_targets(
            self.train_Y,
            self.train_Yvar,
            getattr(self, "outcome_transform", None),
            self.transformed_train_X,
        )
        for j, model in enumerate(self.outcome_models):
            model.train_Y = Y[..., j : j + 1]
            if Yvar is not None:
                model.train_Yvar = Yvar[..., j : j + 1]
            model.retransform_targets()
            model.restore_loaded_inducing()

    construct_inputs = classmethod(data.construct_inputs)


# ``NystromGP(train_X, train_Y)`` of ``n x t`` observations builds this class.
NystromGP._multi_output_class = MultiOutputNystromGP


def copy_per_model(value: Any, what: str) -> Any:
    r"""A user's module or rule, copied for one of a container's models.

    Args:
        value: A kernel, mean, likelihood or selection rule, or None.
        what: What each model is (``"outcome"``, ``"batch element"``), for the
            message.

    Returns:
        A deep copy (None stays None).
    """
    if value is None:
        return None
    if isinstance(value, FixedNoiseGaussianLikelihood):
        raise UnsupportedError(
            "Pass train_Yvar for fixed noise; a FixedNoiseGaussianLikelihood "
            f"cannot be shared by several models (one per {what})."
        )
    return copy.deepcopy(value)
