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
model structure refit (from the carried values). Between refits the rule
resamples once from the last trial's inducing set (BKB's step, where a fresh
model would resample three times from a uniform subset), and a fit that ended
in the exact regime (the rule's set covering most inputs) keeps every input
without running the rule.

At a thousand points of a low-noise objective the rule would keep most
inputs, so the model would cost what the exact GP does. ``max_inducing`` (a
model option, 384 by default, as ``IncrementalGP``'s option of that name and
the Optuna sampler's default) caps the set: on Hartmann-6 with noise sd 0.1 at
N = 1000 it takes a warm Ax trial from 2.7-3.2 to 0.9-1.0 CPU seconds
(``docs/ax-baseline-1000.md``); ``None`` lifts the cap.

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
    >>> strategy = sketch_generation_strategy(
    ...     model_class=CarriedNystromGP,
    ...     model_options={"carry": "svm-study", "max_inducing": None},  # no cap
    ... )
"""

from __future__ import annotations

import copy
import math
import warnings
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

from botorch_sketch.checks import checked_optional_count
from botorch_sketch.integrations.ax import register_with_ax
from botorch_sketch.models import NystromGP
from botorch_sketch.sketching.rules import (
    InducingSetCapWarning,
    RidgeLeverageSampler,
    SelectionRule,
)

__all__ = ["CARRIED", "DEFAULT_MAX_INDUCING", "CarriedNystromGP", "forget"]


@dataclass
class Carried:
    r"""Hyperparameters fitted on ``num_data`` observations, and the last set.

    Attributes:
        num_data: The number of observations of the fit.
        state: The fitted modules' state dicts.
        exact: Whether the fit ended in the exact regime (every input inducing).
        inducing: The raw inputs of the last inducing set chosen under this key
            (None before any, or in the exact regime).
    """

    num_data: int
    state: dict[str, dict[str, Tensor]]
    exact: bool = False
    inducing: Tensor | None = None


#: Key (the ``carry`` option and the outcome names) -> the last fit under it.
CARRIED: dict[tuple[str, tuple[str, ...]], Carried] = {}

#: The default cap of the inducing set: at N = 1000 on Hartmann-6 (noise sd
#: 0.1) it took a warm Ax trial from 2.7-3.2 to 0.9-1.0 CPU s, with the best value
#: of 50 further trials within the seeds' spread of the uncapped model's
#: (``docs/ax-baseline-1000.md``); the Optuna sampler's default too.
DEFAULT_MAX_INDUCING = 384

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
        max_inducing: int | None | _DefaultType = DEFAULT,
    ) -> None:
        r"""A ``NystromGP`` with a key for its hyperparameters.

        The arguments are ``NystromGP``'s, named (Ax reads the constructor's
        argument names to decide what it may pass), and four more.

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
            max_inducing: The largest inducing set: the cap of the default rule,
                ``RidgeLeverageSampler(max_size=max_inducing)``, which bounds a
                trial's cost at ``O(N max_inducing^2)`` (as ``IncrementalGP``'s
                option); None for the rule's own cap (1024). By default
                :data:`DEFAULT_MAX_INDUCING` with ``inducing`` None, no cap with
                another ``inducing`` (give that rule its own cap: an explicit
                ``max_inducing`` with one raises).
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
        if max_inducing is DEFAULT:
            max_inducing = DEFAULT_MAX_INDUCING if inducing is None else None
        max_inducing = checked_optional_count(max_inducing, "max_inducing")
        if max_inducing is not None:
            if inducing is not None:
                raise InputDataError(
                    "max_inducing caps the default inducing rule; give another "
                    f"rule its own cap (got inducing={type(inducing).__name__})."
                )
            inducing = RidgeLeverageSampler(max_size=max_inducing)
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
        self.max_inducing = max_inducing

    @classmethod
    def construct_inputs(
        cls,
        training_data: SupervisedDataset,
        carry: str = "",
        refit_growth: float = 0.05,
        max_inducing: int | None | _DefaultType = DEFAULT,
        **kwargs: Any,
    ) -> dict[str, Any]:
        r"""``NystromGP.construct_inputs``, the key and the cap (the hook Ax calls)."""
        inputs = super().construct_inputs(training_data, **kwargs)
        inputs.update(
            carry=carry,
            refit_growth=refit_growth,
            outcome_names=tuple(training_data.outcome_names),
            max_inducing=max_inducing,
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
        with warnings.catch_warnings():
            if self.max_inducing is not None:  # the cap was asked for
                warnings.simplefilter("ignore", InducingSetCapWarning)
            if loaded and n <= carried.num_data * (1 + self.refit_growth):
                self._choose_carried_set(carried)
                self.clear_posterior_state()
                return mll.eval()
            mll = super().custom_fit(
                mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
            )
        CARRIED[self._key] = Carried(
            num_data=n,
            state=self._state(),
            exact=self.is_exact,
            inducing=self._rule_inputs(),
        )
        return mll

    def _choose_carried_set(self, carried: Carried) -> None:
        # The set at the carried hyperparameters, on all the data. The fit's
        # exact regime is kept (every input, no rule: the fit found the rule's
        # set covering most inputs). Otherwise the rule resamples once from the
        # last set (BKB's step) rather than ``num_passes`` times from a uniform
        # subset; the new inputs enter by their coins.
        if carried.exact and self.inducing_rule is not None:
            self._inducing.use_every_input(self.transformed_train_X)
            return
        if carried.inducing is not None:
            rows = self._rows_of(carried.inducing)
            if rows.numel() > 0:
                self._inducing.set_rows(rows)
        self.select_inducing_points()
        carried.inducing = self._rule_inputs()

    def _rule_inputs(self) -> Tensor | None:
        # The raw inputs of a rule's set (None for fixed inputs or every input).
        if self.inducing_rule is None or self.is_exact:
            return None
        return self.train_X[self.inducing_index].clone()

    def _rows_of(self, inputs: Tensor, chunk_size: int = 4096) -> Tensor:
        # Training rows holding ``inputs`` (those still in the data, in their
        # order; the last row of a repeated input), ``m x chunk`` at a time.
        X = self.train_X
        rows = torch.full((inputs.shape[0],), -1, dtype=torch.long, device=X.device)
        for start in range(0, X.shape[0], chunk_size):
            same = torch.cdist(inputs, X[start : start + chunk_size], p=math.inf) == 0
            hit = same.any(dim=-1)
            last = same.shape[-1] - 1 - same.flip(-1).to(torch.uint8).argmax(dim=-1)
            rows = torch.where(hit, start + last, rows)
        return rows[rows >= 0]

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
