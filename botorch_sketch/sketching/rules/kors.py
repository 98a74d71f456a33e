#!/usr/bin/env python3
r"""Kernel online row sampling (KORS): grow a dictionary one point at a time.

KORS [Calandriello2017efficient]_ keeps a *weighted* dictionary ``Z`` (point ``z``
with weight ``1 / sqrt(p_z)``, ``p_z`` its inclusion probability when it was
admitted, ``S = diag(1 / sqrt(p_z))``) and, for each new point ``s``, estimates
its ridge leverage score by temporarily adding it with weight one, Eq. (41) of
[Zenati2022efficient]_:

``tau = ((1 + eps) / mu) [k(s, s) - k_*^T S_* (S_* K_* S_* + mu I)^{-1} S_* k_*]``

(``K_*``, ``k_*``: the kernel of ``Z u {s}`` and its column at ``s``). By the
Sherman-Morrison identity this equals ``(1 + eps) v / (v + mu)`` with
``v = k(s, s) - b^T (S K_ZZ S + mu I)^{-1} b``, ``b = S k_Z(s)``: the variance of
``s`` given the weighted dictionary, at the cost ``O(m^2)`` of one quadratic
form of a kept weight posterior (below). The point is admitted with probability
``min(1, gamma tau)``.

The authors' code computes ``((1 + eps)/mu) [u + (u - k)^2 / (k + mu - u)]``
(``u = b^T A^{-1} b``), which drops the ``k(s, s) -`` of Eq. (41); it equals
``(1 + eps) (k / mu - v / (v + mu))``, grows as points become *more* redundant,
and is not implemented here.

KORS is a :class:`~botorch_sketch.sketching.rules.BernoulliRule` with
oversampling ``gamma`` and scores ``tau`` (:meth:`KORS.leverage`): its online
method :meth:`~botorch_sketch.sketching.rules.SelectionRule.consider` draws the
coin of a new point, :meth:`KORS.admit` adds it to the weighted dictionary.
This module is pure tensor algebra on kernel values; the model that owns the
kernel (:mod:`botorch_sketch.sketching.online.incremental`) passes them in.

References:

.. [Calandriello2017efficient]
    D. Calandriello, A. Lazaric, M. Valko. Efficient second-order online kernel
    learning with adaptive embedding. NeurIPS 2017.
.. [Zenati2022efficient]
    H. Zenati, A. Bietti, E. Diemert, J. Mairal, M. Martin, P. Gaillard.
    Efficient kernel UCB for contextual bandits. AISTATS 2022.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.sketching.posterior.statistics import DTCStatistics
from botorch_sketch.sketching.posterior.weight_posterior import WeightPosterior
from botorch_sketch.sketching.rules.bernoulli import BernoulliRule


def theoretical_gamma(horizon: int, delta: float = 0.1) -> float:
    r"""The oversampling ``gamma = 12 log(T / delta)`` of Prop. 4.1 (``eps = 1/2``).

    Args:
        horizon: The number of rounds ``T``.
        delta: The failure probability.

    Returns:
        ``12 log(T / delta)``.
    """
    if horizon < 1 or not 0 < delta < 1:
        raise InputDataError(
            f"Need horizon >= 1 and 0 < delta < 1, got {horizon} and {delta}."
        )
    return 12.0 * math.log(horizon / delta)


class KORS(BernoulliRule):
    r"""The KORS admission rule with its weighted dictionary state.

    The state is the admitted probabilities ``p_z`` and the weight posterior
    (:class:`~botorch_sketch.sketching.posterior.WeightPosterior`) on the
    features ``S k_Z(.) / sqrt(mu)`` of the dictionary's own points, whose
    precision is ``I + S K_ZZ S / mu = A / mu``: ``b^T A^{-1} b`` is its quadratic
    form at ``b / sqrt(mu)``, and admitting a point grows it by one coordinate
    (a bordered inverse, ``O(m^2)``).

    Example:
        >>> rule = KORS(mu=1.0, gamma=2.0, generator=torch.Generator().manual_seed(0))
        >>> tau = rule.leverage(k_Zs, k_ss)  # kernel values of a new point (1 x m, 1)
        >>> admit, p = rule.consider(tau)
        >>> if admit[0]:
        ...     rule.admit(k_Zs, k_ss, p[0])
    """

    def __init__(
        self,
        mu: float,
        epsilon: float = 0.5,
        gamma: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Configure the rule (empty dictionary).

        Args:
            mu: The ridge ``mu`` of the leverage scores (the paper takes
                ``mu = lambda``, the regulariser of the bandit).
            epsilon: The accuracy ``eps`` of the estimates (``1/2`` in the paper).
            gamma: The oversampling factor; admission probability is
                ``min(1, gamma tau)``. Theory: :func:`theoretical_gamma`; the
                authors' experiments use ``gamma`` of the order of ``lambda`` times
                ``0.001`` to ``0.1``.
            generator: The random generator of the Bernoulli draws.
        """
        # Written so that NaN fails too (it passed ``<=`` tests).
        if not (0 < mu < math.inf and 0 <= epsilon < math.inf and 0 < gamma < math.inf):
            raise InputDataError(
                f"KORS needs mu > 0, epsilon >= 0, gamma > 0; got mu={mu}, "
                f"epsilon={epsilon}, gamma={gamma}."
            )
        super().__init__(generator=generator)
        self.mu = float(mu)
        self.epsilon = float(epsilon)
        self.gamma = float(gamma)
        self.posterior: WeightPosterior | None = None  # precision A / mu
        self.probabilities: Tensor | None = None  # p_z, m

    @property
    def oversampling(self) -> float:
        r"""The oversampling factor, ``gamma``."""
        return self.gamma

    @property
    def size(self) -> int:
        r"""The number of admitted points."""
        return 0 if self.probabilities is None else self.probabilities.numel()

    @property
    def inverse(self) -> Tensor | None:
        r"""``A^{-1} = (S K_ZZ S + mu I)^{-1}`` (``m x m``, float64); None if empty."""
        if self.posterior is None:
            return None
        return self.posterior.weight_covariance / self.mu

    def leverage(self, k_Zs: Tensor, k_ss: Tensor) -> Tensor:
        r"""The estimate ``tau`` of Eq. (41) for new points, in ``O(n m^2)``.

        Args:
            k_Zs: A ``n x m`` tensor, the kernel between the new points and the
                dictionary (in admission order).
            k_ss: A ``n`` tensor, the new points' prior variances.

        Returns:
            A ``n`` tensor ``(1 + eps) v / (v + mu)``.
        """
        v = k_ss
        if self.size:
            b = k_Zs * self.probabilities.rsqrt()
            v = k_ss - self.posterior.quadratic_form(b) / self.mu
        # v is a variance; rounding may leave it slightly negative.
        v = v.clamp_min(0)
        return (1 + self.epsilon) * v / (v + self.mu)

    def admit(self, k_Zs: Tensor, k_ss: Tensor, p: Tensor) -> None:
        r"""Add a point with probability ``p`` to the weighted dictionary.

        Borders ``A`` with the row ``b / sqrt(p)`` and corner ``k / p + mu``
        (the posterior's precision ``A / mu`` with their ``1 / mu`` multiples),
        in ``O(m^2)``.

        Args:
            k_Zs: A ``m`` tensor, ``k_Z(s)`` against the current dictionary.
            k_ss: A 0-dim tensor, ``k(s, s)``.
            p: A 0-dim tensor, the admission probability.
        """
        k_Zs, k_ss, p = k_Zs.reshape(-1), k_ss.reshape(()), p.reshape(())
        if self.size == 0:
            self.posterior = WeightPosterior.prior(0, like=k_ss.reshape(1))
            row = k_Zs.new_zeros(0)
            self.probabilities = p.reshape(1)
        else:
            row = k_Zs * self.probabilities.rsqrt() * p.rsqrt()
            self.probabilities = torch.cat([self.probabilities, p.reshape(1)])
        self.posterior.extend(gram_column=row / self.mu, gram_corner=k_ss / p / self.mu)

    def refactorise(self, K_ZZ: Tensor) -> None:
        r"""Recompute ``A^{-1}`` from the dictionary's kernel matrix (``O(m^3)``).

        Args:
            K_ZZ: The ``m x m`` kernel matrix of the admitted points, in order.
        """
        if self.size == 0:
            return
        w = self.probabilities.rsqrt()
        gram = w.unsqueeze(-1) * K_ZZ * w / self.mu
        statistics = replace(DTCStatistics.empty(self.size, like=K_ZZ), gram=gram)
        self.posterior = WeightPosterior(statistics)
