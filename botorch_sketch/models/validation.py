#!/usr/bin/env python3
r"""Checks that turn bad input into errors that name the problem.

BoTorch's own ``validate_input_scaling`` can be switched off by a setting and
does not look for infinities; these checks always run.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from gpytorch import settings
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from torch import Tensor


def _check_finite(name: str, value: Tensor) -> None:
    # A finite sum has no NaN or infinite term: one pass over the data (the
    # element-wise test took 3 ms for 10^4 x 60 points, at every step of a
    # loop); an overflowing sum of finite terms gets the element-wise test.
    if bool(torch.isfinite(value.detach().sum())):
        return
    if not bool(torch.isfinite(value).all()):
        kind = "NaN" if bool(torch.isnan(value).any()) else "infinite"
        raise InputDataError(f"{name} contains {kind} values.")


def check_training_data(
    model_name: str, train_X: Tensor, train_Y: Tensor, train_Yvar: Tensor | None
) -> None:
    r"""Validate single-output, non-batched training data.

    Args:
        model_name: The class name, for messages.
        train_X: Expected ``n x d``.
        train_Y: Expected ``n x 1``.
        train_Yvar: Expected None or ``n x 1``, non-negative.

    Raises:
        UnsupportedError: for batched data or several outputs.
        BotorchTensorDimensionError: for mismatched shapes.
        InputDataError: for empty, NaN, infinite or negative-variance data.
    """
    for name, value in (("train_X", train_X), ("train_Y", train_Y)):
        if not isinstance(value, Tensor):
            raise InputDataError(f"{name} must be a torch.Tensor, got {type(value)}.")
    if train_X.dim() != 2:
        if train_X.dim() > 2:
            # The usual source is BoTorch's ``batch_cross_validation`` (its
            # tutorial fits every leave-one-out fold as one batched model):
            # name it, so that the refusal says what is not supported.
            raise UnsupportedError(
                f"{model_name} does not support batched training data (train_X has "
                f"shape {tuple(train_X.shape)}), such as the folds of BoTorch's "
                "batch_cross_validation (its cross-validation tutorial); use one "
                "model per batch (fold)."
            )
        raise BotorchTensorDimensionError(
            f"train_X must have shape n x d, got {tuple(train_X.shape)}."
        )
    if train_Y.dim() != 2:
        raise BotorchTensorDimensionError(
            f"train_Y must have shape n x 1 (an explicit output dimension), got "
            f"{tuple(train_Y.shape)}."
        )
    if train_Y.shape[-1] != 1:
        raise UnsupportedError(
            f"{model_name} models a single output; train_Y has {train_Y.shape[-1]}. "
            "Use a ModelListGP of one model per output."
        )
    if train_X.shape[0] != train_Y.shape[0]:
        raise BotorchTensorDimensionError(
            f"train_X has {train_X.shape[0]} rows but train_Y has {train_Y.shape[0]}."
        )
    if train_X.shape[0] == 0:
        raise InputDataError(f"{model_name} needs at least one training point.")
    if train_X.shape[-1] == 0:
        raise InputDataError("train_X has zero input dimensions.")
    _check_finite("train_X", train_X)
    _check_finite("train_Y", train_Y)
    if train_Yvar is not None:
        if train_Yvar.shape != train_Y.shape:
            raise BotorchTensorDimensionError(
                f"train_Yvar must have the shape of train_Y, {tuple(train_Y.shape)}; "
                f"got {tuple(train_Yvar.shape)}."
            )
        _check_finite("train_Yvar", train_Yvar)
        if bool((train_Yvar < 0).any()):
            raise InputDataError("train_Yvar contains negative noise variances.")


def check_test_inputs(X: Tensor, num_dims: int) -> None:
    r"""Validate ``batch_shape x q x d`` test inputs.

    Args:
        X: The (input-transformed) test inputs.
        num_dims: The number ``d`` of input dimensions the model was trained on.

    Raises:
        BotorchTensorDimensionError: for a wrong shape or input dimension.
        InputDataError: for NaN or infinite inputs.
    """
    if X.dim() < 2:
        raise BotorchTensorDimensionError(
            f"X must have shape batch_shape x q x d, got {tuple(X.shape)}."
        )
    if X.shape[-1] != num_dims:
        raise BotorchTensorDimensionError(
            f"X has {X.shape[-1]} input dimensions but the model was trained on "
            f"{num_dims}."
        )
    _check_finite("X", X)


def check_transformed_test_inputs(
    X: Tensor, transformed_X: Tensor, num_dims: int
) -> None:
    r"""Validate test inputs after the model's input transform.

    The width is checked on what the kernel sees: an input transform may
    change it (BoTorch's ``AppendFeatures`` appends environmental variables to
    each test point, as in its risk-averse BO tutorial), so the raw inputs'
    width says nothing of whether the model takes them.

    Args:
        X: The test inputs as given (``batch_shape x q x d'``; checked finite).
        transformed_X: ``X`` input-transformed.
        num_dims: The number ``d`` of input dimensions the kernel sees (those
            of the transformed training inputs).

    Raises:
        BotorchTensorDimensionError: for a wrong shape or input dimension.
        InputDataError: for NaN or infinite inputs.
    """
    if X.dim() < 2:
        raise BotorchTensorDimensionError(
            f"X must have shape batch_shape x q x d, got {tuple(X.shape)}."
        )
    _check_finite("X", X)
    if transformed_X.shape[-1] != num_dims:
        before = (
            ""
            if X.shape[-1] == transformed_X.shape[-1]
            else f" after the input transform ({X.shape[-1]} before it)"
        )
        raise BotorchTensorDimensionError(
            f"X has {transformed_X.shape[-1]} input dimensions{before} but the model "
            f"was trained on {num_dims}."
        )


def check_output_indices(output_indices: Any, num_outputs: int) -> list[int]:
    r"""``output_indices`` as a list of Python ints, refusing what is not an index.

    ``int(1.7)`` is 1, and ``[0.0] == [0]``: a float (or a bool) read as an
    index gave another outcome's posterior, or passed as output 0, silently.

    Args:
        output_indices: The argument of ``posterior`` or ``subset_output``: an
            iterable of integers (Python or numpy ints, or one-element integer
            tensors).
        num_outputs: The number ``t`` of outputs of the model (for messages).

    Returns:
        The indices as ints, in the given order and not yet range-checked
        (callers refuse out-of-range ones with ``UnsupportedError``).

    Raises:
        InputDataError: for a non-iterable argument, or an element that is not
            an integer (floats, bools, floating point or boolean tensors).
    """
    try:
        values = list(output_indices)
    except TypeError:
        raise InputDataError(
            f"output_indices must be a list of integers (outputs of this "
            f"{num_outputs}-output model); got {output_indices!r}."
        ) from None
    indices = []
    for value in values:
        index = None
        if isinstance(value, Tensor):
            integer = not (
                value.dtype == torch.bool
                or value.is_floating_point()
                or value.is_complex()
            )
            if integer and value.numel() == 1:
                index = int(value.reshape(()))
        elif not isinstance(value, bool):
            try:
                index = operator.index(value)
            except TypeError:
                index = None
        if index is None:
            raise InputDataError(
                f"output_indices must be integers (outputs of this "
                f"{num_outputs}-output model); got {values!r}."
            )
        indices.append(index)
    return indices


def one_input_points(X: Tensor, num_dims: int) -> Tensor:
    r"""A ``q`` tensor of test inputs as ``q x 1`` points, for a one-input model.

    ``SingleTaskGP`` takes it so (gpytorch's ``ExactGP`` adds the input
    dimension), and BoTorch's tutorials pass ``torch.linspace(0, 1, q)``; with
    more input dimensions a 1-d tensor is no set of points and is left to
    :func:`check_test_inputs` to refuse.

    Args:
        X: The test inputs.
        num_dims: The number ``d`` of input dimensions the model was trained on.

    Returns:
        ``X.unsqueeze(-1)`` for a 1-d ``X`` and ``d = 1``; else ``X``.
    """
    if isinstance(X, Tensor) and X.dim() == 1 and num_dims == 1:
        return X.unsqueeze(-1)
    return X


def reject_unsupported_options(model_name: str, options: dict) -> None:
    r"""Raise ``UnsupportedError`` for non-empty options a model does not take.

    Ax passes ``categorical_features``, ``task_feature`` and the like to every
    model's ``construct_inputs``; empty ones are harmless.

    Args:
        model_name: The class name, for the message.
        options: The extra keyword arguments ``construct_inputs`` received.
    """
    unsupported = {k: v for k, v in options.items() if v not in (None, [], {}, ())}
    if unsupported:
        raise UnsupportedError(
            f"{model_name} does not support the options {sorted(unsupported)}."
        )


def inputs_from_dataset(
    model_name: str,
    training_data: SupervisedDataset,
    options: dict,
    **arguments: Any,
) -> dict[str, Any]:
    r"""A model's constructor arguments from a dataset (its ``construct_inputs``).

    BoTorch's ``Model.construct_inputs`` (``train_X``, ``train_Y`` and, if given,
    ``train_Yvar``), after :func:`reject_unsupported_options`, with the model's
    own arguments added.

    Args:
        model_name: The class name, for messages.
        training_data: A ``SupervisedDataset``.
        options: The extra keyword arguments ``construct_inputs`` received (Ax
            passes ``categorical_features`` and the like); empty ones are
            ignored, others are not supported.
        arguments: The model's own constructor arguments.

    Returns:
        A dict of keyword arguments for the model's constructor.
    """
    reject_unsupported_options(model_name, options)
    inputs = Model.construct_inputs(training_data=training_data)
    inputs.update(arguments)
    return inputs


def check_gaussian_likelihood(
    model_name: str, likelihood: Likelihood, train_Yvar: Tensor | None
) -> None:
    r"""Raise ``UnsupportedError`` unless the likelihood is Gaussian and fits the data.

    Args:
        model_name: The class name, for the message.
        likelihood: The likelihood the model is built with.
        train_Yvar: The observed noise variances, or None.
    """
    if not isinstance(likelihood, (GaussianLikelihood, FixedNoiseGaussianLikelihood)):
        raise UnsupportedError(
            f"{model_name} supports GaussianLikelihood and "
            f"FixedNoiseGaussianLikelihood, got {type(likelihood).__name__}."
        )
    if (train_Yvar is not None) != isinstance(likelihood, FixedNoiseGaussianLikelihood):
        raise UnsupportedError(
            "Pass train_Yvar together with a FixedNoiseGaussianLikelihood (or no "
            "likelihood), and neither for an inferred noise level."
        )


def check_fit_subset_size(fit_subset_size: int | None) -> None:
    r"""Raise ``InputDataError`` unless ``fit_subset_size`` is None or an int >= 1.

    A negative size sliced off the last rows (``randperm(n)[:-5]``) and zero
    left nothing to fit on.

    Args:
        fit_subset_size: The constructor argument.
    """
    if fit_subset_size is None:
        return
    if isinstance(fit_subset_size, bool) or not isinstance(fit_subset_size, int):
        raise InputDataError(
            "fit_subset_size must be a positive int or None, got "
            f"{fit_subset_size!r} ({type(fit_subset_size).__name__})."
        )
    if fit_subset_size < 1:
        raise InputDataError(
            f"fit_subset_size must be a positive int or None, got {fit_subset_size}."
        )


def check_unbatched_kernel(model_name: str, kernel: Kernel) -> None:
    r"""Raise ``UnsupportedError`` if ``kernel`` or a kernel inside it is batched.

    The Nystrom algebra reads one ``m x m`` kernel matrix; a batched kernel
    otherwise failed deep inside it ("only one element tensors can be converted
    to Python scalars").

    Args:
        model_name: The class name, for the message.
        kernel: The covariance module.
    """
    for name, module in kernel.named_modules():
        if isinstance(module, Kernel) and len(module.batch_shape) > 0:
            where = f"its submodule {name!r}" if name else "it"
            raise UnsupportedError(
                f"{model_name} needs a covar_module without batch dimensions; "
                f"{where} has batch_shape {tuple(module.batch_shape)}. Use one "
                "model per batch."
            )


def check_inducing_not_empty(inducing: Tensor) -> None:
    r"""Raise ``InputDataError`` for a ``0 x d`` tensor of inducing inputs.

    Args:
        inducing: The ``m x d`` inducing inputs.
    """
    if inducing.shape[0] == 0:
        raise InputDataError(
            "inducing has no rows: the inducing set needs at least one point "
            f"(got shape {tuple(inducing.shape)})."
        )


def floor_fixed_noise(noise: Tensor) -> Tensor:
    r"""Raise fixed noise variances to gpytorch's ``min_fixed_noise``.

    ``FixedNoiseGaussianLikelihood`` does this when it is built, which is how
    ``SingleTaskGP`` works with zero observed noise; a model that assigns the
    (outcome-transformed) noise afterwards must do it again, or exact zeros
    reach a Cholesky factorisation.

    Args:
        noise: Noise variances.

    Returns:
        ``noise`` clamped below at ``gpytorch.settings.min_fixed_noise`` for its
        dtype.
    """
    return noise.clamp_min(settings.min_fixed_noise.value(noise.dtype))


def _check_noise_values(name: str, noise: Tensor) -> None:
    _check_finite(name, noise)
    if bool((noise < 0).any()):
        raise InputDataError(
            f"{name} contains negative noise variances (smallest "
            f"{float(noise.min()):.3g})."
        )


def check_observation_noise(observation_noise: Tensor) -> None:
    r"""Raise ``InputDataError`` for NaN, infinite or negative observation noise.

    ``SingleTaskGP`` clamps negative values to zero, which hides a sign error in
    the caller's noise model.

    Args:
        observation_noise: The tensor passed to ``posterior``.
    """
    _check_noise_values("observation_noise", observation_noise)


def check_new_observations(X: Tensor, Y: Tensor, noise: Tensor | None) -> None:
    r"""Validate the arguments of ``condition_on_observations``.

    Args:
        X: A ``batch_shape x n' x d`` tensor of inputs.
        Y: A ``batch_shape' x n' x 1`` tensor of observations.
        noise: None, or noise variances shaped like ``Y`` (leading dimensions
            broadcasting).

    Raises:
        BotorchTensorDimensionError: for counts of X, Y and noise that differ.
        InputDataError: for NaN, infinite or negative noise.
    """
    if X.shape[-2] != Y.shape[-2]:
        raise BotorchTensorDimensionError(
            f"X has {X.shape[-2]} points but Y has {Y.shape[-2]} observations "
            f"(shapes {tuple(X.shape)} and {tuple(Y.shape)})."
        )
    if noise is None:
        return
    if noise.dim() < 2 or noise.shape[-2:] != Y.shape[-2:]:
        raise BotorchTensorDimensionError(
            f"noise must be shaped like Y, batch_shape x {Y.shape[-2]} x 1; got "
            f"{tuple(noise.shape)}."
        )
    _check_noise_values("noise", noise)
