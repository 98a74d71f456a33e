#!/usr/bin/env python3
r"""The ``tuning`` benchmark extended: our samplers against Optuna's and Ax's.

Seven methods tune the same scikit-learn estimators:

- ``SketchSampler`` (this package's Optuna sampler: ``NystromGP`` + qLogNEI);
- optuna-integration's ``BoTorchSampler`` with ``NystromCandidates()`` (a carried
  ``NystromGP`` plugged into it);
- Ax with ``NystromGP`` + qLogEI (``botorch-sketch tune``'s strategy);
- Optuna's ``GPSampler`` (an exact GP), ``TPESampler`` (Optuna's default),
  optuna-integration's ``BoTorchSampler`` as it comes (exact ``SingleTaskGP``)
  and Ax's default (``SingleTaskGP`` + qLogNEI).

Every method uses its own default settings and 10 initial (random or Sobol)
trials, one trial at a time, torch and scikit-learn on one thread each.
Three measurements:

- **Seconds to suggest trial N.** ``N - 1`` settings of a scrambled Sobol
  sample with their real scores are added to a study (an Ax client), then the
  next suggestion is timed. ``repeats`` suggestions are timed in a row, each
  discarded (a failed trial) and followed by one more Sobol trial, so that the
  model carries its state from one trial to the next as in a run; the median
  is reported. A method whose median passes ``suggest_cap_s`` is not timed at
  larger N.
- **Best score at equal trials and at equal wall clock.** Each method tunes
  each task for ``trials`` trials (or until ``run_cap_s`` seconds have passed:
  the time cap of the slow peers) with each seed; the best score after each
  trial and the wall clock (suggestion and evaluation) are kept. Noise is
  measured as in ``tuning``: a best score's noise is the standard deviation of
  that setting's accuracy over ``noise_splits`` other fold splits, and two best
  scores are "within noise" when they differ by less than twice the root sum of
  squares of their two standard deviations (with several seeds, the standard
  error of the mean over seeds is added in quadrature).
- **Peak memory.** With ``isolate``, each run and each timing runs in a process
  of its own, whose peak resident set (``ru_maxrss``) is reported, with its
  increase over the process's size once the libraries are imported.
"""

from __future__ import annotations

import concurrent.futures
import math
import multiprocessing
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from botorch_sketch.integrations.tune.problems import (
    ESTIMATORS,
    Param,
    cross_validated,
    evaluate,
)

#: The methods, in the order of the tables.
SKETCH = "SketchSampler"
BOTORCH_NYSTROM = "BoTorchSampler + NystromGP"
AX_OURS = "Ax + NystromGP carried (qLogEI)"
GP = "GPSampler"
TPE = "TPESampler"
BOTORCH = "BoTorchSampler (exact)"
AX_DEFAULT = "Ax default"
METHODS = (SKETCH, BOTORCH_NYSTROM, AX_OURS, GP, TPE, BOTORCH, AX_DEFAULT)
OPTUNA = (SKETCH, BOTORCH_NYSTROM, GP, TPE, BOTORCH)
#: Ours against the peer it is measured against, for the time ratios.
PAIRS = (
    (SKETCH, GP),
    (SKETCH, BOTORCH),
    (BOTORCH_NYSTROM, BOTORCH),
    (AX_OURS, AX_DEFAULT),
)


def _gbm6(p: Mapping[str, Any]) -> Any:
    # ``tune``'s gradient boosting, with ``max_features`` as a sixth parameter.
    return ESTIMATORS["gbm"].build(p)


@dataclass(frozen=True)
class Task:
    r"""A tuning problem: an estimator's search space on a data set."""

    name: str
    dataset: str
    params: tuple[Param, ...]
    #: The estimator of ``botorch_sketch.integrations.tune.problems.ESTIMATORS``,
    #: or None to build it with :func:`_gbm6`.
    estimator: str | None = None

    def score(self, parameters: Mapping[str, Any], seed: int = 0) -> float:
        r"""The 3-fold cross-validated accuracy (fold split ``seed``)."""
        if self.estimator is not None:
            return evaluate(self.dataset, self.estimator, parameters, seed=seed)[0]
        return cross_validated(self.dataset, _gbm6(parameters), seed=seed)[0]


TASKS = {
    "svm": Task(
        "svm/breast_cancer",
        "breast_cancer",
        (Param("C", 1e-3, 1e3, log=True), Param("gamma", 1e-5, 1.0, log=True)),
        "svm",
    ),
    "gbm6": Task(
        "gbm (6 parameters)/breast_cancer",
        "breast_cancer",
        (
            Param("learning_rate", 1e-3, 1.0, log=True),
            Param("max_iter", 10, 200, kind="int", log=True),
            Param("max_leaf_nodes", 4, 64, kind="int", log=True),
            Param("min_samples_leaf", 1, 50, kind="int", log=True),
            Param("l2_regularization", 1e-6, 10.0, log=True),
            Param("max_features", 0.1, 1.0),
        ),
    ),
}


@dataclass(frozen=True)
class Budget:
    r"""The sizes of one budget."""

    #: Tasks tuned (keys of :data:`TASKS`) and the task timed.
    tasks: tuple[str, ...]
    timed_task: str
    trials: int
    seeds: tuple[int, ...]
    #: N at which the suggestion is timed.
    sizes: tuple[int, ...]
    repeats: int = 3
    methods: tuple[str, ...] = METHODS
    #: Trial counts at which best scores are tabulated.
    checkpoints: tuple[int, ...] = (50, 100, 200)
    #: A tuning run stops after this many seconds; a method is no longer timed
    #: at larger N once its median suggestion takes longer than this.
    run_cap_s: float = 3600.0
    suggest_cap_s: float = 120.0
    noise_splits: int = 5
    initial: int = 10
    #: Each run and timing in a process of its own (peak memory per method).
    isolate: bool = True
    #: Time the methods taking turns in one process (:func:`time_interleaved`):
    #: fair ratios on a shared machine, but one peak memory for all.
    interleave: bool = True
    #: Ax's and SketchSampler's optimiser settings (None: their defaults).
    num_restarts: int | None = None
    raw_samples: int | None = None


BUDGETS = {
    "small": Budget(
        ("svm",), "svm", 30, (0,), (50, 100), repeats=2, checkpoints=(20, 30)
    ),
    # The budget: hours to days on 2 cores.
    "large": Budget(
        ("svm", "gbm6"),
        "svm",
        2000,
        (0, 1, 2),
        (100, 300, 1000, 2000),
        checkpoints=(100, 200, 300, 1000, 2000),
    ),
    # What fits in about an hour on 2 shared cores.
    "svm-200": Budget(
        ("svm",),
        "svm",
        200,
        (0,),
        (100, 300, 1000),
        run_cap_s=900.0,
        checkpoints=(50, 100, 200),
    ),
}


@dataclass
class RunResult:
    r"""One method's tuning run on one task with one seed."""

    method: str
    task: str
    seed: int
    #: Best score after each completed trial and the wall clock at that point.
    best: list[float]
    seconds: list[float]
    best_parameters: dict[str, Any]
    noise_sd: float = float("nan")
    peak_mib: float = float("nan")
    added_mib: float = float("nan")
    capped: bool = False


@dataclass
class TimeResult:
    r"""One method's seconds to suggest trial N, for each N reached."""

    method: str
    seconds: dict[int, float] = field(default_factory=dict)
    #: The error of a suggestion that failed, by N (the others are timed).
    failures: dict[int, str] = field(default_factory=dict)
    peak_mib: float = float("nan")
    added_mib: float = float("nan")


# ----------------------------------------------------------------- the methods


def _optuna_sampler(method: str, seed: int, budget: Budget) -> Any:
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


def _distributions(task: Task) -> dict[str, Any]:
    from optuna.distributions import FloatDistribution, IntDistribution

    return {
        p.name: (
            IntDistribution(int(p.low), int(p.high), log=p.log)
            if p.kind == "int"
            else FloatDistribution(p.low, p.high, log=p.log)
        )
        for p in task.params
    }


def _ax_client(method: str, task: Task, seed: int, budget: Budget) -> Any:
    from ax.api.client import Client

    from botorch_sketch.integrations.tune.run import (
        METRIC,
        TuneConfig,
        ax_parameter,
        generation_strategy,
    )

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
        distributions = _distributions(task)
        study = optuna.create_study(
            direction="maximize", sampler=_optuna_sampler(method, seed, budget)
        )
        while len(best) < budget.trials and not _over(seconds, budget.run_cap_s):
            trial = study.ask(distributions)
            score = task.score(trial.params)
            study.tell(trial, score)
            record(trial.params, score)
    else:
        from botorch_sketch.integrations.tune.run import METRIC

        client, strategy = _ax_client(method, task, seed, budget)
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


def sobol_history(
    task_name: str, n: int, seed: int = 1234
) -> list[tuple[dict[str, Any], float]]:
    r"""``n`` scrambled Sobol settings of a task's space and their scores."""
    from botorch_sketch.benchmarks.tuning import _from_unit

    task = TASKS[task_name]
    engine = torch.quasirandom.SobolEngine(len(task.params), scramble=True, seed=seed)
    history = []
    for u in engine.draw(n, dtype=torch.double):
        setting = {
            p.name: _from_unit(p, float(x)) for p, x in zip(task.params, u, strict=True)
        }
        history.append((setting, task.score(setting)))
    return history


class _Timer:
    # One method's study (or Ax client) fed the Sobol history, timed on demand.
    def __init__(self, method: str, budget: Budget, history: list) -> None:
        self.method, self.budget, self.history = method, budget, history
        self.result = TimeResult(method)
        self.attached = 0
        self.times: list[float] = []
        task = TASKS[budget.timed_task]
        if method in OPTUNA:
            import optuna

            optuna.logging.set_verbosity(optuna.logging.ERROR)
            self.distributions = _distributions(task)
            self.study = optuna.create_study(
                direction="maximize", sampler=_optuna_sampler(method, 0, budget)
            )
        else:
            self.client, self.strategy = _ax_client(method, task, 0, budget)

    def attach(self, setting: dict[str, Any], score: float) -> None:
        if self.method in OPTUNA:
            from optuna.trial import create_trial

            trial = create_trial(
                params=setting, distributions=self.distributions, value=score
            )
            self.study.add_trial(trial)
        else:
            from botorch_sketch.integrations.tune.run import METRIC

            index = self.client.attach_trial(setting)
            self.client.complete_trial(trial_index=index, raw_data={METRIC: score})

    def prepare(self, n: int) -> None:
        # Attach the history up to the first timed suggestion before trial n.
        first = max(0, n - self.budget.repeats)
        for setting, score in self.history[self.attached : first]:
            self.attach(setting, score)
        self.attached = max(self.attached, first)
        self.times = []
        if self.method not in OPTUNA:
            # A new strategy on the client's trials, as ``tuning`` times Ax.
            self.client.set_generation_strategy(self.strategy(True))

    def time_one(self, n: int) -> None:
        # Time one suggestion (then discarded), then attach one more trial.
        begin = time.perf_counter()
        try:
            if self.method in OPTUNA:
                from optuna.trial import TrialState

                trial = self.study.ask(self.distributions)
                self.study.tell(trial, state=TrialState.FAIL)
            else:
                ((index, _),) = self.client.get_next_trials(max_trials=1).items()
                self.client.mark_trial_abandoned(index)
        except Exception as e:  # a failed fit is a result, not the end
            self.result.failures[n] = f"{type(e).__name__}: {e}"[:200]
        else:
            self.times.append(time.perf_counter() - begin)
        self.attach(*self.history[self.attached])
        self.attached += 1

    def finish(self, n: int) -> bool:
        # Record the median at n; whether the method goes on to larger N.
        if self.times:
            self.result.seconds[n] = statistics.median(self.times)
            return self.result.seconds[n] <= self.budget.suggest_cap_s
        return True


def time_suggestions(
    method: str,
    budget: Budget,
    history: list[tuple[dict[str, Any], float]],
) -> TimeResult:
    r"""Seconds to suggest trial N for each N in ``budget.sizes`` (median of repeats).

    Args:
        method: One of :data:`METHODS`.
        budget: The budget (sizes, repeats, cap).
        history: At least ``max(budget.sizes)`` settings and their scores.

    Returns:
        The medians, for each N reached before the cap.
    """
    timer = _Timer(method, budget, history)
    for n in sorted(budget.sizes):
        timer.prepare(n)
        for _ in range(budget.repeats):
            timer.time_one(n)
        if not timer.finish(n):
            break
    return timer.result


def time_interleaved(
    budget: Budget, history: list[tuple[dict[str, Any], float]]
) -> list[TimeResult]:
    r"""As :func:`time_suggestions` for every method, taking turns in one process.

    At each N every method's ``r``-th suggestion is timed before any method's
    ``r + 1``-th, so that a change in the machine's load (other work on shared
    cores) falls on all methods alike and the ratios stay fair. Peak memory is
    then that of the whole process (the isolated tuning runs give each
    method's).

    Args:
        budget: The budget (methods, sizes, repeats, cap).
        history: At least ``max(budget.sizes)`` settings and their scores.

    Returns:
        One result per method, in the budget's order.
    """
    timers = [_Timer(m, budget, history) for m in budget.methods]
    active = list(timers)
    for n in sorted(budget.sizes):
        for timer in active:
            timer.prepare(n)
        for _ in range(budget.repeats):
            for timer in active:
                timer.time_one(n)
        active = [t for t in active if t.finish(n)]
    return [t.result for t in timers]


# -------------------------------------------------------------- the harness


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measured(function: Callable[..., Any], *args: Any) -> Any:
    # Runs ``function`` on one thread and adds the process's peak memory.
    from threadpoolctl import threadpool_limits

    from botorch_sketch.integrations.tune.run import quiet_ax

    before = _peak_mib()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with quiet_ax(), threadpool_limits(limits=1):
            result = function(*args)
    finally:
        torch.set_num_threads(threads)
    result.peak_mib = _peak_mib()
    result.added_mib = result.peak_mib - before
    return result


def _import_everything() -> None:
    # Imported before the peak memory is read, so that "added" is the method's.
    import ax.api.client  # noqa: F401
    import optuna  # noqa: F401
    import optuna_integration  # noqa: F401
    import sklearn.ensemble  # noqa: F401

    import botorch_sketch.integrations.optuna  # noqa: F401
    import botorch_sketch.integrations.tune.run  # noqa: F401


def _isolated(function: Callable[..., Any], *args: Any) -> Any:
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_import_everything,
    ) as pool:
        return pool.submit(_measured, function, *args).result()


def run(budget_name: str = "small") -> tuple[list[RunResult], list[TimeResult]]:
    r"""Tune every task with every method and seed, then time the suggestions.

    Args:
        budget_name: A key of :data:`BUDGETS`.

    Returns:
        The runs (with noise and memory) and the timings.
    """
    budget = BUDGETS[budget_name]
    call = _isolated if budget.isolate else _measured
    runs = []
    for task_name in budget.tasks:
        for seed in budget.seeds:
            for method in budget.methods:
                result = call(tune_once, method, task_name, seed, budget)
                task = TASKS[task_name]
                result.noise_sd = statistics.stdev(
                    task.score(result.best_parameters, seed=s)
                    for s in range(1, budget.noise_splits + 1)
                )
                runs.append(result)
    history = sobol_history(budget.timed_task, max(budget.sizes))
    if budget.interleave:
        together = call(_timed_together, budget, history)
        for result in together.results:
            result.peak_mib, result.added_mib = together.peak_mib, together.added_mib
        return runs, together.results
    times = [call(time_suggestions, m, budget, history) for m in budget.methods]
    return runs, times


@dataclass
class _Together:
    # The results of time_interleaved, with the process's peak memory.
    results: list[TimeResult]
    peak_mib: float = float("nan")
    added_mib: float = float("nan")


def _timed_together(budget: Budget, history: list) -> _Together:
    return _Together(time_interleaved(budget, history))


# ------------------------------------------------------------------- report


def _at(values: list[float], index: int) -> float:
    return values[index - 1] if len(values) >= index else float("nan")


def best_at_trials(
    runs: list[RunResult], task: str, method: str, n: int
) -> list[float]:
    r"""The best scores of a method's runs on a task after ``n`` trials (by seed)."""
    return [_at(r.best, n) for r in runs if r.task == task and r.method == method]


def best_at_seconds(run: RunResult, seconds: float) -> float:
    r"""The best score a run had reached after ``seconds`` of wall clock."""
    reached = [b for b, s in zip(run.best, run.seconds, strict=True) if s <= seconds]
    return reached[-1] if reached else float("nan")


def _mean_sd(values: list[float]) -> tuple[float, float]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd


def _noise(runs: list[RunResult], task: str, method: str) -> float:
    # Split-to-split sd of the best settings, and the standard error over seeds.
    mine = [r for r in runs if r.task == task and r.method == method]
    split = statistics.fmean(r.noise_sd for r in mine)
    seeds = _mean_sd([r.best[-1] for r in mine])[1] / math.sqrt(len(mine))
    return math.hypot(split, seeds)


def render(
    runs: list[RunResult], times: list[TimeResult], budget_name: str, machine: str
) -> str:
    r"""Ratios and verdicts first, then the tables."""
    budget = BUDGETS[budget_name]
    seconds = {t.method: t.seconds for t in times}
    timed = TASKS[budget.timed_task].name
    lines = [
        f"Seconds to suggest trial N on {timed}, peer over ours (median of "
        f"{budget.repeats} suggestions; '-' where the peer passed the "
        f"{budget.suggest_cap_s:g} s cap at a smaller N; "
        + (
            "the methods took turns in one process, whose peak memory the "
            "table gives for all):"
            if budget.interleave
            else "each method in a process of its own):"
        ),
        "",
    ]
    for ours, peer in PAIRS:
        if ours not in seconds or peer not in seconds:
            continue
        ratios = []
        for n in sorted(budget.sizes):
            a, b = seconds[ours].get(n), seconds[peer].get(n)
            ratios.append(f"N = {n}: " + (f"{b / a:.1f}x" if a and b else "-"))
        lines.append(f"- {peer} / {ours}: " + ", ".join(ratios))
    lines += [
        "",
        "| method | "
        + " | ".join(f"N = {n}" for n in budget.sizes)
        + " | peak MiB (added) |",
    ]
    lines.append("|---|" + "---:|" * (len(budget.sizes) + 1))
    for t in times:
        cells = [f"{t.seconds[n]:.2f}" if n in t.seconds else "-" for n in budget.sizes]
        lines.append(
            f"| {t.method} | "
            + " | ".join(cells)
            + f" | {t.peak_mib:.0f} ({t.added_mib:.0f}) |"
        )
    for task in budget.tasks:
        name = TASKS[task].name
        points = [n for n in budget.checkpoints if n <= budget.trials]
        lines += [
            "",
            f"Best accuracy on {name} after N trials, mean (sd) over seeds "
            f"{list(budget.seeds)}; noise: split-to-split sd of the best setting "
            f"({budget.noise_splits} other fold splits) with the seeds' standard "
            "error; peak memory of the run:",
            "",
            "| method | "
            + " | ".join(f"N = {n}" for n in points)
            + " | noise | trials run | wall s | peak MiB (added) |",
            "|---|" + "---:|" * (len(points) + 4),
        ]
        for method in budget.methods:
            mine = [r for r in runs if r.task == task and r.method == method]
            if not mine:
                continue
            cells = []
            for n in points:
                mean, sd = _mean_sd(best_at_trials(runs, task, method, n))
                cells.append("-" if math.isnan(mean) else f"{mean:.4f} ({sd:.4f})")
            lines.append(
                f"| {method} | "
                + " | ".join(cells)
                + f" | {_noise(runs, task, method):.4f}"
                + f" | {min(len(r.best) for r in mine)}"
                + f" | {statistics.fmean(r.seconds[-1] for r in mine):.0f}"
                + f" | {max(r.peak_mib for r in mine):.0f}"
                + f" ({max(r.added_mib for r in mine):.0f}) |"
            )
        # Equal wall clock: the time the fastest method needed for all its trials.
        finished = [r.seconds[-1] for r in runs if r.task == task]
        clock = min(finished)
        cells = []
        for method in budget.methods:
            mine = [r for r in runs if r.task == task and r.method == method]
            if mine:
                mean, _ = _mean_sd([best_at_seconds(r, clock) for r in mine])
                cells.append(f"{method} {mean:.4f}")
        lines += [
            "",
            f"Best accuracy on {name} after {clock:.0f} s of wall clock: "
            + "; ".join(cells)
            + ".",
        ]
        lines += _verdicts(runs, task, budget)
    lines += [
        "",
        f"Absolute figures are from {machine}; every method ran with one torch "
        "and one BLAS/OpenMP thread, one trial at a time.",
    ]
    return "\n".join(lines)


def _verdicts(runs: list[RunResult], task: str, budget: Budget) -> list[str]:
    out = []
    n = max(
        (c for c in budget.checkpoints if c <= budget.trials), default=budget.trials
    )
    for ours in (SKETCH, AX_OURS):
        for peer in (GP, TPE, AX_DEFAULT):
            a, _ = _mean_sd(best_at_trials(runs, task, ours, n))
            b, _ = _mean_sd(best_at_trials(runs, task, peer, n))
            if math.isnan(a) or math.isnan(b):
                continue
            noise = 2 * math.hypot(_noise(runs, task, ours), _noise(runs, task, peer))
            if abs(a - b) <= noise:
                verdict = "within noise"
            else:
                verdict = "better" if a > b else "worse"
            out.append(
                f"- {ours} against {peer} at N = {n}: {a:.4f} against {b:.4f}, "
                f"{verdict} (twice the combined noise is {noise:.4f})"
            )
    return [""] + out if out else []


def plot(runs: list[RunResult], times: list[TimeResult], stem: str) -> list[str]:
    r"""Best score against trials and wall clock per task, and time per suggestion.

    Args:
        runs: The tuning runs.
        times: The timings.
        stem: The path prefix of the figures.

    Returns:
        The figure paths.
    """
    from matplotlib.figure import Figure

    paths = []
    for task in dict.fromkeys(r.task for r in runs):
        fig = Figure(figsize=(11, 4.2))
        left, right = fig.subplots(1, 2)
        for method in METHODS:
            mine = [r for r in runs if r.task == task and r.method == method]
            if not mine:
                continue
            color = None
            for i, r in enumerate(mine):
                (line,) = left.plot(
                    range(1, len(r.best) + 1),
                    r.best,
                    color=color,
                    label=method if i == 0 else None,
                    alpha=0.8,
                )
                color = line.get_color()
                right.plot(
                    r.seconds,
                    r.best,
                    color=color,
                    alpha=0.8,
                    label=method if i == 0 else None,
                )
        left.set_xlabel("trials")
        left.set_xscale("log")
        right.set_xlabel("wall clock [s]")
        right.set_xscale("log")
        for ax in (left, right):
            ax.set_ylabel("best cross-validated accuracy")
            ax.grid(alpha=0.3, which="both")
        left.legend(loc="lower right", fontsize=7)
        fig.suptitle(TASKS[task].name)
        fig.tight_layout()
        path = f"{stem}-{task}.png"
        fig.savefig(path, dpi=120)
        paths.append(path)
    fig = Figure(figsize=(6, 4.2))
    ax = fig.subplots()
    for t in times:
        ns = sorted(t.seconds)
        ax.plot(ns, [t.seconds[n] for n in ns], "o-", label=t.method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("trial N")
    ax.set_ylabel("seconds to suggest trial N")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = f"{stem}-suggest.png"
    fig.savefig(path, dpi=120)
    paths.append(path)
    return paths


def report(budget_name: str, stem: str, machine: str) -> tuple[str, list[str]]:
    r"""Run, plot and render (the runner for ``python -m botorch_sketch.benchmarks``).

    Args:
        budget_name: A key of :data:`BUDGETS`.
        stem: The path prefix of the figures.
        machine: A description of this machine.

    Returns:
        The Markdown text and the figure paths.
    """
    runs, times = run(budget_name)
    return render(runs, times, budget_name, machine), plot(runs, times, stem)
