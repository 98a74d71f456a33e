#!/usr/bin/env python3
r"""What the ask/tell optimizers over CMA-ES's search distribution share.

:class:`~botorch_sketch.bo.ScreenedCMAES` and
:class:`~botorch_sketch.bo.SurrogateCMAES` both keep a ``cma`` search
distribution in the unit cube, draw from their own NumPy generator (``cma``
otherwise reseeds NumPy's global one) and swap their own torch state in around
the model's draws, so that a caller's streams are left alone.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
from torch import Tensor

from botorch_sketch.bo.ask_tell import best_observation
from botorch_sketch.bo.streams import TorchStream

if TYPE_CHECKING:
    import cma


class CMASearch(TorchStream):
    r"""A mixin: CMA-ES's distribution in the unit cube, and the optimizer's streams.

    A subclass sets ``bounds``, ``sigma0``, ``train_X``, ``train_Y`` and ``es``,
    and calls :meth:`_seed_streams` before its first draw.
    """

    bounds: Tensor
    sigma0: float
    train_X: Tensor
    train_Y: Tensor
    es: cma.CMAEvolutionStrategy

    def _seed_streams(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._seed_torch(seed)

    def _distribution(self, x0: np.ndarray, popsize: int) -> cma.CMAEvolutionStrategy:
        # A new search from x0 with step sigma0, drawing from the own generator.
        import cma  # a second to import: only when a search starts

        options = {
            "popsize": popsize,
            "bounds": [0, 1],
            "seed": math.nan,  # no reseeding of NumPy's global generator
            "randn": lambda *shape: self._rng.standard_normal(shape),
            "verbose": -9,
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cma's notes on its own options
            return cma.CMAEvolutionStrategy(x0, self.sigma0, options)

    def _draw(
        self, number: int, kept: int, share: float, coordinates: int
    ) -> np.ndarray:
        # ``number`` draws of the distribution, of which ``kept`` are to be
        # kept; the last ``share`` of them (at most the ``number - kept``
        # beyond those) keep their step from the mean on ``coordinates``
        # random coordinates on average (each with that share of d, at least
        # one).
        sparse = min(round(share * number), number - kept)
        X = np.asarray(self.es.ask(number))
        if sparse:
            mean = np.clip(self.es.result.xfavorite, 0.0, 1.0)  # in bounds
            dim = X.shape[-1]
            p = min(1.0, coordinates / dim)
            mask = self._rng.uniform(size=(sparse, dim)) < p
            none = ~mask.any(axis=1)
            mask[none, self._rng.integers(dim, size=int(none.sum()))] = True
            X[number - sparse :] = mean + mask * (X[number - sparse :] - mean)
        return X

    @property
    def region_length(self) -> float:
        r"""CMA-ES's step size (in the unit cube)."""
        return float(self.es.sigma)

    def best(self) -> tuple[Tensor, float]:
        r"""The best finite observation so far and its point (in bounds).

        Returns:
            A ``d`` tensor and the value (``-inf`` and NaNs before any).
        """
        return best_observation(self.train_X, self.train_Y, self.bounds)
