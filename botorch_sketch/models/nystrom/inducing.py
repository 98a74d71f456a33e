#!/usr/bin/env python3
r"""The inducing set of a ``NystromGP``: a rule's choice among the training inputs.

The set is either fixed ``m x d`` inputs given to the constructor, or rows of the
training data chosen by a rule (:mod:`botorch_sketch.sketching.selection`; by
default BKB's ridge-leverage resampling), which sees the distinct inputs of the
fitting subset, their multiplicities and their noise. The rule's first choice
waits until a posterior or a fit needs a set (:attr:`InducingSetMixin.inducing_index`),
and ``fit_gpytorch_mll`` re-runs it between fitting rounds
(:mod:`botorch_sketch.models.nystrom.fitting`).

With every distinct training input inducing, the DTC posterior is the exact GP's:
:attr:`InducingSetMixin.is_exact` records that regime, which the fit enters when
the rule's set would cover most of the inputs anyway. Every change of the set
drops the cached posterior state (:mod:`botorch_sketch.models.nystrom.state`).
A rule without a generator of its own draws from the model's, never from
torch's global one (see ``InducingSetMixin._drawing_rule``).
"""

from __future__ import annotations

import copy
import hashlib

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from torch import Tensor

from botorch_sketch.models.validation import check_inducing_not_empty
from botorch_sketch.sketching.rule import Candidates
from botorch_sketch.sketching.selection import (
    FixedSelector,
    InducingSelector,
    RidgeLeverageSampler,
    distinct_rows,
)


class InducingSetMixin:
    r"""The inducing set: fixed inputs, or training rows chosen by a rule."""

    def _init_inducing(self, inducing: InducingSelector | Tensor | None) -> None:
        # The constructor's ``inducing`` argument (after the data are set).
        self._fixed_inducing: Tensor | None = None
        self._rule: InducingSelector | None = None
        if isinstance(inducing, Tensor):
            self._fixed_inducing = self._check_fixed_inducing(inducing, self.train_X)
        elif inducing is None or isinstance(inducing, InducingSelector):
            self._rule = RidgeLeverageSampler() if inducing is None else inducing
        else:
            raise InputDataError(
                "inducing must be an InducingSelector, a tensor of inducing inputs, "
                f"or None; got {type(inducing).__name__}."
            )
        self._inducing_index: Tensor | None = None
        # The first choice waits until a posterior or a fit needs a set: a fit of
        # at most ``exact_fit_size`` points never does (it fits the exact
        # likelihood, then chooses once), and at n = 600 that first choice at
        # the default hyperparameters cost a tenth of the fit.
        self._initial_selection_pending = False
        # Whether ``inducing_index`` holds every distinct training input (set by
        # the rule's choice): the DTC posterior is then the exact GP's.
        self._every_input_inducing = False
        self._inducing_fraction = 0.0
        # Selections the model's own generator has served (see ``_drawing_rule``).
        self._selections = 0

    @staticmethod
    def _check_fixed_inducing(inducing: Tensor, train_X: Tensor) -> Tensor:
        if inducing.dim() != 2 or inducing.shape[-1] != train_X.shape[-1]:
            raise InputDataError(
                f"Inducing inputs must have shape m x {train_X.shape[-1]}, got "
                f"{tuple(inducing.shape)}."
            )
        if not bool(torch.isfinite(inducing).all()):
            raise InputDataError("Inducing inputs contain NaN or infinite values.")
        check_inducing_not_empty(inducing)
        return inducing.to(train_X)

    @property
    def inducing_points(self) -> Tensor:
        r"""The ``m x d`` (input-transformed) inducing inputs."""
        return self._inducing_inputs(self.transformed_train_X)

    @property
    def inducing_index(self) -> Tensor | None:
        r"""Training rows of the inducing inputs (None for given inducing inputs).

        The rule's first choice is made here, at the current hyperparameters and
        of at most ``initial_max_inducing`` points, when nothing has chosen a set
        yet.
        """
        if self._initial_selection_pending:
            self.select_inducing_points(max_size=self.initial_max_inducing)
        return self._inducing_index

    @inducing_index.setter
    def inducing_index(self, value: Tensor | None) -> None:
        self._initial_selection_pending = False
        self._inducing_index = value

    def _inducing_inputs(self, transformed_X: Tensor) -> Tensor:
        if self._fixed_inducing is not None:
            return self._transform_like_training(self._fixed_inducing)
        return transformed_X[self.inducing_index]

    @property
    def inducing_rule(self) -> InducingSelector | None:
        r"""The rule choosing the inducing set (None for fixed inducing inputs)."""
        return self._rule

    @property
    def is_exact(self) -> bool:
        r"""Whether every distinct training input is inducing (the exact GP)."""
        return self._every_input_inducing and self._extra_statistics is None

    def select_inducing_points(self, max_size: int | None = None) -> None:
        r"""Run the inducing rule at the current hyperparameters.

        The rule sees the distinct training inputs, their multiplicities and the
        per-observation noise; adaptive rules start from the current set. A model
        with fixed inducing inputs keeps them.

        Args:
            max_size: Keep at most this many of the rule's picks (its first ones:
                rules list their picks most important first, or in random order).
                Applies only to rules that depend on the hyperparameters.
        """
        if self._extra_statistics is not None:
            raise UnsupportedError(
                "A fantasy model keeps the inducing set it was conditioned with."
            )
        self._initial_selection_pending = False
        if isinstance(self._rule, FixedSelector):
            # Its indices are row numbers of the data, not positions among the
            # distinct inputs of the fitting subset that other rules choose from.
            self.inducing_index = self._rule.training_rows(self.train_X)
            self._cache = None
            return
        if self._rule is not None:
            with torch.no_grad():
                # With ``fit_subset_size`` the rule chooses among the fitting
                # subset's inputs: its cost is then independent of n.
                rows = self._subset_rows()
                X = self.transformed_train_X[rows]
                first, inverse, counts = distinct_rows(X)
                precision = torch.zeros(
                    first.shape[0], dtype=X.dtype, device=X.device
                ).index_add(0, inverse, self._train_noise()[rows].reciprocal())
                current = None
                if self._inducing_index is not None:
                    position = torch.full_like(self.train_X[:, 0], -1, dtype=torch.long)
                    position[rows] = torch.arange(rows.numel(), device=rows.device)
                    inside = position[self._inducing_index]
                    current = inverse[inside[inside >= 0]].unique()
                candidates = Candidates(
                    X=X[first],
                    kernel=self.covar_module,
                    noise=counts.to(X) / precision,
                    counts=counts,
                )
                chosen = self._drawing_rule().select(candidates, current=current)
                if max_size is not None and self._rule.depends_on_hyperparameters:
                    chosen = chosen[:max_size]
                self.inducing_index = rows[first[chosen]]
                self._every_input_inducing = bool(
                    rows.numel() == self.train_X.shape[0]
                    and chosen.numel() == first.numel()
                )
                self._inducing_fraction = chosen.numel() / first.numel()
        self._cache = None

    def _drawing_rule(self) -> InducingSelector:
        # The rule, drawing from a generator of the model's own when it has
        # none. SingleTaskGP's fit draws no random number; a rule drawing from
        # torch's global generator made a seeded script's later draws change
        # when NystromGP replaced it (and an exact-regime model's set is all
        # inputs whatever the draw). The seed is torch's initial seed (so
        # ``torch.manual_seed`` still decides the draws, and reading it draws
        # nothing), the number of training rows, the first and last targets
        # (the outcomes of a multi-output model draw apart) and the number of
        # selections so far: identical builds choose identical sets, and
        # successive selections (fitting rounds) draw afresh. A shallow copy
        # carries the generator, so the user's rule (which other models may
        # share) is left as it was given.
        rule = self._rule
        if rule.generator is not None:
            return rule
        self._selections = getattr(self, "_selections", 0) + 1
        ends = self.train_targets[..., [0, -1]].reshape(-1).tolist()
        key = (
            f"{torch.initial_seed()}:{self.train_X.shape[0]}:{self._selections}:{ends}"
        )
        digest = hashlib.sha256(key.encode()).digest()
        rule = copy.copy(rule)
        rule.generator = torch.Generator().manual_seed(
            int.from_bytes(digest[:8], "little") >> 1
        )
        return rule

    def add_inducing_points(self, rows: Tensor) -> None:
        r"""Add training observations' inputs to the inducing set.

        The weight posterior is recomputed from the data on next use
        (``O(n m^2)``); the hyperparameters stay as they are.

        Args:
            rows: A 1-d long tensor of row indices into ``train_X``.
        """
        if self._rule is None or self.inducing_index is None:
            raise UnsupportedError(
                "add_inducing_points needs a model whose inducing set is chosen "
                "by a rule (not fixed inducing inputs)."
            )
        if self._extra_statistics is not None:
            raise UnsupportedError(
                "A fantasy model keeps the inducing set it was conditioned with."
            )
        rows = torch.as_tensor(rows, device=self.train_X.device).reshape(-1)
        n = self.train_X.shape[0]
        if rows.dtype != torch.long or bool(((rows < 0) | (rows >= n)).any()):
            raise InputDataError(
                f"rows must be long indices into the {n} training rows; got {rows}."
            )
        index = torch.cat([self.inducing_index, rows])
        # One row per distinct input, the current set's first.
        first, _, _ = distinct_rows(self.transformed_train_X[index])
        self.inducing_index = index[first.sort().values]
        self._every_input_inducing = False
        self._cache = None

    def _use_every_input(self) -> None:
        # The exact regime: every distinct training input is inducing.
        first, _, _ = distinct_rows(self.transformed_train_X)
        self.inducing_index = first
        self._every_input_inducing = True
        self._cache = None

    def _covers_most(self) -> bool:
        # Whether the rule's last choice holds ``exact_fraction`` of the inputs.
        return (
            self.exact_fraction is not None
            and self._rule is not None
            and self._rule.depends_on_hyperparameters
            and self._inducing_fraction >= self.exact_fraction
        )
