#!/usr/bin/env python3
r"""What a user picks instead for 10^4 cheap evaluations, as ask/tell adapters.

Every adapter proposes points in the unit cube (the loop unnormalises them for
the problem) and is told the noisy observations, larger being better:

- :class:`TurboENN`: TuRBO-ENN of ``ennbo`` (``turbo_enn_config``): TuRBO's
  trust region and candidates with an epistemic-nearest-neighbour surrogate and
  no hyperparameter fit;
- :class:`TurboENN` with ``turbo_one_config``: TuRBO-1 of the same package, an
  exact GP refitted each batch on the data since the last restart;
- :class:`CMAES`: ``cma``'s CMA-ES with IPOP restarts;
- :class:`SobolPeer`: a scrambled Sobol sequence.

:func:`run_peer` runs one in batches of ``q`` and times ``ask`` and ``tell``
with ``time.process_time`` (the objective is not timed). ``ennbo`` and ``cma``
are imported when an adapter is built (the ``benchmark`` extra).

Found out by trying (``ennbo`` 0.2.1, ``cma`` 4.5.0):

- ``ennbo`` accepts a NaN in ``tell``; TuRBO-ENN's next ``ask`` then fails
  ("mu and se must be finite") and TuRBO-1's ``tell`` itself fails (a NaN
  Cholesky), the observation already kept. The adapter drops non-finite rows.
- ``ennbo``'s trust region fixes the batch size at the first ``ask`` after a
  (re)start and rejects another; a last batch smaller than ``q`` is the first
  rows of a full one.
- ``ennbo``'s restarts drop every observation and start a new design of
  ``num_init`` points.
- ``cma`` reads ``seed=0`` (and None) as "seed from the clock", and replaces
  NaN values by the population's median with a warning; the adapter gives a
  failed point the population's worst finite value instead.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import numpy as np
import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.transforms import unnormalize

from botorch_sketch.bo.large_batch import optimal_value

from .record import RunLog


class AskTell(Protocol):
    r"""A batch optimiser in the unit cube, maximising."""

    restarts: int | None

    @property
    def train_size(self) -> int:
        r"""Observations held now (those the last ``ask`` proposed from)."""

    def ask(self, n: int) -> np.ndarray:
        r"""``n x d`` points in ``[0, 1]^d``."""

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        r"""Observations ``y`` (``n``, NaN for a failure) at ``X`` (``n x d``)."""


class TurboENN:
    r"""TuRBO-ENN (or TuRBO-1) of ``ennbo`` in the unit cube.

    Args:
        dim: The number of inputs ``d``.
        q: The batch size (and the size of each design, ``num_init``).
        seed: Seeds the optimiser's generator.
        exact_gp: Use ``turbo_one_config`` (an exact GP, TuRBO-1) rather than
            ``turbo_enn_config``.
    """

    def __init__(self, dim: int, q: int, seed: int, exact_gp: bool = False) -> None:
        r"""Build the optimiser (imports ``enn``)."""
        from enn import create_optimizer, turbo_enn_config, turbo_one_config

        config = (turbo_one_config if exact_gp else turbo_enn_config)(num_init=q)
        self.q = q
        self.restarts: int | None = 0
        self._optimizer = create_optimizer(
            bounds=np.array([[0.0, 1.0]] * dim),
            config=config,
            rng=np.random.default_rng(seed),
        )
        self._held = 0

    @property
    def train_size(self) -> int:
        r"""Observations in the current trust region's history."""
        return int(self._optimizer.tr_obs_count)

    def ask(self, n: int) -> np.ndarray:
        r"""The first ``n`` of a batch of ``q`` (the batch size may not change)."""
        X = self._optimizer.ask(self.q)[:n]
        if self.train_size < self._held:  # the restart dropped the data
            self.restarts += 1
        self._held = self.train_size
        return np.clip(X, 0.0, 1.0)

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        r"""Tell the finite observations (a NaN would break the next batch)."""
        keep = np.isfinite(y)
        if keep.any():
            self._optimizer.tell(X[keep], y[keep])
        self._held = self.train_size


class CMAES:
    r"""CMA-ES with IPOP restarts, served in batches of ``q``.

    Each generation (``popsize`` points, ``q`` at first) is asked at once and
    handed out ``q`` at a time; it is told (values negated: ``cma`` minimises)
    once all its points are back. When ``es.stop()`` fires, a new search starts
    from a uniform point with twice the population (IPOP).

    Args:
        dim: The number of inputs ``d``.
        q: The batch size and the first population.
        seed: Seeds the first search (``cma``'s ``seed + 1``: ``cma`` reads 0 as
            the clock) and the restarts' starting points.
        sigma0: The initial step size, in the unit cube.
    """

    def __init__(self, dim: int, q: int, seed: int, sigma0: float = 0.2) -> None:
        r"""Start the first search at the cube's centre (imports ``cma``)."""
        import cma

        self._cma = cma
        self.dim, self.q, self.sigma0 = dim, q, sigma0
        self.popsize = q
        self.restarts: int | None = 0
        self._rng = np.random.default_rng(seed)
        self._es = self._search(np.full(dim, 0.5), seed + 1)
        self._asked: list[np.ndarray] = []
        self._served = 0
        self._values: list[float] = []

    @property
    def train_size(self) -> int:
        r"""0: CMA-ES keeps a distribution, not observations."""
        return 0

    def _search(self, x0: np.ndarray, seed: int) -> Any:
        options = {
            "popsize": self.popsize,
            "bounds": [0, 1],
            "seed": seed,
            "verbose": -9,
        }
        return self._cma.CMAEvolutionStrategy(x0, self.sigma0, options)

    def ask(self, n: int) -> np.ndarray:
        r"""The next ``n`` points of the current generation (``n <= q``)."""
        if self._served == len(self._asked):
            if self._es.stop():
                self.popsize *= 2
                self.restarts += 1
                x0 = self._rng.uniform(size=self.dim)
                self._es = self._search(x0, int(self._rng.integers(1, 2**31 - 1)))
            self._asked = [np.asarray(x, dtype=float) for x in self._es.ask()]
            self._served, self._values = 0, []
        if n > len(self._asked) - self._served:
            raise ValueError(
                f"Asked {n} points with {len(self._asked) - self._served} left in "
                "the generation; batches must not exceed q."
            )
        X = np.stack(self._asked[self._served : self._served + n])
        self._served += n
        return np.clip(X, 0.0, 1.0)

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        r"""Keep the values; tell the generation once it is all back."""
        self._values.extend(float(v) for v in y)
        if len(self._values) < len(self._asked):
            return
        values = np.asarray(self._values)
        finite = np.isfinite(values)
        # A failure counts as the worst point of its generation.
        worst = values[finite].min() if finite.any() else 0.0
        values = np.where(finite, values, worst)
        self._es.tell(self._asked, (-values).tolist())


class SobolPeer:
    r"""The floor: a scrambled Sobol sequence, in batches."""

    def __init__(self, dim: int, q: int, seed: int) -> None:
        r"""A scrambled ``dim``-dimensional Sobol sequence seeded by ``seed``."""
        self._engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
        self.restarts: int | None = None

    @property
    def train_size(self) -> int:
        r"""0: nothing is kept."""
        return 0

    def ask(self, n: int) -> np.ndarray:
        r"""The sequence's next ``n`` points."""
        return self._engine.draw(n, dtype=torch.double).numpy()

    def tell(self, X: np.ndarray, y: np.ndarray) -> None:
        r"""Nothing to learn."""


def run_peer(
    problem: SyntheticTestFunction,
    peer: AskTell,
    evaluations: int,
    q: int,
    seed: int,
    time_cap: float | None = None,
) -> dict[str, Any]:
    r"""Run ``peer`` on ``problem`` in batches of ``q``; return its record's fields.

    The peer sees the noisy values ``problem(X)``; the record keeps the
    noise-free ones (``problem(X, noise=False)``). ``ask`` and ``tell`` are
    timed with ``time.process_time``; the objective is not.

    Args:
        problem: A maximised test function (its bounds are the search box).
        peer: The optimiser, in the unit cube.
        evaluations: Evaluations in all (the last batch is cut to fit).
        q: Points per batch.
        seed: Seeds the observation noise (torch's global generator is forked).
        time_cap: Stop before a batch once the proposing CPU seconds exceed it.

    Returns:
        The fields of :mod:`~benchmarks.large_batch.record` but
        ``cell``, ``total_cpu_seconds`` and ``threads``.
    """
    log = RunLog(optimal_value=optimal_value(problem))
    bounds = problem.bounds.to(torch.double)
    noisy = problem.noise_std is not None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        done = 0
        while done < evaluations:
            if time_cap is not None and log.proposing_seconds > time_cap:
                log.stopped_at_cap = True
                break
            b = min(q, evaluations - done)
            start = time.process_time()
            X = peer.ask(b)
            asked = time.process_time()
            held = peer.train_size
            x = unnormalize(torch.as_tensor(X, dtype=torch.double), bounds)
            with torch.no_grad():
                true = problem(x, noise=False)
                y = problem(x) if noisy else true
            told = time.process_time()
            peer.tell(X, y.numpy())
            end = time.process_time()
            done += b
            log.add(
                b,
                float(true.max()),
                ask_seconds=asked - start,
                tell_seconds=end - told,
                train_size=held,
            )
    log.restarts = peer.restarts
    return log.record()


#: The adapters by method name: ``(dim, q, seed)`` to an :class:`AskTell`.
PEERS: dict[str, Any] = {
    "TuRBO-ENN": lambda dim, q, seed: TurboENN(dim, q, seed),
    "TuRBO-1": lambda dim, q, seed: TurboENN(dim, q, seed, exact_gp=True),
    "CMA-ES": CMAES,
    "CMA-ES-0.1": lambda dim, q, seed: CMAES(dim, q, seed, sigma0=0.1),
    "Sobol": SobolPeer,
}
