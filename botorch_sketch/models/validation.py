#!/usr/bin/env python3
r"""Checks that turn bad input into errors that name the problem.

BoTorch's own ``validate_input_scaling`` can be switched off by a setting and
does not look for infinities; these checks always run.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from torch import Tensor


def _check_finite(name: str, value: Tensor) -> None:
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
            raise UnsupportedError(
                f"{model_name} does not support batched training data (train_X has "
                f"shape {tuple(train_X.shape)}); use one model per batch."
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
