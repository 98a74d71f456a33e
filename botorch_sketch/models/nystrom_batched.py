#!/usr/bin/env python3
r"""Batched training data: a container of one ``NystromGP`` per batch element.

:class:`BatchedNystromGP` is what ``NystromGP(train_X, train_Y)`` builds for
``b x n x d`` inputs and ``b x n x 1`` observations, as ``SingleTaskGP`` builds a
batched model of them: BoTorch's ``batch_cross_validation`` passes the folds of
a cross-validation so (``gen_loo_cv_folds``: ``n`` folds of ``n - 1`` points),
fits them with one ``fit_gpytorch_mll`` and reads one posterior over
``b x q x 1``. Like a batched ``SingleTaskGP``, each element has its own
hyperparameters, fitted on its own data; here each element is the
single-output ``NystromGP`` of its data (:attr:`~BatchedNystromGP.batch_models`),
with its own inducing set. As in ``SingleTaskGP``, the transforms are fitted on
the batched data once: the outcome transform (``Standardize(m=1,
batch_shape=[b])`` by default) per element, the input transform over all of
them; the elements take the transformed data.

It has no fantasies (``condition_on_observations``, ``fantasize``): it serves
cross-validation and batched evaluation. One batch dimension and one output are
supported. Its state dict is per element (``batch_models.<i>.``); a state in a
batched ``SingleTaskGP``'s layout (entries with a leading batch dimension, or
shared) loads too, element ``i`` taking index ``i`` of each entry.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.posteriors.transformed import TransformedPosterior
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import ExactMarginalLogLikelihood, MarginalLogLikelihood
from gpytorch.models import GP
from linear_operator import to_linear_operator
from torch import Tensor
from torch.nn import ModuleList

from botorch_sketch.models.nystrom import data
from botorch_sketch.models.nystrom.fitting import learns_inputs
from botorch_sketch.models.nystrom.inducing import STATE_KEYS as INDUCING_STATE_KEYS
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.models.nystrom_outcomes import OutcomeLikelihoods, copy_per_model
from botorch_sketch.models.single_output import NoFantasiesMixin, SingleOutputMixin
from botorch_sketch.models.validation import (
    check_output_indices,
    check_training_data,
    one_input_points,
)
from botorch_sketch.sketching.rules import SelectionRule

#: The raw data the container keeps (its elements' models keep them transformed).
_RAW_DATA = ("train_X", "train_Y", "train_Yvar")
#: The dimensions of an unbatched model's inducing set entries (``m x d``,
#: ``m``, 4 flags): one more is a batch of them.
_INDUCING_DIMS = dict(zip(INDUCING_STATE_KEYS, (2, 1, 1), strict=True))


def check_batched_data(
    model_name: str, train_X: Tensor, train_Y: Tensor, train_Yvar: Tensor | None
) -> None:
    r"""Validate ``b x n x d`` inputs with ``b x n x 1`` observations (and noise).

    Args:
        model_name: The class name, for messages.
        train_X: Expected ``b x n x d``.
        train_Y: Expected ``b x n x 1``.
        train_Yvar: Expected None or ``b x n x 1``, non-negative.

    Raises:
        UnsupportedError: for more than one batch dimension or output.
        BotorchTensorDimensionError: for mismatched shapes.
        InputDataError: for empty, NaN, infinite or negative-variance data.
    """
    if not isinstance(train_Y, Tensor) or train_X.dim() != 3:
        raise UnsupportedError(
            f"{model_name} takes one batch dimension: train_X of b x n x d; got "
            f"{tuple(train_X.shape)}."
        )
    if train_Y.dim() != 3 or train_Y.shape[-1] != 1:
        message = f"train_Y must have shape b x n x 1, got {tuple(train_Y.shape)}."
        if train_Y.dim() == 3:
            raise UnsupportedError(
                f"{model_name} models one output of batched data; {message}"
            )
        raise BotorchTensorDimensionError(message)
    if train_X.shape[0] != train_Y.shape[0] or train_X.shape[0] == 0:
        raise BotorchTensorDimensionError(
            "train_X and train_Y must have the same, non-zero, batch size; got "
            f"{train_X.shape[0]} and {train_Y.shape[0]}."
        )
    if train_Yvar is not None and (
        not isinstance(train_Yvar, Tensor) or train_Yvar.shape != train_Y.shape
    ):
        shape = tuple(train_Yvar.shape) if isinstance(train_Yvar, Tensor) else None
        raise BotorchTensorDimensionError(
            f"train_Yvar must have the shape of train_Y, {tuple(train_Y.shape)}; "
            f"got {shape}."
        )
    for i in range(train_X.shape[0]):
        check_training_data(
            model_name,
            train_X[i],
            train_Y[i],
            None if train_Yvar is None else train_Yvar[i],
        )


class BatchedNystromGP(SingleOutputMixin, NoFantasiesMixin, GPyTorchModel, GP):
    r"""Batched training data, one :class:`NystromGP` sketch per batch element.

    It behaves as a ``SingleTaskGP`` of ``b x n x d`` data: ``batch_shape ==
    [b]``, posteriors over ``broadcast(batch_shape, [b]) x q x 1``,
    ``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))``
    fitting every element's hyperparameters on its data, ``train_inputs`` of
    ``b x n x d``. Element ``i`` is the ``NystromGP`` of the transformed data of
    batch ``i`` (``batch_models[i]``).

    Example:
        >>> cv_folds = gen_loo_cv_folds(train_X, train_Y)
        >>> cv_results = batch_cross_validation(
        ...     model_cls=NystromGP,
        ...     mll_cls=ExactMarginalLogLikelihood,
        ...     cv_folds=cv_folds,
        ... )  # a BatchedNystromGP of n folds
    """

    _num_outputs = 1

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
        r"""Build one single-output model per batch element.

        Args:
            train_X: A ``b x n x d`` tensor of training inputs.
            train_Y: A ``b x n x 1`` tensor of training observations.
            train_Yvar: An optional ``b x n x 1`` tensor of observed noise
                variances.
            inducing: As for ``NystromGP``; a rule is copied per element, and
                fixed ``m x d`` inducing inputs (in the space of ``train_X``)
                are shared.
            covar_module: An unbatched kernel, copied per element (each fits its
                own copy); defaults as in ``NystromGP``.
            mean_module: An unbatched mean, copied per element.
            likelihood: A likelihood without batch dimensions, copied per element.
            outcome_transform: An outcome transform of batch shape ``[b]``,
                defaulting to ``Standardize(m=1, batch_shape=[b])`` as in
                ``SingleTaskGP``; None for no transform.
            input_transform: An input transform without learnable parameters,
                fitted on all the batched inputs (as in ``SingleTaskGP``).
            fit_subset_size: Sets ``fit_subset_size`` for every element's model.
        """
        name = type(self).__name__
        check_batched_data(name, train_X, train_Y, train_Yvar)
        if learns_inputs(input_transform):
            raise UnsupportedError(
                f"{name} fits each batch element's model on transformed inputs, "
                "so an input transform with learnable parameters (e.g. Warp) "
                "would not be learned; transform the inputs beforehand."
            )
        if outcome_transform == DEFAULT:
            outcome_transform = Standardize(m=1, batch_shape=train_X.shape[:-2])
        transformed_X, outcome_transform, Y_tf, Yvar_tf = data.fit_training_transforms(
            train_X, train_Y, train_Yvar, outcome_transform, input_transform
        )
        super().__init__()
        if input_transform is not None:
            input_transform.eval()  # fitted: the elements see fixed inputs
            self.input_transform = input_transform
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        if isinstance(inducing, Tensor) and input_transform is not None:
            inducing = data.transform_like_training(input_transform, inducing)
        models = [
            NystromGP(
                transformed_X[i].detach(),
                Y_tf[i].detach(),
                train_Yvar=None if Yvar_tf is None else Yvar_tf[i].detach(),
                inducing=inducing
                if isinstance(inducing, Tensor)
                else copy_per_model(inducing, "batch element"),
                covar_module=copy_per_model(covar_module, "batch element"),
                mean_module=copy_per_model(mean_module, "batch element"),
                likelihood=copy_per_model(likelihood, "batch element"),
                outcome_transform=None,
                fit_subset_size=fit_subset_size,
            )
            for i in range(train_X.shape[0])
        ]
        self.batch_models = ModuleList(models)
        self.likelihood = OutcomeLikelihoods([m.likelihood for m in models])
        self.train_X, self.train_Y, self.train_Yvar = train_X, train_Y, train_Yvar
        self.to(train_X)

    @property
    def batch_shape(self) -> torch.Size:
        r"""``[b]``, the batch of the training data."""
        return torch.Size([len(self.batch_models)])

    @property
    def train_inputs(self) -> tuple[Tensor]:
        r"""The ``b x n x d`` input-transformed training inputs, as ``SingleTaskGP``."""
        return (torch.stack([m.train_X for m in self.batch_models]),)

    @property
    def train_targets(self) -> Tensor:
        r"""The ``b x n`` outcome-transformed training targets."""
        return torch.stack([m.train_targets for m in self.batch_models])

    @property
    def is_exact(self) -> bool:
        r"""Whether every element's model is the exact GP."""
        return all(m.is_exact for m in self.batch_models)

    def log_marginal_likelihood(self) -> Tensor:
        r"""Every element's fitting objective (``NystromGP``'s): a ``b`` tensor."""
        return torch.stack([m.log_marginal_likelihood() for m in self.batch_models])

    def compute_custom_loss(
        self, mll: MarginalLogLikelihood | None = None, **kwargs: Any
    ) -> Tensor:
        r"""The sum over elements of their losses (as a batched ``SingleTaskGP``)."""
        return sum(m.compute_custom_loss() for m in self.batch_models)

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit every element's model as ``fit_gpytorch_mll`` fits a ``NystromGP``.

        The elements share no hyperparameter, so their fits are independent;
        ``closure`` is not supported (each element builds its own), the other
        arguments are passed to every fit. ``mll`` is returned in eval mode if
        every element's fit succeeded.
        """
        if closure is not None:
            raise UnsupportedError(
                "A batched NystromGP fits each batch element with its own closure; "
                "pass closure=None."
            )
        fitted = [
            model.custom_fit(
                ExactMarginalLogLikelihood(model.likelihood, model),
                closure_kwargs=closure_kwargs,
                optimizer_kwargs=optimizer_kwargs,
                **kwargs,
            )
            for model in self.batch_models
        ]
        return mll.train(any(sub.training for sub in fitted))

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Callable | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior | TransformedPosterior:
        r"""The elements' DTC posteriors at ``X``, batched as ``SingleTaskGP``'s.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs whose ``batch_shape``
                broadcasts with the model's ``[b]`` (e.g. ``b x q x d``, or
                ``q x d`` for the same points in every element).
            output_indices: None or ``[0]`` (the model has one output).
            observation_noise: As for ``NystromGP``; a tensor is
                ``batch_shape x q x 1`` (broadcasting with ``[b]``).
            posterior_transform: An optional ``PosteriorTransform``.
            kwargs: Ignored.

        Returns:
            A ``GPyTorchPosterior`` over ``broadcast(batch_shape, [b]) x q x 1``.
        """
        one = output_indices is None or check_output_indices(output_indices, 1) == [0]
        if not one:
            raise UnsupportedError(
                f"{type(self).__name__} has one output; got {output_indices=}."
            )
        self.eval()
        X = one_input_points(X, self.train_X.shape[-1])
        if not isinstance(X, Tensor) or X.dim() < 2:
            raise BotorchTensorDimensionError(
                "X must have shape batch_shape x q x d, got "
                f"{tuple(X.shape) if isinstance(X, Tensor) else type(X)}."
            )
        X_tf = self.transform_inputs(X)
        try:
            shape = torch.broadcast_shapes(X_tf.shape[:-2], self.batch_shape)
        except RuntimeError as e:
            raise BotorchTensorDimensionError(
                f"X's batch shape {tuple(X.shape[:-2])} does not broadcast with the "
                f"model's batch shape {tuple(self.batch_shape)}."
            ) from e
        X_tf = X_tf.expand(*shape, *X_tf.shape[-2:])
        if isinstance(observation_noise, Tensor):
            observation_noise = observation_noise.expand(*shape, X.shape[-2], 1)
        means, covariances = [], []
        for i, model in enumerate(self.batch_models):
            noise = observation_noise
            if isinstance(noise, Tensor):
                noise = noise[..., i, :, :]
            mvn = model.posterior(X_tf[..., i, :, :], observation_noise=noise)
            means.append(mvn.distribution.mean)
            covariances.append(mvn.distribution.covariance_matrix)
        mean = torch.stack(means, dim=-2)
        covariance = torch.stack(covariances, dim=-3)
        distribution = MultivariateNormal(mean, to_linear_operator(covariance))
        posterior = GPyTorchPosterior(distribution=distribution)
        transform = getattr(self, "outcome_transform", None)
        if transform is not None:
            posterior = transform.untransform_posterior(posterior, X=X_tf)
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def _set_transformed_inputs(self) -> None:
        pass  # the elements hold the transformed inputs

    def _revert_to_original_inputs(self) -> None:
        pass

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        # The elements move their own data; this moves the raw data.
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
        r"""Load hyperparameters, transforms and inducing sets of every element.

        Two layouts load: this model's own (``batch_models.<i>.`` entries), and
        that of a batched ``SingleTaskGP``, whose entries carry a leading batch
        dimension of size ``b`` (element ``i`` takes index ``i``) or are shared
        by every element: a batched ``SingleTaskGP``'s state, or an unbatched
        ``NystromGP``'s expanded to ``b`` (as BoTorch's RGPE tutorial expands
        its target model's state for leave-one-out folds). The elements take
        the data as the loaded transforms transform them, then restore their
        inducing sets (see ``NystromGP.load_state_dict``): an unbatched
        model's set, in each fold those of its inputs the fold holds.

        Args:
            state_dict: The state, in either layout.
            strict: As for ``torch.nn.Module.load_state_dict``.
            keep_transforms: Ignored: the targets always follow the loaded
                outcome transform, as ``NystromGP``'s do.
            assign: As for ``torch.nn.Module.load_state_dict``.
        """
        if not any(k.startswith("batch_models.") for k in state_dict):
            state_dict = self._split_batched_state(state_dict)
        torch.nn.Module.load_state_dict(self, state_dict, strict=strict, assign=assign)
        transform = getattr(self, "input_transform", None)
        if transform is not None:
            transform.eval()
        X = data.transform_like_training(transform, self.train_X)
        Y, Yvar = data.transformed_targets(
            self.train_Y, self.train_Yvar, getattr(self, "outcome_transform", None), X
        )
        for i, model in enumerate(self.batch_models):
            model.train_X, model.train_Y = X[i].detach(), Y[i]
            if Yvar is not None:
                model.train_Yvar = Yvar[i]
            model.retransform_targets()
            model.restore_loaded_inducing()

    def _split_batched_state(self, state_dict: Mapping[str, Any]) -> dict[str, Any]:
        r"""A state in a batched ``SingleTaskGP``'s layout, in this model's.

        An element's entry of the element's own shape is shared; one of ``b x``
        that shape gives element ``i`` its index ``i`` (the inducing set's
        entries, sized by the set, by their number of dimensions). The
        transforms' entries stay the container's, a ``b x`` copy of a shared
        entry (``Standardize``'s ``_is_trained`` expanded) taken once. Entries
        that fit neither way are passed on for torch to name the mismatch.
        """
        b, own = len(self.batch_models), self.state_dict()
        element = self.batch_models[0].state_dict()
        transforms = ("outcome_transform.", "input_transform.")
        split: dict[str, Any] = {}
        inducing: dict[str, Tensor] = {}
        for key, value in state_dict.items():
            if key.startswith(transforms) or key not in element:
                split[key] = _container_entry(value, own.get(key), b)
            elif key in INDUCING_STATE_KEYS:
                inducing[key] = value
            else:
                shape = element[key].shape
                batched = value.shape == (b, *shape) and value.shape != shape
                for i in range(b):
                    split[f"batch_models.{i}.{key}"] = value[i] if batched else value
        for key, value in self._inducing_entries(inducing, split).items():
            dims = _INDUCING_DIMS[key] + 1
            batched = value.dim() == dims and value.shape[0] == b
            for i in range(b):
                split[f"batch_models.{i}.{key}"] = value[i] if batched else value
        return split

    def _inducing_entries(
        self, inducing: dict[str, Tensor], split: Mapping[str, Any]
    ) -> dict[str, Tensor]:
        # An unbatched model's inducing inputs are in the space of its raw
        # inputs; the elements' data are input-transformed: transform them by
        # the loaded input transform, as the container transforms fixed inputs.
        inputs = inducing.get("inducing_inputs")
        transform = getattr(self, "input_transform", None)
        if inputs is None or transform is None or inputs.numel() == 0:
            return inducing
        prefix = "input_transform."
        loaded = copy.deepcopy(transform)
        loaded.load_state_dict(
            {k[len(prefix) :]: v for k, v in split.items() if k.startswith(prefix)},
            strict=False,
        )
        loaded.eval()
        inputs = data.transform_like_training(loaded, inputs.to(self.train_X))
        return {**inducing, "inducing_inputs": inputs}

    @classmethod
    def construct_inputs(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        r"""Not supported: a dataset holds unbatched data."""
        raise InputDataError(
            f"{cls.__name__} is built from batched tensors, not from a dataset; "
            "NystromGP.construct_inputs builds the unbatched model."
        )


def _container_entry(value: Any, own: Tensor | None, b: int) -> Any:
    # A transform's entry: as it is where it fits (or is unknown: torch names
    # it); a ``b x`` expansion of an entry of the container's shape, if its
    # slices agree, taken once; else broadcast to the container's shape.
    if not isinstance(value, Tensor) or own is None or value.shape == own.shape:
        return value
    if value.shape == (b, *own.shape) and bool((value == value[:1]).all()):
        return value[0]
    try:
        return value.expand(own.shape)
    except RuntimeError:
        return value


# ``NystromGP(train_X, train_Y)`` of ``b x n x d`` inputs builds this class.
NystromGP._batched_class = BatchedNystromGP
