#!/usr/bin/env python3
r"""One way to choose points: a rule returns indices from candidates.

Every choice of points in this package is a :class:`SelectionRule`: the
inducing set of ``NystromGP``, the subset of observations of GSSBO, the
dictionary a bandit redraws (BKB, CBKB) and the admission of one new point
(KORS, BKB's adaptive coin). A rule is a small object with an explicit
``torch.Generator`` and two methods:

- :meth:`SelectionRule.select`, the batch method: indices into
  :class:`Candidates`, given what the rule reads about them (inputs and a
  kernel, noise variances, multiplicities, scores such as posterior variances,
  gradient vectors), a current set to start from, indices it must keep
  (``forced``) and a size.
- :meth:`SelectionRule.consider`, the online method: one coin per point of a
  stream, each up with probability :meth:`SelectionRule.probability` of its
  score; :meth:`SelectionRule.consider_one` is the same for one score held as a
  float (a bandit step, without a tensor op per scalar).

Rules that choose whole sets (greedy, uniform, fixed) have no online method and
raise ``UnsupportedError`` from it. The Bernoulli rules
(:mod:`~botorch_sketch.sketching.rules.bernoulli`) have both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.rules.random_rule import RandomRule


@dataclass(slots=True)
class Candidates:
    r"""What a rule may read about the ``n`` points it chooses among.

    Every field is optional: a rule reads the ones it needs and raises
    ``InputDataError`` naming any that is missing.

    Attributes:
        X: A ``n x d`` tensor of (input-transformed) inputs.
        kernel: The kernel at its current hyperparameters.
        noise: A ``n`` tensor, the noise variance of one observation at each point.
        counts: A ``n`` tensor, how many observations each point has (None: one).
        scores: A ``n`` tensor of scores, e.g. ridge leverage scores
            ``var_i / lambda_i`` that a caller already holds.
        gradients: A ``n x p`` tensor of per-point gradient vectors.
        num_points: ``n``, needed only when no tensor above gives it.
    """

    X: Tensor | None = None
    kernel: Kernel | None = None
    noise: Tensor | None = None
    counts: Tensor | None = None
    scores: Tensor | None = None
    gradients: Tensor | None = None
    num_points: int | None = None

    def __len__(self) -> int:
        if self.num_points is not None:
            return self.num_points
        like = self._first_tensor()
        if like is None:
            raise InputDataError(
                "Candidates need num_points or a per-point tensor (X, scores, "
                "gradients, noise or counts)."
            )
        return like.shape[0]

    @property
    def device(self) -> torch.device:
        r"""The device of the candidates' tensors (the CPU if there are none)."""
        like = self._first_tensor()
        return torch.device("cpu") if like is None else like.device

    def _first_tensor(self) -> Tensor | None:
        for t in (self.X, self.scores, self.gradients, self.noise, self.counts):
            if t is not None:
                return t
        return None

    def require(self, rule: SelectionRule, *names: str) -> None:
        r"""Raise ``InputDataError`` naming the fields ``rule`` needs and lacks.

        Args:
            rule: The rule asking (named in the message).
            names: Field names, e.g. ``"X", "kernel"``.
        """
        missing = [name for name in names if getattr(self, name) is None]
        if missing:
            raise InputDataError(
                f"{type(rule).__name__} needs the candidates' {', '.join(missing)}."
            )


class SelectionRule(RandomRule, ABC):
    r"""A rule choosing points: indices into candidates, in batch or online."""

    #: Whether the choice changes with the kernel hyperparameters (or reads a
    #: fitted model in another way), i.e. whether a model should re-run the rule
    #: after fitting them; models run other rules once, before fitting.
    depends_on_hyperparameters: bool = True
    #: Whether :meth:`select` reads the candidates' gradient vectors (a model
    #: computes them only for such rules).
    uses_gradients: bool = False

    @abstractmethod
    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""Choose points among the candidates (the batch method).

        Args:
            candidates: The ``n`` points and what the rule may read about them.
            size: How many points to choose, ``len(forced) <= size <= n``. Rules
                with a budget of their own (``num_inducing``) choose ``size``
                instead when it is given; rules whose number is random or given
                keep at most ``size``, their first ones; rules with neither
                need it.
            current: A 1-d long tensor, the current set as indices into the
                candidates, if any (adaptive rules start from it).
            forced: A 1-d long tensor of distinct indices the choice must
                contain, first; rules that cannot honour them raise
                ``UnsupportedError``.

        Returns:
            A 1-d long tensor of distinct indices into the candidates, the forced
            ones first, then most important first (or in random order), so that
            a prefix is a good smaller set.
        """

    def probability(self, scores: Tensor, counts: Tensor | None = None) -> Tensor:
        r"""The probability that each point of a stream is admitted.

        Args:
            scores: A ``n`` tensor of the points' scores.
            counts: A ``n`` tensor of multiplicities (one coin per observation),
                or None for one each.

        Returns:
            A ``n`` tensor of probabilities.
        """
        raise UnsupportedError(
            f"{type(self).__name__} chooses whole sets; it has no online form that "
            "admits points one at a time."
        )

    def consider(
        self, scores: Tensor, counts: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        r"""Draw the admission coins of a stream of points (the online method).

        Each point's coin comes up with :meth:`probability`; nothing is admitted
        here (a caller, or a stateful rule's own ``admit``, does that).

        Args:
            scores: A ``n`` tensor of the points' scores.
            counts: A ``n`` tensor of multiplicities, or None for one each.

        Returns:
            A ``n`` boolean tensor of the coins and the ``n`` probabilities.
        """
        p = self.probability(scores, counts)
        return self._uniform(p.shape[0], p) < p, p

    def consider_one(self, score: float, dtype: torch.dtype = torch.double) -> bool:
        r"""Draw one point's coin from its score held as a float.

        The same draw from the generator as :meth:`consider` of one score of
        ``dtype``, without a tensor op per scalar.

        Args:
            score: The point's score.
            dtype: The dtype of the uniform draw (that of the data).

        Returns:
            Whether the coin came up.
        """
        p = float(self.probability(torch.tensor([score], dtype=dtype))[0])
        return self._uniform_one(dtype) < p

    def _request(
        self,
        candidates: Candidates,
        size: int | None,
        forced: Tensor | None,
        budget: int | None = None,
    ) -> tuple[int, int, Tensor]:
        r"""Resolve and check ``(n, size, forced)`` for a rule choosing ``size``.

        Args:
            candidates: The candidates.
            size: The requested size, or None for ``min(budget, n)``.
            forced: The forced indices, or None for none.
            budget: The rule's own size, or None if it has none.

        Returns:
            ``n``, the size to choose and the forced indices (a long tensor).
        """
        n = len(candidates)
        if size is None:
            if budget is None:
                raise InputDataError(
                    f"{type(self).__name__} has no size of its own; pass size."
                )
            size = min(budget, n)
        if forced is None:
            forced = torch.zeros(0, dtype=torch.long, device=candidates.device)
        check_subset_request(n, size, forced)
        return n, size, forced

    def _refuse_forced(self, forced: Tensor | None, reason: str) -> None:
        if forced is not None and forced.numel():
            raise UnsupportedError(
                f"{type(self).__name__} cannot honour forced points: {reason}. Use "
                "a rule that does (greedy, uniform, gradient diversity)."
            )


def check_subset_request(num_points: int, size: int, forced: Tensor) -> None:
    r"""Raise ``InputDataError`` unless ``forced`` fits in a subset of ``size``.

    Args:
        num_points: ``n``, the number of candidates.
        size: The subset size.
        forced: The forced indices.
    """
    if not 0 <= size <= num_points:
        raise InputDataError(f"Subset size {size} is not in [0, {num_points}].")
    if forced.numel() > size:
        raise InputDataError(
            f"{forced.numel()} forced observations do not fit in a subset of {size}."
        )
    if forced.numel() and (forced.min() < 0 or forced.max() >= num_points):
        raise InputDataError(f"Forced indices must lie in [0, {num_points}).")
    if forced.unique().numel() != forced.numel():
        raise InputDataError("Forced indices must be distinct.")


def free_indices(num_points: int, forced: Tensor) -> Tensor:
    r"""The indices in ``[0, n)`` that are not forced, in increasing order.

    Args:
        num_points: ``n``.
        forced: The forced indices.

    Returns:
        A 1-d long tensor.
    """
    return free_mask(num_points, forced).nonzero().squeeze(-1)


def free_mask(num_points: int, forced: Tensor) -> Tensor:
    r"""A boolean ``n`` mask of the indices that are not forced."""
    free = torch.ones(num_points, dtype=torch.bool, device=forced.device)
    free[forced] = False
    return free


__all__ = [
    "Candidates",
    "SelectionRule",
    "check_subset_request",
    "free_indices",
    "free_mask",
]
