#!/usr/bin/env python3
r"""Seconds to suggest trial N: this package's Optuna samplers against Optuna's.

A study holds ``N - 1`` completed trials (a seeded random sample of a
6-parameter space: two log-scaled floats, three floats and an integer, scored by
a smooth function with noise), then each sampler suggests ``repeats`` more
trials in a row, each told its score before the next, so that a sampler that
carries a model from trial to trial (``SketchSampler``, ``NystromCandidates``)
does so as in a run. The first suggestion (a cold start: the model is built
from scratch at ``N - 1`` trials, which a real run does once at a small N) is
reported apart; the median and the mean of the others are the per-trial cost
(the mean includes the periodic hyperparameter refits). Before any timing each
sampler suggests once, untimed, on a 40-trial study of the same task: a
process's one-time costs (imports) are charged to no sampler's cold start.

Times are process CPU seconds of one thread. Samplers are timed two ways: taking
turns in one process (alternating order), and each in a process of its own;
both are reported, since interleaving torch-based samplers in one process has
been seen to slow some of them.

The ``quality`` budget asks what the faster defaults cost: whole runs on
noisy Hartmann-6, the best value found by ``SketchSampler``, by its earlier
default (qLogNEI, a refit every trial) and by ``GPSampler``.

The ``mixed`` budget times ``SketchSampler`` and ``GPSampler`` on a mixed space
(a log-scaled float, three floats, an integer and a categorical) whose
objective raises in a corner (about 4.5% of the trials ``FAIL``), at N = 1000:
cold and warm apart, in turns and each alone. ``GPSampler`` runs with
``greenlet`` if it is installed (Optuna then batches its L-BFGS-B restarts);
``GPSampler (no greenlet)`` (``GP_NO_GREENLET``) is the same sampler without
it. Optuna decides at import, so that method runs only alone (``SEPARATE``),
in a fresh Python process that sets ``sys.modules["greenlet"] = None`` before
anything imports Optuna (importing greenlet then raises ``ImportError``) and
checks that it does, and that Optuna logged its fallback to sequential
L-BFGS-B: ``_alone_without_greenlet``.

``python -m benchmarks suggest --budget BUDGET`` with ``BUDGET`` one of
``small``, ``medium``, ``quality``, ``exact``, ``large`` and ``mixed``.
"""

from __future__ import annotations

import concurrent.futures
import importlib.metadata
import importlib.util
import json
import logging
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

SKETCH = "SketchSampler"
CANDIDATES = "BoTorchSampler + NystromCandidates"
GP = "GPSampler"
#: GPSampler in a process where ``greenlet`` cannot be imported, so that Optuna
#: runs its L-BFGS-B restarts one after another instead of batched.
GP_NO_GREENLET = "GPSampler (no greenlet)"
BOTORCH = "BoTorchSampler (exact)"
#: SketchSampler with its earlier default: qLogNEI and a refit every trial.
SKETCH_MC = "SketchSampler (qLogNEI, refit every trial)"
TPE = "TPESampler"
#: Each ours against the peer it replaces.
PAIRS = ((SKETCH, GP), (SKETCH, GP_NO_GREENLET), (CANDIDATES, BOTORCH))
#: Methods that run only in a Python process of their own (never in turns):
#: Optuna decides at import whether it batches L-BFGS-B with greenlet.
SEPARATE = (GP_NO_GREENLET,)


@dataclass
class Budget:
    r"""What a budget times."""

    sizes: list[int]
    repeats: int
    methods: list[str] = field(
        default_factory=lambda: [SKETCH, GP, CANDIDATES, BOTORCH]
    )
    isolate: bool = True
    #: Whole runs (trials, seeds) for the best values found on noisy Hartmann-6.
    regret_trials: int = 0
    regret_seeds: list[int] = field(default_factory=list)
    #: ``"smooth"`` (the six-float-and-integer space) or ``"mixed"`` (a
    #: categorical too, and a region where the objective fails: ``_mixed_score``).
    task: str = "smooth"


BUDGETS = {
    "small": Budget([40], 4, [SKETCH, GP], isolate=False),
    # The N = 1000. The carried samplers refit every 5% of the trials
    # at this N: 51 suggestions after the cold one hold one scheduled refit,
    # so the mean is the amortised cost. (BoTorchSampler's exact GP takes tens
    # of seconds a trial here: it is in the large budget.)
    "medium": Budget([1000], 52, [SKETCH, GP, CANDIDATES], isolate=False),
    # What the faster defaults cost in the optimum found: whole 80-trial runs.
    "quality": Budget(
        [], 0, [SKETCH, SKETCH_MC, GP], regret_trials=80, regret_seeds=[0, 1, 2]
    ),
    # The exact BoTorchSampler beside its swap, at the N (about half
    # an hour: the exact GP refits on 1000 trials every suggestion).
    "exact": Budget([1000], 8, [CANDIDATES, BOTORCH], isolate=False),
    # Every method and both ways of timing (hours).
    "large": Budget([300, 1000, 2000], 52),
    # The mixed space with failed trials at the N: cold and a few warm
    # suggestions of SketchSampler and GPSampler, with and without greenlet
    # (the latter alone only, so every method is timed alone too).
    "mixed": Budget([1000], 8, [SKETCH, GP, GP_NO_GREENLET], task="mixed"),
}


@dataclass
class Row:
    r"""One method at one N, timed one way."""

    method: str
    n: int
    way: str
    first: float
    median: float
    mean: float
    seconds: list[float] = field(repr=False, default_factory=list)


def _space() -> dict[str, Any]:
    from optuna.distributions import FloatDistribution, IntDistribution

    return {
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "reg": FloatDistribution(1e-6, 1e1, log=True),
        "a": FloatDistribution(0.0, 1.0),
        "b": FloatDistribution(0.0, 1.0),
        "c": FloatDistribution(0.0, 1.0),
        "depth": IntDistribution(1, 20),
    }


def _score(p: dict[str, Any], rng: np.random.Generator) -> float:
    # Smooth, one optimum inside the box, noise sd 0.05.
    return -(
        (math.log10(p["lr"]) + 2.0) ** 2
        + (math.log10(p["reg"]) + 3.0) ** 2 / 4.0
        + (p["a"] - 0.3) ** 2
        + (p["b"] - 0.6) ** 2
        + 0.5 * p["c"]
        + ((p["depth"] - 7) / 10.0) ** 2
    ) + 0.05 * float(rng.standard_normal())


def _mixed_space() -> dict[str, Any]:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    return {
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "a": FloatDistribution(0.0, 1.0),
        "b": FloatDistribution(0.0, 1.0),
        "c": FloatDistribution(0.0, 1.0),
        "depth": IntDistribution(1, 20),
        "act": CategoricalDistribution(["relu", "tanh", "gelu"]),
    }


class Failed(RuntimeError):
    r"""The mixed task's objective failed (the trial is marked ``FAIL``)."""


_ACT = {"relu": 0.0, "tanh": -0.3, "gelu": 0.1}


def _mixed_score(p: dict[str, Any], rng: np.random.Generator) -> float:
    # A bowl shifted by the categorical, with a ripple across ``a``, ``c`` and
    # ``lr`` and little noise (sd 0.01): the data need a large inducing set.
    # Raises in a corner (a + b > 1.7: 4.5% of the box), as a diverging
    # training run does.
    if p["a"] + p["b"] > 1.7:
        raise Failed("diverged")
    lr = math.log10(p["lr"])
    bowl = (
        (lr + 2.0) ** 2
        + (p["a"] - 0.3) ** 2
        + (p["b"] - 0.6) ** 2
        + 0.5 * p["c"]
        + ((p["depth"] - 7) / 10.0) ** 2
    )
    ripple = 0.3 * math.sin(6 * p["a"] + 4 * p["c"]) * math.cos(3 * lr)
    return -bowl + _ACT[p["act"]] + ripple + 0.01 * float(rng.standard_normal())


def _random_params(task: str, rng: np.random.Generator) -> dict[str, Any]:
    p = {"lr": 10 ** rng.uniform(-4, -1)}
    if task == "smooth":
        p["reg"] = 10 ** rng.uniform(-6, 1)
    p.update(a=rng.uniform(), b=rng.uniform(), c=rng.uniform())
    p["depth"] = int(rng.integers(1, 21))
    if task == "mixed":
        p["act"] = ("relu", "tanh", "gelu")[int(rng.integers(3))]
    return p


def make_sampler(method: str, seed: int = 0) -> Any:
    r"""The Optuna sampler a method name of this benchmark stands for."""
    import optuna

    if method in (SKETCH, SKETCH_MC):
        from botorch_sketch.integrations.optuna import SketchSampler

        if method == SKETCH_MC:
            return SketchSampler(seed=seed, acquisition="mc", refit_every=1)
        return SketchSampler(seed=seed)
    if method == GP:
        return optuna.samplers.GPSampler(seed=seed)
    if method == GP_NO_GREENLET:
        if _greenlet_imports():
            raise RuntimeError(
                f"{method!r} runs only where greenlet cannot be imported: "
                "see _alone_without_greenlet."
            )
        return optuna.samplers.GPSampler(seed=seed)
    if method == TPE:
        return optuna.samplers.TPESampler(seed=seed)
    from optuna_integration import BoTorchSampler

    if method == CANDIDATES:
        from botorch_sketch.integrations.optuna import NystromCandidates

        return BoTorchSampler(candidates_func=NystromCandidates(), seed=seed)
    if method == BOTORCH:
        return BoTorchSampler(seed=seed)
    raise KeyError(f"Unknown method {method!r}.")


def _study(
    method: str, n: int, task: str = "smooth"
) -> tuple[Any, Callable[[], float]]:
    # A study with n - 1 finished trials and a function timing one suggestion.
    # On the mixed task the trials whose objective fails are added as FAIL
    # (and so are suggestions that fail: the timed step tells Optuna so).
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    space = _space() if task == "smooth" else _mixed_space()
    score = _score if task == "smooth" else _mixed_score
    rng = np.random.default_rng(n)
    study = optuna.create_study(direction="maximize", sampler=make_sampler(method))
    trials = []
    for _ in range(n - 1):
        p = _random_params(task, rng)
        try:
            value = score(p, rng)
        except Failed:
            trials.append(
                optuna.trial.create_trial(
                    params=p, distributions=space, state=TrialState.FAIL
                )
            )
            continue
        trials.append(
            optuna.trial.create_trial(params=p, distributions=space, value=value)
        )
    study.add_trials(trials)

    def step() -> float:
        start = time.process_time()
        trial = study.ask(space)
        seconds = time.process_time() - start
        try:
            study.tell(trial, score(trial.params, rng))
        except Failed:
            study.tell(trial, state=TrialState.FAIL)
        return seconds

    return study, step


@dataclass
class RegretRow:
    r"""One method's whole runs on noisy Hartmann-6."""

    method: str
    trials: int
    regrets: list[float]
    seconds: list[float]


def hartmann_run(method: str, trials: int, seed: int) -> tuple[float, float]:
    r"""Minimise Hartmann-6 (noise sd 0.1) for ``trials`` trials.

    Returns:
        The best noise-free value found minus the optimum, and the CPU seconds
        of the whole run (suggestions and evaluations).
    """
    import optuna
    from botorch.test_functions import Hartmann

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    problem = Hartmann(dim=6)
    rng = np.random.default_rng(seed)
    values = []

    def objective(trial: Any) -> float:
        x = torch.tensor(
            [[trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(6)]],
            dtype=torch.float64,
        )
        value = float(problem(x))
        values.append(value)
        return value + 0.1 * float(rng.standard_normal())

    study = optuna.create_study(sampler=make_sampler(method, seed))
    start = time.process_time()
    study.optimize(objective, n_trials=trials)
    return min(values) - problem.optimal_value, time.process_time() - start


def run_regret(budget_name: str) -> list[RegretRow]:
    r"""Whole runs on noisy Hartmann-6 of every method of a budget, each seed."""
    budget = BUDGETS[budget_name]
    rows = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for m in budget.methods:
                runs = [
                    hartmann_run(m, budget.regret_trials, seed)
                    for seed in budget.regret_seeds
                ]
                rows.append(
                    RegretRow(
                        m,
                        budget.regret_trials,
                        [r for r, _ in runs],
                        [s for _, s in runs],
                    )
                )
    finally:
        torch.set_num_threads(threads)
    return rows


def render_regret(rows: list[RegretRow]) -> str:
    r"""Markdown: mean (sd) regret and CPU seconds per run, by method."""
    lines = [
        f"Hartmann-6, noise sd 0.1, {rows[0].trials if rows else 0} trials, "
        f"{len(rows[0].regrets) if rows else 0} seeds: best noise-free value "
        "minus the optimum, mean (sd over seeds), and CPU seconds per run.",
        "",
        "| method | regret | sd | CPU s per run |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r.method} | {statistics.fmean(r.regrets):.4f} | "
        f"{statistics.pstdev(r.regrets):.4f} | {statistics.fmean(r.seconds):.1f} |"
        for r in rows
    ]
    return "\n".join(lines)


def _row(method: str, n: int, way: str, seconds: list[float]) -> Row:
    rest = seconds[1:] or seconds
    return Row(
        method=method,
        n=n,
        way=way,
        first=seconds[0],
        median=statistics.median(rest),
        mean=statistics.fmean(rest),
        seconds=seconds,
    )


#: Trials of the study each sampler first suggests on, untimed (``_warm_up``).
_WARM_UP_TRIALS = 40


def _warm_up(methods: list[str], n: int, task: str) -> None:
    # Each method suggests once, untimed, on a small study of the task, so that
    # the process's one-time costs are charged to no method's cold suggestion
    # (which measures a model built from scratch at N - 1 trials): imports,
    # such as sympy, which torch.broadcast_shapes loads when the first
    # gpytorch kernel is built (0.4 s), or Optuna's GP modules. Whichever
    # sampler went first paid them.
    for method in methods:
        _study(method, min(n, _WARM_UP_TRIALS), task)[1]()


def _alone(method: str, n: int, repeats: int, task: str = "smooth") -> list[float]:
    # One method in this process, one thread.
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _warm_up([method], n, task)
        _, step = _study(method, n, task)
        return [step() for _ in range(repeats)]


def _greenlet_imports() -> bool:
    # Whether ``import greenlet`` succeeds here (without importing it: a
    # ``None`` in ``sys.modules`` makes find_spec answer None).
    try:
        return importlib.util.find_spec("greenlet") is not None
    except ValueError:
        return "greenlet" in sys.modules


#: The child of ``_alone_without_greenlet``: greenlet is blocked before
#: anything else is imported (importing it then raises ImportError).
_WITHOUT_GREENLET = """\
import sys

sys.modules["greenlet"] = None
import json

from benchmarks.suggest import _alone_unbatched

method, n, repeats, task, path = json.loads(sys.argv[1])
result = _alone_unbatched(method, n, repeats, task)
with open(path, "w") as f:
    json.dump(result, f)
"""


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _alone_unbatched(method: str, n: int, repeats: int, task: str) -> dict[str, Any]:
    # ``_alone`` in the child of ``_alone_without_greenlet``, checked: greenlet
    # cannot be imported, and Optuna logged that its L-BFGS-B runs sequentially
    # (it does so when its batched L-BFGS-B module loads, on the first
    # suggestion, and finds no greenlet).
    import optuna

    try:
        import greenlet  # noqa: F401
    except ImportError:
        pass
    else:
        raise RuntimeError("greenlet imports in this process: it is not blocked.")
    torch.set_num_threads(1)
    records = _Records()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, step = _study(method, n, task)
        # _study quietens Optuna; its warnings are recorded, not printed.
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        optuna.logging.disable_default_handler()
        logging.getLogger("optuna").addHandler(records)
        try:
            seconds = [step() for _ in range(repeats)]
        finally:
            logging.getLogger("optuna").removeHandler(records)
            optuna.logging.set_verbosity(optuna.logging.ERROR)
    fallback = [m for m in records.messages if "greenlet" in m]
    if not fallback or sys.modules.get("greenlet") is not None:
        raise RuntimeError(
            "Optuna did not log its fallback to sequential L-BFGS-B: cannot "
            f"confirm that {method!r} ran unbatched (warnings: {records.messages})."
        )
    return {"seconds": seconds, "fallback": fallback[0]}


def _alone_without_greenlet(
    method: str, n: int, repeats: int, task: str = "smooth"
) -> list[float]:
    # ``_alone`` in a fresh Python process where greenlet cannot be imported.
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "seconds.json")
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _WITHOUT_GREENLET,
                json.dumps([method, n, repeats, task, path]),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{method!r} failed in its process (exit {done.returncode}):\n"
                + done.stderr[-4000:]
            )
        with open(path) as f:
            return json.load(f)["seconds"]


def run(budget_name: str = "small") -> list[Row]:
    r"""Time every method of a budget at every N, taking turns and alone.

    The methods of :data:`SEPARATE` do not take turns: they run alone only
    (in a Python process of their own), whether or not the budget isolates.
    """
    budget = BUDGETS[budget_name]
    rows = []
    turns = [m for m in budget.methods if m not in SEPARATE]
    alone_methods = [m for m in budget.methods if budget.isolate or m in SEPARATE]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for n in budget.sizes:
            rows += _turns(turns, n, budget.repeats, budget.task)
            context = multiprocessing.get_context("spawn")
            for m in alone_methods:
                if m in SEPARATE:
                    alone = _alone_without_greenlet(m, n, budget.repeats, budget.task)
                else:
                    with concurrent.futures.ProcessPoolExecutor(
                        max_workers=1, mp_context=context
                    ) as pool:
                        alone = pool.submit(
                            _alone, m, n, budget.repeats, budget.task
                        ).result()
                rows.append(_row(m, n, "alone", alone))
                print(_line(rows[-1]), flush=True)
    finally:
        torch.set_num_threads(threads)
    return rows


def _turns(methods: list[str], n: int, repeats: int, task: str) -> list[Row]:
    # The methods taking turns (alternating order) on one study each.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _warm_up(methods, n, task)
        steps = {m: _study(m, n, task)[1] for m in methods}
        seconds: dict[str, list[float]] = {m: [] for m in methods}
        for r in range(repeats):
            order = methods if r % 2 == 0 else methods[::-1]
            for m in order:
                seconds[m].append(steps[m]())
    rows = [_row(m, n, "turns", seconds[m]) for m in methods]
    for row in rows:
        print(_line(row), flush=True)
    return rows


def _line(row: Row) -> str:
    return (
        f"N={row.n:5d} {row.way:5s} {row.method:36s} first {row.first:7.2f} s  "
        f"median {row.median:6.3f} s  mean {row.mean:6.3f} s"
    )


def render(rows: list[Row], machine: str) -> str:
    r"""Markdown: peer / ours ratios first, then absolute CPU seconds."""
    by = {(r.method, r.n, r.way): r for r in rows}
    lines = [
        "Seconds to suggest trial N, peer / ours (CPU seconds of one thread; "
        "median and mean over the suggestions after the first; cold: the "
        "first):",
        "",
        "| N | timed | ours | peer | median ratio | mean ratio | cold ratio |",
        "|---:|---|---|---|---:|---:|---:|",
    ]
    for ours, peer in PAIRS:
        for (method, n, way), row in by.items():
            other = by.get((peer, n, way))
            if method != ours or other is None:
                continue
            lines.append(
                f"| {n} | {way} | {ours} | {peer} | "
                f"{other.median / row.median:.1f} | {other.mean / row.mean:.1f} | "
                f"{other.first / row.first:.2f} |"
            )
    lines += [
        "",
        f"Absolute figures ({machine}):",
        "",
        "| N | timed | method | first (cold) s | median s | mean s |",
        "|---:|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r.n} | {r.way} | {r.method} | {r.first:.2f} | {r.median:.3f} | "
        f"{r.mean:.3f} |"
        for r in rows
    ]
    if any(r.method == GP_NO_GREENLET for r in rows):
        lines += ["", _greenlet_note()]
    return "\n".join(lines)


def _greenlet_note() -> str:
    try:
        version = importlib.metadata.version("greenlet")
    except importlib.metadata.PackageNotFoundError:
        version = None
    batched = (
        f"with greenlet {version} importable (batched L-BFGS-B restarts)"
        if version is not None and _greenlet_imports()
        else "without greenlet here either (so unbatched too)"
    )
    return (
        f"{GP} ran {batched}; {GP_NO_GREENLET} ran in a Python process of its "
        'own that blocks the import (`sys.modules["greenlet"] = None`) before '
        "Optuna loads, where importing greenlet raised ImportError and Optuna "
        "logged its fallback to sequential L-BFGS-B."
    )
