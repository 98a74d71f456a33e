#!/usr/bin/env python3
r"""Inducing-set rules: which of the distinct training inputs become inducing points.

Each rule is a :class:`~botorch_sketch.sketching.rules.SelectionRule`: a small
object with an explicit ``torch.Generator`` whose batch method,
:meth:`~botorch_sketch.sketching.rules.SelectionRule.select`, returns indices
into the :class:`~botorch_sketch.sketching.rules.Candidates` it is given, so that
a model can keep its inducing set as indices into its data (the set then
follows the data through input transforms, devices and dtypes). The greedy and
uniform rules also choose subsets that must contain forced points (GSSBO's,
see :mod:`~botorch_sketch.sketching.rules.subset`).

- :class:`~botorch_sketch.sketching.rules.RidgeLeverageSampler`: BKB's
  posterior-variance (ridge leverage score) Bernoulli resampling
  (:mod:`~botorch_sketch.sketching.rules.leverage`).
- :class:`~botorch_sketch.sketching.rules.GreedyVarianceSelector`:
  deterministic greedy maximum residual variance (pivoted Cholesky,
  :mod:`~botorch_sketch.sketching.rules.greedy`).
- :class:`UniformSelector`: a uniform random subset (here).
- :class:`FixedSelector`: training rows given by the user (here).

:func:`distinct_rows` finds the distinct inputs the rules choose among.
"""

from __future__ import annotations

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.checks import checked_optional_count
from botorch_sketch.sketching.rules.rule import Candidates, SelectionRule, free_indices


class UniformSelector(SelectionRule):
    r"""The forced points and a uniformly random subset of the others."""

    depends_on_hyperparameters = False

    def __init__(
        self, num_inducing: int | None = 512, generator: torch.Generator | None = None
    ) -> None:
        r"""Configure the rule.

        Args:
            num_inducing: The subset size (all inputs if there are fewer); None
                for no size of its own (a caller passes one).
            generator: The random generator.
        """
        super().__init__(generator=generator)
        self.num_inducing = checked_optional_count(num_inducing, "num_inducing")

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""The forced points, then a uniform choice of the others.

        Args:
            candidates: The candidates (only their number is read).
            size: The number of points, instead of ``num_inducing``.
            current: Not used.
            forced: Indices that must be chosen.

        Returns:
            ``size`` (or ``min(num_inducing, n)``) distinct indices, the forced
            ones first, the others in random order.
        """
        n, size, forced = self._request(candidates, size, forced, self.num_inducing)
        free = free_indices(n, forced)
        pick = free[self._permutation(free.numel(), free)[: size - forced.numel()]]
        return torch.cat([forced, pick])


class FixedSelector(SelectionRule):
    r"""Inducing points at training rows chosen by the user.

    The indices are row numbers of the training data: in a model,
    ``FixedSelector(idx)`` makes ``train_X[idx]`` the inducing set, as
    ``inducing=train_X[idx]`` would, but kept as indices (so the set follows
    the data through transforms, devices and dtypes). Rows whose input repeats
    an earlier given row's add nothing and are dropped. Used on its own,
    :meth:`select` takes the indices as row numbers of the ``X`` it is given.
    """

    depends_on_hyperparameters = False

    def __init__(self, indices: Tensor | list[int]) -> None:
        r"""Store the indices.

        Args:
            indices: A non-empty 1-d integer tensor (or list) of distinct,
                non-negative training-row numbers.

        Raises:
            InputDataError: for an empty, non-integer, negative or repeated index.
        """
        super().__init__(generator=None)
        indices = torch.as_tensor(indices)
        if indices.numel() == 0:
            raise InputDataError(
                "FixedSelector needs at least one index: an empty inducing set "
                "has no posterior beyond the prior."
            )
        # Floats were truncated and booleans read as 0 and 1: neither is a row
        # number, so refuse them rather than guess.
        if indices.dtype == torch.bool or indices.is_floating_point():
            raise InputDataError(
                "FixedSelector indices must be an integer tensor of row numbers, "
                f"got dtype {indices.dtype}."
            )
        if indices.dim() > 1:
            raise InputDataError(
                "FixedSelector indices must be a 1-d tensor, got shape "
                f"{tuple(indices.shape)}."
            )
        indices = indices.reshape(-1).long()
        if bool((indices < 0).any()):
            raise InputDataError(
                "FixedSelector indices must be non-negative row numbers, got "
                f"{indices[indices < 0].tolist()}."
            )
        if indices.unique().numel() != indices.numel():
            values, counts = indices.unique(return_counts=True)
            raise InputDataError(
                "FixedSelector indices must be distinct; repeated: "
                f"{values[counts > 1].tolist()}."
            )
        self.indices = indices

    def _check_range(self, n: int) -> None:
        if int(self.indices.max()) >= n:
            raise InputDataError(
                f"FixedSelector indices must lie in [0, {n}) for {n} rows, got "
                f"{self.indices[self.indices >= n].tolist()}."
            )

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""The given indices, in the given order, checked against the candidates.

        Args:
            candidates: The candidates (only their number is read).
            size: Keep at most this many (the first given).
            current: Not used.
            forced: Must be None or empty.

        Returns:
            The given indices.
        """
        self._refuse_forced(forced, "its points are given")
        self._check_range(len(candidates))
        indices = self.indices.to(candidates.device)
        return indices if size is None else indices[:size]

    def training_rows(self, train_X: Tensor) -> Tensor:
        r"""The inducing set as row numbers of ``train_X``, for a model.

        Args:
            train_X: The ``n x d`` training inputs the indices number.

        Returns:
            The given rows in the given order, less those whose input repeats an
            earlier given row's (one inducing point per distinct input).
        """
        self._check_range(train_X.shape[0])
        rows = self.indices.to(train_X.device)
        # The first given row of each distinct input, back in the given order.
        first, _, _ = distinct_rows(train_X[rows])
        return rows[first.sort().values]


def distinct_rows(X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""Distinct rows of ``X``, where each first occurs, and how often each occurs.

    Args:
        X: A ``n x d`` tensor.

    Returns:
        ``(first, inverse, counts)``: ``X[first]`` are the distinct rows, ``inverse``
        maps each row to its distinct row, ``counts`` are the multiplicities.
    """
    _, inverse, counts = torch.unique(X, dim=0, return_inverse=True, return_counts=True)
    n = X.shape[0]
    positions = torch.arange(n, device=X.device)
    first = torch.full((counts.shape[0],), n, dtype=torch.long, device=X.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    return first, inverse, counts


__all__ = [
    "FixedSelector",
    "UniformSelector",
    "distinct_rows",
]
