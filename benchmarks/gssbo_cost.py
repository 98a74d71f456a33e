r"""One GSSBO iteration against the full GP's, at n observations.

Running GSSBO and the full ``SingleTaskGP`` loop to 1000 evaluations on the
paper's 50- and 100-D functions costs many hours on two cores (the full GP's
iterations grow to tens of seconds). The time target is a ratio of cumulative
times, and a loop's time is the sum of its iterations', so here each loop's
iteration is timed at a few sizes ``n`` on the same data, and the cumulative
time to ``N`` is estimated by the trapezoid over ``n`` (before the switch both
loops are the full GP). What this cannot show: regret, and how many L-BFGS-B
steps a real loop's data take (the data below imitate one's).

An iteration is :class:`~botorch_sketch.bo.GSSBO`'s ``ask``:
:class:`~botorch_sketch.bo.GSSBOSurrogate` fits the model (count switch at
``switch_at``, the library's defaults; the full GP never switches), then UCB
is maximised by ``optimize_acqf`` (4 restarts, 256 raw samples, as the
``gssbo`` benchmark) in the surrogate's ``search_bounds``. Each is warm: the
surrogate first fits all but the newest point (not timed), then all ``n``, so
the fit starts from the last iteration's hyperparameters as in a loop. The
data: a 20-point Sobol design, then points half uniform and half near a
random centre (standard deviation 0.1 in the unit cube, clipped), as a loop's
concentrate near its incumbent. CPU seconds (``time.process_time``) on one
thread, the two loops in turn (alternating which goes first), median over
data sets.

``python -m benchmarks gssbo-cost --budget small|large``
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import torch
from botorch.optim import optimize_acqf
from torch import Tensor

from benchmarks.gssbo import PROBLEMS

#: The loops timed: the full GP (never switches) and GSSBO's defaults.
LOOPS = ("full", "gssbo")


@dataclass
class Budget:
    r"""What a budget times."""

    problems: list[str]
    sizes: list[int]
    repeats: int
    switch_at: int = 100
    num_initial: int = 20
    evaluations: int = 1000
    maxiter: int = 100
    num_restarts: int = 4
    raw_samples: int = 256


BUDGETS = {
    "small": Budget(["Hartmann-6"], [30, 60], 1, switch_at=40, evaluations=60),
    "large": Budget(["Powell-50", "Rastrigin-100"], [100, 250, 500, 750, 1000], 3),
}


def data(problem: str, n: int, num_initial: int, seed: int) -> tuple[Tensor, Tensor]:
    r"""``n`` points in the unit cube and their values (maximised), as a loop's."""
    from torch.quasirandom import SobolEngine

    f = PROBLEMS[problem]()
    d = f.dim
    generator = torch.Generator().manual_seed(seed)
    design = SobolEngine(d, scramble=True, seed=seed).draw(num_initial).double()
    rest = n - num_initial
    uniform = torch.rand(rest - rest // 2, d, generator=generator, dtype=torch.double)
    centre = torch.rand(d, generator=generator, dtype=torch.double)
    near = centre + 0.1 * torch.randn(
        rest // 2, d, generator=generator, dtype=torch.double
    )
    X = torch.cat([design, uniform, near.clamp(0.0, 1.0)])
    lower, upper = f.bounds.to(X)
    Y = f(lower + (upper - lower) * X).unsqueeze(-1)
    return X, Y


def iteration_seconds(
    budget: Budget, loop: str, X: Tensor, Y: Tensor, seed: int
) -> float:
    r"""CPU seconds of one warm iteration (fit, then UCB's maximisation) on ``X``."""
    from botorch_sketch.bo import GSSBOSurrogate
    from botorch_sketch.bo.gssbo import acquisition_factory

    n = X.shape[0]
    surrogate = GSSBOSurrogate(
        num_initial=budget.num_initial,
        switch_at=n + 1 if loop == "full" else budget.switch_at,
        fit_kwargs={
            "max_attempts": 1,
            "optimizer_kwargs": {"options": {"maxiter": budget.maxiter}},
        },
        seed=seed,
    )
    with warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        surrogate(X[:-1], Y[:-1])  # the last iteration's fit: the warm start
        start = time.process_time()
        model = surrogate(X, Y)
        box = surrogate.search_bounds(X, Y, 0.2)
        acqf = acquisition_factory("ucb")(model, X, Y, 1)
        optimize_acqf(
            acqf,
            bounds=box,
            q=1,
            num_restarts=budget.num_restarts,
            raw_samples=budget.raw_samples,
        )
        return time.process_time() - start


@dataclass
class Row:
    r"""One loop on one problem at one size: its seconds per data set."""

    problem: str
    loop: str
    n: int
    seconds: list[float]

    @property
    def median(self) -> float:
        r"""The median over data sets."""
        return float(torch.tensor(self.seconds).median())


def run(budget_name: str = "small") -> tuple[Budget, list[Row]]:
    r"""Time both loops at every size, in turn; one thread."""
    budget = BUDGETS[budget_name]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    try:
        for problem in budget.problems:
            for n in budget.sizes:
                seconds: dict[str, list[float]] = {loop: [] for loop in LOOPS}
                for seed in range(budget.repeats):
                    X, Y = data(problem, n, budget.num_initial, seed)
                    order = LOOPS if seed % 2 == 0 else LOOPS[::-1]
                    for loop in order:
                        if loop != "full" and n <= budget.switch_at:
                            continue  # not switched yet: the full GP's iteration
                        seconds[loop].append(
                            iteration_seconds(budget, loop, X, Y, seed)
                        )
                for loop in LOOPS:
                    if seconds[loop]:
                        rows.append(Row(problem, loop, n, seconds[loop]))
                        print(f"{problem} {loop} n={n}: {rows[-1].median:.2f} s")
    finally:
        torch.set_num_threads(threads)
    return budget, rows


def cumulative(budget: Budget, rows: list[Row], problem: str, loop: str) -> float:
    r"""Estimated CPU seconds of iterations up to ``budget.evaluations``.

    The trapezoid over the timed sizes, from the design (the first timed
    size's seconds held below it); GSSBO is the full GP up to the switch.
    """

    def curve(name: str) -> list[tuple[int, float]]:
        return sorted(
            (r.n, r.median) for r in rows if r.problem == problem and r.loop == name
        )

    full = curve("full")
    points = [p for p in full if p[0] <= budget.switch_at]
    if loop != "full":
        points += [p for p in curve(loop) if p[0] > budget.switch_at]
    else:
        points = full
    points = [(budget.num_initial, points[0][1]), *points]
    total = 0.0
    for (n0, t0), (n1, t1) in zip(points, points[1:], strict=False):
        total += 0.5 * (t0 + t1) * (n1 - n0)
    last_n, last_t = points[-1]
    if last_n < budget.evaluations:  # held beyond the last timed size
        total += last_t * (budget.evaluations - last_n)
    return total


def render(budget: Budget, rows: list[Row], machine: str) -> str:
    r"""Markdown: seconds per iteration by size, ratios, the cumulative estimate."""
    lines = [
        f"Machine: {machine}. One warm iteration (fit on all `n` observations, "
        "then UCB maximised by `optimize_acqf`), CPU seconds on one thread, median "
        f"over {budget.repeats} data set(s); GSSBO switched at {budget.switch_at} "
        "(library defaults). Cumulative: the trapezoid over the sizes timed, up to "
        f"{budget.evaluations} evaluations (an estimate from these iterations, not "
        "a run).",
        "",
        "| problem | n | full GP (s) | GSSBO (s) | GSSBO / full |",
        "|---|---|---|---|---|",
    ]
    table = {(r.problem, r.loop, r.n): r.median for r in rows}
    for problem in budget.problems:
        for n in budget.sizes:
            full = table.get((problem, "full", n))
            gss = table.get((problem, "gssbo", n))
            if full is None:
                continue
            gss_text = "-" if gss is None else f"{gss:.2f}"
            ratio = "-" if gss is None else f"{gss / full:.2f}"
            lines.append(f"| {problem} | {n} | {full:.2f} | {gss_text} | {ratio} |")
    lines += [
        "",
        f"| problem | full GP, cumulative to {budget.evaluations} (s) | GSSBO (s) | "
        "GSSBO / full |",
        "|---|---|---|---|",
    ]
    for problem in budget.problems:
        full = cumulative(budget, rows, problem, "full")
        gss = cumulative(budget, rows, problem, "gssbo")
        lines.append(f"| {problem} | {full:.0f} | {gss:.0f} | {gss / full:.2f} |")
    return "\n".join(lines)
