#!/usr/bin/env python3
r"""The training data of a ``NystromGP`` and the transforms applied to them.

The model keeps the raw data as plain attributes (``train_X``, ``train_Y``,
``train_Yvar``), not buffers, so that a state dict carries no data-sized tensor
and loads into a model on other data (Ax's cross-validation does that). What the
kernel and the likelihood see is derived from them on use: the inputs through
:func:`transform_like_training`, the one place the input transform is applied
to training data (never cached, so a learned transform such as ``Warp`` is seen
as it is during a fit), and the targets through the outcome transform
(:func:`transformed_targets`), re-derived whenever the data or the transform
change. Test inputs go through BoTorch's ``transform_inputs``, as in
``SingleTaskGP``.

These functions are shared by ``NystromGP`` and ``MultiOutputNystromGP``: the
constructor's checks, transforms and default modules, growing, copying (without
the data) and moving the data, and ``construct_inputs``.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import torch
from botorch import settings
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.exceptions.warnings import InputDataWarning
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_gaussian_likelihood_with_lognormal_prior,
)
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import ConstantMean, Mean
from torch import Tensor

from botorch_sketch.models.validation import (
    check_gaussian_likelihood,
    check_unbatched_kernel,
    inputs_from_dataset,
)

#: The data attributes: a copy for ``fantasize`` shares them, ``Module.to`` moves them.
DATA_ATTRIBUTES = ("train_X", "train_Y", "train_Yvar", "_train_targets")


def check_one_outcome(model_name: str, train_Y: Any) -> None:
    r"""Refuse ``n x t`` observations (``t > 1``), naming the model of several.

    Args:
        model_name: The class name, for the message.
        train_Y: The constructor's ``train_Y``.
    """
    if isinstance(train_Y, Tensor) and train_Y.dim() == 2 and train_Y.shape[1] > 1:
        raise UnsupportedError(
            f"{model_name} models one outcome; train_Y has {train_Y.shape[1]} "
            "columns. For independent outcomes build MultiOutputNystromGP(train_X, "
            "train_Y, ...) from botorch_sketch.models, one NystromGP per outcome."
        )


def fit_training_transforms(
    train_X: Tensor,
    train_Y: Tensor,
    train_Yvar: Tensor | None,
    outcome_transform: OutcomeTransform | _DefaultType | None,
    input_transform: InputTransform | None,
) -> tuple[Tensor, OutcomeTransform | None, Tensor, Tensor | None]:
    r"""Validate the constructor's data and fit the transforms on them.

    As ``SingleTaskGP``'s constructor: the inputs are transformed without
    gradients (a learning input transform learns here), the tensors checked,
    the default ``Standardize`` built and the outcome transform fitted on the
    data (then set to eval mode).

    Args:
        train_X: A ``n x d`` tensor of training inputs.
        train_Y: A ``n x t`` tensor of training observations.
        train_Yvar: None or a ``n x t`` tensor of noise variances.
        outcome_transform: The constructor argument (``DEFAULT`` for
            ``Standardize(m=t)``).
        input_transform: The constructor argument.

    Returns:
        The transformed inputs, the outcome transform (None for none), and the
        transformed observations and noise variances.
    """
    with torch.no_grad():
        transformed_X = train_X
        if input_transform is not None:
            # What BoTorch's ``Model.transform_inputs`` does with a transform.
            input_transform.to(train_X)
            transformed_X = input_transform(train_X)
    GPyTorchModel._validate_tensor_args(X=transformed_X, Y=train_Y, Yvar=train_Yvar)
    warn_if_constant(train_Y)
    if outcome_transform == DEFAULT:
        outcome_transform = Standardize(m=train_Y.shape[-1])
    Y_tf, Yvar_tf = train_Y, train_Yvar
    if outcome_transform is not None:
        outcome_transform.train()
        Y_tf, Yvar_tf = outcome_transform(train_Y, train_Yvar, X=transformed_X)
        outcome_transform.eval()
        # The raw data were checked; a transform can still make NaN or
        # infinity (``Log`` of Y <= 0), which gave all-NaN posteriors.
        for name, value in (("train_Y", Y_tf), ("train_Yvar", Yvar_tf)):
            if value is not None and not bool(torch.isfinite(value).all()):
                raise InputDataError(
                    f"The outcome transform {type(outcome_transform).__name__} "
                    f"made NaN or infinite values of {name} (e.g. Log of a "
                    "non-positive Y); check the data against the transform."
                )
    return transformed_X, outcome_transform, Y_tf, Yvar_tf


#: Outcomes whose standard deviation is at most this fraction of their size
#: (of 1 when smaller) are (nearly) constant, as ``run_large_batch`` reads its
#: design's.
CONSTANT_SPREAD = 1e-8


#: Whether :func:`warn_if_constant` warns, in this thread (see
#: :func:`constant_outcomes_not_warned`).
_WARN_CONSTANT: ContextVar[bool] = ContextVar("warn_if_constant", default=True)


@contextlib.contextmanager
def constant_outcomes_not_warned() -> Iterator[None]:
    r"""Skip :func:`warn_if_constant` inside the block, in this thread only.

    For a model rebuilt on the data it was built on and more (an
    ``IncrementalGP``'s refits): the first build warned already. A filter
    would not do: Python's registry that shows a warning once per place is
    reset by every change of the filters, which the package's own
    ``catch_warnings`` blocks make.
    """
    token = _WARN_CONSTANT.set(False)
    try:
        yield
    finally:
        _WARN_CONSTANT.reset(token)


def warn_if_constant(train_Y: Tensor) -> None:
    r"""Warn (``InputDataWarning``) of outcomes that are (nearly) constant.

    ``SingleTaskGP`` warns of them: its ``Standardize`` leaves a spread below
    ``1e-8`` unscaled and BoTorch's check finds the targets "not
    standardized"; its fit then degrades, and so does this model's (a spread
    of ``1e-12`` gave no warning). Like ``SingleTaskGP``'s check, this one is
    skipped under ``botorch.settings.validate_input_scaling(False)``.

    Args:
        train_Y: The raw ``n x t`` observations.
    """
    if (
        settings.validate_input_scaling.off()
        or not _WARN_CONSTANT.get()
        or train_Y.shape[-2] < 2
    ):
        return
    with torch.no_grad():
        std = train_Y.std(dim=-2)
        size = train_Y.abs().amax(dim=-2).clamp_min(1.0)
        constant = bool((std <= CONSTANT_SPREAD * size).any())
    if constant:
        warnings.warn(
            "Data (outcome observations) is not standardized: train_Y is (nearly) "
            f"constant (a spread at most {CONSTANT_SPREAD:g} of its size). The "
            "model cannot tell the points apart and its fit degrades, as "
            "SingleTaskGP's does.",
            InputDataWarning,
            stacklevel=4,
        )


def transform_like_training(
    input_transform: InputTransform | None, X: Tensor
) -> Tensor:
    r"""Inputs through the input transform as it acts on training data.

    ``preprocess_transform`` (e.g. no perturbation), for the training inputs
    and for inputs in their space (fixed inducing inputs, observations
    summarised elsewhere).

    Args:
        input_transform: The model's input transform, or None.
        X: A ``n x d`` tensor in the space of ``train_X``.

    Returns:
        The transformed inputs.
    """
    if input_transform is not None:
        return input_transform.preprocess_transform(X)
    return X


def transformed_targets(
    train_Y: Tensor,
    train_Yvar: Tensor | None,
    outcome_transform: OutcomeTransform | None,
    transformed_X: Tensor,
) -> tuple[Tensor, Tensor | None]:
    r"""``train_Y`` and ``train_Yvar`` through the (eval-mode) outcome transform.

    Args:
        train_Y: The raw ``n x t`` observations.
        train_Yvar: The raw ``n x t`` noise variances, or None.
        outcome_transform: The model's outcome transform, or None.
        transformed_X: The transformed training inputs (stratified transforms
            read them).

    Returns:
        The transformed observations and noise variances.
    """
    if outcome_transform is None:
        return train_Y, train_Yvar
    outcome_transform.eval()
    with torch.no_grad():
        return outcome_transform(train_Y, train_Yvar, X=transformed_X)


def appended_data(
    data: tuple[Tensor, Tensor, Tensor | None],
    X: Tensor,
    Y: Tensor,
    Yvar_tf: Tensor | None,
    outcome_transform: OutcomeTransform | None,
) -> tuple[Tensor, Tensor, Tensor | None]:
    r"""The raw data ``(train_X, train_Y, train_Yvar)`` with new rows appended.

    Args:
        data: The raw training data.
        X: A ``n' x d`` tensor of new inputs.
        Y: A ``n' x t`` tensor of new raw observations.
        Yvar_tf: Their ``n' x t`` outcome-transformed noise variances (read only
            if the data have noise variances, which are kept raw).
        outcome_transform: The model's outcome transform, or None.

    Returns:
        The grown raw data.
    """
    train_X, train_Y, train_Yvar = data
    if train_Yvar is not None:
        Yvar = Yvar_tf
        if outcome_transform is not None:
            _, Yvar = outcome_transform.untransform(torch.zeros_like(Y), Yvar)
        train_Yvar = torch.cat([train_Yvar, Yvar], dim=-2)
    train_X = torch.cat([train_X, X], dim=-2)
    train_Y = torch.cat([train_Y, Y], dim=-2)
    return train_X, train_Y, train_Yvar


def copy_sharing(
    module: Any, shared: Iterable[Any], dropped: Iterable[Any] = ()
) -> Any:
    r"""A deep copy of ``module`` that shares some objects and drops others.

    ``fantasize`` copies a model often: its ``n``-sized data (and whatever else
    the caller replaces) are not worth copying.

    Args:
        module: The model.
        shared: Objects the copy refers to as they are; a None entry is skipped.
        dropped: Objects the copy holds None in place of (caches).

    Returns:
        The copy.
    """
    memo: dict[int, Any] = {id(t): None for t in dropped if t is not None}
    memo.update({id(t): t for t in shared if t is not None})
    return copy.deepcopy(module, memo)


def default_modules(
    model_name: str,
    likelihood: Likelihood | None,
    mean_module: Mean | None,
    covar_module: Kernel | None,
    train_Yvar: Tensor | None,
    dim: int,
) -> tuple[Likelihood, Mean, Kernel]:
    r"""The constructor's modules, defaulted as in ``SingleTaskGP`` and checked.

    Args:
        model_name: The class name, for messages.
        likelihood: A Gaussian likelihood, or None: BoTorch's with a log-normal
            noise prior, or a ``FixedNoiseGaussianLikelihood`` of ``train_Yvar``.
        mean_module: A mean, or None for ``ConstantMean()``.
        covar_module: An unbatched kernel, or None for BoTorch's RBF kernel with
            a dimension-scaled lengthscale prior.
        train_Yvar: The ``n x 1`` observed noise variances, or None.
        dim: The input dimension (after the input transform).

    Returns:
        The likelihood, the mean and the kernel.
    """
    if likelihood is None and train_Yvar is None:
        likelihood = get_gaussian_likelihood_with_lognormal_prior()
    elif likelihood is None:
        likelihood = FixedNoiseGaussianLikelihood(noise=train_Yvar.squeeze(-1).clone())
    check_gaussian_likelihood(model_name, likelihood, train_Yvar)
    mean_module = ConstantMean() if mean_module is None else mean_module
    if covar_module is None:
        covar_module = get_covar_module_with_dim_scaled_prior(ard_num_dims=dim)
    check_unbatched_kernel(model_name, covar_module)
    return likelihood, mean_module, covar_module


def apply_to_data(
    model: Any,
    fn: Callable[[Tensor], Tensor],
    names: Iterable[str] = DATA_ATTRIBUTES,
) -> bool:
    r"""Apply ``fn`` to a model's data attributes (``Module.to``); whether any moved.

    ``Tensor.to`` returns the same tensor when it neither moves nor casts, which
    BoTorch's acquisition functions rely on: they call ``model.to(X)`` on every
    evaluation, and the posterior state is dropped only if that changed something.

    Args:
        model: The model.
        fn: The function ``Module._apply`` applies.
        names: The attributes.

    Returns:
        Whether any attribute changed.
    """
    moved = False
    for name in names:
        value = getattr(model, name, None)
        if value is not None:
            converted = fn(value)
            moved = moved or converted is not value
            setattr(model, name, converted)
    return moved


def construct_inputs(
    cls: type,
    training_data: SupervisedDataset,
    inducing: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    r"""Constructor arguments from a dataset (the hook Ax calls).

    ``construct_inputs`` of ``NystromGP`` and ``MultiOutputNystromGP``.

    Args:
        cls: The model class.
        training_data: A ``SupervisedDataset``.
        inducing: The ``inducing`` constructor argument.
        kwargs: Other options Ax passes (``categorical_features`` and the like);
            empty ones are ignored, others are not supported.

    Returns:
        A dict of keyword arguments for the model's constructor.
    """
    inputs = inputs_from_dataset(cls.__name__, training_data, kwargs)
    if inducing is not None:
        inputs["inducing"] = inducing
    return inputs
