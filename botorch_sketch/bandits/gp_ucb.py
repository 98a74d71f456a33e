#!/usr/bin/env python3
r"""Exact GP-UCB on a finite arm set, incrementally.

Every pulled arm joins the dictionary, so the DTC posterior of
:class:`~botorch_sketch.bandits.dtc_ucb.DTCUCB` is the exact GP posterior. A new
arm borders the inverse Cholesky root of ``K_SS`` (Schur complement, ``O(m^2)``)
and adds one coordinate to every arm's embedding (``O(A m)``); each pull is then
a rank-one update of all ``A`` means and variances (``O(A m)``), so a step costs
``O(A m)`` with ``m`` the number of distinct pulled arms, ``t`` at most, where
recomputing the posterior would cost ``O(A t^2)``.

An arm already in the numerical span of the dictionary (Schur complement below
the embedding's relative cutoff) adds no coordinate: for smooth kernels on
low-dimensional arm sets ``m`` then stops at the numerical rank of the kernel
matrix of the arms, and the posterior is still exact to that tolerance.

References:

.. [Srinivas2010gaussian]
    N. Srinivas, A. Krause, S. Kakade, M. Seeger. Gaussian process optimization in
    the bandit setting: no regret and experimental design. ICML 2010.
"""

from __future__ import annotations

from torch import Tensor

from botorch_sketch.bandits.dtc_ucb import DTCUCB


class GPUCB(DTCUCB):
    r"""Exact GP-UCB with an incrementally grown factorisation.

    Takes the arguments of :class:`~botorch_sketch.bandits.dtc_ucb.DTCUCB`
    except ``dictionary``; the width uses ``epsilon = 0`` (an exact posterior).
    """

    name = "gp-ucb"
    default_epsilon = 0.0

    def __init__(self, arms: Tensor, kernel, noise_var: float, **kwargs) -> None:
        r"""See :class:`~botorch_sketch.bandits.dtc_ucb.DTCUCB`."""
        if "dictionary" in kwargs:
            raise TypeError("GPUCB builds its own dictionary from the pulled arms.")
        super().__init__(arms, kernel, noise_var, dictionary=None, **kwargs)
        # The arms pulled so far (a set: no tensor op per step to keep it).
        self._visited: set[int] = set()

    def _grow_one(self, indices: Tensor, index: int) -> None:
        if index not in self._visited:
            self._visited.add(index)
            self._insert(index)

    def _grow(self, indices: Tensor, previous: Tensor) -> None:
        for idx in indices.unique().tolist():  # at most q arms per step
            if idx not in self._visited:
                self._visited.add(idx)
                # An arm already in the numerical span is not added: the
                # posterior is exact as it is.
                self._insert(idx)
