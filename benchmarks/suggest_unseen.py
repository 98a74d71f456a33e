#!/usr/bin/env python3
r"""Mixed-space tasks the sampler was not tuned on: ``suggest --budget mixed-unseen``.

The ``mixed`` task of :mod:`~benchmarks.suggest` has six
parameters (one categorical of three choices, 8 encoded columns) and fails in
4.5% of the box. Users' studies differ from it; these two tasks differ as they
do:

- ``wide``: 12 parameters (21 encoded columns): log-scaled floats, a stepped
  float, an integer of 64 values with ``step=16``, a log-scaled integer, and
  categoricals of 4, 5 and 3 choices. The objective raises (``FAIL``) where a
  high learning rate meets two of the optimisers, or the network is too deep
  for its width: about 27% of the random trials.
- ``categories``: 18 parameters (48 encoded columns): six floats, two
  log-scaled floats, integers with ``step`` 2 and 50, a log-scaled integer,
  and six categoricals of 3, 4, 5, 6, 8 and 10 choices, whose effects are
  not ordered. The objective returns NaN (``FAIL``) in a ball of three of the
  floats, where its optimum lies, and at one choice of the largest
  categorical: about 37% of the random trials.
- ``long``: 29 parameters (47 encoded columns), mostly continuous: 24 floats
  (six log-scaled), of which a few matter much and most little, an integer,
  a stepped integer, and categoricals of 12, 7 and 2 choices. The objective
  raises where four of the floats sum high, or at two of the twelve choices:
  about 30% of the random trials, away from the optimum.

:func:`study` seeds a study with ``N - 1`` random trials and returns the timed
step, as ``suggest._study`` does for its own tasks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

#: The tasks, in the order the budget runs them.
TASKS = ("wide", "categories", "long")


class Failed(RuntimeError):
    r"""A task's objective raised (the trial is marked ``FAIL``)."""


def space(task: str) -> dict[str, Any]:
    r"""The task's search space (Optuna distributions by name)."""
    from optuna.distributions import CategoricalDistribution as Cat
    from optuna.distributions import FloatDistribution as Float
    from optuna.distributions import IntDistribution as Int

    if task == "wide":
        return {
            "lr": Float(1e-5, 1.0, log=True),
            "wd": Float(1e-8, 1e-1, log=True),
            "dropout": Float(0.0, 0.6, step=0.05),
            "momentum": Float(0.5, 0.999),
            "x1": Float(-2.0, 2.0),
            "x2": Float(-2.0, 2.0),
            "batch": Int(16, 1024, step=16),
            "layers": Int(1, 12),
            "units": Int(8, 2048, log=True),
            "optimizer": Cat(["sgd", "adam", "adamw", "rmsprop"]),
            "activation": Cat(["relu", "tanh", "gelu", "silu", "elu"]),
            "schedule": Cat(["constant", "cosine", "step"]),
        }
    if task == "categories":
        result: dict[str, Any] = {f"f{i}": Float(0.0, 1.0) for i in range(6)}
        result.update(
            lr=Float(1e-4, 1e-1, log=True),
            eps=Float(1e-9, 1e-3, log=True),
            k=Int(2, 200, step=2),
            n=Int(0, 5000, step=50),
            r=Int(1, 64, log=True),
            q=Int(1, 8),
        )
        for size in _CATEGORY_SIZES:
            result[f"c{size}"] = Cat(list(_LETTERS[:size]))
        return result
    if task == "long":
        result = {
            f"u{i}": Float(1e-6, 1.0, log=True) if i < 6 else Float(0.0, 1.0)
            for i in range(24)
        }
        result.update(
            depth=Int(1, 100),
            width=Int(0, 1000, step=10),
            c12=Cat(list(_LETTERS + "kl")),
            c7=Cat(list(_LETTERS[:7])),
            flag=Cat([False, True]),
        )
        return result
    raise KeyError(f"Unknown task {task!r}; expected one of {TASKS}.")


#: ``long``'s weights of its floats: the first few matter, most hardly.
_LONG_WEIGHTS = np.geomspace(4.0, 0.02, 24)
_LONG_CENTRES = np.linspace(0.15, 0.85, 24)


def _long_score(p: dict[str, Any], rng: np.random.Generator) -> float:
    u = np.array([p[f"u{i}"] for i in range(24)])
    if float(u[20:].sum()) > 2.6 or p["c12"] in ("k", "l"):
        raise Failed("out of range")
    # The log-scaled floats enter through their exponents, scaled to [0, 1].
    u[:6] = np.log10(u[:6]) / 6.0 + 1.0
    value = -float(np.sum(_LONG_WEIGHTS * (u - _LONG_CENTRES) ** 2))
    value -= ((p["depth"] - 30) / 70) ** 2 + ((p["width"] - 640) / 1000) ** 2
    value += 0.15 * math.cos(0.9 * _LETTERS.index(p["c12"])) + 0.1 * math.sin(
        1.3 * _LETTERS.index(p["c7"]) + 1.0
    )
    value += 0.05 if p["flag"] else 0.0
    value += 0.1 * math.sin(3.0 * u[6] + 2.0 * u[7])
    return value + 0.01 * float(rng.standard_normal())


_LETTERS = "abcdefghij"
_CATEGORY_SIZES = (3, 4, 5, 6, 8, 10)
_OPTIMIZER = {"sgd": -0.2, "adam": 0.0, "adamw": 0.1, "rmsprop": -0.1}
_ACTIVATION = {"relu": 0.0, "tanh": -0.2, "gelu": 0.05, "silu": 0.08, "elu": -0.05}
_SCHEDULE = {"constant": -0.1, "cosine": 0.1, "step": 0.0}


def score(task: str, p: dict[str, Any], rng: np.random.Generator) -> float:
    r"""The task's objective (to be maximised), noisy; raises or returns NaN to fail."""
    if task == "long":
        return _long_score(p, rng)
    if task == "wide":
        lr = math.log10(p["lr"])
        if (lr > -1.5 and p["optimizer"] in ("sgd", "rmsprop")) or p[
            "layers"
        ] * math.log2(p["units"]) > 75:
            raise Failed("diverged or out of memory")
        value = -(
            (lr + 3.0) ** 2 / 4.0
            + (math.log10(p["wd"]) + 4.0) ** 2 / 16.0
            + 4.0 * (p["dropout"] - 0.2) ** 2
            + 10.0 * (p["momentum"] - 0.9) ** 2
            + (p["x1"] - 0.5) ** 2 / 4.0
            + (p["x2"] + 1.0) ** 2 / 4.0
            + ((p["batch"] - 256) / 512) ** 2
            + ((p["layers"] - 4) / 6) ** 2
            + (math.log2(p["units"]) - 8.0) ** 2 / 10.0
        )
        value += _OPTIMIZER[p["optimizer"]] + _ACTIVATION[p["activation"]]
        value += _SCHEDULE[p["schedule"]] + 0.2 * math.sin(2 * p["x1"] + p["x2"])
        return value + 0.02 * float(rng.standard_normal())
    f = np.array([p[f"f{i}"] for i in range(6)])
    if float(np.sum((f[:3] - 0.3) ** 2)) < 0.19 or p["c10"] == "j":
        return math.nan
    value = -float(np.sum((f - np.linspace(0.2, 0.8, 6)) ** 2))
    value -= (math.log10(p["lr"]) + 2.5) ** 2 / 4.0 + ((p["k"] - 60) / 100) ** 2
    value -= ((p["n"] - 3000) / 3000) ** 2 + (math.log2(p["r"]) - 3.0) ** 2 / 20.0
    value -= ((p["q"] - 3) / 5) ** 2
    for size in _CATEGORY_SIZES:
        value += 0.1 * math.cos(1.7 * _LETTERS.index(p[f"c{size}"]) + size)
    return value + 0.01 * float(rng.standard_normal())


def random_params(task: str, rng: np.random.Generator) -> dict[str, Any]:
    r"""A uniformly random configuration (log-uniform where a parameter is log)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    p: dict[str, Any] = {}
    for name, d in space(task).items():
        if isinstance(d, CategoricalDistribution):
            p[name] = d.choices[int(rng.integers(len(d.choices)))]
        elif isinstance(d, IntDistribution) and d.log:
            value = math.exp(rng.uniform(math.log(d.low - 0.5), math.log(d.high + 0.5)))
            p[name] = min(max(round(value), d.low), d.high)
        elif isinstance(d, IntDistribution):
            p[name] = d.low + d.step * int(rng.integers((d.high - d.low) // d.step + 1))
        elif d.log:
            p[name] = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
        elif d.step is not None:
            k = int(rng.integers(round((d.high - d.low) / d.step) + 1))
            p[name] = min(round(d.low + k * d.step, 10), d.high)
        else:
            p[name] = float(rng.uniform(d.low, d.high))
    return p


def study(sampler: Any, task: str, n: int) -> tuple[Any, Callable[[], float]]:
    r"""A study of ``n - 1`` random trials of ``task`` and a timed suggestion.

    A trial whose objective raises or returns NaN is added (and told) as
    ``FAIL``. The step returns the CPU seconds of ``study.ask``.
    """
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    distributions = space(task)
    rng = np.random.default_rng(n)
    result = optuna.create_study(direction="maximize", sampler=sampler)
    trials = []
    for _ in range(n - 1):
        p = random_params(task, rng)
        try:
            value = score(task, p, rng)
        except Failed:
            value = math.nan
        if math.isfinite(value):
            trial = optuna.trial.create_trial(
                params=p, distributions=distributions, value=value
            )
        else:
            trial = optuna.trial.create_trial(
                params=p, distributions=distributions, state=TrialState.FAIL
            )
        trials.append(trial)
    result.add_trials(trials)

    def step() -> float:
        start = time.process_time()
        trial = result.ask(distributions)
        seconds = time.process_time() - start
        try:
            value = score(task, trial.params, rng)
        except Failed:
            value = math.nan
        if math.isfinite(value):
            result.tell(trial, value)
        else:
            result.tell(trial, state=TrialState.FAIL)
        return seconds

    return result, step


def failed_fraction(task: str, n: int = 1000) -> float:
    r"""The fraction of the ``n - 1`` seeded random trials of ``task`` that fail."""
    rng = np.random.default_rng(n)
    failed = 0
    for _ in range(n - 1):
        p = random_params(task, rng)
        try:
            failed += not math.isfinite(score(task, p, rng))
        except Failed:
            failed += 1
    return failed / (n - 1)


def continued(
    task: str, seed: int, trials: int = 20, n: int = 1000, sampler: str = "sketch"
) -> dict:
    r"""A sampler continuing the budget's study for ``trials`` suggestions.

    The quality side of the budget: the best value among the new trials, their
    mean, how many failed, and the CPU seconds of their suggestions (the first
    one cold). ``sampler``: ``"sketch"`` (``SketchSampler(seed=seed)``) or
    ``"gp"`` (Optuna's ``GPSampler(seed=seed)``, the peer, on the same study).
    """
    import optuna
    import torch
    from optuna.trial import TrialState

    from botorch_sketch.integrations.optuna import SketchSampler

    samplers = {"sketch": SketchSampler, "gp": optuna.samplers.GPSampler}
    if sampler not in samplers:
        raise KeyError(
            f"Unknown sampler {sampler!r}; expected one of {list(samplers)}."
        )
    torch.set_num_threads(1)
    result, step = study(samplers[sampler](seed=seed), task, n)
    before = len(result.trials)
    seconds = [step() for _ in range(trials)]
    new = result.trials[before:]
    values = [t.value for t in new if t.state == TrialState.COMPLETE]
    return {
        "task": task,
        "seed": seed,
        "sampler": sampler,
        "best": max(values) if values else None,
        "mean": sum(values) / len(values) if values else None,
        "failed": sum(t.state == TrialState.FAIL for t in new),
        "cpu": sum(seconds),
        "cold": seconds[0],
    }


def loss_cost(n: int, d: int, repeats: int = 10) -> dict[str, float]:
    r"""CPU milliseconds of one fitting loss and its gradient, three ways, in turns.

    On ``n`` random points in ``d`` dimensions (the exact regime, where the
    sampler's fits on a subset run): ``NystromGP``'s exact loss as fitted
    (``custom_loss``), the same loss through GPyTorch's ``log_prob`` (what
    ``custom_loss`` ran before its gradient was written out), and
    ``GPSampler``'s (its ``GPRegressor``'s marginal likelihood and log prior,
    one lengthscale per column here). The minimum over ``repeats`` rounds of
    five evaluations each.
    """
    import torch
    from gpytorch.distributions import MultivariateNormal
    from optuna._gp import prior
    from optuna._gp.gp import GPRegressor

    from botorch_sketch.integrations.optuna.kernel import _gpsampler_kernel
    from botorch_sketch.models import NystromGP
    from botorch_sketch.models.nystrom.fitting import custom_loss

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    y = torch.sin(3.0 * X).sum(-1, keepdim=True)
    model = NystromGP(X, y, covar_module=_gpsampler_kernel(d))
    model.warn_exact_regime = False
    model.train()
    params = list(model.parameters())

    def ours() -> None:
        torch.autograd.grad(custom_loss(model, None), params)

    def gpytorch() -> None:
        modules = (model.mean_module, model.covar_module, model.likelihood)
        mean, covar, likelihood = modules
        X_, targets = model.transformed_train_X, model.train_targets
        value = likelihood(MultivariateNormal(mean(X_), covar(X_))).log_prob(targets)
        torch.autograd.grad(-value / n, params)

    ones = torch.ones(d, dtype=torch.float64)
    gp = GPRegressor(
        torch.zeros(d, dtype=torch.bool),
        X,
        y.squeeze(-1),
        ones,
        torch.tensor(1.0, dtype=torch.float64),
        torch.tensor(0.1, dtype=torch.float64),
    )

    def gpsampler() -> None:
        raw = torch.zeros(d + 2, dtype=torch.float64, requires_grad=True)
        gp.inverse_squared_lengthscales = raw[:d].exp()
        gp.kernel_scale = raw[d].exp()
        gp.noise_var = raw[d + 1].exp() + prior.DEFAULT_MINIMUM_NOISE_VAR
        loss = -gp.marginal_log_likelihood() - prior.default_log_prior(gp)
        torch.autograd.grad(loss, raw)

    ways = {"ours": ours, "gpytorch log_prob": gpytorch, "GPSampler": gpsampler}
    best = dict.fromkeys(ways, math.inf)
    for _ in range(repeats):
        for name, f in ways.items():
            start = time.process_time()
            for _ in range(5):
                f()
            best[name] = min(best[name], (time.process_time() - start) / 5 * 1e3)
    return best


if __name__ == "__main__":
    # python -m benchmarks.suggest_unseen TASK SEED [TRIALS [SAMPLER]]
    # python -m benchmarks.suggest_unseen loss N D
    import json
    import sys
    import warnings

    if sys.argv[1] == "loss":
        print(json.dumps(loss_cost(int(sys.argv[2]), int(sys.argv[3]))))
        sys.exit()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(
            json.dumps(
                continued(
                    sys.argv[1],
                    int(sys.argv[2]),
                    *map(int, sys.argv[3:4]),
                    sampler=sys.argv[4] if len(sys.argv) > 4 else "sketch",
                )
            )
        )
