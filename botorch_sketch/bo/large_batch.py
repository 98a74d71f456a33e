#!/usr/bin/env python3
r"""Large-batch Thompson sampling for 10^4-10^5 evaluations.

When evaluations are cheap or run by the thousand (simulators, high-throughput
experiments), BO spends its time in the surrogate, not in the objective. This
loop keeps that time flat as the data grow:

- the surrogate is an :class:`~botorch_sketch.bo.IncrementalGP` with a capped
  inducing set (``max_inducing``): each batch enters by a Woodbury step
  (``O(q m^2)``), and the statistics are recomputed from all data only at the
  refits, which come at geometric sizes (``refit_growth``), with the
  hyperparameters fitted on a subset;
- a batch is ``q`` pathwise posterior samples [Wilson2020efficiently]_, each
  maximised over one shared candidate set (a Sobol sample of the region and
  Gaussian perturbations of the best observed points), then refined around its
  own argmax. A path costs ``O(m + F)`` per candidate (``F`` random features),
  whatever ``n``.

Many paths share an argmax on a shared candidate set (on Hartmann-6 a batch of
200 paths had about 36 distinct ones). :func:`thompson_batch` reports how many
argmaxes were distinct and fills the batch: every path also scores
perturbations of its own argmax, and a path whose argmax another path took
gets its best perturbation, a point near its own maximum that no other path
chose. Optionally the candidates live in a TuRBO-1 trust region
[Eriksson2019scalable]_ around the incumbent.

Example:
    >>> from botorch.test_functions import Hartmann
    >>> problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    >>> trace = run_large_batch(problem, problem.bounds, evaluations=10_000, q=200)
    >>> trace.best_value[-1], trace.cumulative_seconds[-1]
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.approximate_gp import ApproximateGPyTorchModel
from botorch.models.model import Model
from botorch.sampling.pathwise import draw_matheron_paths
from botorch.test_functions.base import BaseTestProblem
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import unnormalize
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.bo.incremental_gp import IncrementalGP
from botorch_sketch.bo.trust_region import (
    TurboState,
    perturbed_candidates,
    restart_state,
    trust_region_bounds,
    update_state,
)
from botorch_sketch.checks import checked_count, checked_real

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: A surrogate: all data so far (unit cube, ``n x d``; ``n x 1``) to a fitted model.
Surrogate = Callable[[Tensor, Tensor], Model]


class Batch(NamedTuple):
    r"""One Thompson-sampling batch.

    Attributes:
        X: A ``q x d`` tensor of distinct points.
        distinct_argmaxes: How many distinct candidates the ``q`` paths' argmaxes
            over the shared set were (the rest were filled).
    """

    X: Tensor
    distinct_argmaxes: int


def posterior_incumbents(
    model: Model, X: Tensor, k: int, chunk_size: int = 4096
) -> Tensor:
    r"""The ``k`` observed inputs of largest posterior mean.

    With noisy observations the best observed values are mostly the luckiest
    draws; the posterior mean ranks the inputs by what the model believes. The
    means are read one point at a time (a ``n x 1 x d`` batch, in chunks), so no
    joint ``n x n`` covariance is formed.

    Args:
        model: A fitted single-output model.
        X: A ``n x d`` tensor of observed inputs.
        k: How many to return.
        chunk_size: Points per posterior call.

    Returns:
        A ``min(k, n) x d`` tensor, best first.
    """
    with torch.no_grad():
        means = torch.cat(
            [
                model.posterior(chunk.unsqueeze(-2)).mean.reshape(-1)
                for chunk in X.split(chunk_size)
            ]
        )
    return X[means.topk(min(k, X.shape[0])).indices]


def candidate_set(
    incumbents: Tensor,
    region: Tensor,
    num_candidates: int,
    scale: float = 0.05,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Half a Sobol sample of ``region``, half perturbations of the incumbents.

    Args:
        incumbents: A ``k x d`` tensor of points to perturb (for example
            :func:`posterior_incumbents`).
        region: A ``2 x d`` box the candidates lie in.
        num_candidates: The number ``N`` of candidates.
        scale: The perturbations' standard deviation, as a fraction of the box.
        generator: Seeds the Sobol sample and the perturbations.

    Returns:
        A ``N x d`` tensor in ``region``.
    """
    num_sobol = num_candidates - num_candidates // 2
    seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
    sobol = draw_sobol_samples(region, n=num_sobol, q=1, seed=seed).squeeze(1)
    k = incumbents.shape[0]
    picks = torch.randint(k, (num_candidates - num_sobol,), generator=generator)
    centres = incumbents[picks.to(incumbents.device)]
    width = region[1] - region[0]
    noise = torch.randn(centres.shape, generator=generator, dtype=centres.dtype)
    local = centres + scale * width * noise.to(centres.device)
    local = torch.minimum(torch.maximum(local, region[0]), region[1])
    return torch.cat([sobol.to(centres), local])


def thompson_batch(
    model: Model,
    candidates: Tensor,
    q: int,
    region: Tensor,
    num_local: int = 16,
    local_scale: float = 0.02,
    generator: torch.Generator | None = None,
) -> Batch:
    r"""``q`` distinct points: each a pathwise sample's maximiser, deduplicated.

    Each of ``q`` Matheron paths is evaluated on the shared candidates and on
    ``num_local`` Gaussian perturbations of its own argmax (standard deviation
    ``local_scale`` of the region). A path keeps the best of those points; if
    its argmax over the shared set was already taken by a path before it, it
    keeps its best perturbation instead. The paths' draws use torch's global
    random generator (BoTorch's ``draw_matheron_paths`` takes none): fork it to
    leave a caller's stream alone, as :func:`run_large_batch` does.

    Args:
        model: A fitted single-output model that ``draw_matheron_paths`` takes.
        candidates: A ``N x d`` tensor of shared candidates.
        q: The batch size.
        region: A ``2 x d`` box the perturbations are clipped to.
        num_local: Perturbations per path (at least 1).
        local_scale: Their standard deviation, as a fraction of the box.
        generator: Seeds the perturbations.

    Returns:
        A :class:`Batch`.
    """
    q = checked_count(q, "q")
    num_local = checked_count(num_local, "num_local")
    if candidates.dim() != 2 or candidates.shape[-1] != region.shape[-1]:
        raise InputDataError(
            f"candidates must be a N x {region.shape[-1]} tensor; got shape "
            f"{tuple(candidates.shape)}."
        )
    if isinstance(model, ApproximateGPyTorchModel):
        # GPyTorch's variational strategy memoises the inducing Cholesky factor
        # with the batch shape of the last posterior call, and the Matheron
        # update then fails on it (gpytorch issue #2642); leaving eval mode
        # clears that cache.
        model.train()
        model.eval()
    paths = draw_matheron_paths(model, sample_shape=torch.Size([q]))

    def evaluate(points: Tensor) -> Tensor:
        out = paths(points)
        return out.squeeze(-1) if out.dim() == points.dim() else out

    with torch.no_grad():
        values = evaluate(candidates)  # q x N
        argmax = values.argmax(-1)
        best = candidates[argmax]  # q x d
        width = region[1] - region[0]
        noise = torch.randn(
            q, num_local, best.shape[-1], generator=generator, dtype=best.dtype
        ).to(best.device)
        local = best.unsqueeze(-2) + local_scale * width * noise
        local = torch.minimum(torch.maximum(local, region[0]), region[1])
        local_values = evaluate(local)  # q x num_local, each path on its own points
        top = local_values.argmax(-1)
        rows = torch.arange(q, device=best.device)
        best_local = local[rows, top]
        # A path's argmax is kept by the first path that chose it; the others
        # take their best perturbation (continuous draws: distinct).
        order = torch.arange(q, device=argmax.device)
        first = argmax.new_full((candidates.shape[0],), q).scatter_reduce(
            0, argmax, order, reduce="amin"
        )
        taken = first[argmax] != order
        improves = local_values[rows, top] > values[rows, argmax]
        use_local = taken | improves
        X = torch.where(use_local.unsqueeze(-1), best_local, best)
    return Batch(X=X, distinct_argmaxes=int(argmax.unique().numel()))


def default_surrogate(max_inducing: int = 512) -> IncrementalGP:
    r"""The carried sketch :func:`run_large_batch` uses unless given another.

    An :class:`IncrementalGP` whose inducing set is capped at ``max_inducing``,
    changed only at refits, which come every 4 batches while the data grow by
    25% between them (so at geometric sizes: about 21 refits from 10^3 to 10^5
    observations).

    Args:
        max_inducing: The inducing set's cap.

    Returns:
        The surrogate.
    """
    return IncrementalGP(
        refit_every=4,
        refit_growth=0.25,
        drift_tolerance=None,
        max_inducing=max_inducing,
        grow_between_refits=False,
    )


@dataclass
class LargeBatchTrace:
    r"""One run of :func:`run_large_batch`, one entry per batch after the design.

    Attributes:
        optimal_value: The problem's maximum, where known (else NaN).
        initial_best: The best true value of the initial design.
        q: Points per batch.
        values: The true (noise-free where known) value of each evaluated point.
        batch_best: The best of them per batch.
        model_seconds: CPU seconds building or updating the surrogate per batch.
        batch_seconds: CPU seconds drawing and maximising the paths per batch.
        train_size: Observations the surrogate held per batch.
        inducing_size: Its inducing points per batch (0 for other models).
        distinct_argmaxes: Distinct path argmaxes per batch, before filling.
        distinct_points: Distinct points per evaluated batch.
        X: The evaluated points per batch (in the problem's bounds).
        stopped_at_cap: Whether the run stopped at its CPU-time cap.
    """

    optimal_value: float
    initial_best: float
    q: int
    values: list[float] = field(default_factory=list)
    batch_best: list[float] = field(default_factory=list)
    model_seconds: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    train_size: list[int] = field(default_factory=list)
    inducing_size: list[int] = field(default_factory=list)
    distinct_argmaxes: list[int] = field(default_factory=list)
    distinct_points: list[int] = field(default_factory=list)
    X: list[Tensor] = field(default_factory=list, repr=False)
    stopped_at_cap: bool = False

    @property
    def num_batches(self) -> int:
        r"""Batches evaluated after the design."""
        return len(self.model_seconds)

    @property
    def evaluations(self) -> Tensor:
        r"""Evaluations so far (the design included) after each batch."""
        sizes = torch.tensor(self.train_size, dtype=torch.double)
        return sizes + torch.tensor([len(x) for x in self.X], dtype=torch.double)

    @property
    def iteration_seconds(self) -> Tensor:
        r"""Model plus batch CPU seconds per batch."""
        model = torch.tensor(self.model_seconds, dtype=torch.double)
        return model + torch.tensor(self.batch_seconds, dtype=torch.double)

    @property
    def cumulative_seconds(self) -> Tensor:
        r"""CPU seconds so far after each batch."""
        return self.iteration_seconds.cumsum(0)

    @property
    def best_value(self) -> Tensor:
        r"""The best true value so far after each batch."""
        best = torch.tensor(self.batch_best, dtype=torch.double).cummax(0).values
        return best.clamp_min(self.initial_best)

    @property
    def simple_regret(self) -> Tensor:
        r"""``optimal_value - best_value`` after each batch."""
        return self.optimal_value - self.best_value


def run_large_batch(
    objective: Callable[[Tensor], Tensor],
    bounds: Tensor,
    evaluations: int,
    q: int = 100,
    num_initial: int | None = None,
    surrogate: Surrogate | None = None,
    num_candidates: int = 2048,
    num_local: int = 16,
    num_incumbents: int = 20,
    trust_region: bool = False,
    seed: int = 0,
    time_cap: float | None = None,
    progress: bool = True,
) -> LargeBatchTrace:
    r"""Maximise ``objective`` by large-batch Thompson sampling.

    Args:
        objective: Maps a ``b x d`` tensor of points in ``bounds`` to ``b`` (or
            ``b x 1``) noisy observations; a BoTorch test function is one (its
            noise-free values then go into the trace).
        bounds: A ``2 x d`` tensor of the search box.
        evaluations: Evaluations in all, the initial design included (the last
            batch is cut to fit).
        q: Points per batch.
        num_initial: The scrambled Sobol design's size (default ``q``).
        surrogate: All data so far (in the unit cube) to a fitted model, called
            once per batch; default :func:`default_surrogate`.
        num_candidates: The shared candidate set's size.
        num_local: Perturbations each path scores around its own argmax.
        num_incumbents: How many observed inputs of largest posterior mean
            the candidates perturb (the trust region's centre is the first).
        trust_region: Draw the candidates in a TuRBO-1 trust region around the
            incumbent (its length halves after failing batches and is reset to
            its initial value when it falls below its minimum; the data are kept).
        seed: Seeds the design, the candidates and the paths; torch's global
            random state is forked, so the caller's stream is left alone.
        time_cap: Stop once the run's CPU seconds exceed this.
        progress: Show a progress bar.

    Returns:
        The run's :class:`LargeBatchTrace`.
    """
    evaluations = checked_count(evaluations, "evaluations")
    q = checked_count(q, "q")
    num_initial = checked_count(
        q if num_initial is None else num_initial, "num_initial"
    )
    num_candidates = checked_count(num_candidates, "num_candidates")
    num_incumbents = checked_count(num_incumbents, "num_incumbents")
    seed = checked_count(seed, "seed", minimum=0)
    if time_cap is not None:
        time_cap = checked_real(time_cap, "time_cap", positive=True)
    if (
        bounds.dim() != 2
        or bounds.shape[0] != 2
        or not bool((bounds[1] > bounds[0]).all())
    ):
        raise InputDataError(
            f"bounds must be a 2 x d tensor with lower < upper; got {bounds}."
        )
    if evaluations < num_initial:
        raise InputDataError(
            f"evaluations ({evaluations}) must be at least num_initial ({num_initial})."
        )
    bounds = bounds.to(torch.double)
    d = bounds.shape[-1]
    unit = torch.stack([torch.zeros(d), torch.ones(d)]).to(bounds)
    surrogate = default_surrogate() if surrogate is None else surrogate
    generator = torch.Generator().manual_seed(seed)
    problem = isinstance(objective, BaseTestProblem)

    def evaluate(X: Tensor) -> tuple[Tensor, list[float]]:
        x = unnormalize(X, bounds)
        y = objective(x).reshape(-1, 1).to(X)
        # A test problem's noise-free values (negated as its observations).
        true = objective(x, noise=False).reshape(-1, 1) if problem else y
        return y, true.squeeze(-1).tolist()

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        X = draw_sobol_samples(unit, n=num_initial, q=1, seed=seed).squeeze(1)
        Y, initial = evaluate(X)
        if not bool(torch.isfinite(Y).all()):
            raise InputDataError("The objective returned NaN or infinite values.")
        optimal = getattr(objective, "optimal_value", math.nan)
        trace = LargeBatchTrace(
            optimal_value=float(math.nan if optimal is None else optimal),
            initial_best=max(initial),
            q=q,
        )
        state = TurboState(dim=d, batch_size=q, best_value=float(Y.max()))
        batches = math.ceil((evaluations - num_initial) / q)
        bar = tqdm(range(batches), desc="large-batch TS", disable=not progress)
        for i in bar:
            if time_cap is not None and i > 0:
                if float(trace.cumulative_seconds[-1]) > time_cap:
                    trace.stopped_at_cap = True
                    break
            b = min(q, evaluations - X.shape[0])
            start = time.process_time()
            model = surrogate(X, Y)
            fitted = time.process_time()
            incumbents = posterior_incumbents(model, X, num_incumbents)
            if trust_region:
                centre = incumbents[0]
                region = trust_region_bounds(state, model, centre)
                shared_seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
                candidates = perturbed_candidates(
                    centre, region, num_candidates, seed=shared_seed
                )
            else:
                region = unit
                candidates = candidate_set(
                    incumbents, unit, num_candidates, generator=generator
                )
            batch = thompson_batch(
                model, candidates, b, region, num_local=num_local, generator=generator
            )
            done = time.process_time()
            y, true = evaluate(batch.X)
            trace.values.extend(true)
            trace.batch_best.append(max(true))
            trace.model_seconds.append(fitted - start)
            trace.batch_seconds.append(done - fitted)
            trace.train_size.append(X.shape[0])
            index = getattr(model, "inducing_index", None)
            trace.inducing_size.append(0 if index is None else int(index.numel()))
            trace.distinct_argmaxes.append(batch.distinct_argmaxes)
            trace.distinct_points.append(int(batch.X.unique(dim=0).shape[0]))
            trace.X.append(unnormalize(batch.X, bounds))
            # A failed evaluation (NaN) is dropped; the others are kept.
            keep = torch.isfinite(y).squeeze(-1)
            X = torch.cat([X, batch.X[keep]])
            Y = torch.cat([Y, y[keep]])
            if trust_region and bool(keep.any()):
                state = update_state(state, y[keep])
                if state.restart_triggered:
                    state = restart_state(state, best_value=float(Y.max()))
            bar.set_postfix(best=f"{float(trace.best_value[-1]):.4g}", n=X.shape[0])
    return trace


def plot_large_batch(
    traces: dict[str, list[LargeBatchTrace]], path: str | None = None, title: str = ""
) -> Figure:
    r"""Best value against evaluations and against CPU seconds; seconds per batch.

    Args:
        traces: Runs by label; each a list over seeds (the mean is drawn).
        path: Where to write the figure; None writes none.
        title: The figure's title.

    Returns:
        The figure.
    """
    from matplotlib.figure import Figure

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
