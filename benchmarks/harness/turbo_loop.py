#!/usr/bin/env python3
r"""TuRBO-1 on a BoTorch test function with any model, traced like ``run_bo``.

Each iteration builds the model on the current trust region's observations,
fits it (warm-started from the previous iteration's hyperparameters within the
region), generates a batch inside the region
(:func:`~botorch_sketch.bo.trust_region.generate_batch`) and updates the region's
state. When the region collapses, its data are set aside and a new region
starts from a fresh Sobol design, evaluated ``batch_size`` points per iteration
so that every evaluation is one of the trace's [Eriksson2019scalable]_. The
trace is a :class:`~benchmarks.harness.BOTrace` (plots and regret work
unchanged) that also records the region's length and the restarts.

References:

.. [Eriksson2019scalable]
    D. Eriksson, M. Pearce, J. Gardner, R. D. Turner, M. Poloczek. Scalable
    global optimization via local Bayesian optimization. NeurIPS 2019.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.model import Model
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.sampling import draw_sobol_samples
from botorch.utils.transforms import unnormalize
from torch import Tensor
from tqdm.auto import tqdm

from benchmarks.harness.loop import (
    BOTrace,
    ModelSpec,
    build_model,
    fit_model,
)
from botorch_sketch.bo.trust_region import (
    TrustRegionAcquisition,
    TurboState,
    generate_batch,
    restart_state,
    update_state,
)
from botorch_sketch.checks import checked_count, checked_optional_count


@dataclass
class TurboTrace(BOTrace):
    r"""A TuRBO run: a :class:`~benchmarks.harness.BOTrace` and regions.

    Iterations that evaluate a restart's Sobol design fit no model: their fit and
    acquisition times and their ``train_size`` are 0.

    Attributes:
        lengths: The region's side length each iteration's batch was generated
            with (NaN for design batches).
        restarts: The iterations at which a new region's design began.
    """

    lengths: list[float] = field(default_factory=list)
    restarts: list[int] = field(default_factory=list)


def _design_size(num_initial: int, batch_size: int) -> int:
    # A restart's design, rounded up to whole batches: one batch per iteration.
    return math.ceil(num_initial / batch_size) * batch_size


def run_turbo(
    problem: SyntheticTestFunction,
    model_factory: ModelSpec | Callable[[Tensor, Tensor], Model],
    iterations: int,
    num_initial: int | None = None,
    batch_size: int = 1,
    acquisition: TrustRegionAcquisition = "qlognei",
    seed: int = 0,
    num_restarts: int = 4,
    raw_samples: int = 256,
    num_candidates: int | None = None,
    warm_start: bool = True,
    fit_kwargs: dict[str, Any] | None = None,
    state_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
) -> TurboTrace:
    r"""Run TuRBO-1 (with restarts) on a test function with one model.

    The initial design is the same scrambled Sobol sample of ``num_initial``
    points as :func:`~benchmarks.harness.run_bo` draws for ``seed``,
    and, as there, it is not part of the trace. Global torch random state is forked, so
    runs are repeatable under ``seed``.

    Args:
        problem: A BoTorch test function, maximised (``negate=True`` for the
            minimisation problems); its noise, if any, is what the model sees.
        model_factory: A :class:`~benchmarks.harness.ModelSpec`, or any
            ``(train_X, train_Y) -> Model`` (then named ``"turbo"``).
        iterations: Iterations after the initial design, each evaluating
            ``batch_size`` points (restart designs included).
        num_initial: The initial design's size, and each restart's (rounded up to
            whole batches); defaults to ``2 d``, as BoTorch's TuRBO tutorial.
        batch_size: Points per iteration ``q``.
        acquisition: ``"qlognei"``, ``"qlogei"`` or ``"ts"`` (see
            :func:`~botorch_sketch.bo.trust_region.generate_batch`).
        seed: Seeds the designs, the acquisition optimiser and the samples.
        num_restarts: ``optimize_acqf``'s restarts.
        raw_samples: ``optimize_acqf``'s raw samples.
        num_candidates: Thompson sampling's candidate-set size.
        warm_start: Start each fit from the previous iteration's hyperparameters
            within a region (a new region starts from the priors' values).
        fit_kwargs: Passed to ``fit_gpytorch_mll``.
        state_kwargs: Passed to :class:`~botorch_sketch.bo.trust_region.TurboState`
            (e.g. ``length_min``, ``failure_tolerance``).
        progress: Show a progress bar.

    Returns:
        The run's :class:`TurboTrace`.
    """
    d = problem.dim
    num_initial = 2 * d if num_initial is None else num_initial
    # Float counts failed inside torch (Sobol draws, ``zeros``); True ran as 1.
    iterations = checked_count(iterations, "iterations", minimum=0)
    num_initial = checked_count(num_initial, "num_initial")
    batch_size = checked_count(batch_size, "batch_size")
    num_restarts = checked_count(num_restarts, "num_restarts")
    raw_samples = checked_count(raw_samples, "raw_samples")
    num_candidates = checked_optional_count(num_candidates, "num_candidates")
    seed = checked_count(seed, "seed", minimum=0)
    if acquisition not in ("qlognei", "qlogei", "ts"):
        raise InputDataError(
            f"Unknown acquisition {acquisition!r}; expected 'qlognei', 'qlogei' or "
            "'ts'."
        )
    spec = (
        model_factory
        if isinstance(model_factory, ModelSpec)
        else ModelSpec("turbo", factory=model_factory)
    )
    tkwargs = {"dtype": torch.double, "device": problem.bounds.device}
    bounds = problem.bounds.to(**tkwargs)
    unit = torch.stack([torch.zeros(d), torch.ones(d)]).to(bounds)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        X = draw_sobol_samples(unit, n=num_initial, q=1, seed=seed).squeeze(1)
        Y = problem(unnormalize(X, bounds)).unsqueeze(-1)
        trace = TurboTrace(
            name=spec.name,
            problem=f"{type(problem).__name__}-{d}",
            optimal_value=float(problem.optimal_value),
            initial_best=float(problem(unnormalize(X, bounds), noise=False).max()),
        )
        state = TurboState(
            d, batch_size, best_value=float(Y.max()), **(state_kwargs or {})
        )
        initial_length = state.length
        design = X[:0]  # a restart's design points still to evaluate
        model = None
        bar = tqdm(
            range(iterations),
            desc=f"TuRBO {spec.name} {trace.problem}",
            disable=not progress,
        )
        for iteration in bar:
            start = time.perf_counter()
            from_design = design.shape[0] > 0
            if from_design:
                candidate, design = design[:batch_size], design[batch_size:]
                fit_seconds = acquisition_seconds = 0.0
                length, train_size = math.nan, 0
            else:
                previous = model if warm_start else None
                model = build_model(spec, X, Y)
                if not fit_model(model, previous, fit_kwargs or {}):
                    trace.fit_failures.append(iteration)
                fitted = time.perf_counter()
                candidate = generate_batch(
                    state,
                    model,
                    X,
                    Y,
                    batch_size=batch_size,
                    acquisition=acquisition,
                    num_restarts=num_restarts,
                    raw_samples=raw_samples,
                    num_candidates=num_candidates,
                )
                done = time.perf_counter()
                fit_seconds, acquisition_seconds = fitted - start, done - fitted
                length = state.length
                inputs = getattr(model, "train_inputs", None)
                train_size = inputs[0].shape[-2] if inputs else X.shape[0]
            x = unnormalize(candidate, bounds)
            y = problem(x).unsqueeze(-1)
            trace.values.extend(problem(x, noise=False).tolist())
            trace.fit_time.append(fit_seconds)
            trace.acquisition_time.append(acquisition_seconds)
            trace.train_size.append(train_size)
            trace.lengths.append(length)
            trace.X.append(candidate)
            X, Y = torch.cat([X, candidate]), torch.cat([Y, y])
            if not from_design:
                state = update_state(state, y)
            elif design.shape[0] == 0:  # the new region's design is complete
                state = dataclasses.replace(state, best_value=float(Y.max()))
            if state.restart_triggered and iteration + 1 < iterations:
                # TuRBO-1 sets the collapsed region's data aside and starts anew.
                trace.restarts.append(iteration + 1)
                size = _design_size(num_initial, batch_size)
                design = draw_sobol_samples(unit, n=size, q=1).squeeze(1).to(X)
                X, Y, model = X[:0], Y[:0], None
                state = restart_state(state, length=initial_length)
            bar.set_postfix(
                regret=f"{float(trace.simple_regret[-1]):.3g}",
                n=X.shape[0],
                length=f"{state.length:.3g}",
            )
    return trace
