#!/usr/bin/env python3
r"""Dense float64 algebra shared by the weight posterior and its read-outs.

The Cholesky factor of the precision ``B = I + gram`` (:func:`factor_precision`),
products of test points with a covariance batched over fantasies that do not
copy it (:func:`folded_matmul`), the lift of variances that rounding made
negative or below GPyTorch's smallest variance (:func:`lift_diagonal`,
:func:`variance_floor`) and the right-hand side of Matheron's rule
(:func:`matheron_rhs`).
"""

from __future__ import annotations

import torch
from gpytorch import settings as gpytorch_settings
from torch import Tensor

from botorch_sketch.sketching.posterior.statistics import DTCStatistics


def factor_precision(statistics: DTCStatistics) -> tuple[Tensor, Tensor]:
    r"""The Cholesky factor ``L`` of ``B = I + gram`` and ``L^{-1} Z^T Lambda^{-1} r``.

    Both in float64 whatever the type of the statistics (see
    :class:`~botorch_sketch.sketching.posterior.WeightPosterior`).
    """
    gram = statistics.gram.double()
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    chol = torch.linalg.cholesky(eye + 0.5 * (gram + gram.mT))
    whitened = torch.linalg.solve_triangular(
        chol, statistics.moment.double().unsqueeze(-1), upper=False
    )
    return chol, whitened


def folded_matmul(Z: Tensor, M: Tensor) -> Tensor:
    r"""``Z @ M`` for ``... x q x m`` and ``lead x m x k``, without copying ``M``.

    The batch dimensions that ``Z`` has and ``M`` has not (``b x q x m'`` test
    points against a posterior batched over fantasies: an acquisition
    function's raw samples) are folded into the rows of one product, where
    broadcasting would copy an ``m x k`` matrix per test batch.
    """
    lead = M.shape[:-2]
    if len(lead) == 0 or Z.dim() - 2 <= len(lead):
        return Z @ M
    q, m = Z.shape[-2:]
    batch = torch.broadcast_shapes(lead, Z.shape[:-2])
    k, n = len(batch) - len(lead), len(batch)
    order = [*range(k, n), *range(k), n, n + 1]
    rows = Z.expand(batch + (q, m)).permute(order).reshape(batch[k:] + (-1, m))
    out = rows @ M.expand(batch[k:] + M.shape[-2:])  # inner x (E q) x k
    out = out.reshape(batch[k:] + batch[:k] + (q, M.shape[-1]))
    return out.permute([*range(n - k, n), *range(n - k), n, n + 1])


def lift_diagonal(covar: Tensor, floor: float = 0.0) -> Tensor:
    r"""Raise the diagonal entries of a ``... x q x q`` matrix below ``floor`` to it.

    The DTC covariance is PSD in exact arithmetic; rounding can make a variance
    slightly negative where it is nearly zero (at an inducing point, with little
    noise). Only the diagonal is touched, and the lift carries no gradient.

    Args:
        covar: The matrix.
        floor: The smallest variance kept: 0, or GPyTorch's (see
            :func:`variance_floor`) for a covariance that a GPyTorch
            distribution reads.

    Returns:
        ``covar`` with its diagonal raised (never lowered) to ``floor``.
    """
    # The diagonal swapped for its lifted copy, both without gradient: the
    # values are exact (``covar - diag`` is 0 there), the gradient is covar's.
    diag = covar.diagonal(dim1=-2, dim2=-1).detach()
    return covar - torch.diag_embed(diag) + torch.diag_embed(diag.clamp_min(floor))


def variance_floor(dtype: torch.dtype) -> float:
    r"""The smallest variance a GPyTorch distribution takes without a warning.

    ``MultivariateNormal.variance`` rounds every variance below
    ``gpytorch.settings.min_variance`` (1e-10 in float64, 1e-6 in float32) up
    to it and warns "Negative variance values detected" each time, also for a
    positive one: an acquisition function read at observed inputs of a
    nearly noise-free objective (a sampler's discrete choices) warned at every
    trial. Raising those variances to the floor first gives the same values,
    without the warning.

    Args:
        dtype: The covariance's floating point type.

    Returns:
        The floor.
    """
    return gpytorch_settings.min_variance.value(dtype)


def matheron_rhs(
    statistics: DTCStatistics,
    prior_weights: Tensor,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""``Z^T Lambda^{-1} (r - Z w_0 - eps)`` from the statistics, in float64.

    The right-hand side of Matheron's rule in Nystrom coordinates (see
    :meth:`WeightPosterior.matheron_update
    <botorch_sketch.sketching.posterior.WeightPosterior.matheron_update>`):
    ``Z^T Lambda^{-1} eps`` is drawn as ``N(0, gram)`` through a square root
    of ``gram``: its Cholesky factor (a tenth of the cost of an
    eigendecomposition, which a loop that draws after every Woodbury step
    paid each time), or, where ``gram`` is singular (fewer observations than
    coordinates), the root of its eigendecomposition.

    Args:
        statistics: The statistics of the conditioning data.
        prior_weights: A ``sample_shape x m'`` tensor ``w_0``.
        generator: The random generator of the noise draw.

    Returns:
        A ``sample_shape x m'`` float64 tensor.
    """
    gram = statistics.gram.double()
    symmetric = 0.5 * (gram + gram.mT)
    sqrt_gram, info = torch.linalg.cholesky_ex(symmetric)
    if bool((info > 0).any()):
        evals, evecs = torch.linalg.eigh(symmetric)
        sqrt_gram = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
    # Drawn on the generator's device (the CPU without one), then moved.
    device = generator.device if generator is not None else "cpu"
    xi = torch.randn(
        prior_weights.shape, generator=generator, dtype=gram.dtype, device=device
    ).to(gram.device)
    w0 = prior_weights.double()
    return statistics.moment.double() - w0 @ gram - xi @ sqrt_gram.mT
