#!/usr/bin/env python3
r"""CMA-ES whose generations the carried sketch screens, as an ask/tell optimizer.

At 10^4 cheap evaluations CMA-ES is what users pick, and on smooth problems in
20-100 dimensions its search distribution converges where trust regions over a
global model stall. :class:`ScreenedCMAES` keeps that distribution and spends
the model where it pays, by pre-selection [Ulmer2003evolution]_: each batch is
the ``q`` points of largest posterior mean among ``oversample * q`` draws of
the distribution, under the carried :class:`~botorch_sketch.bo.IncrementalGP`;
CMA-ES is then told those ``q`` points with their observations, as one
generation of population ``q``. The model steers each generation towards the
better part of the distribution; CMA-ES keeps the step size and shape, and
restarts (from a uniform point, with its initial step size) when it stops.

A share of the pool (``sparse_share``, a third) are sparse draws: a draw of
the distribution whose step from the mean is kept on a few coordinates only
(each with probability ``sparse_coordinates / d``, at least one), as DYCORS
and TuRBO perturb a few coordinates of the incumbent [Regis2013combining]_
[Eriksson2019scalable]_. In 20-100 dimensions a full step changes every
coordinate at once, so one good coordinate rarely makes a draw better; the
model ranks the sparse draws with the dense ones, and CMA-ES learns from those
it keeps (``cma`` bounds the length of a step it did not draw). With them the
default led every peer at 1000, 3000 and 10^4 evaluations on the benchmark's
six grid problems, at 10^4 on 24 of 26 more (some with shifted optima), and on
three rotated problems (docs/bo-headline.md).

A model that no longer ranks the distribution's draws would only bias it: late
in a noisy run the distribution is smaller than the lengthscales a global fit
can see, and the posterior means order the draws by noise. So, as lq-CMA-ES
checks its surrogate by rank correlation [Hansen2019global]_, every finished
generation measures Kendall's tau between the predicted means of its points and
their observations; below ``rank_tolerance`` the next generation is an
unscreened sample of the distribution (plain CMA-ES), and its tau (the means of
the random draws against their observations) decides the one after.

The first generation is an unscreened sample from the centre of the box with
step ``sigma0`` (the unit cube's units), as CMA-ES starts; there is no separate
design. Points are asked and told a generation at a time: :meth:`ask` then
:meth:`tell` of those points (in any order, in parts); CMA-ES learns from full
generations of ``q`` only (a smaller last batch updates the model alone).
NaN or infinite observations are failures: never modelled, and ranked last in
their generation (the worst finite value), as the CMA-ES peer does. CMA-ES is
told the values in units of the first generation's spread: its stopping rules
have absolute tolerances, and the run does not depend on the objective's units.

Streams: the draws come from the optimizer's own NumPy generator (``cma``'s
``randn`` option; ``cma`` otherwise reseeds NumPy's global generator), the
surrogate's rules draw from the optimizer's own torch state, swapped in around
them (:meth:`random_state`); a caller's streams are left alone.

Example:
    >>> from botorch.test_functions import Levy
    >>> f = Levy(dim=100, negate=True)
    >>> optimizer = ScreenedCMAES(f.bounds, q=100, seed=0)
    >>> for _ in range(100):
    ...     X = optimizer.ask()
    ...     optimizer.tell(X, f(X))
    >>> optimizer.best()

References:

.. [Ulmer2003evolution]
    H. Ulmer, F. Streichert, A. Zell. Evolution strategies assisted by Gaussian
    processes with improved pre-selection criterion. IEEE CEC 2003.
.. [Hansen2019global]
    N. Hansen. A global surrogate assisted CMA-ES. GECCO 2019.
.. [Regis2013combining]
    R. G. Regis, C. A. Shoemaker. Combining radial basis function surrogates and
    dynamic coordinate search in high-dimensional expensive black-box
    optimization. Engineering Optimization 45(5), 2013.
.. [Eriksson2019scalable]
    D. Eriksson, M. Pearce, J. Gardner, R. D. Turner, M. Poloczek. Scalable
    global optimization via local Bayesian optimization. NeurIPS 2019.
.. [Ngo2024cmabo]
    L. Ngo, H. Ha, J. Chan, V. Nguyen, H. Zhang. High-dimensional Bayesian
    optimization via covariance matrix adaptation strategy. TMLR 2024.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model
from botorch.utils.transforms import unnormalize
from torch import Tensor

from botorch_sketch.bo.ask_tell import AskRecord, _key
from botorch_sketch.bo.cma_search import CMASearch
from botorch_sketch.bo.rank_agreement import kendall_tau
from botorch_sketch.bo.sampling import posterior_means
from botorch_sketch.bo.thompson import check_region, default_surrogate
from botorch_sketch.checks import checked_count, checked_memory, checked_real

if TYPE_CHECKING:
    import cma


class ScreenedCMAES(CMASearch):
    r"""Ask/tell CMA-ES screened by a carried sketch's posterior means (maximises)."""

    def __init__(
        self,
        bounds: Tensor,
        q: int = 100,
        surrogate: Any | None = None,
        oversample: int = 3,
        rank_tolerance: float = 0.2,
        sigma0: float = 0.1,
        sparse_share: float = 1 / 3,
        sparse_coordinates: int = 5,
        seed: int = 0,
    ) -> None:
        r"""Start the search distribution at the box's centre.

        Args:
            bounds: A ``2 x d`` tensor of the search box (finite, lower < upper).
            q: Points per generation: CMA-ES's population.
            surrogate: All data so far (unit cube, ``n x d``; ``n x 1``) to a
                fitted model, called once per screened generation; default
                :func:`~botorch_sketch.bo.default_surrogate`.
            oversample: Draws per point of a generation (``oversample * q``
                drawn, ``q`` kept); 1 is plain CMA-ES.
            rank_tolerance: The Kendall tau between a generation's predicted
                means and observations below which the next generation is not
                screened.
            sigma0: CMA-ES's initial step size, in the unit cube. 0.1, not the
                0.2-0.3 usual for CMA-ES: with about 100 generations, a search
                that starts local gets further (CMA-ES alone gains as much from
                it; docs/bo-headline.md).
            sparse_share: The share of a screened generation's draws whose
                step from the mean is kept on a few coordinates (at most the
                ``(oversample - 1) * q`` draws beyond ``q``, so an unscreened
                generation is a plain sample); 0 draws none (with q = 10, 0 was
                ahead by 2000 evaluations on three problems of four;
                docs/bo-headline.md).
            sparse_coordinates: How many coordinates a sparse draw changes, on
                average (each with probability ``sparse_coordinates / d``, at
                least one).
            seed: Seeds the draws and the surrogate's stream.
        """
        check_region(bounds, "bounds")
        if not bool((bounds[1] > bounds[0]).all()):
            raise InputDataError(f"bounds must have lower < upper; got {bounds}.")
        self.bounds = bounds.to(torch.double)
        self.dim = self.bounds.shape[-1]
        if self.dim < 2:
            raise UnsupportedError(
                "ScreenedCMAES needs at least 2 inputs (CMA-ES's own limit)."
            )
        self.q = checked_count(q, "q", minimum=2)
        self.num_initial = self.q
        self.oversample = checked_count(oversample, "oversample")
        # CMA-ES's books take about 250 bytes per member of the population, a
        # draw about 1.4 kB and 40 bytes per dimension (measured at q = 2 10^5:
        # 1.4 kB in 2 dimensions, 3.3 kB in 50); refused before any is drawn.
        per_point = 256 + self.oversample * (1536 + 48 * self.dim)
        checked_memory(
            self.q, per_point, "q",
            f"points per generation, {self.oversample} draws each (oversample)",
        )  # fmt: skip
        self.rank_tolerance = checked_real(rank_tolerance, "rank_tolerance")
        self.sigma0 = checked_real(sigma0, "sigma0", positive=True)
        self.sparse_share = checked_real(sparse_share, "sparse_share")
        if not 0.0 <= self.sparse_share <= 1.0:
            raise InputDataError(
                f"sparse_share must lie in [0, 1]; got {sparse_share}."
            )
        self.sparse_coordinates = checked_count(
            sparse_coordinates, "sparse_coordinates"
        )
        self.seed = checked_count(seed, "seed", minimum=0)
        if surrogate is not None and not callable(surrogate):
            raise InputDataError(
                "surrogate must be callable (X, Y) -> model; got "
                f"{type(surrogate).__name__}."
            )
        self.surrogate = default_surrogate() if surrogate is None else surrogate
        self._seed_streams(self.seed)
        self.restarts = 0
        self._scale: float | None = None  # the values' unit for CMA-ES
        self.es = self._search(np.full(self.dim, 0.5))
        self._unit = self.bounds.new_zeros(0, self.dim)
        # Finite observations in the unit cube, in the order told.
        self.train_X = self._unit.clone()
        self.train_Y = self._unit.new_zeros(0, 1)
        # The generation out: unit points, their keys, predicted means, values.
        self._asked = self._unit.clone()
        # Each asked point's rows in the generation (several where bounds so
        # narrow that draws round to the same float64 point).
        self._keys: dict[bytes, list[int]] = {}
        self._predicted: Tensor | None = None
        self._values = torch.full((0,), math.nan, dtype=torch.double)
        self._told = torch.zeros(0, dtype=torch.bool)
        #: Kendall's tau of each finished screened-or-not generation (NaN first).
        self.rank_correlation: list[float] = []
        #: Whether each generation asked was screened by the model.
        self.screened: list[bool] = []
        self.last_ask = AskRecord()

    def _search(self, x0: np.ndarray) -> cma.CMAEvolutionStrategy:
        return self._distribution(x0, self.q)

    # --------------------------------------------------------------- views

    @property
    def pending(self) -> int:
        r"""Points of the last generation asked and not told."""
        return int((~self._told).sum())

    # ----------------------------------------------------------------- ask

    def ask(self, n: int | None = None) -> Tensor:
        r"""The next generation: ``n`` points (default ``q``), screened by the model.

        Args:
            n: How many points (at most ``q``; fewer only for a last batch,
                which CMA-ES does not learn from).

        Returns:
            A ``n x d`` tensor in ``bounds``.
        """
        n = self.q if n is None else checked_count(n, "n")
        if n > self.q:
            raise InputDataError(f"n ({n}) must be at most q ({self.q}).")
        if self.pending:
            raise UnsupportedError(
                f"{self.pending} points of the last generation are not told: "
                "ScreenedCMAES asks one generation at a time."
            )
        record = AskRecord(train_size=self.train_X.shape[0])
        start = time.process_time()
        screen = self.train_X.shape[0] > 0
        draws = self.oversample * n if screen else n
        unit = torch.as_tensor(
            self._draw(draws, n, self.sparse_share, self.sparse_coordinates),
            dtype=torch.double,
        )
        unit = unit.clamp(0.0, 1.0).to(self.bounds)
        predicted = None
        fitted = start
        if screen:
            with self.random_state():
                model = self.surrogate(self.train_X, self.train_Y)
                fitted = time.process_time()
                if not isinstance(model, Model):
                    raise InputDataError(
                        f"The surrogate returned {type(model).__name__}, not a "
                        "BoTorch Model."
                    )
                means = posterior_means(model, unit)
            counts = getattr(self.surrogate, "counts", None)
            record.refitted = counts is not None and counts.last in ("built", "refit")
            index = getattr(model, "inducing_index", None)
            record.inducing_size = 0 if index is None else int(index.numel())
            tau = self.rank_correlation[-1] if self.rank_correlation else math.inf
            screened = not tau < self.rank_tolerance  # NaN screens
            if screened:
                keep = means.topk(n).indices
            else:  # the first n draws: a sample of the distribution
                keep = torch.arange(n, device=means.device)
            unit, predicted = unit[keep], means[keep]
            record.distinct_argmaxes = n
        self.screened.append(screen and screened)
        done = time.process_time()
        record.model_seconds = fitted - start if screen else 0.0
        record.batch_seconds = done - fitted if screen else done - start
        self.last_ask = record
        self._asked, self._predicted = unit, predicted
        X = unnormalize(unit, self.bounds)
        self._keys = {}
        for i, x in enumerate(X):
            self._keys.setdefault(_key(x), []).append(i)
        self._values = torch.full((n,), math.nan, dtype=torch.double)
        self._told = torch.zeros(n, dtype=torch.bool)
        return X

    # ---------------------------------------------------------------- tell

    def tell(self, X: Tensor, Y: Tensor) -> None:
        r"""Results for points of the last generation, in any order and parts.

        A point the generation holds several times (bounds so narrow that
        draws round to the same float64 point) is told as many times.

        Args:
            X: A ``b x d`` tensor of asked points (as :meth:`ask` returned them).
            Y: A ``b`` or ``b x 1`` tensor of observations; NaN or infinity
                marks a failure.
        """
        if not isinstance(X, Tensor) or X.dim() != 2 or X.shape[-1] != self.dim:
            raise InputDataError(
                f"X must be a b x {self.dim} tensor of asked points; got "
                f"{tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__}."
            )
        b = X.shape[0]
        try:
            Y = torch.as_tensor(Y, dtype=torch.double)
        except (TypeError, ValueError, RuntimeError) as e:
            raise InputDataError(
                f"Y must be a tensor of {b} observations (numbers); got "
                f"{type(Y).__name__} ({e})."
            ) from e
        if Y.numel() != b or not (Y.dim() <= 1 or Y.shape == (b, 1)):
            raise InputDataError(
                f"Y has shape {tuple(Y.shape)} for {b} points; expected ({b},) or "
                f"({b}, 1)."
            )
        rows: list[int] = []
        for x in X.to(self.bounds):
            asked = self._keys.get(_key(x), [])
            left = [i for i in asked if not bool(self._told[i]) and i not in rows]
            if not left:
                if any(i in rows for i in asked):
                    raise InputDataError(
                        "X holds the same point twice, more often than the generation "
                        "does."
                    )
                raise InputDataError(
                    "ScreenedCMAES is told the points of its last generation, each "
                    "once; this point was not asked, or was told already."
                )
            rows.append(left[0])
        rows = torch.tensor(rows, dtype=torch.long)
        self._told[rows] = True
        y = Y.reshape(-1).cpu()
        self._values[rows] = torch.where(torch.isfinite(y), y, math.nan)
        finite = torch.isfinite(y)
        unit = self._asked[rows[finite].to(self._asked.device)]
        self.train_X = torch.cat([self.train_X, unit])
        self.train_Y = torch.cat([self.train_Y, y[finite].reshape(-1, 1).to(unit)])
        if not self.pending:
            self._finish()

    def _finish(self) -> None:
        # A whole generation is back: the rank check, CMA-ES's update, restarts.
        values = self._values
        finite = torch.isfinite(values)
        tau = math.nan
        if self._predicted is not None and int(finite.sum()) >= 3:
            tau = kendall_tau(self._predicted.cpu()[finite], values[finite])
            tau = 0.0 if not math.isfinite(tau) else tau
        if self._predicted is not None:
            self.rank_correlation.append(tau)
        if values.numel() < self.q or not bool(finite.any()):
            return
        if self._scale is None:
            # CMA-ES's stopping rules use absolute tolerances (1e-11): values
            # in the first generation's units make the run the same whatever
            # the objective's (a 1e-12 scale restarted it every generation).
            spread = float(values[finite].std()) if int(finite.sum()) > 1 else 0.0
            level = float(values[finite].abs().max())
            self._scale = spread if spread > 0 else (level if level > 0 else 1.0)
        worst = float(values[finite].min())
        fitness = (-torch.where(finite, values, worst) / self._scale).tolist()
        from cma.evolution_strategy import InjectionWarning

        with warnings.catch_warnings():
            # cma injects mirrored draws into small populations (q < 6) and
            # warns of an "orphanated injected solution" when one is not told
            # back: screening keeps q of the draws by design, so it is never
            # the caller's to act on.
            warnings.simplefilter("ignore", InjectionWarning)
            self.es.tell(list(self._asked.cpu().numpy()), fitness)
        if self.es.stop():
            self.restarts += 1
            self.es = self._search(self._rng.uniform(size=self.dim))
