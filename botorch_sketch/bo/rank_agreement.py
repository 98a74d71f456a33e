#!/usr/bin/env python3
r"""Kendall's rank correlation between a model's values and the truth.

Surrogate-assisted evolution strategies trust a model as far as it ranks the
points it predicted as the objective does [Hansen2019global]_. The check runs
at every increment of every population, on at most a few hundred points:
:func:`kendall_tau` computes Kendall's tau-b (ties corrected, as
``scipy.stats.kendalltau``'s default) from the pairwise signs in one tensor
operation, without scipy's per-call overhead, which dominated the check.

References:

.. [Hansen2019global]
    N. Hansen. A global surrogate assisted CMA-ES. GECCO 2019.
"""

from __future__ import annotations

import math

import torch
from scipy.stats import kendalltau
from torch import Tensor

#: Above this many points, scipy's O(n log n) algorithm (the pairs take memory).
MAX_PAIRWISE = 1000


def kendall_tau(a: Tensor, b: Tensor) -> float:
    r"""Kendall's tau-b between two equally long vectors.

    Args:
        a: A ``n`` tensor.
        b: A ``n`` tensor.

    Returns:
        Tau-b in ``[-1, 1]``; NaN where fewer than two points or either
        vector is constant (as scipy's).
    """
    if a.shape != b.shape or a.dim() != 1:
        raise ValueError(
            f"a and b must be vectors of one length; got {tuple(a.shape)} and "
            f"{tuple(b.shape)}."
        )
    n = a.shape[0]
    if n < 2:
        return math.nan
    if n > MAX_PAIRWISE:
        return float(kendalltau(a.cpu().numpy(), b.cpu().numpy()).statistic)
    i, j = torch.triu_indices(n, n, 1, device=a.device)
    sa = torch.sign(a[i] - a[j])
    sb = torch.sign(b[i] - b[j])
    untied_a = float(sa.count_nonzero())
    untied_b = float(sb.count_nonzero())
    if untied_a == 0 or untied_b == 0:
        return math.nan
    return float((sa * sb).sum()) / math.sqrt(untied_a * untied_b)
