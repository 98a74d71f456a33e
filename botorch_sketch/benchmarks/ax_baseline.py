#!/usr/bin/env python3
r"""CPU seconds per warm Ax trial at N attached trials, by acquisition baseline.

``python -m botorch_sketch.benchmarks.ax_baseline [--n 1000 2000] [--trials 6]``

Hartmann-6 with Gaussian noise (sd 0.1, minimised), ``N`` Sobol points attached
to an ``ax.api.Client`` with ``attach_trial``, then ``--trials`` further trials,
one at a time, for three strategies side by side in one process:

* ``ax-fast``: Ax's own ``configure_generation_strategy(method="fast")``
  (``SingleTaskGP``, qLogNEI with BoTorch's baseline pruning);
* ``carried``: :class:`~botorch_sketch.integrations.ax_carried.CarriedNystromGP`
  with Ax's acquisition (qLogNEI, BoTorch's pruning);
* ``carried+marginal``: the same model with
  :class:`~botorch_sketch.acquisition.qLogNEIMarginalBaseline`.

The first trial of each fits the model (cold) and is reported apart; the rest
are warm. Times are ``time.process_time`` with one torch thread, Ax's default
optimiser settings for all three. It also reports each run's qLogNEI baseline
size (its median) and best observed value.
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
from botorch.test_functions import Hartmann
from torch.quasirandom import SobolEngine

from botorch_sketch.acquisition.baseline import qLogNEIMarginalBaseline
from botorch_sketch.integrations.ax import sketch_generation_strategy
from botorch_sketch.integrations.ax_carried import CarriedNystromGP, forget

NOISE_SD = 0.1
NAMES = [f"x{i}" for i in range(6)]
STRATEGIES = ("ax-fast", "carried", "carried+marginal")

#: The baseline sizes of the qLogNEI objects built, in order.
BASELINE_SIZES: list[int] = []


def _record_baselines() -> None:
    # Benchmark-only instrumentation: the baseline each qLogNEI kept.
    original = qLogNoisyExpectedImprovement.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        BASELINE_SIZES.append(int(self.X_baseline.shape[-2]))

    qLogNoisyExpectedImprovement.__init__ = recording


def _client(strategy: str, n: int, seed: int) -> tuple[Client, Hartmann]:
    problem = Hartmann(dim=6, noise_std=NOISE_SD)
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=x, parameter_type="float", bounds=(0.0, 1.0))
            for x in NAMES
        ]
    )
    client.configure_optimization(objective="-hartmann")
    torch.manual_seed(seed)
    X = SobolEngine(6, scramble=True, seed=seed).draw(n, dtype=torch.double)
    Y = problem(X)  # noisy
    for x, y in zip(X.tolist(), Y.tolist(), strict=True):
        index = client.attach_trial(dict(zip(NAMES, x, strict=True)))
        client.complete_trial(index, raw_data={"hartmann": y})
    if strategy == "ax-fast":
        client.configure_generation_strategy(method="fast")
    else:
        forget(f"bench-{n}")
        options: dict[str, Any] = {}
        if strategy == "carried+marginal":
            options = {
                "botorch_acqf_class": qLogNEIMarginalBaseline,
                "botorch_acqf_options": {"baseline_k": 2.0, "baseline_max_size": 64},
            }
        client.set_generation_strategy(
            sketch_generation_strategy(
                model_class=CarriedNystromGP,
                model_options={"carry": f"bench-{n}"},
                use_existing_trials=True,
                seed=seed,
                **options,
            )
        )
    return client, problem


def run(strategy: str, n: int, trials: int, seed: int = 0) -> dict[str, Any]:
    r"""Seconds per trial (cold, then warm) and the baselines of one strategy."""
    client, problem = _client(strategy, n, seed)
    seconds, sizes, values, in_bounds = [], [], [], True
    for _ in range(trials):
        start, before = time.process_time(), len(BASELINE_SIZES)
        ((index, params),) = client.get_next_trials(max_trials=1).items()
        seconds.append(time.process_time() - start)
        sizes.extend(BASELINE_SIZES[before:])
        x = torch.tensor([[params[name] for name in NAMES]], dtype=torch.double)
        in_bounds = in_bounds and bool(((x >= 0) & (x <= 1)).all())
        y = float(problem(x))
        values.append(float(problem.evaluate_true(x)))
        client.complete_trial(index, raw_data={"hartmann": y})
    return {
        "cold": seconds[0],
        "warm": statistics.median(seconds[1:]) if trials > 1 else float("nan"),
        "warm_all": seconds[1:],
        "baseline": statistics.median(sizes) if sizes else float("nan"),
        "best_new": min(values),
        "in_bounds": in_bounds,
    }


def main(argv: list[str] | None = None) -> None:
    r"""Run the strategies at each ``--n`` and print their times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument(
        "--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.getLogger("ax").setLevel(logging.WARNING)
    _record_baselines()
    print(f"torch threads: {torch.get_num_threads()}, trials per run: {args.trials}")
    for n in args.n:
        results = {}
        for strategy in args.strategies:
            results[strategy] = r = run(strategy, n, args.trials)
            warm = " ".join(f"{s:.2f}" for s in r["warm_all"])
            print(
                f"N={n} {strategy:>17}: cold {r['cold']:7.2f} s, warm median "
                f"{r['warm']:6.2f} s [{warm}], baseline {r['baseline']:.0f}, "
                f"best new f {r['best_new']:.3f}, in bounds {r['in_bounds']}",
                flush=True,
            )
        if "ax-fast" in results:
            anchor = results["ax-fast"]["warm"]
            for strategy, r in results.items():
                print(
                    f"N={n} {strategy:>17}: Ax warm / this warm = "
                    f"{anchor / r['warm']:.1f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()
