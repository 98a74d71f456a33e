#!/usr/bin/env python3
r"""``NystromGP`` at up to a million observations: the cost of each part.

Hartmann6 on the first six of ``d`` uniform inputs (``d = 6`` and ``d = 20``, the
other inputs inactive), noise sd 0.1. For each ``(d, n, m)`` the parts of one BO
iteration are timed in a fresh process, whose peak resident memory is
reported: building the model (the inducing rule at the initial
hyperparameters), fitting (hyperparameters and the inducing rule on a random
subset of 2,000 points, ``NystromGP.fit_subset_size``), the posterior
state (embedding and statistics of all ``n`` points), one ``optimize_acqf`` of
``LogExpectedImprovement`` (10 restarts, 512 raw samples), and the held-out log
likelihood on 10,000 points.

At the largest ``n`` of the budget, BoTorch's ``SingleTaskVariationalGP`` with
the same ``m`` then races to the same held-out NLL in another fresh process
(:func:`race_svgp`); the ratio compares
its time to reach it with the time ``NystromGP`` took to be ready for the
acquisition (build, fit and posterior state).

Both run on the CPU by default, or on a GPU (``--device cuda``): the data are
drawn on the CPU and moved, the clocks wait for the device's queued work, each
process first runs its case untimed at 20,000 points (the CUDA libraries' start),
and the device's peak allocated memory is reported beside the process's.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time
from dataclasses import dataclass, field

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskVariationalGP
from botorch.optim import optimize_acqf
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO
from torch import Tensor

from benchmarks.metrics import (
    held_out_accuracy,
    in_fresh_process,
    synchronize,
)
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.rules import GreedyVarianceSelector


# How long BoTorch's SVGP takes to reach a given held-out log likelihood. At ``n =
# 10^6`` no peer can be fitted "to convergence" in the time a BO step has, so the
# comparison with ``SingleTaskVariationalGP`` is a race: :func:`race_svgp` builds it
# as a user must at this scale and trains it the way GPyTorch's SVGP tutorial does
# (Adam, learning rate 0.01, minibatches of 1024 on the variational ELBO). BoTorch's
# default inducing allocation (``GreedyVarianceReduction``) forms the ``n x n`` kernel
# matrix, 80 GB at ``n = 10^5``, so the ``m`` inducing inputs start at random training
# inputs; and ``Y`` is standardised beforehand rather than by an outcome transform, as
# BoTorch's own warning recommends for minibatch training. The held-out NLL is
# converted back to the units of ``Y``. Every ``check_every`` steps (50: about a
# second at ``m = 256``, so the time to the target is known to within that) the clock
# stops and the held-out predictive NLL is measured; the race ends when it reaches the
# target (``NystromGP``'s NLL on the same data) or the time budget runs out. The
# reported time counts the build (the inducing allocation) and the training steps, not
# the checks.
@dataclass
class RaceResult:
    r"""The course of one SVGP race.

    Attributes:
        seconds_to_target: Build and training seconds until the held-out NLL
            first reached the target, or None if it did not within the budget.
        build_seconds: Seconds to build the model (inducing allocation).
        best_nll: The best held-out NLL seen.
        seconds: The build and training seconds spent in all.
        steps: Optimiser steps taken.
        curve: ``(seconds, nll)`` at every check.
    """

    seconds_to_target: float | None
    build_seconds: float
    best_nll: float
    seconds: float
    steps: int
    curve: list[tuple[float, float]] = field(default_factory=list)


def race_svgp(
    X: Tensor,
    Y: Tensor,
    X_test: Tensor,
    Y_test: Tensor,
    target_nll: float,
    num_inducing: int,
    time_budget: float,
    batch_size: int = 1024,
    lr: float = 0.01,
    check_every: int = 50,
    seed: int = 0,
) -> RaceResult:
    r"""Train ``SingleTaskVariationalGP`` until its held-out NLL reaches a target.

    Args:
        X: A ``n x d`` tensor of training inputs.
        Y: A ``n x 1`` tensor of training targets.
        X_test: A ``n_test x d`` tensor of held-out inputs.
        Y_test: A ``n_test x 1`` tensor of held-out targets.
        target_nll: The held-out NLL (nats per point) to reach.
        num_inducing: The number ``m`` of inducing points.
        time_budget: Build and training seconds after which the race stops.
        batch_size: Minibatch size.
        lr: Adam's learning rate.
        check_every: Steps between held-out checks.
        seed: Seeds the inducing inputs and the minibatch order.

    Returns:
        The race's result.
    """
    clock = time.perf_counter
    generator = torch.Generator().manual_seed(seed)
    start = clock()
    mean, std = Y.mean(), Y.std()
    pick = torch.randperm(X.shape[0], generator=generator)[:num_inducing]
    model = SingleTaskVariationalGP(
        X, (Y - mean) / std, inducing_points=X[pick.to(X.device)].clone()
    )
    synchronize(X.device)
    build = clock() - start
    Y_test = (Y_test - mean) / std
    # A density in standardised units is std times the one in the units of Y.
    log_std = float(std.log())
    mll = VariationalELBO(model.likelihood, model.model, num_data=X.shape[0])
    optimizer = torch.optim.Adam(mll.parameters(), lr=lr)
    X_train, y_train = model.model.train_inputs[0], model.model.train_targets
    spent, steps, curve, reached = build, 0, [], None
    best = float("inf")
    while spent < time_budget and reached is None:
        order = torch.randperm(X.shape[0], generator=generator).to(X.device)
        for rows in order.split(batch_size):
            synchronize(X.device)  # on a GPU, time the step's work, not its queueing
            tic = clock()
            model.train()
            optimizer.zero_grad()
            loss = -mll(model.model(X_train[rows]), y_train[rows])
            loss.backward()
            optimizer.step()
            synchronize(X.device)
            spent += clock() - tic
            steps += 1
            if steps % check_every == 0:
                model.eval()
                nll = held_out_accuracy(model, X_test, Y_test).nll + log_std
                curve.append((spent, nll))
                best = min(best, nll)
                if nll <= target_nll:
                    reached = spent
                    break
            if spent >= time_budget:
                break
    return RaceResult(
        seconds_to_target=reached,
        build_seconds=build,
        best_nll=best,
        seconds=spent,
        steps=steps,
        curve=curve,
    )


#: ``(d, n, m)`` cases of each budget.
BUDGETS = {
    "small": [(6, 10_000, 256), (6, 100_000, 256), (20, 100_000, 256)],
    "large": [
        (6, 100_000, 256),
        (6, 1_000_000, 256),
        (20, 1_000_000, 256),
        (6, 1_000_000, 512),
    ],
}
FIT_SUBSET = 2_000
#: On a GPU, the size of the untimed first run of each case, and the seconds of
#: the untimed first SVGP race (see ``_warming_up``).
WARM_UP_N = 20_000
WARM_UP_SECONDS = 3.0
WARM_UP_NOTE = (
    f"On the GPU each case first ran untimed at {WARM_UP_N} points, and each "
    f"SVGP race for {WARM_UP_SECONDS:.0f} s, in the same process: the CUDA "
    "libraries' one-time start stays out of both models' times."
)


@dataclass
class Row:
    r"""The parts of one BO iteration at one ``(d, n)``."""

    dim: int
    n: int
    m: int
    build: float
    fit: float
    state: float
    acquisition: float
    nll: float
    peak_mb: float
    svgp: RaceResult | None = None
    #: Peak memory the torch allocator took on the GPU, if the case ran on one.
    device_peak_mb: float | None = None

    @property
    def iteration(self) -> float:
        r"""Seconds for one full BO iteration (all parts but the held-out check)."""
        return self.build + self.fit + self.state + self.acquisition

    @property
    def ready(self) -> float:
        r"""Seconds until the model is ready for the acquisition."""
        return self.build + self.fit + self.state


def _data(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    f = Hartmann(dim=6, negate=True)
    Y = f.evaluate_true(X[:, :6]) + 0.1 * torch.randn(n, generator=g, dtype=X.dtype)
    return X, Y.unsqueeze(-1)


def _on(device: str, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(device) for t in tensors]


def _warming_up(device: str) -> bool:
    # On a GPU each process first runs its case once at WARM_UP_N points: the
    # CUDA libraries' handles and lazily loaded kernels (2-4 s on an H100, paid
    # once per process, as in the first iteration of a BO loop) then stay out
    # of both models' times. The CPU has no such start.
    return torch.device(device).type == "cuda"


def _case(d: int, n: int, m: int, device: str, queue: mp.Queue) -> None:
    if _warming_up(device):
        _timed_case(d, min(n, WARM_UP_N), m, device)
        torch.cuda.reset_peak_memory_stats(device)
    queue.put(_timed_case(d, n, m, device))


def _timed_case(d: int, n: int, m: int, device: str) -> Row:
    torch.manual_seed(0)
    X, Y, Xt, Yt = _on(device, *_data(n, d, 0), *_data(10_000, d, 1))

    def clock() -> float:
        synchronize(device)
        return time.perf_counter()

    t0 = clock()
    model = NystromGP(
        X, Y, inducing=GreedyVarianceSelector(m), fit_subset_size=FIT_SUBSET
    )
    t1 = clock()
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    t2 = clock()
    with torch.no_grad():
        model.posterior_state()
    t3 = clock()
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).to(X)
    acqf = LogExpectedImprovement(model, best_f=Y.max())
    optimize_acqf(acqf, bounds, q=1, num_restarts=10, raw_samples=512)
    t4 = clock()
    nll = held_out_accuracy(model, Xt, Yt).nll
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    device_peak = (
        torch.cuda.max_memory_allocated(device) / 2**20
        if torch.device(device).type == "cuda"
        else None
    )
    return Row(
        d,
        n,
        model.inducing_points.shape[0],
        t1 - t0,
        t2 - t1,
        t3 - t2,
        t4 - t3,
        nll,
        peak,
        device_peak_mb=device_peak,
    )


def _race(
    d: int, n: int, m: int, target: float, budget: float, device: str, queue
) -> None:
    X, Y, Xt, Yt = _on(device, *_data(n, d, 0), *_data(10_000, d, 1))
    if _warming_up(device):  # a few hundred steps on the same shapes
        rows = slice(0, min(n, WARM_UP_N))
        race_svgp(X[rows], Y[rows], Xt, Yt, float("-inf"), m, WARM_UP_SECONDS)
    queue.put(race_svgp(X, Y, Xt, Yt, target, m, budget))


def run(
    budget_name: str = "small",
    race_budget: float = 120.0,
    device: str | torch.device = "cpu",
) -> list[Row]:
    r"""Each case, then the SVGP races at the largest ``n``, in fresh processes.

    Args:
        budget_name: ``"small"`` or ``"large"``.
        race_budget: Seconds each SVGP race may take at most.
        device: Where both models and their data live (``"cpu"`` or ``"cuda"``).
    """
    device = str(torch.device(device))  # travels to the spawned processes
    rows = []
    cases = BUDGETS[budget_name]
    largest = max(n for _, n, _ in cases)
    for d, n, m in cases:
        row = in_fresh_process(_case, d, n, m, device)
        print(
            f"d={d} n={n} m={m}: iteration {row.iteration:.1f} s, "
            f"peak {row.peak_mb:.0f} MB, NLL {row.nll:.3f}"
        )
        if n == largest:
            row.svgp = in_fresh_process(_race, d, n, m, row.nll, race_budget, device)
            print(f"  SVGP: {row.svgp.seconds_to_target} s to NLL {row.nll:.3f}")
        rows.append(row)
    return rows


def svgp_ratio(row: Row) -> str:
    r"""SVGP's time to ``NystromGP``'s NLL over ``NystromGP``'s, as text.

    A race that did not reach the NLL gives a lower bound, ``"> x"``.
    """
    race = row.svgp
    if race is None:
        return ""
    if race.seconds_to_target is None:
        return f"> {race.seconds / row.ready:.1f}"
    return f"{race.seconds_to_target / row.ready:.1f}"


def render(rows: list[Row], machine: str) -> str:
    r"""Growth ratios first, then the parts of each iteration."""
    lines = [
        "Time of one BO iteration and peak memory, and their growth when n grows "
        "10x (same d and m) or m doubles (same d and n):",
        "",
    ]
    for a in rows:
        for b in rows:
            same_d = b.dim == a.dim
            if same_d and b.m == a.m and b.n == 10 * a.n:
                change = f"n {a.n} -> {b.n} (m = {a.m})"
            elif same_d and b.n == a.n and b.m == 2 * a.m:
                change = f"m {a.m} -> {b.m} (n = {a.n})"
            else:
                continue
            lines.append(
                f"- d = {a.dim}, {change}: {b.iteration / a.iteration:.1f}x time "
                f"(fit {b.fit / a.fit:.1f}x, posterior state "
                f"{b.state / max(a.state, 1e-9):.1f}x), "
                f"{b.peak_mb / a.peak_mb:.1f}x peak memory"
            )
    raced = [r for r in rows if r.svgp is not None]
    if raced:
        lines += [
            "",
            "Against BoTorch's `SingleTaskVariationalGP` (same m, Adam on "
            "minibatches of 1024) racing to the same held-out NLL: its seconds "
            "to reach it over NystromGP's seconds to be ready (build, fit, "
            "posterior state; higher is better for NystromGP):",
            "",
            "| d | n | m | NLL | NystromGP s | SVGP s to NLL | ratio | SVGP best NLL "
            "| SVGP steps |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in raced:
            race = r.svgp
            reached = (
                f"{race.seconds_to_target:.1f}"
                if race.seconds_to_target is not None
                else f"not in {race.seconds:.0f}"
            )
            lines.append(
                f"| {r.dim} | {r.n} | {r.m} | {r.nll:.3f} | {r.ready:.1f} | "
                f"{reached} | {svgp_ratio(r)} | {race.best_nll:.3f} | "
                f"{race.steps} |"
            )
    on_gpu = any(r.device_peak_mb is not None for r in rows)
    gpu_head, gpu_rule = (" GPU peak MB |", "---:|") if on_gpu else ("", "")
    lines += [
        "",
        "| d | n | m | iteration s | build s | fit s | posterior state s | "
        f"optimize_acqf s | held-out NLL | peak MB |{gpu_head}",
        f"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|{gpu_rule}",
    ]
    for r in rows:
        gpu = "" if not on_gpu else f" {r.device_peak_mb or float('nan'):.0f} |"
        lines.append(
            f"| {r.dim} | {r.n} | {r.m} | {r.iteration:.1f} | {r.build:.1f} | "
            f"{r.fit:.1f} | {r.state:.1f} | {r.acquisition:.1f} | {r.nll:.3f} | "
            f"{r.peak_mb:.0f} |{gpu}"
        )
    if on_gpu:
        lines += ["", WARM_UP_NOTE]
    lines += ["", f"Absolute figures are from {machine}."]
    return "\n".join(lines)


# ------------------------------------------------------------ sharded on Ray

#: ``(d, n, m, shards)`` of the sharded case of each budget: the statistics of
#: ``n`` points summed on Ray workers, each shard made on its worker from a seed.
SHARDED = {"tiny": (6, 5_000, 16, 4), "small": (6, 1_000_000, 256, 8)}
SHARDED["large"] = (6, 10_000_000, 256, 20)
#: Worker counts the statistics pass is timed with.
SHARDED_WORKERS = (1, 2)


@dataclass
class ShardedRow:
    r"""``NystromGP`` on sharded data: the passes, the workers, the projection."""

    dim: int
    n: int
    m: int
    shards: int
    survey: float
    fit: float
    statistics: dict[int, float]
    shard_seconds: float
    shard_cpu_seconds: float
    peak_mb: float
    reduce_seconds: float
    load: tuple[float, float, float]

    @property
    def ready(self) -> float:
        r"""Seconds to a model ready for the acquisition on the most workers."""
        return self.survey + self.fit + self.statistics[max(self.statistics)]

    @property
    def efficiency(self) -> float:
        r"""Scaling efficiency of the statistics pass, ``T_1 / (w T_w)``."""
        w = max(self.statistics)
        return self.statistics[1] / (w * self.statistics[w])

    @property
    def idle_statistics(self) -> float:
        r"""Statistics seconds on the most workers at the measured CPU cost.

        What the pass would take on idle cores, one a worker: the worker CPU
        seconds of all shards over the number of workers.
        """
        return self.shard_cpu_seconds * self.shards / max(self.statistics)

    def projection(self, n: int = 10**9, workers: int = 100) -> float:
        r"""Projected seconds to a model of ``n`` points on ``workers`` workers.

        Each worker surveys and sums ``n / workers`` rows at the per-row costs
        measured here (survey wall time on the most workers, statistics at the
        workers' CPU seconds, i.e. on idle cores), the fit
        on the sample costs what it did here, and the driver adds one
        statistics per shard (shards of this run's size) at the measured cost.
        Network transfers beyond this machine's and stragglers are not modelled.
        """
        per_worker = n / workers
        w = max(self.statistics)
        survey = self.survey * w / self.n * per_worker
        statistics = self.shard_cpu_seconds * self.shards / self.n * per_worker
        shards = n / (self.n / self.shards)
        return survey + self.fit + statistics + shards * self.reduce_seconds


def _seeded_shard(seed: int, rows: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    # Made on the worker, so 10^7 rows never pass through the driver.
    return _data(rows, d, seed)


def run_sharded(budget_name: str = "small") -> ShardedRow:
    r"""Build a sharded ``NystromGP`` on a local Ray, then time the statistics.

    The model is built on the most workers (survey, fit on a 2,000-point sample,
    statistics); the statistics pass is then re-run (:func:`~botorch_sketch.
    integrations.ray_statistics.rebuild`) with each worker count, one torch
    thread per worker.

    Args:
        budget_name: ``"tiny"`` (for tests), ``"small"`` or ``"large"``.
    """
    import functools
    import os

    import ray

    from botorch_sketch.integrations.ray_statistics import (
        build_sharded_nystrom_gp,
        rebuild,
    )
    from botorch_sketch.sketching.posterior import DTCStatistics

    d, n, m, k = SHARDED[budget_name]
    rows = n // k
    shards = {
        f"seed-{1000 + i}": functools.partial(_seeded_shard, 1000 + i, rows, d)
        for i in range(k)
    }
    most = max(SHARDED_WORKERS)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=most, include_dashboard=False, log_to_driver=False)
    try:
        model = build_sharded_nystrom_gp(
            shards,
            fit_subset_size=min(FIT_SUBSET, n // 10),
            inducing=GreedyVarianceSelector(m),
            num_workers=most,
        )
        phases = model.shard_record.phase_seconds
        statistics = {}
        peak = 0.0
        shard_seconds = shard_cpu = 0.0
        for w in SHARDED_WORKERS:
            again = rebuild(model, shards, num_workers=w)
            statistics[w] = again.shard_record.phase_seconds["statistics"]
            peak = max(peak, *again.shard_record.peak_rss_mb)
            if w == 1:
                shard_seconds = sum(again.shard_record.seconds) / k
                shard_cpu = sum(again.shard_record.cpu_seconds) / k
        # The driver's part of the reduction: one ray.get and one addition a shard.
        stats = model.shard_record.statistics
        refs = [ray.put(stats) for _ in range(k)]
        clock = time.perf_counter()
        total = DTCStatistics.empty(stats.gram.shape[-1], like=stats.moment)
        for ref in refs:
            total = total + ray.get(ref)
        reduce_seconds = (time.perf_counter() - clock) / k
    finally:
        if started:
            ray.shutdown()
    return ShardedRow(
        d,
        n,
        model.inducing_points.shape[0],
        k,
        phases["survey"],
        phases["fit"],
        statistics,
        shard_seconds,
        shard_cpu,
        peak,
        reduce_seconds,
        os.getloadavg(),
    )


def render_sharded(row: ShardedRow, machine: str) -> str:
    r"""The sharded run: the passes, scaling efficiency, memory and projection."""
    w = max(row.statistics)
    lines = [
        f"Sharded on Ray (`integrations.ray_statistics`): n = {row.n}, d = {row.dim}, "
        f"m = {row.m}, {row.shards} shards of {row.n // row.shards} rows made on "
        "the workers from seeds, one torch thread per worker:",
        "",
        f"- ready on {w} workers in {row.ready:.1f} s: survey {row.survey:.1f} s, "
        f"fit on the sample {row.fit:.1f} s, statistics {row.statistics[w]:.1f} s",
        "- statistics pass: "
        + ", ".join(f"{k} worker(s) {v:.1f} s" for k, v in row.statistics.items())
        + f"; scaling efficiency 1 -> {w} workers {row.efficiency:.0%}",
        f"- a shard on one worker: {row.shard_seconds:.2f} s wall, "
        f"{row.shard_cpu_seconds:.2f} s CPU; on idle cores the {w}-worker pass "
        f"would take {row.idle_statistics:.1f} s (CPU seconds over workers)",
        f"- peak resident memory of a worker {row.peak_mb:.0f} MB (bounded by the "
        "shard, not n)",
        f"- reduction on the driver: {1e3 * row.reduce_seconds:.2f} ms per shard",
        f"- projection, not a measurement: n = 10^9 on 100 such workers ready in "
        f"about {row.projection():.0f} s (each worker surveys and sums 10^7 rows "
        "at the costs measured here; the driver adds "
        f"{10**9 // (row.n // row.shards)} statistics)",
        "",
        f"Load average during the run: {', '.join(f'{x:.2f}' for x in row.load)}; "
        f"absolute figures are from {machine}.",
    ]
    return "\n".join(lines)
