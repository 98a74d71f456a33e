#!/usr/bin/env python3
r"""Ask/tell latency, asynchronous Ray utilisation, and kills during a run.

``python -m benchmarks.async_bo --budget small --out DIR``
writes ``DIR/async-bo-BUDGET.md`` with three measurements of
:class:`~botorch_sketch.bo.LargeBatchOptimizer`:

1. **latency**: CPU seconds (one thread) of ``ask(1)`` right after a
   ``tell`` of one result, between refits, with ``n`` observations in ``d``
   dimensions (Ackley, negated), with no point pending and with 15 pending
   (16 workers), the pending points fantasised or only excluded; the modes
   take turns within one run;
2. **ray**: :func:`~botorch_sketch.integrations.ray_async.run_on_ray` on
   Hartmann-6 and rover-60 with ``workers`` local Ray workers whose
   evaluations sleep an exponential time (mean ``mean_seconds``): the
   workers' utilisation (over the whole run, and until the last dispatch,
   the drain at the end of the budget left out), the utilisation a driver
   with no latency would reach on the same evaluation times (the drain's
   share), and the best value at equal evaluations against the synchronous
   :func:`~botorch_sketch.bo.run_large_batch` (``q = workers``), per seed;
3. **kills**: a run in a subprocess (ask, evaluate, tell, checkpoint after
   every tell) killed by SIGKILL at random moments and resumed from its
   checkpoint each time: every result in a checkpoint seen before a kill is in
   the final data, none twice, and the points lost are at most those in flight.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from botorch.test_functions import Ackley, Hartmann

from benchmarks.large_batch.problems import RoverTrajectory
from botorch_sketch.bo import LargeBatchOptimizer, run_large_batch
from botorch_sketch.bo.checkpoint import load_checkpoint


@dataclass
class Budget:
    r"""One budget: the latency's ``n`` and ``d``, the Ray runs', the kills'."""

    n: int
    dim: int
    repeats: int
    workers: int
    runs: tuple[tuple[float, int], ...]  # (mean seconds, queue per worker)
    evaluations: int
    seeds: int
    kills: int
    kill_evaluations: int
    problems: tuple[str, ...] = ("Hartmann-6",)


BUDGETS = {
    "small": Budget(2000, 20, 10, 4, ((0.05, 2),), 100, 1, 2, 40),
    "large": Budget(
        10_000,
        60,
        20,
        16,
        ((1.0, 2), (0.05, 2), (0.05, 6)),
        400,
        2,
        5,
        600,
        ("Hartmann-6", "rover-60"),
    ),
    # The Ray runs at 1000 evaluations: the drain at the end of a fixed budget
    # (the last points finishing one by one) weighs 2.5 times less than at 400.
    "fleet": Budget(
        10_000, 60, 20, 16, ((1.0, 2),), 1000, 2, 5, 600, ("Hartmann-6", "rover-60")
    ),
}

PROBLEMS = {
    "Hartmann-6": lambda: Hartmann(dim=6, negate=True),
    "rover-60": RoverTrajectory,
}


def latency(budget: Budget) -> dict[str, list[float]]:
    r"""Milliseconds of ``ask(1)`` after a ``tell``, per mode, taking turns."""
    torch.manual_seed(0)
    f = Ackley(dim=budget.dim, negate=True)
    X = torch.rand(budget.n, budget.dim, dtype=torch.double)
    X = f.bounds[0] + (f.bounds[1] - f.bounds[0]) * X
    modes = {"0 pending": ("fantasize", 0)}
    modes["15 pending, fantasised"] = ("fantasize", 15)
    modes["15 pending, excluded"] = ("exclude", 15)
    optimizers, queues = {}, {}
    for name, (pending, k) in modes.items():
        optimizer = LargeBatchOptimizer(f.bounds, q=16, num_initial=1, pending=pending)
        first = optimizer.ask(1)  # the one-point design
        optimizer.tell(torch.cat([first, X]), f(torch.cat([first, X])))
        optimizer.ask(1 + k)  # the build (a refit), not timed
        optimizers[name], queues[name] = optimizer, list(optimizer.pending)
    times: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(budget.repeats):
        for name, optimizer in optimizers.items():
            x = queues[name].pop(0)
            optimizer.tell(x[None], f(x[None]))
            start = time.process_time()
            new = optimizer.ask(1)
            times[name].append(1000 * (time.process_time() - start))
            assert optimizer.last_ask.refitted is False, "a refit was timed"
            queues[name].append(new[0])
    return times


def _sleepy(problem: str, mean: float, seed: int):
    # An evaluation that sleeps an exponential time first.
    f = PROBLEMS[problem]()

    def objective(X):
        rng = random.Random(hash((seed, *X.reshape(-1).tolist())))
        time.sleep(rng.expovariate(1.0 / mean))
        return f(X)

    return objective


def zero_latency(spans: list[tuple[float, float]], workers: int) -> float:
    r"""The utilisation of a driver with no latency on the same evaluation times.

    The evaluations, in the order they started, each go to the first worker
    free; what stays idle is the drain at the end of the budget.

    Args:
        spans: ``(start, end)`` of each evaluation.
        workers: The number of workers.

    Returns:
        The seconds evaluated over ``workers`` times that schedule's length.
    """
    durations = [b - a for a, b in sorted(spans)]
    free = [0.0] * workers
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return sum(durations) / (workers * max(free))


def ray_runs(budget: Budget) -> list[dict[str, float]]:
    r"""Utilisation and best values of the asynchronous and synchronous runs."""
    import ray

    from botorch_sketch.integrations.ray_async import run_on_ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rows = []
    try:
        q = budget.workers
        for problem in budget.problems:
            f = PROBLEMS[problem]()
            for seed in range(budget.seeds):
                sync = run_large_batch(  # LargeBatchOptimizer's own loop
                    f,
                    f.bounds,
                    budget.evaluations,
                    q=q,
                    seed=seed,
                    progress=False,
                    strategy="regions",
                )
                for mean, queue in budget.runs:
                    if (mean, queue) != budget.runs[0] and (
                        seed > 0 or problem != budget.problems[0]
                    ):
                        continue  # the other settings on the first seed only
                    optimizer = LargeBatchOptimizer(f.bounds, q=q, seed=seed)
                    report = run_on_ray(
                        optimizer,
                        _sleepy(problem, mean, seed),
                        workers=q,
                        evaluations=budget.evaluations,
                        queue=queue,
                        worker_options={"num_cpus": 0},
                        progress=False,
                    )
                    rows.append(
                        {
                            "problem": problem,
                            "mean": mean,
                            "queue": queue,
                            "seed": seed,
                            "utilisation": report.utilisation,
                            "steady": report.steady_utilisation,
                            "zero latency": zero_latency(report.spans, q),
                            "wall": report.wall_seconds,
                            "async best": report.best_value,
                            "sync best": float(sync.best_value[-1]),
                            "evals/s": report.evaluations / report.wall_seconds,
                        }
                    )
                    print(rows[-1], flush=True)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        ray.shutdown()
    return rows


_CHILD = """
import sys, torch, warnings
warnings.simplefilter("ignore")
from pathlib import Path
from botorch.test_functions import Hartmann
from botorch_sketch.bo import LargeBatchOptimizer
path, total = Path(sys.argv[1]), int(sys.argv[2])
f = Hartmann(dim=6, negate=True)
settings = dict(q=8, num_initial=8, num_candidates=200, seed=0)
if path.exists():
    optimizer = LargeBatchOptimizer.load(path, f.bounds, **settings)
else:
    optimizer = LargeBatchOptimizer(f.bounds, **settings)
while optimizer.num_told < total:
    X = optimizer.ask(min(4, total - optimizer.num_told - len(optimizer.pending)) or 1)
    for x in X.flip(0):  # told one at a time, out of order
        optimizer.tell(x[None], f(x[None]))
        optimizer.save(path)
print("done", optimizer.num_told)
"""


def kills(budget: Budget, seed: int = 0) -> dict[str, int]:
    r"""Kill a run at random moments, resume it, and check its final data."""
    rng = random.Random(seed)
    out = {"kills": 0, "told before kills": 0, "missing": 0, "twice": 0, "lost": 0}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.pt"
        seen: set[tuple[float, ...]] = set()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        args = [sys.executable, "-c", _CHILD, str(path), str(budget.kill_evaluations)]
        for _ in range(budget.kills):
            child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
            time.sleep(rng.uniform(5.0, 15.0))
            if child.poll() is None:
                child.send_signal(signal.SIGKILL)
                child.wait()
                out["kills"] += 1
            if path.exists():
                state = load_checkpoint(path)
                seen |= {tuple(x.tolist()) for x in state["told_X"]}
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
        final = load_checkpoint(path)
        told = [tuple(x.tolist()) for x in final["told_X"]]
        out["told before kills"] = len(seen)
        out["final told"] = len(told)
        out["missing"] = len(seen - set(told))
        out["twice"] = len(told) - len(set(told))
        out["lost"] = budget.kill_evaluations - len(told)
    return out


def render(
    budget_name: str,
    budget: Budget,
    times: dict[str, list[float]],
    rays: list[dict[str, float]],
    killed: dict[str, int],
) -> str:
    r"""The report's markdown."""
    lines = [f"# Ask/tell latency, asynchronous Ray runs and kills ({budget_name})", ""]
    lines += [
        f"Command: `python -m benchmarks.async_bo --budget {budget_name}`.",
        "",
        f"## ask(1) after a tell, n = {budget.n}, d = {budget.dim} (one thread)",
        "",
        "| mode | median ms | max ms | vs 0 pending |",
        "|---|---|---|---|",
    ]
    base = statistics.median(times["0 pending"])
    for name, t in times.items():
        median = statistics.median(t)
        lines.append(f"| {name} | {median:.1f} | {max(t):.1f} | {median / base:.2f} |")
    if rays:
        lines += [
            "",
            f"## {budget.workers} local Ray workers, exponential evaluation "
            f"times, {budget.evaluations} evaluations",
            "",
            "| problem | mean s | queue | seed | utilisation | until last "
            "dispatch | no-latency driver | evals/s | async best | sync best "
            "(q = workers) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rays:
            lines.append(
                f"| {r['problem']} | {r['mean']} | {r['queue']} | {r['seed']} | "
                f"{r['utilisation']:.1%} | {r['steady']:.1%} | "
                f"{r['zero latency']:.1%} | {r['evals/s']:.1f} | "
                f"{r['async best']:.4f} | {r['sync best']:.4f} |"
            )
    if killed:
        lines += ["", "## SIGKILL at random moments, resumed each time", ""]
        lines += [f"- {k}: {v}" for k, v in killed.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    r"""Run the budget's measurements and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="small")
    parser.add_argument("--out", default=".")
    parser.add_argument("--skip", nargs="*", default=[], help="latency ray kills")
    args = parser.parse_args()
    budget = BUDGETS[args.budget]
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    times = latency(budget) if "latency" not in args.skip else {"0 pending": [math.nan]}
    rays = ray_runs(budget) if "ray" not in args.skip else []
    killed = kills(budget) if "kills" not in args.skip else {}
    text = render(args.budget, budget, times, rays, killed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"async-bo-{args.budget}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
