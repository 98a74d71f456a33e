#!/usr/bin/env python3
r"""CMA-ES with a surrogate population, as an ask/tell optimizer for any batch size.

lq-CMA-ES [Hansen2019global]_ gets many CMA-ES generations per evaluation: a
model ranks each population, points are evaluated best first until the model's
ranking of the recent data agrees with the truth (Kendall's tau of at least
0.85), and CMA-ES is told model values for the rest. :class:`SurrogateCMAES`
runs that loop through ask/tell, with three changes:

- **any batch size ``q``.** Points are handed out ``q`` at a time. Below
  CMA-ES's default population (``4 + 3 ln d``; with ``q = 1`` in
  particular) the population is the default one and the evaluated count grows
  by lq-CMA-ES's increments (1, 2, 3, 5, 8, ... with ``q = 1``), rounded up to
  whole batches. From the default population up, a batch is a whole
  population, all of it evaluated, and between two batches CMA-ES runs up to
  ``max_model_generations`` generations on the model's means alone, as
  s*ACM-ES does [Loshchilov2013intensive]_: as many as the model earned by
  ranking the last batch before it was evaluated (none below a Kendall tau of
  0.5, all from ``tau_threshold`` up). The batch itself is pre-selected
  [Ulmer2003evolution]_ while the model ranked the last one (tau of at least
  0.2): the ``q`` of best model mean among ``oversample * q`` draws, a third
  of them sparse (a draw's step kept on a few coordinates, as
  :class:`~botorch_sketch.bo.ScreenedCMAES` draws). CMA-ES is told those
  ``q``; their steps lean towards the model's optimum, so such a generation
  may shrink CMA-ES's step size but not grow it;
- **the model is a GP in CMA-ES's metric** (``residual=True``, the default):
  lq-CMA-ES's linear-quadratic regression as the mean, and a local GP on its
  residuals in coordinates whitened by ``sigma^2 C``
  (:class:`~botorch_sketch.bo.whitened_gp.WhitenedResidualGP`). The rank check
  scores the GP by its leave-one-out means (a GP ranks its own training points
  perfectly), and the GP's standard deviation may order the evaluations
  (``kappa``: the lowest ``mean - kappa * sd`` first). ``residual=False`` is
  the regression alone, scored in-sample, as lq-CMA-ES does;
- **the GP or the regression, whichever ranks better** (``select=True``, the
  default): at each population's first fit, the regression's in-sample
  values rank the last two populations' observations; where their Kendall
  tau reaches ``tau_threshold`` the regression is trusted alone for the whole
  population and no GP is built. Otherwise the GP's leave-one-out means rank
  them too, and the regression predicts alone where its tau is at least the
  GP's (the regression is in-sample in both scores, so the comparison says
  what the GP's residual adds; the regression is still refitted at each
  increment).

CMA-ES is told the true value of every evaluated point and the model's mean
only where no true value exists (and in the model's own generations); a failed
point (NaN or infinite) counts as its generation's worst. The model's optimum
(the regression's stationary point) is injected into the next population, as
lq-CMA-ES does. When CMA-ES stops, it restarts from a uniform point with twice
the population (IPOP) and a new regression; the GP keeps every observation.

Checkpoints are data only: the run's record of asks and tells, replayed on
load (every draw comes from the optimizer's own generator, so a replay is
exact and is checked to be).

Example:
    >>> from botorch.test_functions import Levy
    >>> f = Levy(dim=20, negate=True)
    >>> optimizer = SurrogateCMAES(f.bounds, q=1, seed=0)
    >>> for _ in range(500):
    ...     X = optimizer.ask()
    ...     optimizer.tell(X, f(X))
    >>> optimizer.best()

References:

.. [Hansen2019global]
    N. Hansen. A global surrogate assisted CMA-ES. GECCO 2019.
.. [Bajer2019gaussian]
    L. Bajer, Z. Pitra, J. Repicky, M. Holena. Gaussian process surrogate
    models for the CMA evolution strategy. Evolutionary Computation 27(4), 2019.
.. [Ulmer2003evolution]
    H. Ulmer, F. Streichert, A. Zell. Evolution strategies assisted by Gaussian
    processes with improved pre-selection criterion. IEEE CEC 2003.
.. [Loshchilov2013intensive]
    I. Loshchilov, M. Schoenauer, M. Sebag. Intensive surrogate model
    exploitation in self-adaptive surrogate-assisted CMA-ES (saACM-ES). GECCO
    2013.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.utils.transforms import normalize, unnormalize
from torch import Tensor

from botorch_sketch.bo.ask_tell import AskRecord
from botorch_sketch.bo.checkpoint import CheckpointError, load_checkpoint
from botorch_sketch.bo.checkpoint import save_checkpoint as _save
from botorch_sketch.bo.cma_search import CMASearch
from botorch_sketch.bo.rank_agreement import kendall_tau
from botorch_sketch.bo.thompson import check_region
from botorch_sketch.bo.whitened_gp import Trend, WhitenedResidualGP, search_metric
from botorch_sketch.checks import checked_count, checked_real

if TYPE_CHECKING:
    pass

#: A told point matches an asked one within this distance (unit cube, max-norm).
MATCH_TOLERANCE = 1e-4
#: The residual GP's hyperparameters are chosen once in this many populations.
CHOOSE_EVERY = 4
#: The GP and the regression are compared on this many populations' points.
SELECT_POPULATIONS = 2
#: Batched: the last batch's Kendall tau from which its successor is pre-selected.
PRESELECT_TAU = 0.2
#: Points (in millions of coordinates) one population may hold.
MAX_POPULATION_ENTRIES = 50


class SurrogateCMAES(CMASearch):
    r"""Ask/tell CMA-ES whose populations a surrogate mostly evaluates (maximises)."""

    def __init__(
        self,
        bounds: Tensor,
        q: int = 1,
        residual: bool = True,
        kappa: float = 0.0,
        local_size: int | None = None,
        max_model_generations: int = 10,
        oversample: int = 3,
        sparse_share: float = 1 / 3,
        sparse_coordinates: int = 5,
        tau_threshold: float = 0.85,
        sigma0: float = 0.2,
        inject: bool = True,
        max_quadratic_terms: int = 1000,
        select: bool = True,
        seed: int = 0,
    ) -> None:
        r"""Start the search distribution at the box's centre.

        Args:
            bounds: A ``2 x d`` tensor of the search box (finite, lower < upper).
            q: Points per batch (1 for sequential use).
            residual: Model the regression's residuals by the local GP; False
                is lq-CMA-ES's regression alone.
            kappa: Evaluate the points of lowest ``mean - kappa * sd`` (of the
                minimised values) first; 0 orders by the mean, as lq-CMA-ES.
            local_size: Observations nearest the mean that the GP keeps
                (default ``10 d`` within ``[50, 300]``).
            max_model_generations: With batches of at least CMA-ES's default
                population, the most generations CMA-ES runs on the model's
                means between two true batches.
            oversample: With batches of at least CMA-ES's default population,
                draws per point of a batch: ``oversample * q`` are drawn and
                the ``q`` of best model mean evaluated (pre-selection; 1
                evaluates the whole population), while the last batch's
                predictions ranked it with a Kendall tau of at least
                ``PRESELECT_TAU``.
            sparse_share: The share of a pre-selection's draws whose step from
                the mean is kept on a few coordinates (at most the
                ``(oversample - 1) * q`` beyond ``q``), as
                :class:`~botorch_sketch.bo.ScreenedCMAES` draws.
            sparse_coordinates: How many coordinates a sparse draw changes, on
                average.
            tau_threshold: The Kendall tau at which a population's model
                values are trusted.
            sigma0: CMA-ES's initial step size, in the unit cube.
            inject: Inject the regression's optimum into each population.
            max_quadratic_terms: The regression stays diagonal (``2 d + 1``
                terms) where a full quadratic has more terms than this (``d``
                above 43 by default): its pseudo-inverse grows as ``d^6``.
            select: With ``residual``, use the regression alone for a
                population where it ranks the recent observations with a
                Kendall tau of ``tau_threshold`` or at least as well as the
                GP's leave-one-out means.
            seed: Seeds every draw.
        """
        check_region(bounds, "bounds")
        if not bool((bounds[1] > bounds[0]).all()):
            raise InputDataError(f"bounds must have lower < upper; got {bounds}.")
        self.bounds = bounds.to(torch.double)
        self.dim = self.bounds.shape[-1]
        if self.dim < 2:
            raise UnsupportedError(
                "SurrogateCMAES needs at least 2 inputs (CMA-ES's own limit)."
            )
        self.q = checked_count(q, "q")
        self.num_initial = self.q
        if not all(isinstance(v, bool) for v in (residual, inject, select)):
            raise InputDataError("residual, inject and select must be True or False.")
        self.residual, self.inject, self.select = residual, inject, select
        self.kappa = checked_real(kappa, "kappa")
        if self.kappa < 0:
            raise InputDataError(f"kappa must be at least 0; got {kappa}.")
        if local_size is None:
            local_size = min(300, max(50, 10 * self.dim))
        self.local_size = checked_count(local_size, "local_size", minimum=3)
        self.max_model_generations = checked_count(
            max_model_generations, "max_model_generations", minimum=0
        )
        self.oversample = checked_count(oversample, "oversample")
        self.sparse_share = checked_real(sparse_share, "sparse_share")
        if not 0 <= self.sparse_share <= 1:
            raise InputDataError(f"sparse_share must be in [0, 1]; got {sparse_share}.")
        self.sparse_coordinates = checked_count(
            sparse_coordinates, "sparse_coordinates"
        )
        self.tau_threshold = checked_real(tau_threshold, "tau_threshold")
        self.sigma0 = checked_real(sigma0, "sigma0", positive=True)
        self.max_quadratic_terms = checked_count(
            max_quadratic_terms, "max_quadratic_terms"
        )
        self.seed = checked_count(seed, "seed", minimum=0)
        default = 4 + int(3 * math.log(self.dim))
        #: Whether a batch is a whole population (q at least CMA-ES's default).
        self.batched = self.q >= default
        self.popsize = self.q if self.batched else default
        draws = self.popsize * (self.oversample if self.batched else 1)
        if draws * self.dim > MAX_POPULATION_ENTRIES * 10**6:
            raise InputDataError(
                f"q = {q} makes populations of {draws} points in {self.dim} "
                f"dimensions ({draws * self.dim:.3g} coordinates, more than "
                f"{MAX_POPULATION_ENTRIES} million): use a smaller q or oversample."
            )
        self._model_generations = 0
        self._last_tau = 0.0  # batched: the last batch's rank agreement
        self._seed_streams(self.seed)
        self.restarts = 0
        self._scale: float | None = None
        self._start(np.full(self.dim, 0.5))
        self.train_X = self.bounds.new_zeros(0, self.dim)  # unit cube, finite only
        self.train_Y = self.bounds.new_zeros(0, 1)
        self._generation: dict[str, Any] | None = None
        #: Kendall's tau at the end of each finished population.
        self.rank_correlation: list[float] = []
        #: The share of each finished population that was truly evaluated.
        self.evaluated_share: list[float] = []
        #: Batched: the generations CMA-ES ran on the model before each batch.
        self.model_generations: list[int] = []
        #: At each refit with data: whether the GP (not the regression) predicted
        #: (one choice a population, made at its first fit).
        self.model_choices: list[bool] = []
        self.last_ask = AskRecord()
        self._log: list[tuple[str, Any]] = []

    def _start(self, x0: np.ndarray) -> None:
        from cma.fitness_models import LQModel

        self.es = self._distribution(x0, self.popsize)
        self.trend = LQModel()
        self._trend, self._trend_count = None, None  # the last fit, by data seen
        self._hyperparameters: tuple[float, float] | None = None
        # lq-CMA-ES's archive holds at least a population (SurrogatePopulation).
        self.trend.settings.max_absolute_size = self.popsize
        if (self.dim + 1) * (self.dim + 2) // 2 > self.max_quadratic_terms:
            # A full quadratic's pseudo-inverse is O(d^6): in 60-D, seconds a
            # population. The diagonal one is O(d^3).
            self.trend.settings.disallowed_types = ("full",)

    # --------------------------------------------------------------- views

    @property
    def pending(self) -> int:
        r"""Points asked and not told."""
        g = self._generation
        return 0 if g is None else int((g["state"] == 1).sum())

    # ----------------------------------------------------------------- ask

    def ask(self, n: int | None = None) -> Tensor:
        r"""The next points to evaluate: at most ``n`` (default ``q``).

        Fewer come back when the population's current increment has fewer
        left; none are asked while an increment's results are outstanding.

        Args:
            n: How many points at most (at most ``q``).

        Returns:
            A ``b x d`` tensor in ``bounds``, ``1 <= b <= n``.
        """
        n = self.q if n is None else checked_count(n, "n")
        if n > self.q:
            raise InputDataError(f"n ({n}) must be at most q ({self.q}).")
        start = time.process_time()
        record = AskRecord(train_size=self.train_X.shape[0])
        if self._generation is None:
            with self.random_state():
                self._open()
        g = self._generation
        left = g["target"] - int((g["state"] > 0).sum())
        if left <= 0:
            raise UnsupportedError(
                f"{self.pending} asked points are not told: this population's "
                "next points depend on their values."
            )
        fitted = time.process_time()
        free = torch.nonzero(g["state"] == 0).squeeze(-1)
        score = g["mean"][free] - self.kappa * g["sd"][free]
        take = free[score.argsort()[: min(n, left)]]
        g["state"][take] = 1
        done = time.process_time()
        record.model_seconds = fitted - start
        record.batch_seconds = done - fitted
        record.inducing_size = 0 if g["model"] is None else len(g["model"].index)
        record.distinct_argmaxes = len(take)
        self.last_ask = record
        self._log.append(("ask", n))
        return unnormalize(g["X"][take], self.bounds)

    def _open(self) -> None:
        # A new population: draw it, fit the model, set the first increment.
        preselect = False
        if self.batched:
            self._model_steps()
            preselect = (
                self.oversample > 1
                and self._scale is not None
                and self._last_tau >= PRESELECT_TAU
            )
        if preselect:
            X = self._draw(
                self.oversample * self.popsize,
                self.popsize,
                self.sparse_share,
                self.sparse_coordinates,
            )
        else:
            X = self.es.ask()
        X = torch.as_tensor(np.asarray(X), dtype=torch.double).clamp(0.0, 1.0)
        size = self.popsize if preselect else X.shape[0]
        first = 1 + max(
            size * 0.02, 3 / self.trend.settings.truncation_ratio - self.trend.size
        )
        self._generation = {
            "X": X,
            "state": torch.zeros(size, dtype=torch.long),  # 0 free, 1 out, 2 told
            "F": torch.full((size,), math.nan, dtype=torch.double),
            "target": size if self.batched else self._rounded(int(first)),
            # The GP's lengthscale and nugget are chosen afresh every
            # CHOOSE_EVERY populations, and kept in between.
            "hyperparameters": None
            if len(self.rank_correlation) % CHOOSE_EVERY == 0
            else self._hyperparameters,
            "model": None,
        }
        self._refresh()
        g = self._generation
        if preselect:  # the population: the draws of best model mean
            keep = g["mean"].argsort()[:size]
            for key in ("X", "mean", "sd"):
                g[key] = g[key][keep]
        g["predicted"] = g["mean"].clone()
        g["preselected"] = preselect

    def _model_steps(self) -> None:
        # Batched: CMA-ES runs generations on the model's means alone, as many
        # as the last batch's rank agreement earned (s*ACM-ES's idea).
        steps = self._model_generations if self._scale is not None else 0
        self.model_generations.append(0)
        if steps == 0:
            return
        self._generation = {"X": self.train_X[:0], "hyperparameters": None}
        self._refresh()  # fits the model once, in the current metric
        predict = self._generation["predict"]
        self._generation = None
        for _ in range(steps):
            X = torch.as_tensor(np.asarray(self.es.ask()), dtype=torch.double)
            means = predict(X.clamp(0.0, 1.0))
            self.es.tell(list(X.numpy()), (means / self._scale).tolist())
            self.model_generations[-1] += 1
            if self.es.stop():
                self._restart()
                return

    def _rounded(self, target: int) -> int:
        # Whole batches, at most the population.
        size = self._generation["X"].shape[0] if self._generation else self.popsize
        return min(size, self.q * math.ceil(target / self.q))

    def _refresh(self) -> None:
        # Refit the model on the data so far; predict the population.
        g = self._generation
        model = None
        X = g["X"]
        self._refit_trend()
        g["predict"] = g["trend"]
        tau_trend = None
        if self.residual and self.select and "gp" not in g:
            # The population's first fit chooses for all of its increments;
            # the GP is not even built where the regression alone already
            # ranks the recent observations well enough to be trusted.
            tau_trend = self._trend_tau(g["trend"])
            if tau_trend >= self.tau_threshold:
                g["gp"] = False
        if self.residual and self.train_X.shape[0] >= 3 and g.get("gp", True):
            if "metric" not in g:  # CMA-ES's distribution, fixed until told
                g["metric"] = search_metric(self.es)
            mean, root = g["metric"]
            model = WhitenedResidualGP(
                g["trend"],
                self.train_X,
                -self.train_Y.squeeze(-1),
                mean,
                root,
                local_size=self.local_size,
                hyperparameters=g["hyperparameters"],
            )
            g["hyperparameters"] = self._hyperparameters = model.hyperparameters
            if self.select and "gp" not in g:
                g["gp"] = not self._prefers_trend(model, tau_trend)
            if not g.get("gp", True):
                model = None
            else:
                g["predict"] = lambda Z: model.predict(Z)[0]
        if self.residual and self.train_X.shape[0] >= 3:
            self.model_choices.append(model is not None)
        if model is None:
            g["mean"], g["sd"] = g["predict"](X), torch.zeros(len(X))
        else:
            g["mean"], g["sd"] = model.predict(X)
        g["model"] = model

    def _refit_trend(self) -> None:
        # The regression is refitted at each increment, as lq-CMA-ES's is, by
        # QR (its pseudo-inverse is the larger cost).
        if self._trend_count != (self.trend.count, len(self.trend.types)):
            self._trend = Trend.fit(self.trend)
            self._trend_count = (self.trend.count, len(self.trend.types))
        self._generation["trend"] = self._trend

    def _selection_window(self) -> int:
        # The recent observations the GP and the regression are compared on.
        n = self.train_X.shape[0]
        return min(n, max(15, SELECT_POPULATIONS * self.popsize))

    def _trend_tau(self, trend: Trend) -> float:
        # Kendall's tau of the regression (in-sample) on the recent
        # observations; -1 where there are too few or it is undefined.
        n, number = self.train_X.shape[0], self._selection_window()
        if number < 3:
            return -1.0
        tau = kendall_tau(
            trend(self.train_X[n - number :]), -self.train_Y[n - number :, 0]
        )
        return tau if math.isfinite(tau) else -1.0

    def _prefers_trend(self, model: WhitenedResidualGP, tau_trend: float) -> bool:
        # The regression alone (its tau, :meth:`_trend_tau`) ranks the recent
        # observations at least as well as the GP's leave-one-out means do
        # (the regression is in-sample in both: the GP's score says what its
        # residual adds).
        n, number = self.train_X.shape[0], self._selection_window()
        if number < 3:
            return False
        X, F = self.train_X[n - number :], -self.train_Y[n - number :, 0]
        tau_gp = kendall_tau(model.loo_means(X, torch.arange(n - number, n)), F)
        tau_gp = tau_gp if math.isfinite(tau_gp) else -1.0
        return tau_trend >= tau_gp

    # ---------------------------------------------------------------- tell

    def tell(self, X: Tensor, Y: Tensor) -> None:
        r"""Results for asked points, in any order and parts.

        Args:
            X: A ``b x d`` tensor of asked points (within ``1e-4`` of the box's
                width of what :meth:`ask` returned; float32 copies match).
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
            Y = torch.as_tensor(Y, dtype=torch.double).cpu()
        except (TypeError, ValueError, RuntimeError) as e:
            raise InputDataError(f"Y must be numbers; got {Y!r}.") from e
        if Y.numel() != b or not (Y.dim() <= 1 or Y.shape == (b, 1)):
            raise InputDataError(
                f"Y has shape {tuple(Y.shape)} for {b} points; expected ({b},) or "
                f"({b}, 1)."
            )
        g = self._generation
        if g is None:
            raise InputDataError("No points are asked: call ask first.")
        unit = normalize(X.detach().to(self.bounds), self.bounds).cpu()
        out = torch.nonzero(g["state"] == 1).squeeze(-1)
        distance = (unit[:, None, :] - g["X"][out][None]).abs().amax(-1)  # b x out
        nearest = distance.argmin(-1) if out.numel() else None
        if nearest is None or bool((distance.min(-1).values > MATCH_TOLERANCE).any()):
            raise InputDataError(
                "SurrogateCMAES is told asked points, each once; a point of X was "
                "not asked, or was told already."
            )
        rows = out[nearest]
        if rows.unique().numel() < b:
            raise InputDataError("X holds the same asked point twice.")
        self._log.append(("tell", (X.detach().cpu().clone(), Y.clone())))
        y = Y.reshape(-1)
        finite = torch.isfinite(y)
        g["state"][rows] = 2
        g["F"][rows] = torch.where(finite, -y, math.nan)
        points = g["X"][rows[finite]]
        self.train_X = torch.cat([self.train_X, points])
        self.train_Y = torch.cat([self.train_Y, y[finite].reshape(-1, 1)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "x value already in Model"
            for x, f in zip(points.numpy(), (-y[finite]).tolist(), strict=True):
                self.trend.add_data_row(x, f)
        if self.pending == 0 and int((g["state"] == 2).sum()) >= g["target"]:
            with self.random_state():
                self._increment()

    def _increment(self) -> None:
        # An increment is back: refit, check the ranking, go on or finish.
        g = self._generation
        told = int((g["state"] == 2).sum())
        self.trend.sort(told)
        size = g["X"].shape[0]
        if self.batched:
            # The batch is all evaluated: only the regression's optimum (to
            # inject) needs the new data; the GP is refitted at the next ask.
            self._refit_trend()
            # The model's predictions of this batch, made before it was
            # evaluated, against the truth: how far to trust the next steps.
            F, predicted = g["F"], g["predicted"]
            finite = torch.isfinite(F)
            tau = math.nan
            if int(finite.sum()) >= 3 and self.train_X.shape[0] > int(finite.sum()):
                tau = kendall_tau(predicted[finite], F[finite])
            tau = tau if math.isfinite(tau) else 0.0
            self._last_tau = tau
            share = (tau - 0.5) / (self.tau_threshold - 0.5)
            self._model_generations = round(
                self.max_model_generations * min(1.0, max(0.0, share))
            )
            self._finish(tau, 1.0)
            return
        self._refresh()
        tau = self._tau(max(15, min(int(1.2 * told), int(0.75 * size))))
        if tau >= self.tau_threshold or told >= size:
            self._finish(tau, told / size)
        else:
            g["target"] = self._rounded(told + math.ceil(told / 2))

    def _tau(self, number: int) -> float:
        # Kendall's tau between the recent observations and the model's
        # held-out (GP) or in-sample (regression) predictions of them.
        n = self.train_X.shape[0]
        number = min(number, n)
        if number < 3:
            return 0.0
        X = self.train_X[n - number :]
        F = -self.train_Y[n - number :, 0]
        g = self._generation
        model = g["model"]
        if model is None:
            predicted = g["trend"](X)
        else:
            predicted = model.loo_means(X, torch.arange(n - number, n))
        tau = kendall_tau(predicted, F)
        return tau if math.isfinite(tau) else 0.0

    def _finish(self, tau: float, share: float) -> None:
        # Tell CMA-ES the population: true values where evaluated, the model's
        # means elsewhere, failures as the worst.
        g = self._generation
        self._generation = None
        self.rank_correlation.append(tau)
        self.evaluated_share.append(share)
        F = torch.where(g["state"] == 2, g["F"], g["mean"])
        finite = torch.isfinite(F)
        if not bool(finite.any()):
            return  # nothing to learn from: the next population is drawn afresh
        F = torch.where(finite, F, F[finite].max())
        if self._scale is None:
            # CMA-ES's stopping rules use absolute tolerances (1e-11): values
            # that differ by less than 1 are told in units of the first
            # population's spread, so that tiny values do not stop the run at
            # once; larger ones as they are, so that the tolerance stays as
            # fine as lq-CMA-ES's (in units of a spread of 10^7, CMA-ES
            # stopped 1e-7 above the 10-D ellipsoid's optimum, and restarted).
            true = g["F"][torch.isfinite(g["F"])]
            spread = float(true.std()) if true.numel() > 1 else 0.0
            level = float(true.abs().max()) if true.numel() else 0.0
            unit = spread if spread > 0 else (level if level > 0 else 1.0)
            self._scale = min(unit, 1.0)
        sigma = float(self.es.sigma)
        self.es.tell(list(g["X"].numpy()), (F / self._scale).tolist())
        if g.get("preselected") and self.es.sigma > sigma:
            # Pre-selected steps lean towards the model's optimum: longer
            # than the distribution's own, they would grow the step size
            # whatever the landscape (on the 10-D ellipsoid to 10^3 times
            # its start, and the run stalled). Such a generation may only
            # shrink it.
            self.es.sigma = sigma
        self.trend.adapt_max_relative_size(tau)
        if self.inject and self.trend.types:
            optimum = g["trend"].optimum()
            xopt = np.full(self.dim, np.nan) if optimum is None else optimum.numpy()
            if np.isfinite(xopt).all():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.es.inject([np.clip(xopt, 0.0, 1.0)])
        if self.es.stop():
            self._restart()

    def _restart(self) -> None:
        # IPOP: a new search from a uniform point with twice the population.
        self.restarts += 1
        self.popsize *= 2
        self._model_generations = 0
        self._last_tau = 0.0
        self._start(self._rng.uniform(size=self.dim))

    # ------------------------------------------------------- checkpoints

    def config(self) -> dict[str, Any]:
        r"""The settings a checkpoint must share with the optimizer resuming it."""
        return {
            "bounds": self.bounds.cpu().tolist(),
            "q": self.q,
            "residual": self.residual,
            "kappa": self.kappa,
            "local_size": self.local_size,
            "max_model_generations": self.max_model_generations,
            "oversample": self.oversample,
            "sparse_share": self.sparse_share,
            "sparse_coordinates": self.sparse_coordinates,
            "tau_threshold": self.tau_threshold,
            "sigma0": self.sigma0,
            "inject": self.inject,
            "max_quadratic_terms": self.max_quadratic_terms,
            "select": self.select,
            "seed": self.seed,
        }

    def save(self, path: str | Path) -> None:
        r"""Write a data-only checkpoint: the settings and the record of asks and tells.

        Args:
            path: The checkpoint's file (written atomically).
        """
        _save(
            {
                "kind": "SurrogateCMAES",
                "config": self.config(),
                "log": [[k, v] if k == "ask" else [k, list(v)] for k, v in self._log],
            },
            path,
        )

    @classmethod
    def load(cls, path: str | Path) -> SurrogateCMAES:
        r"""Rebuild an optimizer from :meth:`save`'s checkpoint by replaying it.

        Args:
            path: The checkpoint's file.

        Returns:
            The optimizer as it was when saved (pending points stay pending).
        """
        state = load_checkpoint(path)
        if not isinstance(state, dict) or state.get("kind") != "SurrogateCMAES":
            raise CheckpointError(f"{path} is not a SurrogateCMAES checkpoint.")
        config = dict(state["config"])
        config["bounds"] = torch.tensor(config["bounds"], dtype=torch.double)
        # Checkpoints from before the choice between the GP and the regression
        # existed ran the GP throughout.
        config.setdefault("select", False)
        config.setdefault("oversample", 1)  # before pre-selection existed
        try:
            optimizer = cls(**config)
            for kind, value in state["log"]:
                if kind == "ask":
                    optimizer.ask(int(value))
                elif kind == "tell":
                    X, Y = value
                    optimizer.tell(X, Y)
                else:
                    raise CheckpointError(f"unknown record {kind!r}")
        except (InputDataError, UnsupportedError, TypeError, ValueError) as e:
            raise CheckpointError(
                f"{path} does not replay: {type(e).__name__}: {e}"
            ) from e
        return optimizer
