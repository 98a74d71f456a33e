#!/usr/bin/env python3
r"""A BO loop that runs any model of this project, or ``SingleTaskGP``, side by side.

Each iteration builds the model on all observations so far, fits it with
``fit_gpytorch_mll``, builds BoTorch's UCB, LogEI or qLogNEI on it, maximises it
with ``optimize_acqf`` over the unit cube and evaluates a BoTorch test function
(maximised; pass ``negate=True`` for the usual minimisation problems). It records
fit and acquisition time, regret and the model's training-set size per
iteration, with a progress bar. Benchmarks and tuning scripts reuse it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    UpperConfidenceBound,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.thompson_sampling import PathwiseThompsonSampling
from botorch.exceptions.errors import InputDataError, ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.models import GP
from torch import Tensor
from tqdm.auto import tqdm

from botorch_sketch.checks import checked_count

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AcquisitionName = Literal["ucb", "logei", "qlognei", "ts"]


@dataclass
class ModelSpec:
    r"""How to build the model of each iteration.

    Attributes:
        name: A label for traces and plots.
        model_class: Built as ``model_class(train_X, train_Y, **options)``.
        options: Constructor options.
        factory: Overrides ``model_class``: any ``(train_X, train_Y) -> Model``.
        surrogate: Overrides both: makes, once per run, a callable ``(train_X,
            train_Y) -> fitted model`` that the loop calls each iteration with
            all data so far and that may keep state between calls (e.g.
            ``lambda: IncrementalGP()``, or a model with its own fitting
            routine). The loop then neither builds nor fits.
    """

    name: str
    model_class: type[Model] = SingleTaskGP
    options: dict[str, Any] = field(default_factory=dict)
    factory: Callable[[Tensor, Tensor], Model] | None = None
    surrogate: Callable[[], Callable[[Tensor, Tensor], Model]] | None = None


@dataclass
class BOTrace:
    r"""One BO run, one entry per iteration (the initial design excluded).

    Attributes:
        name: The model's label.
        problem: The test function's name and dimension.
        optimal_value: The maximum of the (negated) test function.
        initial_best: The best true value in the initial design.
        values: The true (noise-free) value at each evaluated point.
        fit_time: Seconds to build and fit the model.
        acquisition_time: Seconds to build and maximise the acquisition function.
        train_size: The number of observations the fitted model was trained on.
        X: The evaluated points (unit cube), ``iterations * q x d``.
        fit_failures: Iterations whose fit failed (``ModelFittingError``); they
            used the hyperparameters the model started from.
        stopped_at_cap: Whether the run stopped at its time cap before its last
            iteration.
        acquisition_evaluations: Evaluations of the acquisition function per
            iteration (its forward calls: raw samples and optimiser steps).
    """

    name: str
    problem: str
    optimal_value: float
    initial_best: float
    values: list[float] = field(default_factory=list)
    fit_time: list[float] = field(default_factory=list)
    acquisition_time: list[float] = field(default_factory=list)
    train_size: list[int] = field(default_factory=list)
    X: list[Tensor] = field(default_factory=list)
    fit_failures: list[int] = field(default_factory=list)
    stopped_at_cap: bool = False
    acquisition_evaluations: list[int] = field(default_factory=list)

    @property
    def num_iterations(self) -> int:
        r"""Iterations run."""
        return len(self.fit_time)

    @property
    def iteration_time(self) -> Tensor:
        r"""Fit plus acquisition seconds per iteration."""
        fit = torch.tensor(self.fit_time, dtype=torch.double)
        return fit + torch.tensor(self.acquisition_time, dtype=torch.double)

    @property
    def cumulative_time(self) -> Tensor:
        r"""Total seconds after each iteration."""
        return self.iteration_time.cumsum(0)

    @property
    def simple_regret(self) -> Tensor:
        r"""``f* - max`` of the true values so far, after each iteration."""
        values = torch.tensor(self.values, dtype=torch.double)
        q = max(1, values.numel() // max(1, self.num_iterations))
        best = values.reshape(-1, q).amax(-1).cummax(0).values
        return self.optimal_value - best.clamp_min(self.initial_best)

    @property
    def cumulative_regret(self) -> Tensor:
        r"""Sum of ``f* - f(x_t)`` over the evaluated points, after each iteration."""
        values = torch.tensor(self.values, dtype=torch.double)
        q = max(1, values.numel() // max(1, self.num_iterations))
        return (self.optimal_value - values).reshape(-1, q).sum(-1).cumsum(0)


def count_evaluations(acqf: AcquisitionFunction) -> list[int]:
    r"""Count the evaluations an optimiser asks of ``acqf`` from now on.

    Args:
        acqf: The acquisition function (a ``Module``: a forward hook counts).

    Returns:
        A one-element list whose element is the count so far.
    """
    calls = [0]

    def hook(*_: object) -> None:
        calls[0] += 1

    acqf.register_forward_hook(hook)
    return calls


def make_acquisition(
    name: AcquisitionName,
    model: Model,
    train_X: Tensor,
    train_Y: Tensor,
    q: int,
    beta: float,
) -> AcquisitionFunction:
    r"""BoTorch's acquisition function of that name for ``model``.

    Args:
        name: ``"ucb"`` (``UpperConfidenceBound``, or ``qUpperConfidenceBound`` for
            ``q > 1``), ``"logei"`` (``LogExpectedImprovement`` /
            ``qLogExpectedImprovement``, best observation as incumbent) or
            ``"qlognei"`` (``qLogNoisyExpectedImprovement`` on all observed
            inputs, pruned) or ``"ts"`` (``PathwiseThompsonSampling``: ``q``
            posterior sample paths, each maximised).
        model: The fitted model.
        train_X: All observed inputs, ``n x d``.
        train_Y: All observations, ``n x 1``.
        q: The batch size.
        beta: UCB's ``beta`` (BoTorch's: the width is ``sqrt(beta)`` sd).

    Returns:
        The acquisition function.
    """
    if name == "ucb":
        if q == 1:
            return UpperConfidenceBound(model, beta=beta)
        return qUpperConfidenceBound(model, beta=beta)
    if name == "logei":
        if q == 1:
            return LogExpectedImprovement(model, best_f=train_Y.max())
        return qLogExpectedImprovement(model, best_f=train_Y.max())
    if name == "qlognei":
        return qLogNoisyExpectedImprovement(model, X_baseline=train_X)
    if name == "ts":
        return PathwiseThompsonSampling(model)
    raise InputDataError(
        f"Unknown acquisition {name!r}; expected 'ucb', 'logei', 'qlognei' or 'ts'."
    )


def build_model(spec: ModelSpec, X: Tensor, Y: Tensor) -> Model:
    r"""Build one iteration's model from ``spec``, unfitted.

    Args:
        spec: The model (``factory``, else ``model_class`` with ``options``).
        X: All observed inputs, ``n x d``.
        Y: All observations, ``n x 1``.

    Returns:
        The model.
    """
    if spec.factory is not None:
        return spec.factory(X, Y)
    return spec.model_class(X, Y, **spec.options)


def fit_model(model: Model, previous: Model | None, fit_kwargs: dict[str, Any]) -> bool:
    r"""Fit a GP's hyperparameters with ``fit_gpytorch_mll``, optionally warm.

    A model that is not a GP with a likelihood (SGD models, which fit as they are
    built) is left as it is. A failed fit (``ModelFittingError``) warns and
    leaves the hyperparameters the model started from.

    Args:
        model: The model to fit.
        previous: The previous iteration's model, whose parameters of the same
            name and shape the fit starts from; None starts from the model's own.
        fit_kwargs: Passed to ``fit_gpytorch_mll``.

    Returns:
        Whether the fit succeeded.
    """
    if not (isinstance(model, GP) and hasattr(model, "likelihood")):
        return True  # e.g. SGD models, which fit as they are built
    if previous is not None:
        # Start from the previous iteration's hyperparameters: parameters only,
        # since transforms and data-sized buffers belong to the new data.
        state = dict(previous.named_parameters())
        current = dict(model.named_parameters())
        same = {
            k: v
            for k, v in state.items()
            if k in current and current[k].shape == v.shape
        }
        model.load_state_dict(same, strict=False)
    try:
        fit_gpytorch_mll(
            ExactMarginalLogLikelihood(model.likelihood, model), **fit_kwargs
        )
    except ModelFittingError as e:
        # BoTorch rolls the hyperparameters back; a long run goes on with them
        # (warm-started or initial) rather than losing every iteration so far.
        warnings.warn(
            f"Fitting failed ({e}); this iteration keeps the hyperparameters the "
            "model started from.",
            OptimizationWarning,
            stacklevel=3,
        )
        return False
    return True


def run_bo(
    problem: SyntheticTestFunction,
    spec: ModelSpec,
    iterations: int,
    num_initial: int = 20,
    acquisition: AcquisitionName = "ucb",
    q: int = 1,
    beta: float = 2.0,
    seed: int = 0,
    num_restarts: int = 4,
    raw_samples: int = 256,
    warm_start: bool = False,
    fit_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    time_cap: float | None = None,
) -> BOTrace:
    r"""Run BO on a test function with one model.

    The initial design is a scrambled Sobol sample of ``num_initial`` points drawn
    from ``seed``, the same for every model. Global torch random state is forked,
    so runs are repeatable under ``seed`` and leave the caller's state alone.

    Args:
        problem: A BoTorch test function, maximised (``negate=True`` for the
            minimisation problems); its noise, if any, is what the model sees.
        spec: The model.
        iterations: BO iterations after the initial design.
        num_initial: Size of the initial design.
        acquisition: ``"ucb"``, ``"logei"`` or ``"qlognei"``.
        q: Points per iteration.
        beta: UCB's ``beta``.
        seed: Seeds the design, the acquisition optimiser and random rules.
        num_restarts: ``optimize_acqf``'s restarts.
        raw_samples: ``optimize_acqf``'s raw samples.
        warm_start: Start each fit from the previous model's hyperparameters
            (BoTorch's loops start from the priors' initial values).
        fit_kwargs: Passed to ``fit_gpytorch_mll`` (e.g. ``max_attempts=1`` and
            ``optimizer_kwargs={"options": {"maxiter": 100}}`` for long runs).
        progress: Show a progress bar.
        time_cap: Stop once the fit and acquisition seconds so far exceed this
            (the trace then says ``stopped_at_cap``); None runs every iteration.

    Returns:
        The run's :class:`BOTrace`.
    """
    # Float counts failed inside torch (Sobol draws, ``zeros``); True ran as 1.
    iterations = checked_count(iterations, "iterations", minimum=0)
    num_initial = checked_count(num_initial, "num_initial")
    q = checked_count(q, "q")
    num_restarts = checked_count(num_restarts, "num_restarts")
    raw_samples = checked_count(raw_samples, "raw_samples")
    seed = checked_count(seed, "seed", minimum=0)
    tkwargs = {"dtype": torch.double, "device": problem.bounds.device}
    bounds = problem.bounds.to(**tkwargs)
    unit = torch.stack([torch.zeros(problem.dim), torch.ones(problem.dim)]).to(bounds)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        X = draw_sobol_samples(unit, n=num_initial, q=1, seed=seed).squeeze(1)
        Y = problem(unnormalize(X, bounds)).unsqueeze(-1)
        initial_best = float(problem(unnormalize(X, bounds), noise=False).max())
        trace = BOTrace(
            name=spec.name,
            problem=f"{type(problem).__name__}-{problem.dim}",
            optimal_value=float(problem.optimal_value),
            initial_best=initial_best,
        )
        bar = tqdm(
            range(iterations), desc=f"{spec.name} {trace.problem}", disable=not progress
        )
        model = None
        surrogate = spec.surrogate() if spec.surrogate is not None else None
        for _ in bar:
            if time_cap is not None and trace.num_iterations > 0:
                if float(trace.cumulative_time[-1]) > time_cap:
                    trace.stopped_at_cap = True
                    break
            start = time.perf_counter()
            if surrogate is not None:
                model = surrogate(X, Y)
            else:
                previous = model if warm_start else None
                model = build_model(spec, X, Y)
                if not fit_model(model, previous, fit_kwargs or {}):
                    trace.fit_failures.append(trace.num_iterations)
            fitted = time.perf_counter()
            acqf = make_acquisition(acquisition, model, X, Y, q, beta)
            evaluations = count_evaluations(acqf)
            candidate, _ = optimize_acqf(
                acqf,
                bounds=unit,
                q=q,
                num_restarts=num_restarts,
                raw_samples=raw_samples,
            )
            done = time.perf_counter()
            candidate = candidate.detach()
            x = unnormalize(candidate, bounds)
            y = problem(x).unsqueeze(-1)
            trace.values.extend(problem(x, noise=False).tolist())
            trace.fit_time.append(fitted - start)
            trace.acquisition_time.append(done - fitted)
            trace.acquisition_evaluations.append(evaluations[0])
            inputs = getattr(model, "train_inputs", None)
            trace.train_size.append(inputs[0].shape[-2] if inputs else X.shape[0])
            trace.X.append(candidate)
            X = torch.cat([X, candidate])
            Y = torch.cat([Y, y])
            bar.set_postfix(
                regret=f"{float(trace.simple_regret[-1]):.3g}", n=trace.train_size[-1]
            )
    return trace


def plot_bo_traces(
    traces: dict[str, list[BOTrace]], path: str | None = None, title: str = ""
) -> Figure:
    r"""Plot regret and cumulative time against iterations, seeds averaged.

    Args:
        traces: Runs by model label; each a list over seeds.
        path: Where to write the figure; None writes none.
        title: The figure title.

    Returns:
        The figure (a notebook shows it).
    """
    # A Figure of its own: no pyplot state, no backend switch in the caller.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4))
    axes = fig.subplots(1, 3)
    for label, runs in traces.items():
        t = torch.arange(1, runs[0].num_iterations + 1)
        regret = torch.stack([r.simple_regret for r in runs]).mean(0)
        cumulative = torch.stack([r.cumulative_regret for r in runs]).mean(0)
        seconds = torch.stack([r.cumulative_time for r in runs]).mean(0)
        axes[0].plot(t, regret, label=label)
        axes[1].plot(t, cumulative, label=label)
        axes[2].plot(t, seconds, label=label)
    axes[0].set(
        xlabel="iteration", ylabel="simple regret (mean over seeds)", yscale="log"
    )
    axes[1].set(xlabel="iteration", ylabel="cumulative regret")
    axes[2].set(xlabel="iteration", ylabel="cumulative seconds (fit + acquisition)")
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
