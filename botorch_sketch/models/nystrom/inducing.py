#!/usr/bin/env python3
r"""The inducing set of a ``NystromGP``: a rule's choice among the training inputs.

The set is either fixed ``m x d`` inputs given to the constructor, or rows of the
training data chosen by a rule (:mod:`botorch_sketch.sketching.rules`; by
default BKB's ridge-leverage resampling), which sees the distinct inputs of the
fitting subset, their multiplicities and their noise (:func:`choose_rows`).
:class:`InducingSet` keeps the set and how it was chosen. The model makes the
rule's first choice when a posterior or a fit first needs a set, and
``fit_gpytorch_mll`` re-runs it between fitting rounds.

With every distinct training input inducing (:func:`every_input_rows`), the DTC
posterior is the exact GP's; the fit enters that regime when the rule's set
would cover most of the inputs anyway (:meth:`InducingSet.covers_most`). A rule
without a generator of its own draws from one seeded by the model
(:func:`drawing_rule`), never from torch's global one.

The set is part of the model's state dict (:meth:`InducingSet.state` and
:meth:`InducingSet.restore`): a rule's choice depends on the fit's history (the
set it started from, the draws so far), so a model loading a fitted model's
state could not choose it again. The entries hold the inducing inputs, not
only their rows, so the state also loads into a model on other data (Ax's
cross-validation folds): the set becomes those of its inputs the data hold.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.models.validation import check_inducing_not_empty
from botorch_sketch.sketching.rules import (
    Candidates,
    FixedSelector,
    RidgeLeverageSampler,
    SelectionRule,
    distinct_rows,
)

#: The state dict entries of an inducing set (see :meth:`InducingSet.state`).
STATE_KEYS = ("inducing_inputs", "inducing_rows", "inducing_flags")

# What ``inducing_flags[0]`` records: how the set was chosen.
_PENDING, _RULE_ROWS, _FIXED = 0, 1, 2


@dataclass(eq=False)
class InducingSet:
    r"""A model's inducing set and how it is chosen.

    Attributes:
        fixed: Fixed ``m x d`` inducing inputs (in the space of ``train_X``), or
            None when a rule chooses training rows.
        rule: The rule, or None for fixed inducing inputs.
        rows: The training rows of the set (None for fixed inputs, and before
            the rule's first choice).
        pending: Whether the rule's first choice is still to be made.
        every_input: Whether ``rows`` hold every distinct training input.
        fraction: The fraction of the distinct inputs it chose among that the
            rule's last choice held.
        selections: Choices the model's own generator has served.
    """

    fixed: Tensor | None = None
    rule: SelectionRule | None = None
    rows: Tensor | None = None
    pending: bool = False
    every_input: bool = False
    fraction: float = 0.0
    selections: int = 0

    @classmethod
    def from_argument(
        cls, inducing: SelectionRule | Tensor | None, train_X: Tensor
    ) -> InducingSet:
        r"""The set a model's ``inducing`` constructor argument asks for.

        Args:
            inducing: A rule, a ``m x d`` tensor of inducing inputs (in the space
                of ``train_X``), or None for
                ``RidgeLeverageSampler(warn_at_cap=False)``.
            train_X: The ``n x d`` training inputs.

        Returns:
            The set, its first choice pending.
        """
        if isinstance(inducing, Tensor):
            fixed = check_fixed_inducing(inducing, train_X)
            return cls(fixed=fixed, pending=True)
        if inducing is None or isinstance(inducing, SelectionRule):
            # The default rule's cap (1024) is the package's: a draw it scales
            # down is not warned of (a rule the caller passes still warns).
            rule = (
                RidgeLeverageSampler(warn_at_cap=False)
                if inducing is None
                else inducing
            )
            return cls(rule=rule, pending=True)
        raise InputDataError(
            "inducing must be an SelectionRule, a tensor of inducing inputs, "
            f"or None; got {type(inducing).__name__}."
        )

    @property
    def adaptive(self) -> bool:
        r"""Whether a rule chooses the set at the current hyperparameters."""
        return self.rule is not None and self.rule.depends_on_hyperparameters

    def set_rows(self, rows: Tensor | None, every_input: bool = False) -> None:
        r"""Make ``rows`` the set (the rule's first choice is then made)."""
        self.pending = False
        self.rows = rows
        self.every_input = every_input

    def choose(
        self,
        train_X: Tensor,
        transformed_X: Tensor,
        kernel: Kernel,
        noise: Tensor,
        targets: Tensor,
        rows: Tensor,
        max_size: int | None = None,
    ) -> None:
        r"""Run the rule at the current hyperparameters (fixed inputs stay).

        Args:
            train_X: The ``n x d`` raw training inputs (a ``FixedSelector``'s
                indices number them).
            transformed_X: The ``n x d`` transformed training inputs.
            kernel: The kernel.
            noise: The ``n`` per-observation noise variances.
            targets: The ``n`` training targets (they seed the draws).
            rows: The rows the rule chooses among (the fitting subset's).
            max_size: As for :func:`choose_rows`.
        """
        self.pending = False
        if isinstance(self.rule, FixedSelector):
            # Its indices are row numbers of the data, not positions among the
            # distinct inputs of the fitting subset that other rules choose from.
            self.rows = self.rule.training_rows(train_X)
        elif self.rule is not None:
            rule, self.selections = drawing_rule(self.rule, self.selections, targets)
            with torch.no_grad():
                chosen = choose_rows(
                    rule, kernel, transformed_X, noise, rows, self.rows, max_size
                )
            self.rows, self.every_input, self.fraction = chosen

    def add(self, rows: Tensor, transformed_X: Tensor) -> None:
        r"""Add training rows to a rule's set, one per distinct input.

        Args:
            rows: A 1-d long tensor of row indices into the training data.
            transformed_X: The ``n x d`` transformed training inputs.
        """
        rows = torch.as_tensor(rows, device=transformed_X.device).reshape(-1)
        n = transformed_X.shape[0]
        if rows.dtype != torch.long or bool(((rows < 0) | (rows >= n)).any()):
            raise InputDataError(
                f"rows must be long indices into the {n} training rows; got {rows}."
            )
        self.set_rows(grown_rows(self.rows, rows, transformed_X))

    def use_every_input(self, transformed_X: Tensor) -> None:
        r"""Make every distinct training input inducing (the exact regime)."""
        self.set_rows(every_input_rows(transformed_X), every_input=True)

    def fix(self, inputs: Tensor) -> None:
        r"""Make ``inputs`` (in the space of ``train_X``) the set, the rule dropped."""
        self.fixed, self.rule = inputs, None
        self.set_rows(None)

    def covers_most(self, exact_fraction: float | None) -> bool:
        r"""Whether the rule's last choice held ``exact_fraction`` of the inputs."""
        return (
            exact_fraction is not None
            and self.adaptive
            and self.fraction >= exact_fraction
        )

    def state(self, train_X: Tensor) -> dict[str, Tensor]:
        r"""The set as state dict entries (tensors only), keyed by :data:`STATE_KEYS`.

        Args:
            train_X: The ``n x d`` raw training inputs.

        Returns:
            ``inducing_inputs``, the ``m x d`` inducing inputs in the space of
            ``train_X`` (``0 x d`` while the rule's first choice is pending, and
            for a set of every input, which the data determine: no entry is
            sized by the data); ``inducing_rows``, their ``m`` training rows
            (empty for fixed inputs); ``inducing_flags``, a float64 tensor of
            how the set was chosen (pending, a rule's rows or fixed inputs),
            whether it holds every input, the rule's last fraction and its
            number of draws.
        """
        rows = torch.zeros(0, dtype=torch.long, device=train_X.device)
        if self.fixed is not None:
            kind, inputs = _FIXED, self.fixed
        elif self.pending or self.rows is None:
            kind, inputs = _PENDING, train_X[:0]
        elif self.every_input:
            # Every input of the data loaded into: nothing data-sized to keep.
            kind, inputs = _RULE_ROWS, train_X[:0]
        else:
            kind, inputs, rows = _RULE_ROWS, train_X[self.rows], self.rows
        flags = [kind, self.every_input, self.fraction, self.selections]
        return {
            "inducing_inputs": inputs.detach().clone(),
            "inducing_rows": rows.detach().clone(),
            "inducing_flags": torch.tensor(
                flags, dtype=torch.float64, device=train_X.device
            ),
        }

    def restore(
        self, state: Mapping[str, Tensor], train_X: Tensor, transformed_X: Tensor
    ) -> bool:
        r"""Make the set :meth:`state`'s, on this model's data.

        On the data the state was saved with, the set is the saved one. On other
        data, a set of every input is every input of these data, and a rule's
        set keeps those of its inputs the data hold (the held-out points of a
        cross-validation fold drop out). Fixed inputs are kept as they are.

        Args:
            state: The entries of :data:`STATE_KEYS`.
            train_X: The ``n x d`` raw training inputs.
            transformed_X: The ``n x d`` transformed training inputs.

        Returns:
            False where the saved set left nothing to restore (a rule's set none
            of whose inputs the data hold): the rule then chooses afresh.
        """
        flags = state["inducing_flags"].detach().reshape(-1).tolist()
        inputs = state["inducing_inputs"].detach()
        if len(flags) != 4 or flags[0] not in (_PENDING, _RULE_ROWS, _FIXED):
            raise InputDataError(
                "The state's inducing_flags are not an inducing set's (4 numbers, "
                f"the first 0, 1 or 2); got {flags}."
            )
        kind, every_input = int(flags[0]), bool(flags[1])
        if kind != _PENDING and (
            inputs.dim() != 2 or inputs.shape[-1] != train_X.shape[-1]
        ):
            raise InputDataError(
                f"The state's inducing_inputs must be m x {train_X.shape[-1]} like "
                f"this model's train_X; got {tuple(inputs.shape)}."
            )
        if kind == _PENDING:
            if self.fixed is None:
                self.rows, self.pending, self.every_input = None, True, False
        elif kind == _RULE_ROWS and every_input:
            self.use_every_input(transformed_X)
            if self.rule is None:  # a model of fixed inputs keeps fixed inputs
                self.fixed, self.rows = train_X[self.rows], None
        elif kind == _FIXED or self.rule is None:
            self.fix(check_fixed_inducing(inputs, train_X))
        else:
            rows = rows_holding(
                inputs.to(train_X), state["inducing_rows"].detach(), train_X
            )
            if rows.numel() == 0:
                return False
            self.set_rows(rows)
        self.fraction, self.selections = float(flags[2]), int(flags[3])
        return True

    def apply(self, fn: Callable[[Tensor], Tensor]) -> bool:
        r"""Apply ``fn`` to the set's tensors (``Module.to``); whether any moved."""
        moved = False
        for name in ("fixed", "rows"):
            value = getattr(self, name)
            if value is not None:
                converted = fn(value)
                moved = moved or converted is not value
                setattr(self, name, converted)
        return moved


def check_fixed_inducing(inducing: Tensor, train_X: Tensor) -> Tensor:
    r"""Validate ``m x d`` inducing inputs and cast them like ``train_X``.

    Args:
        inducing: The inducing inputs.
        train_X: The ``n x d`` training inputs.

    Returns:
        The inducing inputs, with ``train_X``'s dtype and device.
    """
    if inducing.dim() != 2 or inducing.shape[-1] != train_X.shape[-1]:
        raise InputDataError(
            f"Inducing inputs must have shape m x {train_X.shape[-1]}, got "
            f"{tuple(inducing.shape)}."
        )
    if not bool(torch.isfinite(inducing).all()):
        raise InputDataError("Inducing inputs contain NaN or infinite values.")
    check_inducing_not_empty(inducing)
    return inducing.to(train_X)


def drawing_rule(
    rule: SelectionRule, selections: int, targets: Tensor
) -> tuple[SelectionRule, int]:
    r"""The rule, drawing from a generator of the model's own when it has none.

    SingleTaskGP's fit draws no random number; a rule drawing from torch's
    global generator made a seeded script's later draws change when NystromGP
    replaced it (and an exact-regime model's set is all inputs whatever the
    draw). The seed is torch's initial seed (so ``torch.manual_seed`` still
    decides the draws, and reading it draws nothing), the number of training
    rows, the first and last targets (the outcomes of a multi-output model draw
    apart) and the number of selections so far: identical builds choose
    identical sets, and successive selections (fitting rounds) draw afresh. A
    shallow copy carries the generator, so the user's rule (which other models
    may share) is left as it was given.

    Args:
        rule: The model's rule.
        selections: The selections the model's generator has served so far.
        targets: The ``n`` training targets.

    Returns:
        The rule to draw from, and the new count of selections.
    """
    if rule.generator is not None:
        return rule, selections
    selections += 1
    ends = targets[..., [0, -1]].reshape(-1).tolist()
    key = f"{torch.initial_seed()}:{targets.shape[-1]}:{selections}:{ends}"
    digest = hashlib.sha256(key.encode()).digest()
    rule = copy.copy(rule)
    rule.generator = torch.Generator().manual_seed(
        int.from_bytes(digest[:8], "little") >> 1
    )
    return rule, selections


def choose_rows(
    rule: SelectionRule,
    kernel: Kernel,
    transformed_X: Tensor,
    noise: Tensor,
    rows: Tensor,
    current: Tensor | None,
    max_size: int | None = None,
) -> tuple[Tensor, bool, float]:
    r"""Run ``rule`` on the distinct inputs among ``rows`` of the training data.

    Args:
        rule: The rule to draw from (see :func:`drawing_rule`).
        kernel: The kernel, at the current hyperparameters.
        transformed_X: The ``n x d`` transformed training inputs.
        noise: The ``n`` per-observation noise variances.
        rows: The rows the rule chooses among (the fitting subset's).
        current: The training rows of the current set (adaptive rules start
            from those among ``rows``), or None.
        max_size: Keep at most this many of the rule's picks (its first ones),
            for rules that depend on the hyperparameters.

    Returns:
        The chosen training rows, whether they are every training input, and
        the fraction of the distinct inputs among ``rows`` they hold.
    """
    n = transformed_X.shape[0]
    X = transformed_X[rows]
    first, inverse, counts = distinct_rows(X)
    precision = torch.zeros(first.shape[0], dtype=X.dtype, device=X.device).index_add(
        0, inverse, noise[rows].reciprocal()
    )
    start = None
    if current is not None:
        position = torch.full((n,), -1, dtype=torch.long, device=X.device)
        position[rows] = torch.arange(rows.numel(), device=rows.device)
        inside = position[current]
        start = inverse[inside[inside >= 0]].unique()
    candidates = Candidates(
        X=X[first], kernel=kernel, noise=counts.to(X) / precision, counts=counts
    )
    chosen = rule.select(candidates, current=start)
    if max_size is not None and rule.depends_on_hyperparameters:
        chosen = chosen[:max_size]
    every = bool(rows.numel() == n and chosen.numel() == first.numel())
    return rows[first[chosen]], every, chosen.numel() / first.numel()


def every_input_rows(transformed_X: Tensor) -> Tensor:
    r"""One training row per distinct input: the exact regime's inducing set.

    Args:
        transformed_X: The ``n x d`` transformed training inputs.

    Returns:
        The rows, in order.
    """
    first, _, _ = distinct_rows(transformed_X)
    return first


def rows_holding(inputs: Tensor, rows: Tensor, train_X: Tensor) -> Tensor:
    r"""Training rows holding ``inputs``, in their order, ``rows`` where they do.

    Args:
        inputs: A ``m x d`` tensor of inputs in the space of ``train_X``.
        rows: Their rows in the data they were chosen from (kept where
            ``train_X`` holds the same inputs there: the same data).
        train_X: The ``n x d`` raw training inputs.

    Returns:
        A long tensor of at most ``m`` rows: ``rows`` on the same data, else
        the first row holding each input, inputs ``train_X`` lacks left out.
    """
    n, device = train_X.shape[0], train_X.device
    rows = rows.to(device=device, dtype=torch.long).reshape(-1)
    if (
        rows.numel() == inputs.shape[0]
        and bool(((rows >= 0) & (rows < n)).all())
        and torch.equal(train_X[rows], inputs)
    ):
        return rows
    # One pass of ``torch.unique`` over the data and the inputs together.
    first, inverse, _ = distinct_rows(torch.cat([train_X, inputs]))
    found = first[inverse[n:]]
    return found[found < n]


def grown_rows(current: Tensor, rows: Tensor, transformed_X: Tensor) -> Tensor:
    r"""The inducing rows ``current`` with ``rows`` added, one per distinct input.

    Args:
        current: The training rows of the current set.
        rows: Training rows to add.
        transformed_X: The ``n x d`` transformed training inputs.

    Returns:
        The rows, in order; of repeated inputs the current set's row is kept.
    """
    index = torch.cat([current, rows])
    first, _, _ = distinct_rows(transformed_X[index])
    return index[first.sort().values]
