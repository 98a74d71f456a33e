#!/usr/bin/env python3
r"""One Thompson-sampling batch: candidates, pathwise samples, their maximisers.

The step that :class:`~botorch_sketch.bo.ask_tell.LargeBatchOptimizer` (and so
:func:`~botorch_sketch.bo.large_batch.run_large_batch`) takes at every ask:
candidates around the incumbents or in trust regions (:func:`candidate_set`,
:func:`posterior_incumbents`), ``q`` pathwise posterior samples
[Wilson2020efficiently]_ maximised over them and refined around their own
argmaxes (:func:`thompson_batch`), and the carried surrogate those samples are
drawn from (:func:`default_surrogate`).

Many paths share an argmax on a shared candidate set. :func:`thompson_batch`
reports how many argmaxes were distinct and fills the batch: every path also
scores perturbations of its own argmax (reflected at the region's faces, so
that they stay distinct at a corner), and a path whose argmax another path took
gets its best perturbation.

References:

.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.approximate_gp import ApproximateGPyTorchModel
from botorch.models.model import Model
from botorch.sampling.pathwise import draw_kernel_feature_paths, draw_matheron_paths
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from botorch_sketch.bo.incremental_gp import IncrementalGP
from botorch_sketch.bo.sampling import own_path_values, path_values, posterior_means
from botorch_sketch.checks import checked_count, checked_real
from botorch_sketch.sketching.rules.subset import NeighbourhoodSubset


class Batch(NamedTuple):
    r"""One Thompson-sampling batch.

    Attributes:
        X: A ``q x d`` tensor of distinct points.
        distinct_argmaxes: How many distinct candidates the ``q`` paths' argmaxes
            over the shared set were (the rest were filled).
        argmax: A ``q`` long tensor: the candidate each path's point came from
            (its argmax over the shared set, or the argmax it perturbed).
    """

    X: Tensor
    distinct_argmaxes: int
    argmax: Tensor | None = None


def check_region(region: Tensor, name: str = "region") -> Tensor:
    r"""``region`` if it is a finite ``2 x d`` box with lower <= upper.

    Args:
        region: The box.
        name: Its name in the error.

    Returns:
        The region.
    """
    if (
        not isinstance(region, Tensor)
        or region.dim() != 2
        or region.shape[0] != 2
        or region.shape[1] == 0
        or not bool(torch.isfinite(region).all())
        or not bool((region[1] >= region[0]).all())
    ):
        raise InputDataError(
            f"{name} must be a finite 2 x d tensor with lower <= upper; got "
            f"{region if isinstance(region, Tensor) else type(region).__name__}."
        )
    return region


def reflect(X: Tensor, region: Tensor) -> Tensor:
    r"""Points folded back into ``region`` by reflection at its faces.

    Clipping maps every point beyond a face onto it, so perturbations of a
    point at a corner collapse onto the corner; reflection keeps distinct
    points distinct.

    Args:
        X: A ``... x d`` tensor.
        region: A ``2 x d`` box.

    Returns:
        A tensor of ``X``'s shape in ``region``.
    """
    lower, upper = region[0], region[1]
    width = (upper - lower).clamp_min(torch.finfo(X.dtype).tiny)
    folded = (X - lower).remainder(2 * width)
    folded = torch.where(folded > width, 2 * width - folded, folded)
    return torch.minimum(torch.maximum(lower + folded, lower), upper)


def posterior_incumbents(
    model: Model, X: Tensor, k: int, chunk_size: int = 4096
) -> Tensor:
    r"""The ``k`` observed inputs of largest posterior mean.

    With noisy observations the best observed values are mostly the luckiest
    draws; the posterior mean ranks the inputs by what the model believes. The
    means are read one point at a time (a ``n x 1 x d`` batch, in chunks), so no
    joint ``n x n`` covariance is formed.

    Args:
        model: A fitted single-output model.
        X: A ``n x d`` tensor of observed inputs (``n >= 1``).
        k: How many to return (at least 1).
        chunk_size: Points per posterior call.

    Returns:
        A ``min(k, n) x d`` tensor, best first.
    """
    k = checked_count(k, "k")
    if X.dim() != 2 or X.shape[0] == 0:
        raise InputDataError(
            f"X must be a non-empty n x d tensor; got shape {tuple(X.shape)}."
        )
    return X[posterior_means(model, X, chunk_size).topk(min(k, X.shape[0])).indices]


def candidate_set(
    incumbents: Tensor,
    region: Tensor,
    num_candidates: int,
    scale: float = 0.05,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Half a Sobol sample of ``region``, half perturbations of the incumbents.

    Args:
        incumbents: A ``k x d`` tensor (``k >= 1``) of points to perturb (for
            example :func:`posterior_incumbents`).
        region: A ``2 x d`` box the candidates lie in.
        num_candidates: The number ``N`` of candidates.
        scale: The perturbations' standard deviation, as a fraction of the box.
        generator: Seeds the Sobol sample and the perturbations.

    Returns:
        A ``N x d`` tensor in ``region`` (perturbations reflected at its faces).
    """
    region = check_region(region)
    num_candidates = checked_count(num_candidates, "num_candidates")
    scale = checked_real(scale, "scale", positive=True)
    if incumbents.dim() != 2 or incumbents.shape[0] == 0:
        raise InputDataError(
            "incumbents must be a non-empty k x d tensor; got shape "
            f"{tuple(incumbents.shape)}."
        )
    if incumbents.shape[-1] != region.shape[-1]:
        raise InputDataError(
            f"incumbents have {incumbents.shape[-1]} columns; the region has "
            f"{region.shape[-1]}."
        )
    num_sobol = num_candidates - num_candidates // 2
    seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
    sobol = draw_sobol_samples(region, n=num_sobol, q=1, seed=seed).squeeze(1)
    k = incumbents.shape[0]
    picks = torch.randint(k, (num_candidates - num_sobol,), generator=generator)
    centres = incumbents[picks.to(incumbents.device)]
    width = region[1] - region[0]
    noise = torch.randn(centres.shape, generator=generator, dtype=centres.dtype)
    local = reflect(centres + scale * width * noise.to(centres.device), region)
    return torch.cat([sobol.to(centres), local])


def _gaussian(generator: torch.Generator | None) -> Callable[[torch.Size], Tensor]:
    # The prior paths' feature weights: plain Gaussian draws from ``generator``.
    # BoTorch's default scrambles a Sobol sequence of one dimension per feature
    # (1024) at every draw: about 50 ms a batch, a fifth of its cost in 60-D.
    def weights(shape: torch.Size) -> Tensor:
        return torch.randn(shape, generator=generator, dtype=torch.double)

    return weights


def thompson_batch(
    model: Model,
    candidates: Tensor,
    q: int,
    region: Tensor,
    num_local: int = 16,
    local_scale: float = 0.02,
    generator: torch.Generator | None = None,
    groups: Tensor | None = None,
    reserved: int = 0,
    num_features: int = 1024,
) -> Batch:
    r"""``q`` distinct points: each a pathwise sample's maximiser, deduplicated.

    Each of ``q`` Matheron paths is evaluated on the shared candidates and on
    ``num_local`` Gaussian perturbations of its own argmax (standard deviation
    ``local_scale`` of the region, reflected at its faces). A path keeps the
    best of those points; if its argmax over the shared set was already taken
    by a path before it, it keeps its best perturbation instead. The paths'
    feature weights are Gaussian draws from ``generator`` (BoTorch's default,
    a scrambled Sobol sequence of 1024 dimensions, cost a fifth of a batch in
    60-D); their random features and the Matheron update draw from torch's
    global random generator (BoTorch's feature maps take none): fork it to
    leave a caller's stream alone, as :func:`run_large_batch` does.

    Args:
        model: A fitted single-output model that ``draw_matheron_paths`` takes.
        candidates: A ``N x d`` tensor of shared candidates (``N >= 1``).
        q: The batch size.
        region: A ``2 x d`` box the perturbations are reflected into, or a
            ``2 x N x d`` tensor of one box per candidate (the box of a
            path's argmax takes its perturbations).
        num_local: Perturbations per path (at least 1).
        local_scale: Their standard deviation, as a fraction of the box.
        generator: Seeds the perturbations and the paths' feature weights.
        groups: A ``N`` long tensor numbering each candidate's group (its trust
            region) from 0; needed when ``reserved > 0``.
        reserved: Paths reserved to each group: the first ``reserved * G``
            paths (``G`` groups) take their maximum over their own group's
            candidates alone, the groups in turn; the others over all.
        num_features: Random Fourier features of each path's prior part
            (BoTorch's default 1024); a path costs ``O(m + F)`` per candidate.

    Returns:
        A :class:`Batch`.
    """
    q = checked_count(q, "q")
    reserved = checked_count(reserved, "reserved", minimum=0)
    num_features = checked_count(num_features, "num_features")
    num_local = checked_count(num_local, "num_local")
    local_scale = checked_real(local_scale, "local_scale", positive=True)
    per_candidate = isinstance(region, Tensor) and region.dim() == 3
    if per_candidate:
        if region.shape[:2] != (2, candidates.shape[0]):
            raise InputDataError(
                f"region must be 2 x d or 2 x N x d with N = {candidates.shape[0]} "
                f"candidates; got shape {tuple(region.shape)}."
            )
        check_region(region.reshape(2, -1), "region")
    else:
        region = check_region(region)
    if (
        candidates.dim() != 2
        or candidates.shape[0] == 0
        or candidates.shape[-1] != region.shape[-1]
    ):
        raise InputDataError(
            f"candidates must be a non-empty N x {region.shape[-1]} tensor; got "
            f"shape {tuple(candidates.shape)}."
        )
    if not bool(torch.isfinite(candidates).all()):
        raise InputDataError("candidates contain NaN or infinite values.")
    if reserved > 0:
        _check_groups(groups, candidates.shape[0], reserved, q)
    if isinstance(model, ApproximateGPyTorchModel):
        # GPyTorch's variational strategy memoises the inducing Cholesky factor
        # with the batch shape of the last posterior call, and the Matheron
        # update then fails on it (gpytorch issue #2642); leaving eval mode
        # clears that cache.
        model.train()
        model.eval()
    paths = draw_matheron_paths(
        model,
        sample_shape=torch.Size([q]),
        prior_sampler=functools.partial(
            draw_kernel_feature_paths,
            weight_generator=_gaussian(generator),
            num_features=num_features,
        ),
    )

    with torch.no_grad():
        values = path_values(paths, candidates)  # q x N
        if reserved > 0:
            # Reserved paths see their own group's candidates alone.
            size = int(groups.max()) + 1
            own = torch.arange(reserved * size, device=values.device) % size
            other = groups.to(values.device).unsqueeze(0) != own.unsqueeze(1)
            values[: own.shape[0]].masked_fill_(other, -math.inf)
        argmax = values.argmax(-1)
        best = candidates[argmax]  # q x d
        box = region[:, argmax].unsqueeze(-2) if per_candidate else region
        width = box[1] - box[0]
        noise = torch.randn(
            q, num_local, best.shape[-1], generator=generator, dtype=best.dtype
        ).to(best.device)
        local = reflect(best.unsqueeze(-2) + local_scale * width * noise, box)
        local_values = own_path_values(paths, local)  # q x num_local
        top = local_values.argmax(-1)
        rows = torch.arange(q, device=best.device)
        best_local = local[rows, top]
        # A path's argmax is kept by the first path that chose it; the others
        # take their best perturbation (continuous draws: distinct).
        order = torch.arange(q, device=argmax.device)
        first = argmax.new_full((candidates.shape[0],), q).scatter_reduce(
            0, argmax, order, reduce="amin"
        )
        taken = first[argmax] != order
        improves = local_values[rows, top] > values[rows, argmax]
        use_local = taken | improves
        X = torch.where(use_local.unsqueeze(-1), best_local, best)
    return Batch(X=X, distinct_argmaxes=int(argmax.unique().numel()), argmax=argmax)


def _check_groups(groups: Tensor | None, num: int, reserved: int, q: int) -> None:
    if not isinstance(groups, Tensor) or groups.shape != (num,):
        shape = tuple(groups.shape) if isinstance(groups, Tensor) else groups
        raise InputDataError(
            f"reserved paths need groups, one group per candidate ({num}); got {shape}."
        )
    if groups.dtype != torch.long or int(groups.min()) < 0:
        raise InputDataError("groups must be non-negative integers (torch.long).")
    size = int(groups.max()) + 1
    if reserved * size > q:
        raise InputDataError(
            f"reserved ({reserved}) paths for each of {size} groups exceed q ({q})."
        )
    if groups.unique().numel() != size:
        raise InputDataError(
            f"groups must number the groups 0..{size - 1}, each with a candidate."
        )


def default_surrogate(
    max_inducing: int = 256,
    hyperparameter_subset: int = 400,
    subset_spread: float = 0.0,
) -> IncrementalGP:
    r"""The carried sketch :func:`run_large_batch` uses unless given another.

    An :class:`IncrementalGP` whose inducing set is capped at ``max_inducing``
    and changed only at refits. A refit comes when a batch's observations
    surprise the model (``surprise_tolerance=4``, once the data have grown by
    25% since the last fit) or the data have doubled; it fits the
    hyperparameters on ``hyperparameter_subset`` rows (the newest third, the
    best observation's nearest neighbours and a uniform sample) from the
    previous values, with at most 20 L-BFGS-B iterations (about 25 evaluations
    of the likelihood). In 60 dimensions a refit at ``n = 10^3`` took 68-136 s
    with ``NystromGP``'s own fit on 600 points; this one takes about 0.5 s at
    any ``n`` (60 and 100 dimensions, 400 rows). The cap of 256 inducing points
    (not 512) halves the paths' cost per candidate.

    400 rows, not 200: with 400 the median best value after 10^4 evaluations
    (q = 100, six seeds) rose on eight of ten problems and on six of six more,
    for about 15% more CPU; more L-BFGS-B iterations on 200 rows made the
    search worse (``docs/bo-headline.md``).

    ``subset_spread`` replaces that share of the uniform sample by farthest
    points (:class:`~botorch_sketch.sketching.rules.NeighbourhoodSubset`), so
    that the fit sees the whole span of the data, not mostly the regions where
    the search has piled them. On smooth problems in 30-100 dimensions
    ``0.5`` or ``1`` was better in nearly every run (at q = 10, 100 and, on
    Levy-100, 1000); on noisy Ackley it was worse at every batch size, the
    plateau's ripple read as noise, so the default stays ``0``
    (``docs/bo-headline.md``).

    Args:
        max_inducing: The inducing set's cap.
        hyperparameter_subset: The rows a refit fits the hyperparameters on.
        subset_spread: The share, in ``[0, 1]``, of the subset's rows after
            the newest and the best one's neighbours that are farthest points
            (the others a uniform sample).

    Returns:
        The surrogate.
    """
    return IncrementalGP(
        refit_every=1,
        refit_growth=1.0,
        drift_tolerance=None,
        max_inducing=max_inducing,
        grow_between_refits=False,
        surprise_tolerance=4.0,
        surprise_growth=0.25,
        hyperparameter_subset=hyperparameter_subset,
        subset_rule=NeighbourhoodSubset(spread=subset_spread),
        fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 20}}},
    )
