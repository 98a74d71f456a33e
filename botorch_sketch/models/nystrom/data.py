#!/usr/bin/env python3
r"""The training data of a ``NystromGP`` and the transforms applied to them.

The model keeps the raw data as plain attributes (``train_X``, ``train_Y``,
``train_Yvar``), not buffers, so that a state dict carries no data-sized tensor
and loads into a model on other data (Ax's cross-validation does that). What the
kernel and the likelihood see is derived from them on use: the inputs through
:attr:`~TrainingDataMixin.transformed_train_X`, the one place the input
transform is applied to training data (never cached, so a learned transform such
as ``Warp`` is seen as it is during a fit), and the targets
(``train_targets``) through the outcome transform, re-derived whenever the data
or the transform change. Test inputs go through BoTorch's ``transform_inputs``
in ``posterior`` and ``condition_on_observations``, as in ``SingleTaskGP``.

This mixin also grows the data (``condition_on_observations``), copies a model
without copying them (``fantasize``), moves them with ``Module.to`` and re-derives
the targets from a loaded state dict. ``MultiOutputNystromGP`` shares these steps.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.utils.types import DEFAULT, _DefaultType
from torch import Tensor

from botorch_sketch.models.validation import floor_fixed_noise

_DATA_ATTRIBUTES = ("train_X", "train_Y", "train_Yvar", "train_targets")


class TrainingDataMixin:
    r"""Raw training data, their transformed views, and moving and growing them."""

    #: The tensors ``Module.to`` moves besides parameters and buffers: the data,
    #: and the inducing set's, which lie in the data's space or index its rows.
    _tensor_attributes: tuple[str, ...] = (
        *_DATA_ATTRIBUTES,
        "_fixed_inducing",
        "_inducing_index",
    )

    def _transform_training_data(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        train_Yvar: Tensor | None,
        outcome_transform: OutcomeTransform | _DefaultType | None,
        input_transform: InputTransform | None,
    ) -> tuple[Tensor, OutcomeTransform | None, Tensor, Tensor | None]:
        r"""Validate the constructor's data and fit the outcome transform on them.

        As ``SingleTaskGP``'s constructor: the inputs are transformed without
        gradients, the tensors checked, the default ``Standardize`` built and the
        outcome transform fitted on the data (then set to eval mode).

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
            transformed_X = self.transform_inputs(
                X=train_X, input_transform=input_transform
            )
        self._validate_tensor_args(X=transformed_X, Y=train_Y, Yvar=train_Yvar)
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

    def _keep_training_data(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        train_Yvar: Tensor | None,
        outcome_transform: OutcomeTransform | None,
        input_transform: InputTransform | None,
    ) -> None:
        # The transforms as modules, the raw data as plain attributes (not
        # buffers: see the module docstring).
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        if input_transform is not None:
            self.input_transform = input_transform
        self.train_X = train_X
        self.train_Y = train_Y
        self.train_Yvar = train_Yvar

    def _transform_like_training(self, X: Tensor) -> Tensor:
        # The input transform as it acts on training data (``preprocess_transform``:
        # e.g. no perturbation), for the training inputs and for inputs in their
        # space (fixed inducing inputs, observations summarised elsewhere).
        if hasattr(self, "input_transform"):
            return self.input_transform.preprocess_transform(X)
        return X

    @property
    def transformed_train_X(self) -> Tensor:
        r"""The ``n x d`` training inputs as the kernel sees them."""
        return self._transform_like_training(self.train_X)

    @property
    def train_inputs(self) -> tuple[Tensor]:
        r"""The input-transformed training inputs, as ``ExactGP`` exposes them."""
        return (self.transformed_train_X,)

    def train_noise(self) -> Tensor:
        r"""The ``n`` per-observation noise variances, in outcome-transformed units."""
        return self._train_noise()

    def _train_noise(self) -> Tensor:
        n = self.train_X.shape[0]
        return self.likelihood.noise.expand(n)

    def _transformed_targets(self) -> tuple[Tensor, Tensor | None]:
        # ``train_Y`` and ``train_Yvar`` through the (eval-mode) outcome transform.
        Y, Yvar = self.train_Y, self.train_Yvar
        if hasattr(self, "outcome_transform"):
            self.outcome_transform.eval()
            with torch.no_grad():
                Y, Yvar = self.outcome_transform(Y, Yvar, X=self.transformed_train_X)
        return Y, Yvar

    def _retransform_targets(self) -> None:
        # The model keeps raw data and the outcome transform's image of it, so a
        # loaded state_dict (with other transform statistics) stays consistent.
        Y, Yvar = self._transformed_targets()
        self.train_targets = Y.squeeze(-1)
        if Yvar is not None:
            self.likelihood.noise = floor_fixed_noise(Yvar.squeeze(-1))

    def _append_raw_data(self, X: Tensor, Y: Tensor, Yvar_tf: Tensor | None) -> None:
        # The data keep raw noise variances; ``Yvar_tf`` is outcome-transformed
        # (and read only if the data have noise variances).
        if self.train_Yvar is not None:
            Yvar = Yvar_tf
            if hasattr(self, "outcome_transform"):
                _, Yvar = self.outcome_transform.untransform(torch.zeros_like(Y), Yvar)
            self.train_Yvar = torch.cat([self.train_Yvar, Yvar], dim=-2)
        self.train_X = torch.cat([self.train_X, X], dim=-2)
        self.train_Y = torch.cat([self.train_Y, Y], dim=-2)

    def _append_data(self, X: Tensor, Y: Tensor, noise_tf: Tensor) -> None:
        self._append_raw_data(X, Y, noise_tf.unsqueeze(-1))
        # The new inputs are not inducing: the posterior is a sketch again.
        self._every_input_inducing = False
        self._retransform_targets()

    def _copy_sharing(self, shared: Iterable[Any]) -> Any:
        # Deep-copy the modules but not ``shared`` (the n-sized data: fantasize
        # runs often).
        return copy.deepcopy(self, {id(t): t for t in shared if t is not None})

    def _copy_sharing_data(self) -> Any:
        cache, self._cache = self._cache, None
        try:
            return self._copy_sharing(getattr(self, name) for name in _DATA_ATTRIBUTES)
        finally:
            self._cache = cache

    def _set_transformed_inputs(self) -> None:
        # Inputs are transformed on use; nothing to swap on eval().
        pass

    def _revert_to_original_inputs(self) -> None:
        pass

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        super()._apply(fn, *args, **kwargs)
        # BoTorch's acquisition functions call ``self.to(X)`` on every evaluation;
        # the posterior cache (O(n m^2) to rebuild) is dropped only if that moved
        # or cast something (``Tensor.to`` returns the same tensor otherwise).
        moved = False
        for name in self._tensor_attributes:
            value = getattr(self, name, None)
            if value is not None:
                converted = fn(value)
                moved = moved or converted is not value
                setattr(self, name, converted)
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
        re-run at the loaded hyperparameters (every outcome's, for several).

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
        self._follow_loaded_state()

    def _follow_loaded_state(self) -> None:
        self._retransform_targets()
        if self._rule is not None and self._rule.depends_on_hyperparameters:
            self.select_inducing_points()
        self._cache = None
