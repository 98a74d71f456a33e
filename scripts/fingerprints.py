#!/usr/bin/env python3
r"""Fixed-seed fingerprints that a behaviour-unchanged refactor must leave alone.

``python scripts/fingerprints.py OUT.json`` computes every fingerprint and writes
them as JSON (floats at full precision: Python's ``repr`` round-trips them);
``python scripts/fingerprints.py --compare A.json B.json`` prints each key as
equal or differs (with the largest absolute difference) and exits 1 if any key
differs, failed, or is in one file only.

Three groups of keys, each a few seconds at most on one thread:

- ``models.*``: posterior mean and variance at fixed test points of
  ``NystromGP`` (default rule, explicit rules, two outputs), ``GradientSubsetGP``,
  ``SGDLinearModel`` (exact, tracked and random-feature variants) and
  ``IncrementalGP`` after a few Woodbury/refit steps, on fixed data, fitted with
  ``fit_gpytorch_mll`` under ``torch.manual_seed``.
- ``bandits.*``: the cumulative regret (and choices) of the finite-arm,
  linear, contextual and continuous-action loops over a short horizon.
- ``benchmarks.*``: the non-timing numbers (regrets, rewards, values, counts)
  of the ``bandits``, ``linear``, ``contextual``, ``gssbo`` and ``bo``
  benchmarks at the tiny budgets their tests use; every field measured in
  seconds (and the floors derived from measured machine rates) is dropped.

Imports go through the public top-level names; where a module moved in the
refactor the new path is tried first, then the old one, so the same script runs
on the trees before and after it. To fingerprint another tree, put it first on
the path: ``PYTHONPATH=/path/to/tree python scripts/fingerprints.py out.json``
(the tree it imported from is printed and kept in the file's ``_meta``).
``--only SUBSTRING`` computes only the keys containing it.
"""

from __future__ import annotations

import os

# Before torch is imported: one thread, and no progress bars.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

DTYPE = torch.double
#: Every fingerprint, by key, in the order they run.
FINGERPRINTS: dict[str, Callable[[], Any]] = {}


def fingerprint(key: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    r"""Register a function returning the JSON-able fingerprint ``key``."""

    def register(function: Callable[[], Any]) -> Callable[[], Any]:
        FINGERPRINTS[key] = function
        return function

    return register


# ------------------------------------------------------------------ helpers


def _import(*candidates: str) -> Any:
    r"""The first of ``module`` or ``module:attribute`` candidates that imports."""
    errors = []
    for candidate in candidates:
        module_name, _, attribute = candidate.partition(":")
        try:
            module = importlib.import_module(module_name)
            return getattr(module, attribute) if attribute else module
        except (ImportError, AttributeError) as error:
            errors.append(f"{candidate}: {error!r}")
    raise ImportError("none of these imports: " + "; ".join(errors))


def _plain(value: Any) -> Any:
    r"""Tensors, numbers and containers as JSON-able lists, floats and ints."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bool:
            return value.tolist()
        if value.is_floating_point():
            return value.double().tolist()
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return repr(value)


def _seed(seed: int = 0) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rbf(lengthscale: float) -> Any:
    from gpytorch.kernels import RBFKernel

    kernel = RBFKernel().double()
    kernel.lengthscale = lengthscale
    kernel.requires_grad_(False)
    return kernel


def _data(n: int = 200, d: int = 2, t: int = 1, seed: int = 0) -> tuple:
    r"""Inputs in ``[0, 1]^d``, ``t`` smooth noisy outcomes, and 7 test points."""
    g = _gen(seed)
    X = torch.rand(n, d, generator=g, dtype=DTYPE)
    columns = [
        torch.sin(6 * X).sum(-1),
        10 * torch.cos(3 * X[:, 0]) + X[:, 1] ** 2,
    ][:t]
    Y = torch.stack(columns, -1) + 0.1 * torch.randn(n, t, generator=g, dtype=DTYPE)
    X_test = torch.rand(7, d, generator=g, dtype=DTYPE)
    return X, Y, X_test


def _fit(model: Any) -> None:
    from botorch.fit import fit_gpytorch_mll
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(0)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))


def _posterior(model: Any, X_test: torch.Tensor) -> dict[str, Any]:
    with torch.no_grad():
        post = model.posterior(X_test)
        return {"mean": _plain(post.mean), "variance": _plain(post.variance)}


def _trace(trace: Any, chosen: bool = True) -> dict[str, Any]:
    r"""A bandit trace without its timings."""
    out = {
        "cumulative_regret": _plain(trace.cumulative_regret),
        "cumulative_reward": _plain(trace.cumulative_reward),
        "dictionary_size": _plain(trace.dictionary_size),
    }
    if chosen:
        out["chosen"] = _plain(trace.chosen)
    return out


@contextlib.contextmanager
def _budget(module: Any, name: str, budget: Any) -> Iterator[str]:
    r"""``module.BUDGETS[name] = budget`` for the duration."""
    module.BUDGETS[name] = budget
    try:
        yield name
    finally:
        del module.BUDGETS[name]


# ------------------------------------------------------------------- models


def _nystrom(inducing: Any = None) -> dict[str, Any]:
    NystromGP = _import("botorch_sketch.models:NystromGP")
    X, Y, X_test = _data()
    _seed(0)
    kwargs = {} if inducing is None else {"inducing": inducing}
    model = NystromGP(X, Y, **kwargs)
    _fit(model)
    return {
        **_posterior(model, X_test),
        "inducing_index": _plain(model.inducing_index),
        "noise": _plain(model.likelihood.noise),
    }


@fingerprint("models.nystrom_gp.default")
def _nystrom_default() -> Any:
    return _nystrom()


@fingerprint("models.nystrom_gp.ridge_leverage_seeded")
def _nystrom_leverage() -> Any:
    rule = _import("botorch_sketch.sketching:RidgeLeverageSampler")
    return _nystrom(rule(qbar=4.0, generator=_gen(3)))


@fingerprint("models.nystrom_gp.uniform")
def _nystrom_uniform() -> Any:
    rule = _import("botorch_sketch.sketching:UniformSelector")
    return _nystrom(rule(20, generator=_gen(4)))


@fingerprint("models.nystrom_gp.greedy_variance")
def _nystrom_greedy() -> Any:
    rule = _import("botorch_sketch.sketching:GreedyVarianceSelector")
    return _nystrom(rule(15))


@fingerprint("models.nystrom_gp.multi_output")
def _nystrom_multi_output() -> Any:
    X, Y, X_test = _data(t=2)
    _seed(0)
    try:
        cls = _import("botorch_sketch.models:MultiOutputNystromGP")
        model = cls(X, Y)
        api = "MultiOutputNystromGP"
    except ImportError:
        model = _import("botorch_sketch.models:NystromGP")(X, Y)
        api = "NystromGP"
    print(f"  (multi-output built by {api}(X, Y))", file=sys.stderr)
    _fit(model)
    out = _posterior(model, X_test)
    out["inducing_index"] = [_plain(m.inducing_index) for m in model.outcome_models]
    return out


@fingerprint("models.gradient_subset_gp")
def _gradient_subset() -> Any:
    GradientSubsetGP = _import("botorch_sketch.models:GradientSubsetGP")
    X, Y, X_test = _data()
    _seed(0)
    model = GradientSubsetGP(X, Y, subset_size=25, num_initial=10)
    _fit(model)
    return {**_posterior(model, X_test), "subset": _plain(model.subset_indices)}


@fingerprint("models.gradient_subset_gp.random_subset")
def _random_subset() -> Any:
    GradientSubsetGP = _import("botorch_sketch.models:GradientSubsetGP")
    RandomSubset = _import("botorch_sketch.sketching:RandomSubset")
    X, Y, X_test = _data()
    _seed(0)
    rule = RandomSubset(generator=_gen(5))
    model = GradientSubsetGP(X, Y, subset_size=25, num_initial=10, subset_rule=rule)
    _fit(model)
    return {**_posterior(model, X_test), "subset": _plain(model.subset_indices)}


def _linear_data(n: int = 300, d: int = 4, seed: int = 0) -> tuple:
    g = _gen(seed)
    X = torch.randn(n, d, generator=g, dtype=DTYPE)
    X = X / X.norm(dim=-1, keepdim=True)
    w = torch.randn(d, generator=g, dtype=DTYPE)
    Y = (X @ w + 0.1 * torch.randn(n, generator=g, dtype=DTYPE)).unsqueeze(-1)
    X_test = torch.randn(6, d, generator=g, dtype=DTYPE)
    return X, Y, X_test


@fingerprint("models.sgd_linear.exact")
def _sgd_exact() -> Any:
    SGDLinearModel = _import("botorch_sketch.models:SGDLinearModel")
    X, Y, X_test = _linear_data()
    _seed(0)
    model = SGDLinearModel(X[:250], Y[:250], noise_var=0.01, generator=_gen(0))
    first = _posterior(model, X_test)
    model.update(X[250:], Y[250:])
    return {"after_250": first, "after_300": _posterior(model, X_test)}


@fingerprint("models.sgd_linear.tracked")
def _sgd_tracked() -> Any:
    SGDLinearModel = _import("botorch_sketch.models:SGDLinearModel")
    X, Y, _ = _linear_data(seed=1)
    _seed(0)
    arms = X[:6]
    model = SGDLinearModel(
        X, Y, noise_var=0.05, variance="tracked", arms=arms, generator=_gen(1)
    )
    return _posterior(model, arms.unsqueeze(1))


@fingerprint("models.sgd_linear.random_fourier")
def _sgd_rff() -> Any:
    SGDLinearModel = _import("botorch_sketch.models:SGDLinearModel")
    RandomFourierFeatures = _import("botorch_sketch.sketching:RandomFourierFeatures")
    X, _, X_test = _data(seed=2)
    Y = torch.sin(6 * X).sum(-1, keepdim=True)
    _seed(0)
    features = RandomFourierFeatures(_rbf(0.3), 2, 50, generator=_gen(2))
    model = SGDLinearModel(
        X, Y, feature_map=features, noise_var=0.01, generator=_gen(2)
    )
    return _posterior(model, X_test)


@fingerprint("models.incremental_gp")
def _incremental() -> Any:
    IncrementalGP = _import(
        "botorch_sketch.bo:IncrementalGP",
        "botorch_sketch.bo.incremental_gp:IncrementalGP",
    )
    X, Y, X_test = _data()
    _seed(0)
    surrogate = IncrementalGP(refit_every=3, generator=_gen(6))
    steps = []
    for n in (100, 120, 140, 160, 180, 200):
        model = surrogate(X[:n], Y[:n])
        steps.append(
            {
                **_posterior(model, X_test),
                "last": surrogate.counts.last,
                "reason": surrogate.counts.last_reason,
                "inducing_size": int(model.inducing_index.numel()),
            }
        )
    counts = surrogate.counts
    return {
        "steps": steps,
        "counts": [counts.builds, counts.refits, counts.conditioned, counts.grown],
    }


# ------------------------------------------------------------------ bandits


def _finite_problem(num_arms: int = 200, seed: int = 0) -> tuple:
    FiniteArmEnvironment = _import("botorch_sketch.bandits:FiniteArmEnvironment")
    arms = torch.rand(num_arms, 2, generator=_gen(seed), dtype=DTYPE)
    kernel = _rbf(0.2)
    env = FiniteArmEnvironment.gp_sample(arms, kernel, generator=_gen(seed + 1))
    return arms, kernel, env


def _run_finite(make: Callable[..., Any], steps: int = 150, batch: int = 1) -> Any:
    run_finite = _import("botorch_sketch.bandits:run_finite")
    arms, kernel, env = _finite_problem()
    _seed(0)
    policy = make(arms, kernel, env.noise_std**2)
    trace = run_finite(policy, env, steps, batch_size=batch, progress=False)
    return _trace(trace)


@fingerprint("bandits.finite.bkb")
def _bkb() -> Any:
    BKB = _import("botorch_sketch.bandits:BKB")
    return _run_finite(lambda a, k, lam: BKB(a, k, lam, generator=_gen(2)))


@fingerprint("bandits.finite.bkb_adaptive_batch")
def _bkb_adaptive() -> Any:
    BKB = _import("botorch_sketch.bandits:BKB")
    return _run_finite(
        lambda a, k, lam: BKB(
            a, k, lam, resample="adaptive", beta="authors", generator=_gen(2)
        ),
        steps=80,
        batch=3,
    )


@fingerprint("bandits.finite.dtc_ucb")
def _dtc_ucb() -> Any:
    DTCUCB = _import("botorch_sketch.bandits:DTCUCB")
    return _run_finite(
        lambda a, k, lam: DTCUCB(a, k, lam, dictionary=20, generator=_gen(2))
    )


@fingerprint("bandits.finite.gp_ucb")
def _gp_ucb() -> Any:
    GPUCB = _import("botorch_sketch.bandits:GPUCB")
    return _run_finite(
        lambda a, k, lam: GPUCB(a, k, lam, beta="authors", generator=_gen(2))
    )


@fingerprint("bandits.finite.random")
def _random_policy() -> Any:
    RandomPolicy = _import("botorch_sketch.bandits:RandomPolicy")
    return _run_finite(lambda a, k, lam: RandomPolicy(a, generator=_gen(2)))


def _sphere_run(make: Callable[[int], Any], steps: int = 200) -> Any:
    bandits = _import("botorch_sketch.bandits")
    env = bandits.sphere_arms_environment(10, 8, 0.3, generator=_gen(1))
    _seed(0)
    policy = bandits.FixedArmSet(make(8), env.arms)
    return _trace(bandits.run_finite(policy, env, steps, progress=False))


@fingerprint("bandits.linear.linucb")
def _linucb() -> Any:
    LinUCB = _import("botorch_sketch.bandits:LinUCB")
    return _sphere_run(lambda d: LinUCB(d, width=0.5))


@fingerprint("bandits.linear.sgd_linucb")
def _sgd_linucb() -> Any:
    SGDLinUCB = _import("botorch_sketch.bandits:SGDLinUCB")
    return _sphere_run(lambda d: SGDLinUCB(d, width=0.5, generator=_gen(0)))


def _pege(make: Callable[[int], Any]) -> Any:
    bandits = _import("botorch_sketch.bandits")
    env = bandits.SphereEnvironment.random(4, noise_std=0.5, generator=_gen(1))
    _seed(0)
    trace = bandits.run_finite(make(4), env, 200, progress=False)
    return _trace(trace)


@fingerprint("bandits.linear.pege")
def _pege_exact() -> Any:
    return _pege(_import("botorch_sketch.bandits:PEGE"))


@fingerprint("bandits.linear.sgd_pege")
def _pege_sgd() -> Any:
    SGDPEGE = _import("botorch_sketch.bandits:SGDPEGE")
    return _pege(lambda d: SGDPEGE(d, generator=_gen(0)))


def _contextual(make: Callable[[int], Any], rounds: int = 100) -> Any:
    bandits = _import("botorch_sketch.bandits")
    env = bandits.Bump(generator=_gen(2))
    _seed(0)
    trace = bandits.run_contextual(make(env.dim), env, rounds, progress=False)
    return _trace(trace)


@fingerprint("bandits.contextual.ek_ucb")
def _ek_ucb() -> Any:
    EKUCB = _import("botorch_sketch.bandits:EKUCB")
    return _contextual(
        lambda d: EKUCB(_rbf(0.1), 10.0, d, gamma=1.0, generator=_gen(5))
    )


@fingerprint("bandits.contextual.kernel_ucb")
def _kernel_ucb() -> Any:
    KernelUCB = _import("botorch_sketch.bandits:KernelUCB")
    return _contextual(lambda d: KernelUCB(_rbf(0.1), 10.0, d, generator=_gen(5)))


@fingerprint("bandits.contextual.cbkb")
def _cbkb() -> Any:
    CBKB = _import("botorch_sketch.bandits:CBKB")
    return _contextual(lambda d: CBKB(_rbf(0.1), 10.0, d, qbar=1.0, generator=_gen(5)))


@fingerprint("bandits.contextual.cbbkb")
def _cbbkb() -> Any:
    CBBKB = _import("botorch_sketch.bandits:CBBKB")
    return _contextual(lambda d: CBBKB(_rbf(0.1), 10.0, d, qbar=1.0, generator=_gen(5)))


@fingerprint("bandits.contextual.linucb")
def _contextual_linucb() -> Any:
    LinUCB = _import("botorch_sketch.bandits:LinUCB")
    return _contextual(lambda d: LinUCB(d, noise_var=1.0, width=0.5))


@fingerprint("bandits.continuous.ek_ucb")
def _continuous() -> Any:
    bandits = _import("botorch_sketch.bandits")
    env = bandits.ContinuousBump(generator=_gen(3))
    _seed(0)
    g = _gen(1)
    policy = bandits.EKUCB(_rbf(0.3), 0.1, env.dim, generator=g)
    unit = torch.tensor([[0.0], [1.0]], dtype=DTYPE)
    wrapper = bandits.ContinuousActionUCB(policy, unit, grid_size=16, generator=g)
    trace = bandits.run_continuous_contextual(wrapper, env, 25, progress=False)
    return _trace(trace)


# --------------------------------------------------------------- benchmarks


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # Their rows and progress bars (which they switch on) go nowhere.
    with open(os.devnull, "w") as sink:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield


@fingerprint("benchmarks.bandits")
def _bench_bandits() -> Any:
    bandits = _import("benchmarks.bandits")
    tiny = [
        bandits.Case("setting-1", 200, 2, 0.3, 40, 0, bandits.ALL),
        bandits.Case("crossover", 300, 2, 0.3, 30, 0, bandits.FAST, noise_fraction=1.0),
    ]
    _seed(0)
    with _budget(bandits, "fingerprint", tiny) as name, _quiet():
        rows, traces = bandits.run(name)
    return {
        "rows": [
            {
                "experiment": r.case.experiment,
                "method": r.method,
                "regret": r.regret,
                "dictionary": r.dictionary,
                # Torch calls per step: a count, not a time.
                "calls_per_step": r.calls_per_step,
            }
            for r in rows
        ],
        "traces": {
            key: [{"name": t.name, **_trace(t)} for t in runs]
            for key, runs in traces.items()
        },
    }


@fingerprint("benchmarks.linear")
def _bench_linear() -> Any:
    linear = _import("benchmarks.linear")
    _seed(0)
    with _quiet():
        rows = [
            *linear.synthetic(dim=20, steps=60, seed=1),
            *linear.synthetic(dim=20, steps=60, seed=2),
        ]
        try:
            rows += linear.replay_rows(20, 300, seed=1)
        except ImportError:  # scikit-learn missing: no digits log
            pass
    return [
        {
            "experiment": r.experiment,
            "policy": r.policy,
            "dim": r.dim,
            "steps": r.steps,
            "seed": r.seed,
            "reward": r.reward,
            "regret": r.regret,
            "accepted": r.accepted,
        }
        for r in rows
    ]


@fingerprint("benchmarks.contextual")
def _bench_contextual() -> Any:
    contextual = _import("benchmarks.contextual")
    tiny = [
        contextual.Case("bump", "bump", 30, 0, contextual.ALL),
        contextual.Case("long", "chessboard", 40, 0, ("ek-ucb",), noise_var=1.0),
    ]
    _seed(0)
    with _budget(contextual, "fingerprint", tiny) as name, _quiet():
        rows, traces = contextual.run(name)
    return {
        "rows": [
            {
                "experiment": r.case.experiment,
                "method": r.method,
                "regret": r.regret,
                "reward": r.reward,
                "dictionary": r.dictionary,
            }
            for r in rows
        ],
        "traces": {
            key: [{"name": t.name, **_trace(t)} for t in runs]
            for key, runs in traces.items()
        },
    }


def _bo_trace(trace: Any) -> dict[str, Any]:
    r"""A BO trace without its timings."""
    return {
        "values": _plain(trace.values),
        "simple_regret": _plain(trace.simple_regret),
        "initial_best": trace.initial_best,
        "train_size": _plain(trace.train_size),
        "X": _plain(torch.cat(trace.X)) if trace.X else [],
        "fit_failures": _plain(trace.fit_failures),
        "stopped_at_cap": trace.stopped_at_cap,
        "acquisition_evaluations": _plain(trace.acquisition_evaluations),
    }


@fingerprint("benchmarks.gssbo")
def _bench_gssbo() -> Any:
    gssbo = _import("benchmarks.gssbo")
    tiny = gssbo.Budget(
        ["Hartmann-6"],
        5,
        [0],
        subset_size=8,
        num_initial=5,
        maxiter=20,
        num_restarts=2,
        raw_samples=32,
    )
    _seed(0)
    with _budget(gssbo, "fingerprint", tiny) as name, _quiet():
        rows = gssbo.run(name)
    return [
        {
            "method": r.method,
            "simple_regret": r.simple_regret,
            "cumulative_regret": r.cumulative_regret,
            "traces": [_bo_trace(t) for t in r.traces],
        }
        for r in rows
    ]


@fingerprint("benchmarks.bo")
def _bench_bo() -> Any:
    bo = _import("benchmarks.bo")
    methods = [bo.EXACT, bo.SKETCH, bo.INCREMENTAL, bo.GSS, bo.HYBRID, bo.TURBO_SKETCH]
    tiny = bo.Budget(
        ["Hartmann-6"],
        evaluations=14,
        seeds=[0],
        methods=methods,
        q=2,
        num_initial=10,
        subset_size=13,
        num_restarts=1,
        raw_samples=16,
    )
    _seed(0)
    with _budget(bo, "fingerprint", tiny) as name, _quiet():
        rows = bo.run(name, progress=False)
    return [
        {
            "method": r.method,
            "evaluations": r.evaluations,
            "simple_regret": r.simple_regret,
            "capped": r.capped,
            "traces": [_bo_trace(t) for t in r.traces],
        }
        for r in rows
    ]


# ------------------------------------------------------------------ running


def compute(only: str | None = None) -> dict[str, Any]:
    r"""Every fingerprint (those whose key contains ``only``), with timings."""
    torch.set_num_threads(1)
    import botorch_sketch

    where = os.path.dirname(os.path.dirname(os.path.abspath(botorch_sketch.__file__)))
    print(f"botorch_sketch from {botorch_sketch.__file__}", file=sys.stderr)
    results: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    failed: list[str] = []
    start = time.perf_counter()
    for key, function in FINGERPRINTS.items():
        if only is not None and only not in key:
            continue
        begin = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results[key] = _plain(function())
        except Exception as error:  # recorded: a failed key differs
            results[key] = {"error": f"{type(error).__name__}: {error}"}
            failed.append(key)
            traceback.print_exc()
        seconds[key] = time.perf_counter() - begin
        status = "FAILED" if key in failed else "ok"
        print(f"{key:45s} {seconds[key]:6.2f} s  {status}", file=sys.stderr)
    total = time.perf_counter() - start
    print(
        f"{len(results)} keys in {total:.1f} s, {len(failed)} failed", file=sys.stderr
    )
    meta = {
        "tree": where,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "seconds": seconds,
        "total_seconds": total,
        "failed": failed,
    }
    return {"_meta": meta, "fingerprints": results}


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def compare_values(a: Any, b: Any) -> tuple[bool, str]:
    r"""Whether two fingerprints are identical, and how they differ if not."""
    if isinstance(a, dict) and "error" in a or isinstance(b, dict) and "error" in b:
        return False, "failed: " + " | ".join(
            str(x.get("error", "ok")) if isinstance(x, dict) else "ok" for x in (a, b)
        )
    left, right = dict(_leaves(a)), dict(_leaves(b))
    if left.keys() != right.keys():
        missing = sorted(left.keys() ^ right.keys())
        return False, f"structure differs ({len(missing)} paths, e.g. {missing[0]})"
    worst, where, other = 0.0, None, []
    for path, x in left.items():
        y = right[path]
        if _same(x, y):
            continue
        numbers = (int, float)
        if (
            isinstance(x, numbers)
            and isinstance(y, numbers)
            and not isinstance(x, bool)
            and not isinstance(y, bool)
        ):
            diff = abs(float(x) - float(y))
            if math.isnan(diff):
                diff = math.inf
            if where is None or diff > worst:
                worst, where = diff, path
        else:
            other.append(path)
    if where is None and not other:
        return True, "equal"
    parts = []
    if where is not None:
        parts.append(f"max abs diff {worst:.3g} at {where}")
    if other:
        parts.append(f"{len(other)} non-numeric leaves differ, e.g. {other[0]}")
    return False, "differs (" + "; ".join(parts) + ")"


def compare(path_a: str, path_b: str) -> int:
    r"""Print each key as equal or differs; 1 if any differs, else 0."""
    with open(path_a) as f:
        a = json.load(f)["fingerprints"]
    with open(path_b) as f:
        b = json.load(f)["fingerprints"]
    bad = 0
    for key in list(a) + [k for k in b if k not in a]:
        if key not in a or key not in b:
            status = f"only in {path_a if key in a else path_b}"
            ok = False
        else:
            ok, status = compare_values(a[key], b[key])
        bad += not ok
        print(f"{key:45s} {status}")
    print(f"{len(a.keys() | b.keys()) - bad} equal, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    r"""Write the fingerprints, or compare two files of them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON file to write")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"))
    parser.add_argument("--only", help="compute only the keys containing this")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give OUT.json, or --compare A.json B.json")
    results = compute(args.only)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if results["_meta"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
