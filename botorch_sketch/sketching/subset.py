#!/usr/bin/env python3
r"""Subset-of-data rules: which observations a subset GP is fitted on.

GSSBO [Wei2025gssbo]_ fits an exact GP on ``M`` of the ``N`` observations. A rule
is a small object with one method, :meth:`SubsetRule.select`, and an explicit
``torch.Generator``; it returns indices into the ``N`` observations that always
contain the ``forced`` ones (GSSBO forces the initial design and the newest
batch). Rules see per-observation *gradient vectors* (``N x p``, computed by the
model, see :mod:`botorch_sketch.models.gradient_subset_gp`); rules that do not
use them ignore them.

- :class:`GradientDiversitySubset`: greedy minimisation of the sum of pairwise
  cosine similarities of perturbed gradients, the GSS objective
  [Aljundi2019gradient]_ as GSSBO uses it, in ``O(N M p)``.
- :class:`RandomSubset`: a uniform random subset (the paper's RSSBO baseline).
- :class:`GreedyVarianceSubset`: greedy maximum residual kernel variance given
  the forced points (pivoted Cholesky; the greedy Nystrom rule the paper's
  appendix relates GSS to), in ``O(N M (M + d))``.

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
.. [Aljundi2019gradient]
    R. Aljundi, M. Lin, B. Goujaud, Y. Bengio. Gradient based sample selection for
    online continual learning. NeurIPS 2019.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import Kernel
from torch import Tensor

from botorch_sketch.sketching.random_rule import RandomRule
from botorch_sketch.sketching.selection import greedy_variance_pivots


class SubsetRule(RandomRule, ABC):
    r"""A rule choosing ``size`` of ``N`` observations, ``forced`` ones included."""

    #: Whether :meth:`select` reads the gradient vectors (a model computes them).
    uses_gradients: bool = False
    #: Whether the rule reads a fitted model (gradients or kernel); a model runs
    #: such rules after fitting its hyperparameters, and others before.
    depends_on_fit: bool = False

    @abstractmethod
    def select(
        self,
        num_points: int,
        size: int,
        forced: Tensor,
        gradients: Tensor | None = None,
        X: Tensor | None = None,
        kernel: Kernel | None = None,
    ) -> Tensor:
        r"""Choose the subset.

        Args:
            num_points: ``N``, the number of observations.
            size: ``M``, the subset size, ``len(forced) <= M <= N``.
            forced: A 1-d long tensor of distinct indices that must be chosen.
            gradients: A ``N x p`` tensor of per-observation gradients, for rules
                with ``uses_gradients``.
            X: A ``N x d`` tensor of (input-transformed) inputs, for kernel rules.
            kernel: The kernel at its current hyperparameters, for kernel rules.

        Returns:
            A 1-d long tensor of ``size`` distinct indices in ``[0, N)``, the forced
            ones first.
        """

    def _free(self, num_points: int, forced: Tensor) -> Tensor:
        r"""A boolean ``N`` mask of the observations not forced."""
        free = torch.ones(num_points, dtype=torch.bool, device=forced.device)
        free[forced] = False
        return free


def check_subset_request(num_points: int, size: int, forced: Tensor) -> None:
    r"""Raise ``InputDataError`` unless ``forced`` fits in a subset of ``size``.

    Args:
        num_points: ``N``.
        size: ``M``.
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


class RandomSubset(SubsetRule):
    r"""The forced observations and a uniform random choice of the others (RSSBO)."""

    def select(
        self,
        num_points: int,
        size: int,
        forced: Tensor,
        gradients: Tensor | None = None,
        X: Tensor | None = None,
        kernel: Kernel | None = None,
    ) -> Tensor:
        r"""Choose the forced observations and ``size - len(forced)`` random ones.

        Args:
            num_points: ``N``.
            size: ``M``.
            forced: Indices that must be chosen.
            gradients: Ignored.
            X: Ignored.
            kernel: Ignored.

        Returns:
            A 1-d long tensor of ``size`` distinct indices, the forced ones first.
        """
        check_subset_request(num_points, size, forced)
        free = self._free(num_points, forced).nonzero().squeeze(-1)
        pick = free[self._permutation(free.numel(), free)[: size - len(forced)]]
        return torch.cat([forced, pick])


class GradientDiversitySubset(SubsetRule):
    r"""GSS: the subset whose perturbed gradients are most diverse in direction.

    Minimises ``sum_{i, j in U} cos(g_i + eps_i, g_j + eps_j)`` over subsets ``U``
    that contain the forced observations, with ``eps_i ~ N(0, noise_std^2 I)``
    [Wei2025gssbo]_ (``noise_std^2 = 0.01`` in the paper). The sum equals
    ``||sum_{i in U} u_i||^2`` with ``u_i`` the unit gradients, so the greedy step
    adds ``argmin_i <u_i, c>`` with ``c`` the running sum: ``O(N p)`` per step and
    no ``N x N`` matrix. The paper does not name its solver; the greedy one is
    the natural reading of its "minimise the pairwise similarity" and its
    appendix's greedy analysis.
    """

    uses_gradients = True
    depends_on_fit = True

    def __init__(
        self, noise_std: float = 0.1, generator: torch.Generator | None = None
    ) -> None:
        r"""Configure the rule.

        Args:
            noise_std: ``sigma_d``, the standard deviation of the perturbation
                added to every gradient coordinate (0 for none).
            generator: The generator for the perturbation.
        """
        super().__init__(generator=generator)
        if noise_std < 0:
            raise ValueError(f"noise_std must be non-negative, got {noise_std}.")
        self.noise_std = noise_std

    def select(
        self,
        num_points: int,
        size: int,
        forced: Tensor,
        gradients: Tensor | None = None,
        X: Tensor | None = None,
        kernel: Kernel | None = None,
    ) -> Tensor:
        r"""Choose the forced observations, then greedily the most diverse others.

        Args:
            num_points: ``N``.
            size: ``M``.
            forced: Indices that must be chosen.
            gradients: A ``N x p`` tensor of per-observation gradients.
            X: Ignored.
            kernel: Ignored.

        Returns:
            A 1-d long tensor of ``size`` distinct indices, the forced ones first,
            then in the order the greedy rule added them.
        """
        check_subset_request(num_points, size, forced)
        if gradients is None or gradients.shape[0] != num_points:
            raise InputDataError(
                f"{type(self).__name__} needs a {num_points} x p tensor of gradients."
            )
        G = gradients
        if self.noise_std > 0:
            G = G + self.noise_std * self._normal(tuple(G.shape), G)
        # Unit directions; an exactly zero gradient has no direction and is
        # treated as orthogonal to everything.
        U = G / G.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(G.dtype).tiny)
        free = self._free(num_points, forced)
        running = U[forced].sum(0)
        chosen = [forced]
        for _ in range(size - forced.numel()):
            score = (U @ running).masked_fill(~free, float("inf"))
            i = score.argmin()
            free[i] = False
            running = running + U[i]
            chosen.append(i.reshape(1))
        return torch.cat(chosen)


class GreedyVarianceSubset(SubsetRule):
    r"""Greedy maximum kernel variance given the points chosen so far.

    Starts from the forced observations and adds the one whose kernel section is
    least explained by the chosen ones (pivoted Cholesky of ``K_DD`` started at the
    forced pivots). Deterministic; it spreads the subset out in the kernel's
    geometry and ignores the targets.
    """

    depends_on_fit = True

    def select(
        self,
        num_points: int,
        size: int,
        forced: Tensor,
        gradients: Tensor | None = None,
        X: Tensor | None = None,
        kernel: Kernel | None = None,
    ) -> Tensor:
        r"""Choose the forced observations, then the largest residual variances.

        Args:
            num_points: ``N``.
            size: ``M``.
            forced: Indices that must be chosen.
            gradients: Ignored.
            X: A ``N x d`` tensor of (input-transformed) inputs.
            kernel: The kernel.

        Returns:
            A 1-d long tensor of ``size`` distinct indices, the forced ones first.
        """
        check_subset_request(num_points, size, forced)
        if X is None or kernel is None:
            raise InputDataError(f"{type(self).__name__} needs inputs and a kernel.")
        return greedy_variance_pivots(X, kernel, size, start=forced)
