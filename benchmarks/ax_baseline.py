#!/usr/bin/env python3
r"""CPU seconds per warm Ax trial at N attached trials, by acquisition baseline.

``python -m benchmarks.ax_baseline [--n 1000 2000] [--trials 6]
[--seeds 0 1] [--max-inducing 384] [--problem hartmann6 ackley10]``

A test function with Gaussian noise (sd 0.1, minimised: Hartmann-6 on the unit
cube, or Ackley-10 on its usual box, a problem the defaults were not tuned on),
``N`` Sobol points attached to an ``ax.api.Client`` with ``attach_trial``, then
``--trials`` further trials, one at a time, for these strategies side by side in
one process:

* ``ax-fast``: Ax's own ``configure_generation_strategy(method="fast")``
  (``SingleTaskGP``, qLogNEI with BoTorch's baseline pruning);
* ``carried+default``: what a user who names
  :class:`~botorch_sketch.integrations.ax_carried.CarriedNystromGP` and nothing
  else gets: its default inducing cap and Ax's default acquisition (qLogNEI with
  BoTorch's baseline pruning);
* ``carried``: :class:`~botorch_sketch.integrations.ax_carried.CarriedNystromGP`
  with its inducing set uncapped (``max_inducing=None``) and Ax's acquisition
  (qLogNEI, BoTorch's pruning);
* ``carried+marginal``: the same model with
  :class:`~botorch_sketch.acquisition.qLogNEIMarginalBaseline`;
* ``carried+marginal+cap``: the same with the inducing set capped
  (``max_inducing``, one run per ``--max-inducing`` value, labelled
  ``carried+marginal+cap<value>``; 384 is the model's default).

The first trial of each fits the model (cold) and is reported apart; the rest
are warm. Times are ``time.process_time`` with one torch thread, Ax's default
optimiser settings for all. It also reports each run's qLogNEI baseline size
(its median), the best noiseless value among the further trials and its simple
regret against the problem's minimum, after 10, 25 and all trials.
The further trials' noise comes from a generator of the seed's own, so every
strategy of a seed sees the same noise sequence.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from typing import Any

import torch
from ax.api.client import Client
from ax.api.configs import RangeParameterConfig
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.test_functions import Ackley, Hartmann
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch.quasirandom import SobolEngine

from botorch_sketch.acquisition.baseline import qLogNEIMarginalBaseline
from botorch_sketch.integrations.ax import sketch_generation_strategy
from botorch_sketch.integrations.ax_carried import CarriedNystromGP, forget

NOISE_SD = 0.1
NAMES = [f"x{i}" for i in range(6)]
STRATEGIES = (
    "ax-fast",
    "carried+default",
    "carried",
    "carried+marginal",
    "carried+marginal+cap",
)
#: Hartmann-6's minimum (of the minimised form).
OPTIMUM = -3.32237
#: The problems: name -> a noisy test function (minimised).
PROBLEMS = {
    "hartmann6": lambda: Hartmann(dim=6, noise_std=NOISE_SD),
    "ackley10": lambda: Ackley(dim=10, noise_std=NOISE_SD),
}
#: The trial counts after which the best value so far is reported.
CHECKPOINTS = (10, 25)

#: The baseline sizes of the qLogNEI objects built, in order.
BASELINE_SIZES: list[int] = []


def _record_baselines() -> None:
    # Benchmark-only instrumentation: the baseline each qLogNEI kept.
    original = qLogNoisyExpectedImprovement.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        BASELINE_SIZES.append(int(self.X_baseline.shape[-2]))

    qLogNoisyExpectedImprovement.__init__ = recording


def _names(problem: SyntheticTestFunction) -> list[str]:
    return [f"x{i}" for i in range(problem.dim)]


def _client(
    strategy: str,
    n: int,
    seed: int,
    max_inducing: int = 384,
    problem_name: str = "hartmann6",
    key: str = "",
) -> tuple[Client, SyntheticTestFunction]:
    problem = PROBLEMS[problem_name]()
    names, bounds = _names(problem), problem.bounds.to(torch.double)
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(
                name=x, parameter_type="float", bounds=(float(lo), float(hi))
            )
            for x, lo, hi in zip(names, bounds[0], bounds[1], strict=True)
        ]
    )
    client.configure_optimization(objective="-f")
    torch.manual_seed(seed)
    U = SobolEngine(problem.dim, scramble=True, seed=seed).draw(n, dtype=torch.double)
    X = bounds[0] + (bounds[1] - bounds[0]) * U
    Y = problem(X)  # noisy
    for x, y in zip(X.tolist(), Y.tolist(), strict=True):
        index = client.attach_trial(dict(zip(names, x, strict=True)))
        client.complete_trial(index, raw_data={"f": y})
    if strategy == "ax-fast":
        client.configure_generation_strategy(method="fast")
        return client, problem
    key = f"bench-{problem_name}-{n}-{key or strategy}"
    forget(key)
    options: dict[str, Any] = {}
    model_options: dict[str, Any] = {"carry": key}
    if strategy != "carried+default":
        model_options["max_inducing"] = None
    if strategy.startswith("carried+marginal"):
        options = {
            "botorch_acqf_class": qLogNEIMarginalBaseline,
            "botorch_acqf_options": {"baseline_k": 2.0, "baseline_max_size": 64},
        }
    if strategy == "carried+marginal+cap":
        model_options["max_inducing"] = max_inducing
    client.set_generation_strategy(
        sketch_generation_strategy(
            model_class=CarriedNystromGP,
            model_options=model_options,
            use_existing_trials=True,
            seed=seed,
            **options,
        )
    )
    return client, problem


def run(
    strategy: str,
    n: int,
    trials: int,
    seed: int = 0,
    max_inducing: int = 384,
    problem_name: str = "hartmann6",
) -> dict[str, Any]:
    r"""Seconds per trial (cold, then warm), baselines and regret of one strategy.

    Args:
        strategy: One of :data:`STRATEGIES`.
        n: The number of attached Sobol trials.
        trials: The number of further trials.
        seed: The seed of the data, the client and the further trials' noise.
        max_inducing: The cap of ``carried+marginal+cap``.
        problem_name: One of :data:`PROBLEMS`.

    Returns:
        ``cold`` and ``warm`` (median) seconds, ``warm_all``, the median
        ``baseline`` size, ``best_new`` (the best noiseless value of the further
        trials), ``best_at`` (it after each of :data:`CHECKPOINTS` trials),
        ``regret`` (``best_new`` minus the problem's minimum), ``best_attached``
        (the best noiseless value of the attached trials) and ``in_bounds``.
    """
    results = run_in_turns([(strategy, max_inducing)], n, trials, seed, problem_name)
    return results[_label(strategy, max_inducing)]


def run_in_turns(
    strategies: list[tuple[str, int]],
    n: int,
    trials: int,
    seed: int = 0,
    problem_name: str = "hartmann6",
) -> dict[str, dict[str, Any]]:
    r""":func:`run` for several strategies, taking turns trial by trial.

    Every client is built first; then each further trial is proposed by every
    strategy in turn, so a change in the machine's load falls on all of them.

    Args:
        strategies: ``(strategy, max_inducing)`` pairs (the cap is read by
            ``carried+marginal+cap`` only).
        n: The number of attached Sobol trials.
        trials: The number of further trials.
        seed: The seed of the data, the clients and the further trials' noise.
        problem_name: One of :data:`PROBLEMS`.

    Returns:
        The label of each strategy (``carried+marginal+cap<max_inducing>`` for
        the capped one, otherwise the strategy) -> :func:`run`'s results.
    """
    labels = [_label(strategy, cap) for strategy, cap in strategies]
    runs = {
        label: _Turns(strategy, n, seed, cap, problem_name, label)
        for label, (strategy, cap) in zip(labels, strategies, strict=True)
    }
    for _ in range(trials):
        for turns in runs.values():
            turns.trial()
    return {label: turns.result(trials) for label, turns in runs.items()}


def _label(strategy: str, cap: int) -> str:
    return strategy + (str(cap) if strategy.endswith("cap") else "")


class _Turns:
    # One strategy's client, proposing one further trial per ``trial`` call.

    def __init__(
        self,
        strategy: str,
        n: int,
        seed: int,
        max_inducing: int,
        problem_name: str,
        label: str,
    ) -> None:
        self.client, self.problem = _client(
            strategy, n, seed, max_inducing, problem_name, key=label
        )
        self.n, self.names = n, _names(self.problem)
        self.noise = torch.Generator().manual_seed(10_000 + seed)
        self.seconds: list[float] = []
        self.sizes: list[int] = []
        self.values: list[float] = []
        self.in_bounds = True

    def trial(self) -> None:
        start, before = time.process_time(), len(BASELINE_SIZES)
        ((index, params),) = self.client.get_next_trials(max_trials=1).items()
        self.seconds.append(time.process_time() - start)
        self.sizes.extend(BASELINE_SIZES[before:])
        x = torch.tensor([[params[name] for name in self.names]], dtype=torch.double)
        lower, upper = self.problem.bounds.to(x)
        self.in_bounds = self.in_bounds and bool(((x >= lower) & (x <= upper)).all())
        f = float(self.problem.evaluate_true(x))
        noise = float(torch.randn(1, generator=self.noise, dtype=torch.double))
        self.values.append(f)
        self.client.complete_trial(index, raw_data={"f": f + NOISE_SD * noise})

    def result(self, trials: int) -> dict[str, Any]:
        seconds, values = self.seconds, self.values
        attached = torch.tensor(
            [
                [t.arm.parameters[name] for name in self.names]
                for t in _attached(self.client, self.n)
            ],
            dtype=torch.double,
        )
        return {
            "cold": seconds[0],
            "warm": statistics.median(seconds[1:]) if trials > 1 else float("nan"),
            "warm_all": seconds[1:],
            "baseline": statistics.median(self.sizes) if self.sizes else float("nan"),
            "best_new": min(values),
            "best_at": {c: min(values[:c]) for c in CHECKPOINTS if c < trials},
            "regret": min(values) - float(self.problem.optimal_value),
            "best_attached": float(self.problem.evaluate_true(attached).min()),
            "in_bounds": self.in_bounds,
        }


def _attached(client: Client, n: int) -> list[Any]:
    trials = client._experiment.trials  # the attached trials are the first n
    return [trials[i] for i in range(n)]


def main(argv: list[str] | None = None) -> None:
    r"""Run the strategies at each ``--n`` and print their times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument(
        "--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--max-inducing", type=int, nargs="+", default=[384])
    parser.add_argument(
        "--problem", nargs="+", default=["hartmann6"], choices=sorted(PROBLEMS)
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.getLogger("ax").setLevel(logging.WARNING)
    _record_baselines()
    print(f"torch threads: {torch.get_num_threads()}, trials per run: {args.trials}")
    runs = [
        (strategy, cap)
        for strategy in args.strategies
        for cap in (args.max_inducing if strategy.endswith("cap") else [384])
    ]
    for problem_name in args.problem:
        for n in args.n:
            for seed in args.seeds:
                where = f"{problem_name} N={n} seed={seed}"
                results = run_in_turns(runs, n, args.trials, seed, problem_name)
                for label, r in results.items():
                    warm = " ".join(f"{s:.2f}" for s in r["warm_all"])
                    at = ", ".join(f"{c}: {v:.3f}" for c, v in r["best_at"].items())
                    print(
                        f"{where} {label:>23}: cold {r['cold']:7.2f} s, warm "
                        f"median {r['warm']:6.2f} s [{warm}], baseline "
                        f"{r['baseline']:.0f}, best new f {r['best_new']:.3f} "
                        f"(after {at}), regret {r['regret']:.3f}, best attached "
                        f"{r['best_attached']:.3f}, in bounds {r['in_bounds']}",
                        flush=True,
                    )
                if "ax-fast" in results:
                    anchor = results["ax-fast"]["warm"]
                    for label, r in results.items():
                        print(
                            f"{where} {label:>23}: Ax warm / this warm = "
                            f"{anchor / r['warm']:.1f}x",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
