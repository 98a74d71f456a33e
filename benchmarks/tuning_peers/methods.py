r"""The seven methods: Optuna samplers and Ax clients, and one tuning run.

Optuna, optuna-integration and Ax are imported where a method needs them (the
``tune`` extra).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from benchmarks.tuning_peers.config import (
    AX_OURS,
    BOTORCH,
    BOTORCH_NYSTROM,
    GP,
    OPTUNA,
    SKETCH,
    TASKS,
    TPE,
    Budget,
    RunResult,
    Task,
)


def optuna_sampler(method: str, seed: int, budget: Budget) -> Any:
    r"""The Optuna sampler of an Optuna method (one of :data:`OPTUNA`)."""
    import optuna

    if method == TPE:
        return optuna.samplers.TPESampler(seed=seed)
    if method == GP:
        return optuna.samplers.GPSampler(seed=seed)
    if method in (BOTORCH, BOTORCH_NYSTROM):
        from optuna_integration import BoTorchSampler

        from botorch_sketch.integrations.optuna import NystromCandidates

        # The carried model the README recommends (``nystrom_candidates_func``
        # refits from scratch every trial, as optuna-integration's own do).
        candidates = NystromCandidates() if method == BOTORCH_NYSTROM else None
        return BoTorchSampler(candidates_func=candidates, seed=seed)
    if method == SKETCH:
        from botorch_sketch.integrations.optuna import SketchSampler

        options = {
            k: v
            for k, v in (
                ("num_restarts", budget.num_restarts),
                ("raw_samples", budget.raw_samples),
            )
            if v is not None
        }
        return SketchSampler(seed=seed, **options)
    raise ValueError(f"not an Optuna method: {method!r}")


def optuna_distributions(task: Task) -> dict[str, Any]:
    r"""A task's search space as Optuna distributions, by parameter name."""
    from optuna.distributions import FloatDistribution, IntDistribution

    return {
        p.name: (
            IntDistribution(int(p.low), int(p.high), log=p.log)
            if p.kind == "int"
            else FloatDistribution(p.low, p.high, log=p.log)
        )
        for p in task.params
    }


def ax_client(method: str, task: Task, seed: int, budget: Budget) -> Any:
    r"""An Ax client for an Ax method, and its generation strategy's maker.

    Returns:
        The configured client and a function of ``existing`` (whether trials
        are attached before it runs) to the generation strategy.
    """
    from ax.api.client import Client

    from botorch_sketch.tune.ax_client import ax_parameter, generation_strategy
    from botorch_sketch.tune.config import METRIC, TuneConfig

    model, acquisition = (
        ("nystrom", "qlogei") if method == AX_OURS else ("default", "auto")
    )
    config = TuneConfig(
        model=model,
        acquisition=acquisition,
        initial=budget.initial,
        seed=seed,
        num_restarts=budget.num_restarts,
        raw_samples=budget.raw_samples,
    )
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=[ax_parameter(p) for p in task.params])
    client.configure_optimization(objective=METRIC)
    return client, lambda existing: generation_strategy(config, existing)


def tune_once(method: str, task_name: str, seed: int, budget: Budget) -> RunResult:
    r"""One tuning run: best score and wall clock after each trial.

    Args:
        method: One of :data:`METHODS`.
        task_name: A key of :data:`TASKS`.
        seed: The method's seed.
        budget: The budget (trials, time cap, settings).

    Returns:
        The run's curves and best setting (no noise or memory yet).
    """
    task = TASKS[task_name]
    best, seconds, best_parameters = [], [], {}
    start = time.perf_counter()

    def record(parameters: Mapping[str, Any], score: float) -> None:
        nonlocal best_parameters
        if not best or score > best[-1]:
            best_parameters = dict(parameters)
        best.append(max(score, best[-1]) if best else score)
        seconds.append(time.perf_counter() - start)

    if method in OPTUNA:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        distributions = optuna_distributions(task)
        study = optuna.create_study(
            direction="maximize", sampler=optuna_sampler(method, seed, budget)
        )
        while len(best) < budget.trials and not _over(seconds, budget.run_cap_s):
            trial = study.ask(distributions)
            score = task.score(trial.params)
            study.tell(trial, score)
            record(trial.params, score)
    else:
        from botorch_sketch.tune.config import METRIC

        client, strategy = ax_client(method, task, seed, budget)
        client.set_generation_strategy(strategy(False))
        while len(best) < budget.trials and not _over(seconds, budget.run_cap_s):
            ((index, parameters),) = client.get_next_trials(max_trials=1).items()
            score = task.score(parameters)
            client.complete_trial(trial_index=index, raw_data={METRIC: score})
            record(parameters, score)
    return RunResult(
        method,
        task_name,
        seed,
        best,
        seconds,
        best_parameters,
        capped=len(best) < budget.trials,
    )


def _over(seconds: list[float], cap: float) -> bool:
    return bool(seconds) and seconds[-1] >= cap
