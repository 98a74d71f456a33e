#!/usr/bin/env python3
r"""Observed values as the models see them: finite, and a single objective warped.

:func:`_modelable` replaces infinite values and scales down huge ones;
:class:`_HalfRankWarp` draws in the bad half of a single objective's values
when a few bad trials make most of their spread; :func:`_warped` keeps one
warping per output while a carried model only absorbs new rows.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special
from torch import Tensor

from botorch_sketch.bo import IncrementalGP

#: ``_HalfRankWarp`` warps only values whose standard deviation is more than
#: this many times the upper half's spread about the median.
_WARP_SPREAD = 10.0


def _warped(
    warps: dict[str, _HalfRankWarp],
    name: str,
    Y: Tensor,
    surrogate: IncrementalGP | None,
) -> Tensor:
    r"""``Y`` through ``warps[name]``, re-estimated where no refit is skipped.

    Re-estimating changes the earlier rows, which a carried ``IncrementalGP``
    would take for changed data and refit: the warping is kept while the
    surrogate would absorb ``Y`` by a Woodbury step, and re-estimated at the
    calls it refits on schedule (``surrogate`` None: at every call).
    """
    warp = warps.get(name)
    if warp is None or surrogate is None or surrogate.refit_due(len(Y)):
        warp = warps[name] = _HalfRankWarp(Y)
    return warp(Y)


class _HalfRankWarp:
    r"""Half-rank warping of one objective's values, fixed once estimated.

    A GP standardises its outcomes and infers a noise variance of at least
    ``1e-4`` of that scale (BoTorch's ``MIN_INFERRED_NOISE_LEVEL``). When a few
    bad trials make the spread (a wrong ``depth`` costing units where the
    learning rate moves the objective by ``0.01``), the differences between
    the good trials are below that noise: the model calls them noise, and
    expected improvement keeps proposing the trials it has (issue 38). Optuna's
    ``GPSampler`` lets the noise go down to ``1e-6`` of the scale, which
    resolves them (with a floor of ``1e-4`` it stalls as well); the sampler
    cannot reach the noise constraint of a model a factory builds, so the
    values are warped instead, after Vizier's half-rank warping [Song2024]_
    but drawing in only. The map is the identity unless the standard deviation
    of the values is more than ``_WARP_SPREAD`` (10) times the upper half's
    spread ``s`` (below), where the floor's standard deviation (1% of theirs)
    exceeds a tenth of ``s``; otherwise:

    - values at or above the median ``m`` of the estimation values are kept;
    - a value ``y`` below it becomes ``max(y, m + s * Phi^-1(q))``, with ``q``
      its rank quantile ``(rank - 1/2) / n`` among the estimation values (ties
      share their mean rank) and ``s`` the root-mean-square distance of the
      upper half from ``m``: the bad half is drawn in to a few ``s`` below the
      median, in rank order, and never spread wider than it was.

    The map is monotone, so the order of the values (the incumbent, what is an
    improvement) is kept. It is fixed once estimated: a value it was not
    estimated on is interpolated linearly between the neighbouring estimation
    values (below the lowest, ``y_0`` warped to ``w_0``, it becomes
    ``max(y, w_0 - s * log1p((y_0 - y) / (m - y_0)))``), so that the earlier
    rows of a carried model do not change between re-estimations.

    References:

    .. [Song2024]
        X. Song et al. The Vizier Gaussian process bandit algorithm.
        arXiv:2408.11527, 2024 (its output warping: half-rank, then log).
    """

    def __init__(self, Y: Tensor) -> None:
        r"""Estimate the warping on ``n x 1`` finite values (to be maximised)."""
        y = Y.detach().reshape(-1).cpu().numpy().astype(np.float64)
        self.median = float(np.median(y))
        upper = y[y >= self.median]
        scale = math.sqrt(float(np.mean((upper - self.median) ** 2)))
        if not scale > 0:
            # The upper half all at the median (ties): the whole spread.
            scale = math.sqrt(float(np.mean((y - self.median) ** 2)))
        # Only a spread that buries the upper half's differences under the
        # noise floor is warped; otherwise the map is the identity.
        self.scale = scale if float(np.std(y)) > _WARP_SPREAD * scale else 0.0
        values, counts = np.unique(y, return_counts=True)
        # Mean 1-based rank of each distinct value.
        rank = np.cumsum(counts) - (counts - 1) / 2.0
        below = values < self.median
        quantile = (rank[below] - 0.5) / len(y)
        warped = np.maximum(
            values[below], self.median + scale * special.ndtri(quantile)
        )
        # Knots of the interpolation, increasing in both coordinates, ending at
        # the median (which maps to itself).
        self.knots = np.append(values[below], self.median)
        self.warped = np.append(warped, self.median)

    def __call__(self, Y: Tensor) -> Tensor:
        r"""The warped ``n x 1`` values, each row's from its own value alone."""
        if not self.scale > 0:
            return Y
        y = Y.detach().reshape(-1).cpu().numpy().astype(np.float64)
        s, y0, w0 = self.scale, self.knots[0], self.warped[0]
        # Below the lowest estimation value: further by the log of how much
        # further than it the value is from the median.
        spread = self.median - y0 if self.median > y0 else s
        inside = np.interp(y, self.knots, self.warped)
        tail = np.maximum(y, w0 - s * np.log1p(np.maximum(y0 - y, 0.0) / spread))
        w = np.where(y >= self.median, y, np.where(y < y0, tail, inside))
        return torch.as_tensor(w, dtype=Y.dtype, device=Y.device).reshape(Y.shape)


def _modelable(values: Tensor) -> Tensor:
    r"""Observed values a GP can model, in the same order per column.

    Optuna accepts infinite objectives and constraints; a GP does not: each is
    replaced by a value one spread of its column's finite values beyond them
    (and beyond 0, so that an infinite constraint keeps its side). A column
    beyond ``1e100`` in magnitude is scaled down by a power of two (exact):
    its squares overflowed in the outcome standardisation. Neither changes
    which values are better, nor a constraint's sign.

    Args:
        values: A ``n x k`` tensor (objectives to maximise, or constraints).

    Returns:
        A new ``n x k`` tensor.
    """
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        inf = torch.full_like(values, math.inf)
        high = torch.where(finite, values, -inf).amax(0).nan_to_num(0.0, 0.0, 0.0)
        low = torch.where(finite, values, inf).amin(0).nan_to_num(0.0, 0.0, 0.0)
        spread = (high - low).clamp_min(1.0)
        values = torch.where(values == math.inf, high.clamp_min(0) + spread, values)
        values = torch.where(values == -math.inf, low.clamp_max(0) - spread, values)
    scale = values.abs().nan_to_num(0.0).amax(0)
    if bool((scale > 1e100).any()):
        exponent = torch.frexp(scale).exponent.to(values.dtype)
        values = values * torch.where(scale > 1e100, 2.0**-exponent, 1.0)
    return values
