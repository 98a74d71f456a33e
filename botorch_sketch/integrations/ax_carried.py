#!/usr/bin/env python3
r"""A ``NystromGP`` whose fitted hyperparameters carry from one Ax trial to the next.

Ax builds and fits its model afresh for every trial: at N = 1000 trials that is
an exact fit on 600 points and the inducing rule, about 2 s a trial, although
one more observation barely moves the hyperparameters. :class:`CarriedNystromGP`
remembers the hyperparameters it fitted under a key (a string in its
``model_options``, so a client stays JSON-saveable) and, while the data have
grown by less than ``refit_growth`` since that fit, loads them instead of
fitting: the model is then the inducing rule and the posterior at carried
hyperparameters, as :class:`~botorch_sketch.bo.incremental_gp.IncrementalGP`
does for a BoTorch loop. A larger growth, new inputs' dimension or a changed
model structure refit (from the carried values).

The memory is this module's :data:`CARRIED`, in the process: a client loaded
from JSON in a new process starts with a fit (import this module before
loading, which registers the class with Ax's storage). :func:`forget` clears a
key.

Once the fit is carried, qLogNEI's baseline pruning (a joint draw over every
observed point) is a large part of a trial;
:class:`~botorch_sketch.acquisition.qLogNEIMarginalBaseline` chooses the baseline
from the model's marginals instead (second example).

Example:
    >>> strategy = sketch_generation_strategy(
    ...     model_class=CarriedNystromGP, model_options={"carry": "svm-study"}
    ... )
    >>> strategy = sketch_generation_strategy(
    ...     model_class=CarriedNystromGP,
    ...     model_options={"carry": "svm-study"},
    ...     botorch_acqf_class=qLogNEIMarginalBaseline,
    ...     botorch_acqf_options={"baseline_k": 2.0, "baseline_max_size": 64},
    ... )
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.kernels import Kernel
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import MarginalLogLikelihood
from torch import Tensor

from botorch_sketch.integrations.ax import register_with_ax
from botorch_sketch.models import NystromGP
from botorch_sketch.sketching.rules import SelectionRule

__all__ = ["CARRIED", "CarriedNystromGP", "forget"]


@dataclass
class Carried:
    r"""Hyperparameters fitted on ``num_data`` observations."""

    num_data: int
    state: dict[str, dict[str, Tensor]]


#: Key (the ``carry`` option and the outcome names) -> the last fit under it.
CARRIED: dict[tuple[str, tuple[str, ...]], Carried] = {}

#: The modules whose parameters are carried (transforms are rebuilt by Ax).
_MODULES = ("covar_module", "mean_module", "likelihood")


def forget(carry: str | None = None) -> None:
    r"""Forget the carried hyperparameters of one key, or of every key."""
    for key in [k for k in CARRIED if carry is None or k[0] == carry]:
        del CARRIED[key]


class CarriedNystromGP(NystromGP):
    r"""``NystromGP`` that refits only when the data have grown by ``refit_growth``."""

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
        carry: str = "",
        refit_growth: float = 0.05,
        outcome_names: tuple[str, ...] = (),
    ) -> None:
        r"""A ``NystromGP`` with a key for its hyperparameters.

        The arguments are ``NystromGP``'s, named (Ax reads the constructor's
        argument names to decide what it may pass), and three more.

        Args:
            train_X: A ``n x d`` tensor of inputs.
            train_Y: A ``n x 1`` tensor of outcomes (one outcome per model: Ax
                fits a model per outcome, each under its own key).
            train_Yvar: As ``NystromGP``.
            inducing: As ``NystromGP``.
            covar_module: As ``NystromGP``.
            mean_module: As ``NystromGP``.
            likelihood: As ``NystromGP``.
            outcome_transform: As ``NystromGP``.
            input_transform: As ``NystromGP``.
            fit_subset_size: As ``NystromGP``.
            carry: The key the hyperparameters are remembered under: one per
                study (required).
            refit_growth: Refit once the data have grown by this fraction since
                the carried fit (0: every time, as ``NystromGP``).
            outcome_names: The outcomes' names, part of the key (Ax passes them).
        """
        if train_Y.dim() < 2 or train_Y.shape[-1] != 1:
            raise UnsupportedError(
                "CarriedNystromGP models one outcome; Ax fits one per outcome. Got "
                f"train_Y of shape {tuple(train_Y.shape)}."
            )
        if not isinstance(carry, str) or not carry:
            raise InputDataError(f"carry must be a non-empty string, got {carry!r}.")
        if not (math.isfinite(refit_growth) and refit_growth >= 0):
            raise InputDataError(
                f"refit_growth must be finite and non-negative, got {refit_growth}."
            )
        super().__init__(
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
        self.carry = carry
        self.refit_growth = float(refit_growth)
        self.outcome_names = tuple(outcome_names)

    @classmethod
    def construct_inputs(
        cls,
        training_data: SupervisedDataset,
        carry: str = "",
        refit_growth: float = 0.05,
        **kwargs: Any,
    ) -> dict[str, Any]:
        r"""``NystromGP.construct_inputs`` and the key (the hook Ax calls)."""
        inputs = super().construct_inputs(training_data, **kwargs)
        inputs.update(
            carry=carry,
            refit_growth=refit_growth,
            outcome_names=tuple(training_data.outcome_names),
        )
        return inputs

    @property
    def _key(self) -> tuple[str, tuple[str, ...]]:
        return self.carry, self.outcome_names

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Any = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Load the carried hyperparameters, or fit (from them) and remember.

        Called by ``fit_gpytorch_mll``; arguments as
        :meth:`~botorch_sketch.models.nystrom_gp.NystromGP.custom_fit`.
        """
        n = self.train_X.shape[0]
        carried = CARRIED.get(self._key)
        loaded = carried is not None and self._load(carried.state)
        if loaded and n <= carried.num_data * (1 + self.refit_growth):
            # The inducing rule at the carried values, on all the data.
            self.select_inducing_points()
            self.clear_posterior_state()
            return mll.eval()
        mll = super().custom_fit(
            mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
        )
        CARRIED[self._key] = Carried(num_data=n, state=self._state())
        return mll

    def _state(self) -> dict[str, dict[str, Tensor]]:
        return {
            name: copy.deepcopy(getattr(self, name).state_dict()) for name in _MODULES
        }

    def _load(self, state: dict[str, dict[str, Tensor]]) -> bool:
        # False (and nothing changed) if the modules no longer match the state.
        current = self._state()
        try:
            with torch.no_grad():
                for name in _MODULES:
                    getattr(self, name).load_state_dict(state[name])
        except (RuntimeError, KeyError):
            for name in _MODULES:
                getattr(self, name).load_state_dict(current[name])
            return False
        return True


register_with_ax(CarriedNystromGP)
