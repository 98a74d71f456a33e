#!/usr/bin/env python3
r"""GSSBO: BO whose GP switches to a gradient-selected subset of the data.

GSSBO [Wei2025gssbo]_ runs BO with an exact GP on all observations until an
iteration's model and acquisition time reaches ``Z`` times the mean of the
first iterations, then fixes ``M`` to the number of observations at that
moment and from then on fits the GP on a subset of ``M`` of them, rebuilt every
iteration: the initial design, the newest batch, and the rest chosen for the
diversity of their gradients (Algorithm 1). This module makes that a library
feature:

- :class:`GSSBOSurrogate`: the model half as a callable ``surrogate(X, Y) ->
  fitted model`` that a BoTorch loop calls each iteration with all data so far
  (as :class:`~botorch_sketch.bo.IncrementalGP`): the switch (the paper's
  time rule, or a count rule for reproducible runs), the subset
  (:class:`~botorch_sketch.models.GradientSubsetGP`, rule pluggable), the
  warm-started fit;
- :class:`GSSBO`: the whole algorithm as an ask/tell optimizer (maximises) with
  any BoTorch acquisition (a factory; ``"ucb"``, ``"logei"``, ``"qlognei"``
  built in) and ``q >= 1`` points per iteration by ``optimize_acqf``;
- :func:`run_gssbo`: the loop on an objective, with a progress bar and a
  :class:`GSSBOTrace`.

Departures from the paper, all options (why, with the measurements: the guide
page *Subset-of-data GPs*, "Running GSSBO"):

- ``num_best=1``, ``num_neighbours=None``: the incumbent and its nearest
  neighbours (kernel geometry) fill the subset's free places (those the
  design and the newest batch leave) but one, which the rule fills. A
  gradient-diverse or random subset holds few observations near the
  incumbent; its GP's acquisition then proposes far from it and the loop
  stops improving, where the full GP's proposals stay near the incumbent and
  keep improving. With the neighbourhood the subset GP proposes as the full
  GP does (the guide's measurements). The rule then chooses almost nothing:
  set ``num_neighbours`` lower to give it places;
- ``region_length=0.2``: after the switch the acquisition is maximised in a
  box around the incumbent shaped by the lengthscales, where the subset GP
  holds its data (:meth:`GSSBOSurrogate.search_bounds`);
- the best value and the baselines of the improvement acquisitions
  (``best_f``, ``X_baseline``) are always taken from all observations, never
  from the subset;
- ``posterior="dtc"``: the subset as the inducing set of a
  :class:`~botorch_sketch.models.NystromGP` on all observations
  (:func:`~botorch_sketch.models.gss_nystrom.nystrom_from_subset`).

``num_neighbours=0, num_best=0, region_length=None`` is the published loop.

Example:
    >>> from botorch.test_functions import Levy
    >>> problem = Levy(dim=20, negate=True)
    >>> trace = run_gssbo(problem, problem.bounds, evaluations=200, switch_at=100)
    >>> print(trace.summary())

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
.. [Aljundi2019gradient]
    R. Aljundi, M. Lin, B. Goujaud, Y. Bengio. Gradient based sample selection for
    online continual learning. NeurIPS 2019.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    UpperConfidenceBound,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qUpperConfidenceBound,
)
from botorch.exceptions.errors import (
    InputDataError,
    ModelFittingError,
    UnsupportedError,
)
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.test_functions.base import BaseTestProblem
from botorch.utils.transforms import normalize, unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor
from torch.quasirandom import SobolEngine
from tqdm.auto import tqdm

from botorch_sketch.bo.streams import TorchStream
from botorch_sketch.bo.trust_region import lengthscale_weights
from botorch_sketch.checks import checked_count, checked_optional_count, checked_real
from botorch_sketch.models.gradient_subset_gp import (
    GradientFunction,
    GradientSubsetGP,
)
from botorch_sketch.models.gss_nystrom import nystrom_from_subset
from botorch_sketch.models.validation import check_training_data
from botorch_sketch.sketching.rules import (
    GradientDiversitySubset,
    GreedyVarianceSubset,
    RandomSubset,
    SelectionRule,
)

#: ``(model, train_X, train_Y, q) -> acquisition``: ``train_X`` (``n x d``, unit
#: cube) and ``train_Y`` (``n x 1``) are all observations, not the subset.
AcquisitionFactory = Callable[[Model, Tensor, Tensor, int], AcquisitionFunction]

#: The subset rules :class:`GSSBOSurrogate` builds from a name.
RULES = ("gradient", "random", "greedy")
#: The posteriors :class:`GSSBOSurrogate` returns after the switch.
POSTERIORS = ("subset", "dtc")


def acquisition_factory(
    name: str, beta: float = 2.0, max_baseline: int = 128
) -> AcquisitionFactory:
    r"""A factory of one of BoTorch's acquisition functions, by name.

    Every incumbent is taken from all observations: ``best_f`` is the largest
    observation, qLogNEI's baseline the ``max_baseline`` best observed inputs
    (all of them up to that many; the cap bounds the joint posterior its
    pruning samples to ``max_baseline x max_baseline``).

    Args:
        name: ``"ucb"`` (``UpperConfidenceBound``, ``qUpperConfidenceBound``
            for ``q > 1``), ``"logei"`` (``LogExpectedImprovement`` /
            ``qLogExpectedImprovement``) or ``"qlognei"``
            (``qLogNoisyExpectedImprovement``).
        beta: UCB's ``beta`` (BoTorch's: the width is ``sqrt(beta)`` sd).
        max_baseline: qLogNEI's largest baseline.

    Returns:
        A function ``(model, train_X, train_Y, q) -> AcquisitionFunction``.
    """
    if name not in ("ucb", "logei", "qlognei"):
        raise InputDataError(
            f"acquisition must be 'ucb', 'logei', 'qlognei' or a factory "
            f"(model, train_X, train_Y, q) -> AcquisitionFunction; got {name!r}."
        )
    beta = checked_real(beta, "beta", minimum=0.0)
    max_baseline = checked_count(max_baseline, "max_baseline")

    def make(model: Model, X: Tensor, Y: Tensor, q: int) -> AcquisitionFunction:
        if name == "ucb":
            if q == 1:
                return UpperConfidenceBound(model, beta=beta)
            return qUpperConfidenceBound(model, beta=beta)
        if name == "logei":
            if q == 1:
                return LogExpectedImprovement(model, best_f=Y.max())
            return qLogExpectedImprovement(model, best_f=Y.max())
        top = Y.squeeze(-1).argsort(descending=True)[:max_baseline]
        return qLogNoisyExpectedImprovement(model, X_baseline=X[top])

    return make


class GSSBOSurrogate:
    r"""GSSBO's model, a callable ``surrogate(X, Y) -> fitted model`` for BO loops.

    Each call gets all observations so far (oldest first, the initial design
    first) and returns a fitted model. Until the switch it is an exact GP on
    all of them (:class:`~botorch_sketch.models.GradientSubsetGP` without a
    subset, i.e. ``SingleTaskGP``); from the switch on, an exact GP on ``M`` of
    them, rebuilt every call: the first ``num_initial``, the newest batch (the
    rows added since the previous call), the best observation and its
    nearest neighbours (``num_neighbours``), and the rest chosen by
    ``subset_rule`` from the previous fit's hyperparameters. Every fit starts
    from the previous call's hyperparameters (``warm_start``).

    The switch: with ``switch_at``, models on more than ``switch_at``
    observations use a subset (repeatable); otherwise the paper's time rule,
    the first iteration whose CPU seconds (this call's fit plus what the loop
    reports with :meth:`add_seconds`, its acquisition) exceed
    ``time_factor`` times the mean of the first ``warmup`` iterations fixes
    ``M`` to the observations that iteration's model had. ``subset_size``
    overrides that ``M``.

    Cost per call after the switch: ``O(M^3)`` per fitting step and
    ``O(N M^2)`` for the gradients of all ``N`` observations; no ``N x N``
    matrix.

    Example:
        >>> surrogate = GSSBOSurrogate(num_initial=20, switch_at=100)
        >>> for _ in range(iterations):
        ...     model = surrogate(train_X, train_Y)  # replaces SingleTaskGP + fit
        ...     acqf = UpperConfidenceBound(model, beta=2.0)
        ...     candidate, _ = optimize_acqf(acqf, bounds, q=1, ...)
        ...     train_X = torch.cat([train_X, candidate])
        ...     train_Y = torch.cat([train_Y, f(candidate)])
    """

    def __init__(
        self,
        num_initial: int,
        switch_at: int | None = None,
        subset_size: int | None = None,
        time_factor: float = 4.0,
        warmup: int = 3,
        subset_rule: str | SelectionRule = "gradient",
        gradient: GradientFunction | None = None,
        noise_std: float = 0.1,
        num_best: int = 1,
        num_neighbours: int | None = None,
        num_newest: int = 1,
        posterior: str = "subset",
        warm_start: bool = True,
        fit_kwargs: dict[str, Any] | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.process_time,
    ) -> None:
        r"""Configure the surrogate; nothing is fitted yet.

        Args:
            num_initial: ``n0``: the first ``n0`` observations (the initial
                design) are in every subset.
            switch_at: The count switch: models on more than this many
                observations use a subset. None: the time switch.
            subset_size: ``M``; defaults to the number of observations at the
                switch (``switch_at``, or the time switch's count), as in the
                paper.
            time_factor: ``Z`` of the time switch (4 in the paper), above 1.
            warmup: The time switch's ``T_bar`` is the mean CPU seconds of the
                first ``warmup`` iterations.
            subset_rule: ``"gradient"`` (gradient diversity, GSS),
                ``"random"`` (RSSBO), ``"greedy"`` (greedy Nystrom columns,
                the appendix's rule) or a
                :class:`~botorch_sketch.sketching.rules.SelectionRule`
                (its own generator then, if any).
            gradient: The per-observation gradient for rules that use one
                (default
                :func:`~botorch_sketch.models.gradient_subset_gp.feature_residual_gradients`,
                an interpretation of the paper's, see that module).
            noise_std: ``sigma_d`` of the gradient perturbation of
                ``"gradient"`` (the paper's ``sigma_d^2 = 0.01``).
            num_best: The best ``num_best`` observations are in every subset (0
                and ``num_neighbours=0``: GSSBO as published).
            num_neighbours: The observations nearest to the best one, in the
                kernel's geometry, in every subset; None: every place the
                design, the newest batch and the ``num_best`` leave but one
                (see the module docstring).
            num_newest: The newest rows forced in when a call's data do not
                extend the previous call's (otherwise the rows added since
                then are the newest batch).
            posterior: ``"subset"`` (the exact GP on the subset, as in the
                paper) or ``"dtc"`` (a ``NystromGP`` on all observations with
                the subset as inducing set and the subset GP's
                hyperparameters).
            warm_start: Start each fit from the previous call's
                hyperparameters (and select the subset with them, one fit a
                call); False fits from the priors' initial values (two fits
                after the switch: on a random subset, then on the selected one).
            fit_kwargs: Passed to ``fit_gpytorch_mll`` (e.g.
                ``{"optimizer_kwargs": {"options": {"maxiter": 100}}}``).
            seed: Seeds the rules' generator.
            clock: The CPU clock of the time switch (``time.process_time``).
        """
        self.num_initial = checked_count(num_initial, "num_initial", minimum=0)
        self.switch_at = checked_optional_count(switch_at, "switch_at")
        self.subset_size = checked_optional_count(subset_size, "subset_size")
        self.time_factor = checked_real(time_factor, "time_factor")
        if not self.time_factor > 1:
            raise InputDataError(f"time_factor must exceed 1, got {time_factor}.")
        self.warmup = checked_count(warmup, "warmup")
        self.num_best = checked_count(num_best, "num_best", minimum=0)
        self.num_neighbours = checked_optional_count(
            num_neighbours, "num_neighbours", minimum=0
        )
        self.num_newest = checked_count(num_newest, "num_newest", minimum=0)
        if posterior not in POSTERIORS:
            raise InputDataError(
                f"posterior must be one of {POSTERIORS}, got {posterior!r}."
            )
        self.posterior = posterior
        self.warm_start = bool(warm_start)
        self.fit_kwargs = dict(fit_kwargs or {})
        self.seed = checked_count(seed, "seed", minimum=0)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.subset_rule = self._rule(subset_rule, noise_std)
        self.gradient = gradient
        self.clock = clock
        if self.subset_size is not None:
            self._check_size(self.subset_size, self.num_newest, "subset_size")
        elif self.switch_at is not None:
            self._check_size(self.switch_at, self.num_newest, "switch_at")
        #: ``M`` once the switch has fired, else None.
        self.size: int | None = None
        #: The number of observations whose model first used a subset.
        self.switched_at: int | None = None
        #: CPU seconds per call (plus what :meth:`add_seconds` added).
        self.seconds: list[float] = []
        #: The last fitted subset model (or the full GP before the switch).
        self.model: GradientSubsetGP | None = None
        self.fit_failures = 0
        self._X: Tensor | None = None

    def _rule(self, rule: str | SelectionRule, noise_std: float) -> SelectionRule:
        if isinstance(rule, SelectionRule):
            return rule
        if rule == "gradient":
            return GradientDiversitySubset(
                noise_std=noise_std, generator=self.generator
            )
        if rule == "random":
            return RandomSubset(generator=self.generator)
        if rule == "greedy":
            return GreedyVarianceSubset()
        raise InputDataError(
            f"subset_rule must be one of {RULES} or a SelectionRule, got {rule!r}."
        )

    def _check_size(self, size: int, newest: int, name: str) -> None:
        neighbours = self.num_neighbours or 0  # None: what is left but one
        forced = self.num_initial + newest + self.num_best + neighbours
        if size <= forced:
            raise InputDataError(
                f"{name} ({size}) must exceed the forced members: num_initial + "
                f"newest batch + num_best + num_neighbours ({self.num_initial} + "
                f"{newest} + {self.num_best} + {neighbours} = {forced})."
            )

    def neighbours_for(self, size: int, newest: int) -> int:
        r"""The incumbent's neighbours in a subset of ``size`` with ``newest`` rows.

        ``num_neighbours``, or (None) every place the design, the newest batch
        and the ``num_best`` leave but one, which the rule fills.
        """
        if self.num_neighbours is not None:
            return self.num_neighbours
        return max(0, size - self.num_initial - newest - self.num_best - 1)

    @property
    def switched(self) -> bool:
        r"""Whether the models use a subset from now on."""
        return self.size is not None

    def add_seconds(self, seconds: float) -> None:
        r"""Add the loop's acquisition CPU seconds to the last call's.

        Args:
            seconds: CPU seconds (non-negative).
        """
        seconds = checked_real(seconds, "seconds", minimum=0.0)
        if not self.seconds:
            raise UnsupportedError("add_seconds needs a call of the surrogate first.")
        self.seconds[-1] += seconds

    def _observe_time(self) -> None:
        # The time switch, at the start of a call: the previous iteration's
        # seconds against the warm-up mean (its model had len(_X) rows).
        if self.switched or self.switch_at is not None or self._X is None:
            return
        if len(self.seconds) <= self.warmup:
            return
        baseline = sum(self.seconds[: self.warmup]) / self.warmup
        if self.seconds[-1] > self.time_factor * baseline:
            n = self._X.shape[0]
            self.size = n if self.subset_size is None else self.subset_size

    def subset_size_for(self, n: int) -> int | None:
        r"""``M`` for a model on ``n`` observations (None: all of them)."""
        if self.switch_at is not None and n > self.switch_at:
            self.size = self.switch_at if self.subset_size is None else self.subset_size
        return self.size if self.size is not None and self.size < n else None

    def search_bounds(self, X: Tensor, Y: Tensor, length: float | None = 0.2) -> Tensor:
        r"""Where to maximise the acquisition: the unit cube, or around the incumbent.

        Before the switch (or with ``length=None``) the unit cube. After it, a
        box centred at the best observation with side ``j`` equal to ``length
        * w_j`` (``w`` the subset GP's lengthscales over their geometric mean,
        TuRBO's shape, :func:`~botorch_sketch.bo.lengthscale_weights`),
        clipped to the cube: the region the subset GP describes, since it
        always holds the incumbent's neighbours. Outside it the subset GP
        lacks the observations that held the full GP's mean down, and its
        optimistic mean there draws UCB away (see the module docstring).

        Args:
            X: The ``n x d`` observations the last call got (unit cube).
            Y: Their ``n x 1`` values.
            length: The box's side before the lengthscale weights (None: the
                whole cube).

        Returns:
            A ``2 x d`` tensor of bounds in the unit cube.
        """
        d = X.shape[-1]
        cube = torch.stack([torch.zeros(d), torch.ones(d)]).to(X)
        model = self.model
        if length is None or model is None or not model.is_subset:
            return cube
        length = checked_real(length, "length", positive=True)
        center = X[Y.squeeze(-1).argmax()]
        half = 0.5 * length * lengthscale_weights(model, d).to(X)
        return torch.stack([center - half, center + half]).clamp(0.0, 1.0)

    def __call__(self, X: Tensor, Y: Tensor, Yvar: Tensor | None = None) -> Model:
        r"""Fit the model of this iteration on all observations so far.

        Args:
            X: A ``n x d`` tensor of all observed inputs, oldest first.
            Y: A ``n x 1`` tensor of all observations (maximised).
            Yvar: An optional ``n x 1`` tensor of observed noise variances.

        Returns:
            The fitted model: a ``GradientSubsetGP`` (a ``SingleTaskGP`` on its
            subset), or a ``NystromGP`` with ``posterior="dtc"`` after the
            switch.
        """
        start = self.clock()
        check_training_data(type(self).__name__, X, Y, Yvar)
        self._observe_time()
        n = X.shape[0]
        previous = self._X
        extends = (
            previous is not None
            and previous.shape[0] <= n
            and previous.shape[-1] == X.shape[-1]
            and torch.equal(previous, X[: previous.shape[0]])
        )
        newest = n - previous.shape[0] if extends else min(self.num_newest, n)
        size = self.subset_size_for(n)
        if size is not None:
            self._check_size(size, newest, "subset_size")
            if self.switched_at is None:
                self.switched_at = n
        warm = self.warm_start and self.model is not None
        model = GradientSubsetGP(
            X,
            Y,
            Yvar,
            subset_size=size,
            num_initial=self.num_initial,
            num_newest=newest,
            subset_rule=self.subset_rule,
            gradient=self.gradient,
            fit_rounds=1 if warm else 2,
            num_best=self.num_best,
            num_neighbours=0 if size is None else self.neighbours_for(size, newest),
        )
        if warm:
            state = dict(self.model.named_parameters())
            current = dict(model.named_parameters())
            same = {
                k: v
                for k, v in state.items()
                if k in current and current[k].shape == v.shape
            }
            model.load_state_dict(same, strict=False)
        try:
            fit_gpytorch_mll(
                ExactMarginalLogLikelihood(model.likelihood, model), **self.fit_kwargs
            )
        except ModelFittingError as e:
            self.fit_failures += 1
            warnings.warn(
                f"Fitting failed ({e}); this iteration keeps the hyperparameters "
                "the model started from.",
                OptimizationWarning,
                stacklevel=2,
            )
        model.eval()
        self.model = model
        self._X = X.detach().clone()
        out: Model = model
        if self.posterior == "dtc" and model.is_subset:
            out = nystrom_from_subset(model)
        self.seconds.append(self.clock() - start)
        return out


@dataclass
class GSSBOTrace:
    r"""One run of :func:`run_gssbo` (or a :class:`GSSBO`'s record), per iteration.

    The seconds are CPU seconds (``time.process_time``) of the model and of the
    acquisition; the objective's own time is not counted.

    Attributes:
        optimal_value: The problem's maximum, where known (else NaN).
        initial_best: The best true value of the initial design.
        q: Points per iteration.
        num_initial: The initial design's size.
        values: The true (noise-free where known) value of each evaluated point.
        model_seconds: Building and fitting the model, per iteration.
        acquisition_seconds: Building and maximising the acquisition.
        train_size: Observations the model was given, per iteration.
        subset_size: Observations the GP was fitted on (``train_size`` before
            the switch).
        incumbent_in_subset: Whether the best observation was in the subset.
        distance_to_incumbent: The unit-cube distance from the batch's first
            point to the best observation before it.
        lengthscale: The median fitted lengthscale (input-transformed units).
        switched_at: The first model's number of observations that used a
            subset (None: no switch).
        X: The evaluated points per iteration (in the problem's bounds).
    """

    optimal_value: float
    initial_best: float
    q: int
    num_initial: int
    values: list[float] = field(default_factory=list)
    model_seconds: list[float] = field(default_factory=list)
    acquisition_seconds: list[float] = field(default_factory=list)
    train_size: list[int] = field(default_factory=list)
    subset_size: list[int] = field(default_factory=list)
    incumbent_in_subset: list[bool] = field(default_factory=list)
    distance_to_incumbent: list[float] = field(default_factory=list)
    lengthscale: list[float] = field(default_factory=list)
    switched_at: int | None = None
    X: list[Tensor] = field(default_factory=list, repr=False)

    @property
    def num_iterations(self) -> int:
        r"""Iterations after the initial design."""
        return len(self.model_seconds)

    @property
    def cumulative_seconds(self) -> Tensor:
        r"""Model plus acquisition CPU seconds so far, after each iteration."""
        model = torch.tensor(self.model_seconds, dtype=torch.double)
        acquisition = torch.tensor(self.acquisition_seconds, dtype=torch.double)
        return (model + acquisition).cumsum(0)

    @property
    def best_value(self) -> Tensor:
        r"""The best true value so far, after each iteration."""
        values = torch.tensor(self.values, dtype=torch.double)
        best = values.reshape(-1, self.q).amax(-1).cummax(0).values
        return best.clamp_min(self.initial_best)

    @property
    def improvements_after_switch(self) -> int:
        r"""Iterations after the switch whose batch beat the best so far."""
        if self.switched_at is None or self.num_iterations == 0:
            return 0
        first = max(0, math.ceil((self.switched_at - self.num_initial) / self.q))
        best = torch.cat(
            [torch.tensor([self.initial_best], dtype=torch.double), self.best_value]
        )
        return int((best[first + 1 :] > best[first:-1]).sum())

    def summary(self) -> str:
        r"""One line: evaluations, best value, switch, CPU seconds."""
        n = self.num_initial + len(self.values)
        if self.num_iterations == 0:
            return f"{n} evaluations (the design), best {self.initial_best:.4g}"
        switch = (
            "no switch"
            if self.switched_at is None
            else f"switched at n = {self.switched_at}, "
            f"{self.improvements_after_switch} improvements after"
        )
        return (
            f"{n} evaluations, best {float(self.best_value[-1]):.4g}, {switch}, "
            f"{float(self.cumulative_seconds[-1]):.1f} CPU s"
        )


class GSSBO(TorchStream):
    r"""GSSBO (Algorithm 1 of [Wei2025gssbo]_) as an ask/tell optimizer (maximises).

    :meth:`ask` returns the scrambled Sobol design first, then ``q`` points a
    time maximising the acquisition on the :class:`GSSBOSurrogate`'s model
    (``optimize_acqf``); :meth:`tell` records their observations. Iterations
    are synchronous: an ask waits for the previous batch to be told. BoTorch's
    optimiser and Monte Carlo acquisitions draw from torch's global generator;
    the optimizer keeps its own torch random state, seeded by ``seed``, and
    swaps it in around those calls, so a run is repeatable (with the count
    switch) and leaves the caller's stream alone.

    Example:
        >>> opt = GSSBO(bounds, num_initial=20, switch_at=100, acquisition="logei")
        >>> for _ in range(50):
        ...     X = opt.ask()
        ...     opt.tell(X, f(X))
        >>> x_best, y_best = opt.best
    """

    def __init__(
        self,
        bounds: Tensor,
        num_initial: int = 20,
        q: int = 1,
        acquisition: str | AcquisitionFactory = "ucb",
        switch_at: int | None = None,
        subset_size: int | None = None,
        time_factor: float = 4.0,
        subset_rule: str | SelectionRule = "gradient",
        num_neighbours: int | None = None,
        num_best: int = 1,
        posterior: str = "subset",
        region_length: float | None = 0.2,
        num_restarts: int = 4,
        raw_samples: int = 256,
        seed: int = 0,
        surrogate_kwargs: dict[str, Any] | None = None,
    ) -> None:
        r"""Configure the optimizer; nothing is drawn or fitted yet.

        Args:
            bounds: A ``2 x d`` tensor of the search box (finite, lower < upper).
            num_initial: ``n0``, the scrambled Sobol design's size.
            q: Points per iteration after the design.
            acquisition: ``"ucb"``, ``"logei"``, ``"qlognei"`` (see
                :func:`acquisition_factory`) or a factory ``(model, train_X,
                train_Y, q) -> AcquisitionFunction`` given all observations
                (unit cube).
            switch_at: The count switch (see :class:`GSSBOSurrogate`); None:
                the paper's time switch.
            subset_size: ``M`` (default: the observations at the switch).
            time_factor: ``Z`` of the time switch.
            subset_rule: ``"gradient"``, ``"random"``, ``"greedy"`` or a
                ``SelectionRule``.
            num_neighbours: The incumbent's nearest neighbours forced into the
                subset (None: every free place but one; 0 with
                ``num_best=0``: as published).
            num_best: The best observations forced into the subset.
            posterior: ``"subset"`` or ``"dtc"``.
            region_length: After the switch the acquisition is maximised in a
                box of this side around the incumbent, shaped by the
                lengthscales (:meth:`GSSBOSurrogate.search_bounds`); None: in
                the whole box, as published.
            num_restarts: ``optimize_acqf``'s restarts.
            raw_samples: ``optimize_acqf``'s raw samples.
            seed: Seeds the design, the optimiser's random state and the rules.
            surrogate_kwargs: Other :class:`GSSBOSurrogate` arguments
                (``warmup``, ``gradient``, ``noise_std``, ``warm_start``,
                ``fit_kwargs``, ``clock``).
        """
        bounds = torch.as_tensor(bounds)
        if not (
            bounds.dim() == 2
            and bounds.shape[0] == 2
            and bounds.shape[1] >= 1
            and bounds.is_floating_point()
            and bool(torch.isfinite(bounds).all())
            and bool((bounds[0] < bounds[1]).all())
        ):
            raise InputDataError(
                "bounds must be a finite 2 x d tensor with lower < upper, got "
                f"shape {tuple(bounds.shape)}."
            )
        self.bounds = bounds.to(torch.double)
        self.dim = self.bounds.shape[1]
        self.num_initial = checked_count(num_initial, "num_initial")
        self.q = checked_count(q, "q")
        self.num_restarts = checked_count(num_restarts, "num_restarts")
        self.raw_samples = checked_count(raw_samples, "raw_samples")
        if self.raw_samples < self.num_restarts:
            raise InputDataError(
                f"raw_samples ({raw_samples}) must be at least num_restarts "
                f"({num_restarts})."
            )
        self.seed = checked_count(seed, "seed", minimum=0)
        self.region_length = (
            None
            if region_length is None
            else checked_real(region_length, "region_length", positive=True)
        )
        if isinstance(acquisition, str):
            self.acquisition = acquisition_factory(acquisition)
        elif callable(acquisition):
            self.acquisition = acquisition
        else:
            raise InputDataError(
                "acquisition must be 'ucb', 'logei', 'qlognei' or a factory "
                f"(model, train_X, train_Y, q) -> AcquisitionFunction; got "
                f"{acquisition!r}."
            )
        kwargs = dict(surrogate_kwargs or {})
        self.surrogate = GSSBOSurrogate(
            num_initial=self.num_initial,
            switch_at=switch_at,
            subset_size=subset_size,
            time_factor=time_factor,
            subset_rule=subset_rule,
            num_neighbours=num_neighbours,
            num_best=num_best,
            num_newest=self.q,
            posterior=posterior,
            seed=self.seed,
            **kwargs,
        )
        size = subset_size if subset_size is not None else switch_at
        if size is not None:
            self.surrogate._check_size(
                size, self.q, "subset_size" if subset_size is not None else "switch_at"
            )
        self._engine = SobolEngine(self.dim, scramble=True, seed=self.seed)
        self._seed_torch(self.seed)
        self.train_X = torch.empty(0, self.dim, dtype=torch.double)
        self.train_Y = torch.empty(0, 1, dtype=torch.double)
        self._pending: Tensor | None = None
        self.model: Model | None = None
        self.model_seconds: list[float] = []
        self.acquisition_seconds: list[float] = []

    @property
    def num_told(self) -> int:
        r"""Observations told so far."""
        return self.train_X.shape[0]

    @property
    def best(self) -> tuple[Tensor, float]:
        r"""The best observed point (in ``bounds``) and its observation."""
        if self.num_told == 0:
            raise UnsupportedError("No observations yet: tell some first.")
        i = self.train_Y.squeeze(-1).argmax()
        return unnormalize(self.train_X[i], self.bounds), float(self.train_Y[i])

    def ask(self) -> Tensor:
        r"""The next points: the rest of the design, else ``q`` by the acquisition.

        Returns:
            A ``b x d`` tensor of points in ``bounds`` (``b = num_initial`` for
            the design, else ``q``).
        """
        if self._pending is not None:
            raise UnsupportedError(
                "GSSBO is synchronous: tell the previous batch before asking again."
            )
        if self.num_told < self.num_initial:
            unit = self._engine.draw(self.num_initial - self.num_told)
            unit = unit.to(torch.double)
        else:
            start = time.process_time()
            self.model = self.surrogate(self.train_X, self.train_Y)
            fitted = time.process_time()
            unit_box = self.surrogate.search_bounds(
                self.train_X, self.train_Y, self.region_length
            )
            with self.random_state():
                acqf = self.acquisition(self.model, self.train_X, self.train_Y, self.q)
                unit, _ = optimize_acqf(
                    acqf,
                    bounds=unit_box,
                    q=self.q,
                    num_restarts=self.num_restarts,
                    raw_samples=self.raw_samples,
                )
            done = time.process_time()
            self.surrogate.add_seconds(done - fitted)
            self.model_seconds.append(fitted - start)
            self.acquisition_seconds.append(done - fitted)
            unit = unit.detach()
        self._pending = unit
        return unnormalize(unit, self.bounds)

    def tell(self, X: Tensor, Y: Tensor) -> None:
        r"""Record the observations of the points last asked.

        Args:
            X: The ``b x d`` tensor :meth:`ask` returned.
            Y: A ``b`` or ``b x 1`` tensor of their (finite) observations.
        """
        if self._pending is None:
            raise UnsupportedError("tell must follow an ask.")
        X = torch.as_tensor(X, dtype=torch.double)
        b = self._pending.shape[0]
        if X.shape != (b, self.dim):
            raise InputDataError(
                f"X must be the {b} x {self.dim} tensor ask returned, got shape "
                f"{tuple(X.shape)}."
            )
        Y = torch.as_tensor(Y, dtype=torch.double)
        if Y.numel() != b or not (Y.dim() <= 1 or Y.shape == (b, 1)):
            raise InputDataError(
                f"Y must hold {b} observations, one per point; got shape "
                f"{tuple(Y.shape)}."
            )
        if not bool(torch.isfinite(Y).all()):
            raise InputDataError("Y must be finite: GSSBO does not model failures.")
        unit = normalize(X, self.bounds)
        if not torch.allclose(unit, self._pending, atol=1e-6):
            raise InputDataError("X must be the points the last ask returned.")
        self.train_X = torch.cat([self.train_X, self._pending])
        self.train_Y = torch.cat([self.train_Y, Y.reshape(b, 1)])
        self._pending = None


def run_gssbo(
    objective: Callable[[Tensor], Tensor],
    bounds: Tensor,
    evaluations: int,
    num_initial: int = 20,
    q: int = 1,
    acquisition: str | AcquisitionFactory = "ucb",
    switch_at: int | None = None,
    subset_size: int | None = None,
    time_factor: float = 4.0,
    subset_rule: str | SelectionRule = "gradient",
    num_neighbours: int | None = None,
    num_best: int = 1,
    posterior: str = "subset",
    region_length: float | None = 0.2,
    num_restarts: int = 4,
    raw_samples: int = 256,
    seed: int = 0,
    progress: bool = True,
    surrogate_kwargs: dict[str, Any] | None = None,
) -> GSSBOTrace:
    r"""Maximise ``objective`` by GSSBO.

    The arguments after ``evaluations`` are :class:`GSSBO`'s.

    Args:
        objective: Maps a ``b x d`` tensor of points in ``bounds`` to ``b`` (or
            ``b x 1``) observations. A BoTorch test function is one (its
            noise-free values then go into the trace; the loop maximises, so
            use ``negate=True`` for the minimisation problems).
        bounds: A ``2 x d`` tensor of the search box.
        evaluations: Evaluations in all, the design included (the last batch
            is cut to fit).
        num_initial: The design's size.
        q: Points per iteration.
        acquisition: ``"ucb"``, ``"logei"``, ``"qlognei"`` or a factory.
        switch_at: The count switch; None: the time switch.
        subset_size: ``M``.
        time_factor: ``Z``.
        subset_rule: The subset rule.
        num_neighbours: The incumbent's neighbours forced into the subset
            (None: every free place but one).
        num_best: The best observations forced into the subset.
        posterior: ``"subset"`` or ``"dtc"``.
        region_length: The side of the search box around the incumbent after
            the switch (None: the whole box, as published).
        num_restarts: ``optimize_acqf``'s restarts.
        raw_samples: ``optimize_acqf``'s raw samples.
        seed: Seeds the design, the optimiser and the rules.
        progress: Show a progress bar.
        surrogate_kwargs: Other :class:`GSSBOSurrogate` arguments.

    Returns:
        The run's :class:`GSSBOTrace`.
    """
    evaluations = checked_count(evaluations, "evaluations")
    opt = GSSBO(
        bounds,
        num_initial=num_initial,
        q=q,
        acquisition=acquisition,
        switch_at=switch_at,
        subset_size=subset_size,
        time_factor=time_factor,
        subset_rule=subset_rule,
        num_neighbours=num_neighbours,
        num_best=num_best,
        posterior=posterior,
        region_length=region_length,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        seed=seed,
        surrogate_kwargs=surrogate_kwargs,
    )
    if evaluations < opt.num_initial:
        raise InputDataError(
            f"evaluations ({evaluations}) must be at least num_initial "
            f"({opt.num_initial})."
        )
    noise_free = isinstance(objective, BaseTestProblem)

    def evaluate(x: Tensor) -> tuple[Tensor, list[float]]:
        y = torch.as_tensor(objective(x), dtype=torch.double).reshape(-1, 1)
        if noise_free:
            with torch.no_grad():
                true = objective(x, noise=False).reshape(-1).tolist()
        else:
            true = y.reshape(-1).tolist()
        return y, true

    X = opt.ask()
    Y, true = evaluate(X)
    opt.tell(X, Y)
    optimum = math.nan
    if noise_free:
        with contextlib.suppress(AttributeError, NotImplementedError, TypeError):
            optimum = float(objective.optimal_value)
    trace = GSSBOTrace(
        optimal_value=optimum,
        initial_best=max(true),
        q=opt.q,
        num_initial=opt.num_initial,
    )
    iterations = math.ceil((evaluations - opt.num_initial) / opt.q)
    bar = tqdm(range(iterations), desc="GSSBO", disable=not progress)
    for _ in bar:
        incumbent = opt.train_X[opt.train_Y.squeeze(-1).argmax()]
        X = opt.ask()
        b = min(opt.q, evaluations - opt.num_told)
        if b < X.shape[0]:
            X = X[:b]
            opt._pending = opt._pending[:b]
        Y, true = evaluate(X)
        model = opt.surrogate.model
        trace.values.extend(true + [-math.inf] * (opt.q - b))
        trace.model_seconds.append(opt.model_seconds[-1])
        trace.acquisition_seconds.append(opt.acquisition_seconds[-1])
        trace.train_size.append(opt.num_told)
        trace.subset_size.append(int(model.subset_indices.numel()))
        best = int(opt.train_Y.squeeze(-1).argmax())
        trace.incumbent_in_subset.append(bool((model.subset_indices == best).any()))
        trace.distance_to_incumbent.append(float((opt._pending[0] - incumbent).norm()))
        trace.lengthscale.append(_median_lengthscale(model))
        trace.X.append(X)
        opt.tell(X, Y)
        bar.set_postfix(best=f"{float(trace.best_value[-1]):.4g}")
    trace.switched_at = opt.surrogate.switched_at
    return trace


def _median_lengthscale(model: GradientSubsetGP) -> float:
    kernel = model.covar_module
    while kernel is not None:
        if getattr(kernel, "has_lengthscale", False):
            return float(kernel.lengthscale.detach().median())
        kernel = getattr(kernel, "base_kernel", None)
    return math.nan


__all__ = [
    "AcquisitionFactory",
    "GSSBO",
    "GSSBOSurrogate",
    "GSSBOTrace",
    "acquisition_factory",
    "run_gssbo",
]
