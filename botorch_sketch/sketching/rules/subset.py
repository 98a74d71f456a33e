#!/usr/bin/env python3
r"""Subset-of-data rules: which observations a subset GP is fitted on.

GSSBO [Wei2025gssbo]_ fits an exact GP on ``M`` of the ``N`` observations. A rule
is a :class:`~botorch_sketch.sketching.rules.SelectionRule` asked for ``size=M``
indices into the ``N`` observations that always contain the ``forced`` ones
(GSSBO forces the initial design and the newest batch). The candidates carry
per-observation *gradient vectors* (``N x p``, computed by the model, see
:mod:`botorch_sketch.models.gradient_subset_gp`) for rules with
``uses_gradients``.

- :class:`GradientDiversitySubset`: greedy minimisation of the sum of pairwise
  cosine similarities of perturbed gradients, the GSS objective
  [Aljundi2019gradient]_ as GSSBO uses it, in ``O(N M p)``.
- :class:`RandomSubset`: a uniform random subset (the paper's RSSBO baseline).
- :class:`GreedyVarianceSubset`: greedy maximum residual kernel variance given
  the forced points (pivoted Cholesky; the greedy Nystrom rule the paper's
  appendix relates GSS to), in ``O(N M (M + d))``.
- :class:`NeighbourhoodSubset`: the forced observations, the nearest to the
  best-scored one and a uniform (or farthest-point) sample of the rest, in
  ``O(N d)`` (``O(N M d)`` farthest-point): the rows a
  carried model's hyperparameters are refitted on in a long BO loop
  (:class:`~botorch_sketch.bo.IncrementalGP`), so that the fit's cost is
  bounded whatever ``N`` and describes the function where the search is.

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
.. [Aljundi2019gradient]
    R. Aljundi, M. Lin, B. Goujaud, Y. Bengio. Gradient based sample selection for
    online continual learning. NeurIPS 2019.
"""

from __future__ import annotations

import math

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.checks import checked_real
from botorch_sketch.sketching.rules.greedy import GreedyVarianceSelector
from botorch_sketch.sketching.rules.rule import Candidates, SelectionRule, free_mask
from botorch_sketch.sketching.rules.selection import UniformSelector


class RandomSubset(UniformSelector):
    r"""The forced observations and a uniform random choice of the others (RSSBO).

    A :class:`~botorch_sketch.sketching.rules.UniformSelector` without a size
    of its own: the model asks for ``M``.
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        r"""Configure the rule.

        Args:
            generator: The random generator.
        """
        super().__init__(num_inducing=None, generator=generator)


class GradientDiversitySubset(SelectionRule):
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
    depends_on_hyperparameters = True

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
        # NaN passed ``< 0`` and perturbed every gradient coordinate to NaN.
        if not (0 <= noise_std < math.inf):
            raise InputDataError(
                f"noise_std must be finite and non-negative, got {noise_std}."
            )
        self.noise_std = noise_std

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""Choose the forced observations, then greedily the most diverse others.

        Args:
            candidates: The ``N`` observations with their ``N x p`` ``gradients``.
            size: ``M``, the subset size (required).
            current: Not used.
            forced: Indices that must be chosen.

        Returns:
            A 1-d long tensor of ``size`` distinct indices, the forced ones first,
            then in the order the greedy rule added them.
        """
        num_points, size, forced = self._request(candidates, size, forced)
        G = candidates.gradients
        if G is None or G.shape[0] != num_points:
            raise InputDataError(
                f"{type(self).__name__} needs a {num_points} x p tensor of gradients."
            )
        if self.noise_std > 0:
            G = G + self.noise_std * self._normal(tuple(G.shape), G)
        # Unit directions; an exactly zero gradient has no direction and is
        # treated as orthogonal to everything.
        U = G / G.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(G.dtype).tiny)
        free = free_mask(num_points, forced)
        running = U[forced].sum(0)
        chosen = [forced]
        for _ in range(size - forced.numel()):
            score = (U @ running).masked_fill(~free, float("inf"))
            i = score.argmin()
            free[i] = False
            running = running + U[i]
            chosen.append(i.reshape(1))
        return torch.cat(chosen)


class GreedyVarianceSubset(GreedyVarianceSelector):
    r"""Greedy maximum kernel variance given the points chosen so far.

    Starts from the forced observations and adds the one whose kernel section is
    least explained by the chosen ones (pivoted Cholesky of ``K_DD`` started at the
    forced pivots). Deterministic; it spreads the subset out in the kernel's
    geometry and ignores the targets. A
    :class:`~botorch_sketch.sketching.rules.GreedyVarianceSelector` without a
    size of its own or a tolerance: the model asks for ``M``.
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        r"""Configure the rule.

        Args:
            generator: Not used (the rule is deterministic); accepted so that
                every subset rule is built the same way.
        """
        super().__init__(num_inducing=None, tolerance=None)
        self.generator = generator


class NeighbourhoodSubset(SelectionRule):
    r"""The forced rows, the nearest to the best, then farthest and uniform rows.

    A long BO loop's hyperparameters must describe the function where the
    search is and cost the same at ``N = 10^3`` and ``10^5``. The forced rows
    (the caller's newest observations) come first; then ``local_fraction`` of
    the remaining room goes to the free rows nearest (in the inputs' Euclidean
    distance) to the row of largest score (the best observation), and the rest
    keeps the global scale in the fit: the share ``spread`` of it as the
    farthest-point sequence from the rows chosen so far (each pick the free
    row farthest from every chosen one, so that they span the data rather than
    follow their density, which a search piles up where it converges), then a
    uniform sample of the others.
    """

    depends_on_hyperparameters = False

    #: Farthest points are picked among at most this many free rows (a uniform
    #: pool of them beyond it): 0.35 s a subset at 10^4 rows in 100 dimensions,
    #: about 0.6 s at the pool's size.
    pool = 16384

    def __init__(
        self,
        local_fraction: float = 0.5,
        generator: torch.Generator | None = None,
        spread: float = 0.0,
    ) -> None:
        r"""Configure the rule.

        Args:
            local_fraction: The share of the free room given to the best row's
                nearest neighbours, in ``[0, 1]``.
            generator: The generator of the uniform sample.
            spread: The share of the rest chosen as farthest points, in
                ``[0, 1]`` (0: a uniform sample, 1: farthest points alone).
                Greedy, ``O(N d)`` a pick, among every free row up to
                :attr:`pool` of them and a uniform pool of that many beyond.
        """
        super().__init__(generator=generator)
        if not 0.0 <= local_fraction <= 1.0:
            raise InputDataError(
                f"local_fraction must lie in [0, 1], got {local_fraction}."
            )
        spread = checked_real(spread, "spread", minimum=0.0)
        if spread > 1.0:
            raise InputDataError(f"spread must lie in [0, 1], got {spread}.")
        self.local_fraction = float(local_fraction)
        self.spread = spread

    def select(
        self,
        candidates: Candidates,
        size: int | None = None,
        *,
        current: Tensor | None = None,
        forced: Tensor | None = None,
    ) -> Tensor:
        r"""Choose the forced rows, the best row's neighbours, then the rest.

        Args:
            candidates: The ``N`` observations with their ``N x d`` inputs ``X``
                and ``N`` ``scores`` (the observations, larger is better).
            size: ``M``, the subset size (required).
            current: Not used.
            forced: Indices that must be chosen (e.g. the newest rows).

        Returns:
            A 1-d long tensor of ``size`` distinct indices: the forced ones, the
            neighbours nearest first, the farthest points in the order picked,
            then the uniform sample.
        """
        n, size, forced = self._request(candidates, size, forced)
        candidates.require(self, "X", "scores")
        X, scores = candidates.X, candidates.scores
        if X.shape[0] != n or scores.shape != (n,):
            raise InputDataError(
                f"{type(self).__name__} needs a {n} x d tensor X and {n} scores."
            )
        free = free_mask(n, forced)
        room = size - forced.numel()
        num_local = min(room, round(self.local_fraction * room))
        local = forced[:0]
        if num_local > 0:
            best = X[scores.argmax()]
            distance = (X - best).square().sum(-1).masked_fill(~free, float("inf"))
            local = distance.topk(num_local, largest=False).indices
            free[local] = False
        num_far = round(self.spread * (room - num_local))
        far = forced[:0]
        if num_far > 0:
            chosen = torch.cat([forced, local])
            rest = free.nonzero().squeeze(-1)
            pool = free
            if rest.numel() > self.pool:
                # A bounded cost whatever N: the picks among a uniform pool.
                drawn = rest[self._permutation(rest.numel(), rest)[: self.pool]]
                pool = torch.zeros_like(free)
                pool[drawn] = True
            far = _farthest_points(X, chosen, pool, num_far)
            free[far] = False
        count = room - num_local - far.numel()
        pick = forced[:0]
        if count > 0:  # no draw otherwise: the generator may be torch's own
            rest = free.nonzero().squeeze(-1)
            pick = rest[self._permutation(rest.numel(), rest)[:count]]
        return torch.cat([forced, local, far, pick])


def _farthest_points(
    X: Tensor, chosen: Tensor, free: Tensor, count: int, chunk: int = 2048
) -> Tensor:
    # Greedy farthest-point picks among the free rows: each maximises its
    # distance to ``chosen`` and the picks before it. The distances to
    # ``chosen`` are taken ``chunk`` rows of X at a time (no n x |chosen|
    # matrix).
    gap = X.new_full((X.shape[0],), math.inf)
    if chosen.numel() > 0:
        gap = torch.cat(
            [torch.cdist(rows, X[chosen]).min(-1).values for rows in X.split(chunk)]
        )
    gap = gap.masked_fill(~free, -math.inf)
    # A pick's distances as ``|x|^2 - 2 x.x_i + |x_i|^2``: one matrix-vector
    # product, no n x d temporary.
    square = X.square().sum(-1)
    picks = []
    for _ in range(min(count, int(free.sum()))):
        i = gap.argmax()
        picks.append(i)
        distance = (square - 2.0 * (X @ X[i]) + square[i]).clamp_min(0.0).sqrt()
        gap = torch.minimum(gap, distance)
        gap[i] = -math.inf
    if not picks:
        return chosen.new_empty(0)
    return torch.stack(picks).to(chosen)


__all__ = [
    "GradientDiversitySubset",
    "GreedyVarianceSubset",
    "NeighbourhoodSubset",
    "RandomSubset",
]
