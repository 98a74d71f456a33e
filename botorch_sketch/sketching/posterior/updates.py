#!/usr/bin/env python3
r"""What an update of the weight posterior did, and the bordered inverse.

The updates of :class:`~botorch_sketch.sketching.posterior.WeightPosterior`
return what they computed, so that read-outs kept outside the posterior
(:class:`~botorch_sketch.sketching.online.TrackedCandidates`) follow them
without recomputing: a rank-``q`` Woodbury step (:class:`RankUpdate`), a
coordinate added when the inducing set grows (:class:`Border`), and one
point's products with the posterior, read before a rank-one step
(:class:`OnePointProducts`). :func:`bordered_inverse` is the ``O(m^2)``
inverse of a matrix grown by one row and column, by which the posterior grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from torch import Tensor


@dataclass
class RankUpdate:
    r"""What a rank-``q`` update did, for tracked read-outs to follow.

    Attributes:
        P: ``m' x q``, ``C Z_q^T`` before the update.
        chol: ``q x q`` lower Cholesky factor of ``S = Z_q C Z_q^T + Lambda_q``.
        coefficients: ``q``, ``S^{-1} (r - Z_q w)``.
    """

    P: Tensor
    chol: Tensor
    coefficients: Tensor


@dataclass
class Border:
    r"""What growing the embedding by one coordinate did to the posterior.

    Attributes:
        u: ``m'``, ``C g`` before growing.
        schur: ``1 + g_nn - g^T C g``.
        delta: The new coordinate's weight, ``(b_new - g^T w) / schur``.
    """

    u: Tensor
    schur: Tensor
    delta: Tensor


class OnePointProducts(NamedTuple):
    r"""One point's products with the posterior.

    What :meth:`WeightPosterior.product_one
    <botorch_sketch.sketching.posterior.WeightPosterior.product_one>` returns.

    Attributes:
        P: ``m'``, ``C z``.
        quadratic: ``z^T C z`` (the point's variance is ``k - ||z||^2`` plus it).
        mean: ``z^T w`` (its posterior mean minus the prior mean).
        squared_norm: ``P^T P`` (what a downdate by the point takes off ``tr(C)``,
            times ``s``).
    """

    P: Tensor
    quadratic: float
    mean: float
    squared_norm: float


def bordered_inverse(
    inverse: Tensor, column: Tensor, corner: Tensor, out: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    r"""The inverse of ``[[M, g], [g^T, c]]`` from ``M^{-1}``, ``O(m^2)``.

    By the Schur complement ``s = c - g^T M^{-1} g``: with ``u = M^{-1} g``, the
    inverse is ``[[M^{-1} + u u^T / s, -u / s], [-u^T / s, 1 / s]]``.

    Args:
        inverse: The ``m x m`` symmetric ``M^{-1}``.
        column: The ``m`` new column ``g``.
        corner: The new diagonal entry ``c`` (0-dim).
        out: A ``(m + 1) x (m + 1)`` tensor to write the result to, or None for
            a new one. ``inverse`` may be its top-left block (a buffer with
            spare rows and columns grows in place, with no ``m x m`` copy).

    Returns:
        The ``(m + 1) x (m + 1)`` inverse, ``u`` and ``s``.
    """
    m = inverse.shape[-1]
    u = inverse @ column
    schur = corner - column @ u
    if out is None:
        out = inverse.new_empty(m + 1, m + 1)
    top = out[:m, :m]
    if not (top.data_ptr() == inverse.data_ptr() and top.stride() == inverse.stride()):
        top.copy_(inverse)
    scaled = u / schur
    top.addr_(scaled, u)  # one pass, no m x m temporary
    out[:m, m] = out[m, :m] = -scaled
    out[m, m] = 1 / schur
    return out, u, schur
