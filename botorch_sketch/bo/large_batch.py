#!/usr/bin/env python3
r"""Large-batch BO for 10^3-10^5 evaluations: screened CMA-ES or Thompson regions.

When evaluations are cheap or run by the thousand (simulators, high-throughput
experiments), BO spends its time in the surrogate, not in the objective.
:func:`run_large_batch` proposes each batch from one carried model in one of
two ways (``strategy``):

- ``"cma"`` (the default): CMA-ES's search distribution, each generation of
  ``q`` the draws of largest posterior mean among ``3 q``, a third of them
  sparse (:class:`~botorch_sketch.bo.ScreenedCMAES`, from the box's centre
  with a step of 0.1 of the unit cube). On the benchmark's grid (q = 100 to
  10^4 evaluations, six problems in 6-100 dimensions) it reached the best
  value at 1000, 3000 and 10^4 evaluations of every method on every problem,
  CMA-ES and TuRBO-ENN included, for 0.21-0.52 ms of CPU per evaluation;
  TuRBO-ENN still leads it on Rastrigin at 3000 evaluations and on a shifted
  StyblinskiTang-20 (``docs/bo-headline-check.md``). It learns from whole
  generations, one batch at a time;
- ``"regions"``: ``q`` pathwise Thompson samples in trust regions, described
  below; its ask/tell form (:class:`LargeBatchOptimizer`) serves
  asynchronous workers and checkpoints.

The ``"regions"`` loop keeps its cost flat as the data grow and the dimension
rises:

- the surrogate is an :class:`~botorch_sketch.bo.IncrementalGP` with a capped
  inducing set (``max_inducing``): each batch enters by a Woodbury step
  (``O(q m^2)``); the model is refitted only when a batch's observations
  surprise it (their standardised residuals, a test of the hyperparameters on
  new data) or the data have doubled, and then on a bounded subset of the data
  (the newest points, the best point's neighbours and a uniform sample) with a
  capped number of L-BFGS-B iterations, so a refit costs the same in 60
  dimensions at ``n = 10^4`` as in 6 at ``n = 10^3``;
- a batch is ``q`` pathwise posterior samples [Wilson2020efficiently]_, each
  maximised over one shared candidate set, then refined around its own argmax.
  A path costs ``O(m + F)`` per candidate (``F`` random features), whatever
  ``n``;
- by default the candidates live in TuRBO trust regions
  [Eriksson2019scalable]_ over the one carried model
  (:class:`~botorch_sketch.bo.regions.TrustRegions`): boxes around the
  regions' incumbents whose sides follow the model's lengthscales, with
  TuRBO's candidates that move a random subset of coordinates (each with
  probability ``min(1, 20 / d)``). A point scores the smaller of its posterior
  mean and its observation (``success="pessimistic"``): the incumbent is the
  region's best score, a batch succeeds when it beats it, a box doubles after
  successes and halves after failures. When one collapses, the first region
  re-expands at the best centre and the second restarts where a global
  Thompson sample peaks away from the collapsed regions; every observation
  is kept (the global model holds them all, where TuRBO starts a new model
  from a new design). Half of each batch's paths are reserved to the regions
  in equal shares (``region_share``): a region the paths never chose would
  stay a region the global model reads poorly.

Many paths share an argmax on a shared candidate set. :func:`thompson_batch`
reports how many argmaxes were distinct and fills the batch: every path also
scores perturbations of its own argmax (reflected at the region's faces, so
that they stay distinct at a corner), and a path whose argmax another path took
gets its best perturbation.

Example:
    >>> from botorch.test_functions import Hartmann
    >>> problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    >>> trace = run_large_batch(problem, problem.bounds, evaluations=10_000, q=200)
    >>> print(trace.summary())
    >>> plot_large_batch({"IncrementalGP": [trace]}, "hartmann.png")

References:

.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
.. [Eriksson2019scalable]
    D. Eriksson, M. Pearce, J. Gardner, R. D. Turner, M. Poloczek. Scalable
    global optimization via local Bayesian optimization. NeurIPS 2019.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.exceptions.warnings import BotorchWarning, InputDataWarning
from botorch.models.model import Model
from botorch.test_functions.base import BaseTestProblem
from botorch.utils.transforms import unnormalize
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.bo.ask_tell import LOG_COLUMNS, LargeBatchOptimizer
from botorch_sketch.bo.checkpoint import CheckpointError, load_checkpoint
from botorch_sketch.bo.screened_cma import ScreenedCMAES
from botorch_sketch.bo.surrogate_cma import SurrogateCMAES

# The Thompson step's names lived here first: imported from here too.
from botorch_sketch.bo.thompson import (  # noqa: F401
    Batch,
    candidate_set,
    check_region,
    default_surrogate,
    posterior_incumbents,
    reflect,
    thompson_batch,
)
from botorch_sketch.checks import checked_count, checked_optional_count, checked_real

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The loop's ways of proposing a batch (``run_large_batch``'s ``strategy``).
STRATEGIES = ("regions", "cma", "surrogate-cma")

#: The arguments of ``strategy="regions"`` alone, at their defaults.
_REGION_DEFAULTS = {
    "num_candidates": None,
    "num_local": 8,
    "num_incumbents": 20,
    "trust_region": True,
    "num_regions": 2,
    "success": "pessimistic",
    "region_share": 0.5,
    "num_features": 1024,
}

#: A surrogate: all data so far (unit cube, ``n x d``; ``n x 1``) to a fitted model.
Surrogate = Callable[[Tensor, Tensor], Model]


class FailedBatchWarning(BotorchWarning):
    r"""Every point of a batch failed (the objective returned NaN or infinity)."""


@dataclass
class LargeBatchTrace:
    r"""One run of :func:`run_large_batch`, one entry per batch after the design.

    The seconds are CPU seconds of proposing (``time.process_time``); the
    objective's own time is not counted.

    Attributes:
        optimal_value: The problem's maximum, where known (else NaN).
        initial_best: The best true value of the initial design (``-inf`` if
            every point failed).
        q: Points per batch.
        num_initial: The initial design's size.
        values: The true (noise-free where known) value of each evaluated point
            (NaN for a failed one).
        batch_best: The best finite value per batch (``-inf`` if none).
        model_seconds: Building or updating the surrogate, per batch (telling
            the optimizer the batch's results included).
        refit_seconds: The part of ``model_seconds`` spent in a build or refit
            (0 when the model was only conditioned).
        refitted: Whether the surrogate was built or refitted, per batch.
        incumbent_seconds: Finding the incumbents or the region's centre.
        batch_seconds: Building the candidates, drawing and maximising the paths.
        train_size: Observations the surrogate held per batch.
        inducing_size: Its inducing points per batch (0 for other models).
        distinct_argmaxes: Distinct path argmaxes per batch, before filling.
        distinct_points: Distinct points per evaluated batch.
        failed: Points of each batch whose observation was NaN or infinite.
        region_length: The largest trust region's length per batch (NaN
            without one; CMA-ES's step size with ``strategy="cma"``).
        restarts: Trust-region (or CMA-ES) restarts so far, per batch.
        evaluated: Evaluations so far (the design and failed points included)
            after each batch.
        X: The evaluated points per batch (in the problem's bounds).
        stopped_at_cap: Whether the run stopped at its CPU-time cap.
        stopped_reason: Why the run ended before its budget (``""`` if it did
            not): ``"time cap"``, ``"failed batches"``, ``"interrupted"``.
    """

    optimal_value: float
    initial_best: float
    q: int
    num_initial: int = 0
    values: list[float] = field(default_factory=list)
    batch_best: list[float] = field(default_factory=list)
    model_seconds: list[float] = field(default_factory=list)
    refit_seconds: list[float] = field(default_factory=list)
    refitted: list[bool] = field(default_factory=list)
    incumbent_seconds: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    train_size: list[int] = field(default_factory=list)
    inducing_size: list[int] = field(default_factory=list)
    distinct_argmaxes: list[int] = field(default_factory=list)
    distinct_points: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    region_length: list[float] = field(default_factory=list)
    restarts: list[int] = field(default_factory=list)
    evaluated: list[int] = field(default_factory=list)
    X: list[Tensor] = field(default_factory=list, repr=False)
    stopped_at_cap: bool = False
    stopped_reason: str = ""

    @property
    def num_batches(self) -> int:
        r"""Batches evaluated after the design."""
        return len(self.model_seconds)

    @property
    def evaluations(self) -> Tensor:
        r"""Evaluations so far (the design and failed points included)."""
        return torch.tensor(self.evaluated, dtype=torch.double)

    @property
    def iteration_seconds(self) -> Tensor:
        r"""Proposing CPU seconds per batch (model, incumbents and paths)."""
        parts = (self.model_seconds, self.incumbent_seconds, self.batch_seconds)
        return torch.tensor(parts, dtype=torch.double).reshape(3, -1).sum(0)

    @property
    def cumulative_seconds(self) -> Tensor:
        r"""Proposing CPU seconds so far after each batch."""
        return self.iteration_seconds.cumsum(0)

    @property
    def best_value(self) -> Tensor:
        r"""The best finite true value so far after each batch."""
        best = torch.tensor(self.batch_best, dtype=torch.double).cummax(0).values
        return best.clamp_min(self.initial_best)

    @property
    def simple_regret(self) -> Tensor:
        r"""``optimal_value - best_value`` after each batch."""
        return self.optimal_value - self.best_value

    def summary(self) -> str:
        r"""One line: evaluations, best value, proposing CPU and its refits' share."""
        if self.num_batches == 0:
            best = self.initial_best
            return f"{self.num_initial} evaluations (the design), best {best:.4g}"
        seconds = float(self.cumulative_seconds[-1])
        refits = sum(self.refit_seconds)
        n = int(self.evaluated[-1])
        return (
            f"{n} evaluations, best {float(self.best_value[-1]):.4g}, "
            f"{seconds:.1f} CPU s of proposing ({1000 * seconds / n:.2f} ms per "
            f"evaluation, refits {refits / max(seconds, 1e-12):.0%})"
        )


def _observations(output: object, b: int) -> Tensor:
    # The objective's output as a ``b x 1`` double tensor, or an error naming it.
    try:
        y = torch.as_tensor(output, dtype=torch.double)
    except (TypeError, ValueError, RuntimeError) as e:
        raise InputDataError(
            f"The objective returned {type(output).__name__}, which is not a "
            f"tensor, array or list of {b} numbers ({e})."
        ) from e
    if y.numel() != b or not (y.dim() <= 1 or y.shape == (b, 1)):
        raise InputDataError(
            f"The objective returned shape {tuple(y.shape)} for {b} points; "
            f"expected ({b},) or ({b}, 1): one observation per point."
        )
    return y.reshape(b, 1)


def _finite_max(values: list[float]) -> float:
    # NaN fails every comparison, so ``max`` over a list with NaN first is NaN.
    finite = [v for v in values if math.isfinite(v)]
    return max(finite) if finite else -math.inf


def _minimised(problem: BaseTestProblem) -> bool:
    # BoTorch's own reading of the direction, ``negate`` included; a
    # multi-objective problem has none (its two outputs are refused later).
    try:
        return bool(problem.is_minimization_problem)
    except UnsupportedError:
        return False


def optimal_value(problem: BaseTestProblem) -> float:
    r"""A BoTorch problem's optimal value, NaN where it does not say.

    BoTorch raises ``NotImplementedError`` where a problem does not know its
    optimum (``Michalewicz`` in 20 dimensions): a run then has no regret, and
    does not fail.
    """
    try:
        value = problem.optimal_value
    except (AttributeError, NotImplementedError):
        return math.nan
    return math.nan if value is None else float(value)


def run_large_batch(
    objective: Callable[[Tensor], Tensor],
    bounds: Tensor,
    evaluations: int,
    q: int = 100,
    num_initial: int | None = None,
    surrogate: Surrogate | None = None,
    num_candidates: int | None = None,
    num_local: int = 8,
    num_incumbents: int = 20,
    trust_region: bool = True,
    num_regions: int = 2,
    success: str = "pessimistic",
    region_share: float = 0.5,
    num_features: int = 1024,
    seed: int = 0,
    time_cap: float | None = None,
    max_failed_batches: int = 3,
    progress: bool = True,
    strategy: str = "cma",
) -> LargeBatchTrace:
    r"""Maximise ``objective`` by large-batch Thompson sampling (or screened CMA-ES).

    Args:
        objective: Maps a ``b x d`` tensor of points in ``bounds`` to ``b`` (or
            ``b x 1``) noisy observations (a tensor, array or list); NaN or
            infinity marks a failed point, which is counted as evaluated but
            not modelled. A BoTorch test function is one (its noise-free values
            then go into the trace; the loop maximises, so build a problem
            BoTorch minimises with ``negate=True``: its
            ``is_minimization_problem`` must be False, or a warning says so).
        bounds: A ``2 x d`` tensor of the search box (finite, lower < upper).
        evaluations: Evaluations in all, the initial design and failed points
            included (the last batch is cut to fit).
        q: Points per batch.
        num_initial: The scrambled Sobol design's size (default ``q``).
        surrogate: All data so far (in the unit cube) to a fitted model, called
            once per batch; default :func:`default_surrogate`.
        num_candidates: The shared candidate set's size (default
            ``max(1000, 5 q)``, see :class:`LargeBatchOptimizer`).
        num_local: Perturbations each path scores around its own argmax.
        num_incumbents: Without a trust region, how many observed inputs of
            largest posterior mean the candidates perturb.
        trust_region: Draw the candidates in a TuRBO trust region around the
            region's incumbent (see the module's docstring); False draws them
            from the whole box (half Sobol, half perturbations of the
            incumbents).
        num_regions: How many trust regions share the model and the batch
            (each path takes its maximum over all their candidates). The
            first re-expands at the best centre when it collapses, the others
            restart away from collapsed regions
            (:class:`~botorch_sketch.bo.regions.TrustRegions`).
        success: How the regions score their points: ``"mean"`` (posterior
            means), ``"observation"`` (TuRBO's rule) or ``"pessimistic"`` (the
            smaller of the two); see
            :class:`~botorch_sketch.bo.regions.TrustRegions`. On nine
            noise-free problems ``"observation"`` did better in 10 of 27 runs
            with the default surrogate (StyblinskiTang-40 and Griewank-50 in
            every run, Levy-100, Rosenbrock-30, Powell-48 and DixonPrice-40
            in none), and worse on noisy ones (docs/bo-headline.md).
        region_share: The share of each batch's paths reserved to the regions
            in equal parts (each takes its maximum over its region's
            candidates alone); the others go wherever they peak.
        num_features: Random Fourier features of each Thompson path's prior
            part; a path costs ``O(m + F)`` per candidate.
        seed: Seeds the design, the candidates and the paths; torch's global
            random state is forked, so the caller's stream is left alone.
        time_cap: Stop once the run's proposing CPU seconds (the objective's
            time excluded) exceed this.
        max_failed_batches: Stop after this many batches in a row in which
            every point failed (each is warned).
        progress: Show a progress bar.
        strategy: ``"cma"`` (the default): CMA-ES whose generations of ``q``
            the carried surrogate pre-screens by posterior mean
            (:class:`~botorch_sketch.bo.ScreenedCMAES`; its first generation
            is the design, so ``num_initial`` must be ``q``, and the
            arguments of the regions, candidates and paths do not apply and
            are refused). ``"surrogate-cma"``: CMA-ES whose populations a GP
            in CMA-ES's metric over lq-CMA-ES's regression mostly evaluates,
            for any ``q`` from 1 (:class:`~botorch_sketch.bo.SurrogateCMAES`;
            it fits its own model, so ``surrogate`` is refused).
            ``"regions"``: the Thompson batches in trust regions described
            above (:class:`LargeBatchOptimizer`).

    Returns:
        The run's :class:`LargeBatchTrace`. If the objective (or anything else)
        raises, the trace so far is attached to the exception as ``trace``;
        on ``KeyboardInterrupt`` the trace so far is returned.
    """
    evaluations = checked_count(evaluations, "evaluations")
    q = checked_count(q, "q")
    num_initial = checked_count(
        q if num_initial is None else num_initial, "num_initial"
    )
    num_candidates = checked_optional_count(num_candidates, "num_candidates")
    num_local = checked_count(num_local, "num_local")
    num_incumbents = checked_count(num_incumbents, "num_incumbents")
    max_failed_batches = checked_count(max_failed_batches, "max_failed_batches")
    num_regions = checked_count(num_regions, "num_regions")
    seed = checked_count(seed, "seed", minimum=0)
    if not isinstance(trust_region, bool):
        raise InputDataError(
            f"trust_region must be True or False, got {trust_region!r}."
        )
    if time_cap is not None:
        time_cap = checked_real(time_cap, "time_cap", positive=True)
    check_region(bounds, "bounds")
    if not bool((bounds[1] > bounds[0]).all()):
        raise InputDataError(f"bounds must have lower < upper; got {bounds}.")
    if evaluations < num_initial:
        raise InputDataError(
            f"evaluations ({evaluations}) must be at least num_initial ({num_initial})."
        )
    if surrogate is not None and not callable(surrogate):
        raise InputDataError(
            "surrogate must be callable (X, Y) -> model; got "
            f"{type(surrogate).__name__}."
        )
    bounds = bounds.to(torch.double)
    if strategy not in STRATEGIES:
        raise InputDataError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
    if strategy in ("cma", "surrogate-cma"):
        if bounds.shape[-1] < 2:
            raise UnsupportedError(
                f"strategy={strategy!r} needs d >= 2 inputs (CMA-ES's own limit; "
                f"got d = {bounds.shape[-1]}); pass strategy='regions'."
            )
        if strategy == "cma" and q < 2:
            raise UnsupportedError(
                "The default strategy='cma' needs a CMA-ES population of q >= 2 "
                f"(got q = {q}); pass strategy='surrogate-cma' (CMA-ES from q = 1) "
                "or strategy='regions'."
            )
        if num_initial != q:
            raise InputDataError(
                f"strategy={strategy!r} has no separate design: its first batch "
                f"is q = {q} points of the search distribution; num_initial "
                f"({num_initial}) must be q."
            )
        given = {
            "num_candidates": num_candidates,
            "num_local": num_local,
            "num_incumbents": num_incumbents,
            "trust_region": trust_region,
            "num_regions": num_regions,
            "success": success,
            "region_share": region_share,
            "num_features": num_features,
        }
        moved = [k for k, v in given.items() if v != _REGION_DEFAULTS[k]]
        if moved:
            raise InputDataError(
                f"{', '.join(moved)} set the Thompson batches of "
                f"strategy='regions'; strategy={strategy!r} has no regions, "
                "candidates or paths. Pass strategy='regions' to use them."
            )
        if strategy == "cma":
            optimizer = ScreenedCMAES(bounds, q=q, surrogate=surrogate, seed=seed)
        elif surrogate is not None:
            raise InputDataError(
                "strategy='surrogate-cma' fits its own model (a GP in CMA-ES's "
                "metric over a linear-quadratic regression); surrogate does not "
                "apply. Use SurrogateCMAES(residual=False) for the regression alone."
            )
        else:
            optimizer = SurrogateCMAES(bounds, q=q, seed=seed)
    else:
        optimizer = LargeBatchOptimizer(
            bounds,
            q=q,
            num_initial=num_initial,
            surrogate=surrogate,
            num_candidates=num_candidates,
            num_local=num_local,
            num_incumbents=num_incumbents,
            trust_region=trust_region,
            num_regions=num_regions,
            seed=seed,
            success=success,
            region_share=region_share,
            num_features=num_features,
        )
    problem = isinstance(objective, BaseTestProblem)
    optimal = optimal_value(objective) if problem else math.nan
    if problem and _minimised(objective):
        negate = bool(getattr(objective, "negate", False))
        warnings.warn(
            f"{type(objective).__name__} built with negate={negate} is a "
            "minimisation problem (BoTorch's is_minimization_problem), and "
            f"run_large_batch maximises. Build it with negate={not negate} to "
            "minimise it; this run maximises it, and its simple regret is not "
            "reported.",
            InputDataWarning,
            stacklevel=2,
        )
        optimal = math.nan

    def evaluate(x: Tensor) -> tuple[Tensor, list[float]]:
        # The objective draws its noise from the optimizer's torch stream, as
        # it did from the loop's forked global one.
        with optimizer.random_state():
            y = _observations(objective(x), x.shape[0]).to(x)
            # A test problem's noise-free values (negated as its observations).
            true = objective(x, noise=False).reshape(-1, 1) if problem else y
        return y, true.squeeze(-1).tolist()

    trace = LargeBatchTrace(
        optimal_value=float(math.nan if optimal is None else optimal),
        initial_best=-math.inf,
        q=q,
        num_initial=num_initial,
    )
    try:
        _loop(
            trace, optimizer, evaluate, evaluations, time_cap, max_failed_batches,
            progress,
        )  # fmt: skip
    except KeyboardInterrupt:
        warnings.warn(
            f"Interrupted: the trace holds the {trace.num_batches} batches "
            "evaluated so far.",
            BotorchWarning,
            stacklevel=2,
        )
        trace.stopped_reason = "interrupted"
    except Exception as e:
        e.trace = trace  # what was done, for the caller to keep
        e.add_note(
            f"run_large_batch: the trace of the {trace.num_batches} batches "
            "evaluated so far is attached to this exception as `.trace`."
        )
        raise
    return trace


def _loop(
    trace: LargeBatchTrace,
    optimizer: LargeBatchOptimizer | ScreenedCMAES | SurrogateCMAES,
    evaluate: Callable[[Tensor], tuple[Tensor, list[float]]],
    evaluations: int,
    time_cap: float | None,
    max_failed_batches: int,
    progress: bool,
) -> None:
    # The loop of ``run_large_batch``: ask, evaluate, tell, filling ``trace``.
    num_initial, q = optimizer.num_initial, optimizer.q
    x = optimizer.ask(num_initial)
    num_initial = x.shape[0]  # SurrogateCMAES may hand out fewer
    y, initial = evaluate(x)
    optimizer.tell(x, y)
    trace.initial_best = _finite_max(initial)
    Y = optimizer.train_Y
    if Y.shape[0] == 0:
        raise InputDataError(
            f"Every point of the initial design ({num_initial} points) failed: the "
            "objective returned NaN or infinite values."
        )
    if Y.shape[0] > 1 and float(Y.std()) <= 1e-8 * max(1.0, float(Y.abs().max())):
        warnings.warn(
            f"The initial design's observations are (nearly) constant (spread "
            f"{float(Y.std()):.3g}): the model cannot tell points apart and "
            "its fit degrades, as SingleTaskGP's does.",
            InputDataWarning,
            stacklevel=3,
        )
    evaluated = num_initial
    failed_in_a_row = 0
    bar = tqdm(
        total=evaluations,
        initial=evaluated,
        desc={
            "LargeBatchOptimizer": "Thompson regions",
            "ScreenedCMAES": "screened CMA-ES",
            "SurrogateCMAES": "surrogate CMA-ES",
        }[type(optimizer).__name__],
        disable=not progress,
    )
    while evaluated < evaluations:
        if time_cap is not None and trace.num_batches > 0:
            if float(trace.cumulative_seconds[-1]) > time_cap:
                trace.stopped_at_cap, trace.stopped_reason = True, "time cap"
                break
        b = min(q, evaluations - evaluated)
        x = optimizer.ask(b)
        record = optimizer.last_ask
        y, true = evaluate(x)
        keep = torch.isfinite(y).squeeze(-1)
        start = time.process_time()
        optimizer.tell(x, y)
        # Telling is proposing work too (SurrogateCMAES refits there).
        tell_seconds = time.process_time() - start
        evaluated += x.shape[0]
        trace.values.extend(
            v if k else math.nan for v, k in zip(true, keep.tolist(), strict=True)
        )
        trace.batch_best.append(
            _finite_max([v for v, k in zip(true, keep.tolist(), strict=True) if k])
        )
        trace.model_seconds.append(record.model_seconds + tell_seconds)
        trace.refit_seconds.append(record.model_seconds if record.refitted else 0.0)
        trace.refitted.append(record.refitted)
        trace.incumbent_seconds.append(record.incumbent_seconds)
        trace.batch_seconds.append(record.fantasy_seconds + record.batch_seconds)
        trace.train_size.append(record.train_size)
        trace.inducing_size.append(record.inducing_size)
        trace.distinct_argmaxes.append(record.distinct_argmaxes)
        trace.distinct_points.append(int(x.unique(dim=0).shape[0]))
        trace.failed.append(int((~keep).sum()))
        trace.region_length.append(optimizer.region_length)
        trace.restarts.append(optimizer.restarts)
        trace.evaluated.append(evaluated)
        trace.X.append(x)
        bar.update(b)
        n = optimizer.train_X.shape[0]
        bar.set_postfix(best=f"{float(trace.best_value[-1]):.4g}", n=n)
        failed_in_a_row = 0 if bool(keep.any()) else failed_in_a_row + 1
        if failed_in_a_row > 0:
            warnings.warn(
                f"Every point of batch {trace.num_batches} failed (NaN or infinite "
                f"observations); {failed_in_a_row} such batch(es) in a row, the "
                f"run stops after {max_failed_batches}.",
                FailedBatchWarning,
                stacklevel=3,
            )
            if failed_in_a_row >= max_failed_batches:
                trace.stopped_reason = "failed batches"
                break
    bar.close()


def trace_from_checkpoint(
    checkpoint: str | Path | dict, optimal_value: float = math.nan
) -> LargeBatchTrace:
    r"""The :class:`LargeBatchTrace` of a :class:`LargeBatchOptimizer` checkpoint.

    One entry per ask that used the model: the results told between it and
    the next such ask are its batch (in a synchronous run, exactly its
    points; in an asynchronous one, what returned in between). The values are
    the observations as told (with their noise: the checkpoint holds no
    noise-free values), the seconds the asks' own.

    Args:
        checkpoint: A checkpoint's path, or its loaded state
            (:func:`~botorch_sketch.bo.checkpoint.load_checkpoint`).
        optimal_value: The problem's maximum, if known.

    Returns:
        The trace (its ``X`` in the unit cube's image under the saved bounds).
    """
    state = checkpoint if isinstance(checkpoint, dict) else load_checkpoint(checkpoint)
    try:
        config, told_X, told_Y = state["config"], state["told_X"], state["told_Y"]
        log = state["log"]
        bounds = config["bounds"]
    except (KeyError, TypeError) as e:
        raise CheckpointError(f"The checkpoint holds no run to trace ({e}).") from e
    if log.dim() != 2 or log.shape[-1] != len(LOG_COLUMNS):
        raise CheckpointError("The checkpoint's log is malformed.")
    column = {name: log[:, i] for i, name in enumerate(LOG_COLUMNS)}
    values = told_Y.squeeze(-1).tolist()
    starts = [int(t) for t in column["told"].tolist()] + [len(values)]
    trace = LargeBatchTrace(
        optimal_value=float(optimal_value),
        initial_best=_finite_max(values[: starts[0]]),
        q=int(config["q"]),
        num_initial=int(config["num_initial"]),
        values=values,
    )
    X = unnormalize(told_X, bounds)
    for k in range(log.shape[0]):
        a, b = starts[k], max(starts[k], starts[k + 1])
        window = values[a:b]
        trace.batch_best.append(_finite_max(window))
        trace.model_seconds.append(float(column["model_seconds"][k]))
        refitted = bool(column["refitted"][k])
        trace.refitted.append(refitted)
        trace.refit_seconds.append(trace.model_seconds[-1] if refitted else 0.0)
        trace.incumbent_seconds.append(float(column["incumbent_seconds"][k]))
        trace.batch_seconds.append(
            float(column["fantasy_seconds"][k] + column["batch_seconds"][k])
        )
        trace.train_size.append(int(column["train_size"][k]))
        trace.inducing_size.append(int(column["inducing_size"][k]))
        trace.distinct_argmaxes.append(int(column["distinct_argmaxes"][k]))
        trace.distinct_points.append(b - a)
        trace.failed.append(sum(not math.isfinite(v) for v in window))
        trace.region_length.append(float(column["region_length"][k]))
        trace.restarts.append(int(column["restarts"][k]))
        trace.evaluated.append(b)
        trace.X.append(X[a:b])
    return trace


def plot_large_batch(
    traces: dict[str, list[LargeBatchTrace | str | Path]],
    path: str | None = None,
    title: str = "",
) -> Figure:
    r"""Best value against evaluations and against CPU seconds; seconds per batch.

    Args:
        traces: Runs by label; each a list over seeds (the mean is drawn) of
            traces or of :class:`LargeBatchOptimizer` checkpoints' paths (read
            by :func:`trace_from_checkpoint`).
        path: Where to write the figure; None writes none.
        title: The figure's title.

    Returns:
        The figure.
    """
    from matplotlib.figure import Figure

    if not isinstance(traces, dict):
        raise InputDataError(
            f"traces must be a dict of runs by label; got {type(traces).__name__}."
        )
    for label, runs in traces.items():
        # An empty list failed with "min() arg is an empty sequence".
        if not isinstance(runs, (list, tuple)) or not runs:
            raise InputDataError(
                f"traces[{label!r}] must be a non-empty list of runs (traces or "
                f"checkpoints' paths); got {runs!r}."
            )
    traces = {
        label: [
            r if isinstance(r, LargeBatchTrace) else trace_from_checkpoint(r)
            for r in runs
        ]
        for label, runs in traces.items()
    }
    fig = Figure(figsize=(15, 4))
    axes = fig.subplots(1, 3)
    for label, runs in traces.items():
        length = min(r.num_batches for r in runs)
        if length == 0:
            continue
        n = runs[0].evaluations[:length]
        best = torch.stack([r.best_value[:length] for r in runs]).mean(0)
        seconds = torch.stack([r.cumulative_seconds[:length] for r in runs]).mean(0)
        per = torch.stack([r.iteration_seconds[:length] for r in runs]).median(0)
        axes[0].plot(n, best, label=label)
        axes[1].plot(seconds, best, label=label)
        axes[2].plot(n, per.values, label=label)
    axes[0].set(xlabel="evaluations", ylabel="best value (mean over seeds)")
    axes[1].set(xlabel="CPU seconds", ylabel="best value (mean over seeds)")
    axes[1].set_xscale("log")
    axes[2].set(xlabel="evaluations", ylabel="CPU seconds per batch", yscale="log")
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
