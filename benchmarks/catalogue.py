#!/usr/bin/env python3
r"""What each benchmark and budget runs, and roughly how long: the ``--help`` list.

``python -m benchmarks --help`` prints :func:`help_epilog`. The
times are wall clock on 2 idle cores (``make bench``'s setting; the runs that
set their own threads use one); on a machine that other jobs share, expect two to
four times as long. The small budgets are for trying a benchmark and for the
test suite: see :data:`SMALL_BUDGETS_SHOW`.

This module imports nothing heavy, so that the list costs nothing to print.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    r"""One budget of a benchmark, in a line.

    Attributes:
        what: What it runs (problems, sizes, seeds).
        time: About how long it takes, on 2 idle cores.
    """

    what: str
    time: str


#: Each benchmark (``python -m benchmarks NAME``): what it
#: compares, then its budgets in the order ``--help`` lists them.
CATALOGUE: dict[str, tuple[str, dict[str, Budget]]] = {
    "demo": (
        "make demo: a BO loop's seconds per iteration with the carried "
        "IncrementalGP stay flat, the warm exact GP's grow (Hartmann-6, "
        "Thompson batches of 50)",
        {
            "small": Budget("to n = 1500, both models", "about 60 s"),
            "large": Budget("to n = 4000", "about 20 min"),
        },
    ),
    "inference": (
        "held-out NLL against fit time: NystromGP's inducing rules against "
        "SingleTaskGP, SGPR and SVGP",
        {
            "small": Budget("Hartmann-6 at n = 800 and BO data, no SVGP", "1-3 min"),
            "large": Budget("n = 2000, SVGP, growth to n = 10^5", "about 35 min"),
        },
    ),
    "default-fit": (
        "the default NystromGP fit against SingleTaskGP's: seconds and NLL",
        {
            "small": Budget("n = 1500, one seed", "under 1 min"),
            "large": Budget("n = 2000 and 5000, two seeds, 1 and 2 threads", "1 h"),
        },
    ),
    "iteration": (
        "one BO iteration as a user writes it (fit + optimize_acqf), medians",
        {
            "small": Budget("n = 60 and 150, qLogNEI q = 1", "about 1 min"),
            "medium": Budget("n = 100 to 1000, 5 data sets, qLogNEI q = 10", "1 h"),
            "large": Budget("n = 100 to 2000, 3 acquisitions", "2-3 h"),
        },
    ),
    "bo": (
        "closed-loop BO: regret and time of NystromGP, IncrementalGP, GSSBO, "
        "SVGP and TuRBO against SingleTaskGP",
        {
            "small": Budget("Hartmann-6 to 26 evaluations, every method", "5 min"),
            "medium": Budget("Hartmann-6 to 500, 3 seeds, 3 models", "3 h"),
            "incremental": Budget("Hartmann-6 to 500, seed 0, 2 models", "30 min"),
            "large": Budget("5 problems to 1000, 5 seeds, every method", "days"),
            "long": Budget("Hartmann-6 to 5000, 3 seeds, 1 h cap each", "a day"),
            "ts": Budget("Thompson sampling, q = 50, 2 problems to 1000", "hours"),
            "headline-small": Budget(
                "run_large_batch and its peers (TuRBO, CMA-ES, Sobol, the exact "
                "GP) once on Hartmann-6, a few batches of 10",
                "1-3 min",
            ),
            "headline": Budget(
                "run_large_batch (both strategies) against TuRBO-ENN, TuRBO-1, "
                "CMA-ES and Sobol, q = 100 to 10^4 evaluations, 4 problems, 3 seeds",
                "hours",
            ),
            "headline-shifted": Budget(
                "the headline grid's Ackley-20 and Levy-100 with their optima "
                "moved off the box's centre (where CMA-ES starts): the sketch, "
                "TuRBO-ENN, CMA-ES and Sobol, 3 seeds",
                "20-40 min",
            ),
            "headline-long": Budget(
                "one q = 1000 run to 10^5 evaluations on rover-60, TuRBO-ENN beside it",
                "1-2 h",
            ),
            "headline-wide": Budget(
                "both strategies, TuRBO-ENN and CMA-ES on 10 more test functions in "
                "4-60 dimensions that no setting was chosen on, q = 100 to 10^4, "
                "3 seeds",
                "20-40 min",
            ),
            "headline-check": Budget(
                "the default, TuRBO-ENN and CMA-ES (steps 0.2 and 0.1) on 16 more "
                "problems in 6-100 dimensions, five with their optima moved off "
                "the centre, run after the default's step was chosen; q = 100 to "
                "10^4, 3 seeds",
                "30-60 min",
            ),
        },
    ),
    "gssbo": (
        "GSSBO (gradient subset) against the full SingleTaskGP and a random subset",
        {
            "small": Budget("Hartmann-6 and Levy-20 to 40 evaluations", "2 min"),
            "large": Budget(
                "Hartmann-6 and Levy-20 to 250, switched at 100, 6 loops, 3 seeds",
                "1 h",
            ),
            "interpretations": Budget(
                "Levy-20 to 120, 4 subset rules, 5 seeds", "15 min"
            ),
            "long": Budget(
                "Rastrigin-100 to 750, switched at 100, 3 loops with 3 seeds "
                "and the full GP with 1",
                "2-3 h",
            ),
            "paper": Budget(
                "the paper's 5 problems to 1000, 3 seeds (the full GP: 1)", "10-20 h"
            ),
        },
    ),
    "gssbo-cost": (
        "One GSSBO iteration against the full GP's at n observations; the "
        "cumulative time to 1000 estimated from them",
        {
            "small": Budget("Hartmann-6 at n = 30 and 60, one data set", "1 min"),
            "large": Budget(
                "Powell-50 and Rastrigin-100 at n = 100 to 1000, 3 data sets",
                "20-40 min",
            ),
        },
    ),
    "scale": (
        "NystromGP at up to a million observations: each part of an iteration",
        {
            "small": Budget("n = 10^4 and 10^5, d = 6 and 20", "3-5 min"),
            "large": Budget("n = 10^6, m = 256 and 512; sharded on Ray", "20-30 min"),
        },
    ),
    "throughput": (
        "the posterior over many candidates, as a fraction of torch.matmul's rate",
        {
            "small": Budget("20,000 candidates, m = 256 and 512", "15 s"),
            "large": Budget("100,000 candidates, m up to 1024", "2-5 min"),
        },
    ),
    "fantasies": (
        "fantasize by Woodbury steps against refactorising every fantasy",
        {
            "small": Budget("n = 5000, m = 128", "20 s"),
            "large": Budget("n = 20,000, m = 256 and 512", "5-10 min"),
        },
    ),
    "bandits": (
        "BKB against exact GP-UCB, DTC-UCB and random on finite arms",
        {
            "small": Budget("up to 20,000 arms and 3000 steps, one seed", "3-5 min"),
            "large": Budget("up to 10^5 arms and 10^4 steps, 3 seeds", "10-13 min"),
        },
    ),
    "contextual": (
        "EK-UCB against KernelUCB, CBKB and CBBKB (Bump, Chessboard, digits)",
        {
            "small": Budget("1000-5000 rounds, one seed", "2-4 min"),
            "large": Budget("2000-20,000 rounds, 10 seeds on Bump", "about 10 min"),
        },
    ),
    "linear": (
        "fLinUCB-GD (SGD) against LinUCB: synthetic and digits replay",
        {
            "small": Budget("d = 100 and 1000, 1000 rounds, 4000 events", "2-3 min"),
            "large": Budget("5000 rounds, 20,000 events, 5 seeds", "about 10 min"),
        },
    ),
    "tuning": (
        "botorch-sketch tune (SVM on breast cancer) against Ax's default model",
        {
            "small": Budget("25 trials, the next trial timed at N = 50, 200", "5 min"),
            "large": Budget("80 trials, timed at N = 100, 300, 1000", "1 h"),
        },
    ),
    "tuning-peers": (
        "our samplers against GPSampler, TPESampler, BoTorchSampler and Ax",
        {
            "small": Budget("SVM, 30 trials, timed at N = 50, 100", "10 min"),
            "svm-200": Budget("SVM, 200 trials, timed to N = 1000", "1 h"),
            "large": Budget("SVM and a 6-parameter GBM, 2000 trials", "days"),
        },
    ),
    "suggest": (
        "seconds for SketchSampler, GPSampler and the rest to suggest trial N",
        {
            "small": Budget("N = 40, SketchSampler and GPSampler", "10-20 s"),
            "medium": Budget("N = 1000, 52 suggestions, 3 samplers", "30 min"),
            "quality": Budget("whole 80-trial studies, 3 samplers, 3 seeds", "1 h"),
            "exact": Budget("N = 1000, BoTorchSampler's exact GP", "30 min"),
            "large": Budget("N = 300, 1000, 2000, every sampler", "hours"),
            "mixed": Budget("mixed space with failed trials, N = 1000", "30 min"),
        },
    ),
}

#: The question each benchmark answers: the menu a bare ``python -m benchmarks``
#: prints, one line each, in this order.
QUESTIONS: dict[str, str] = {
    "demo": "Do carried-GP iterations stay flat while exact-GP ones grow?",
    "bo": "Which model finds the best point in a closed BO loop?",
    "iteration": "How long does one BO iteration (fit + optimize_acqf) take?",
    "inference": "Does NystromGP predict as well as SingleTaskGP, SGPR, SVGP?",
    "default-fit": "What do NystromGP's default fit and SingleTaskGP's cost?",
    "fantasies": "Are Woodbury fantasies cheaper than refactorising?",
    "scale": "What does NystromGP cost up to a million points, and SVGP?",
    "throughput": "How fast is the posterior over many candidates?",
    "gssbo": "Does GSSBO keep up with the full GP and a random subset?",
    "gssbo-cost": "How much cheaper is a GSSBO iteration than the full GP's?",
    "bandits": "Does BKB keep up with exact GP-UCB?",
    "linear": "Does fLinUCB-GD keep up with LinUCB?",
    "contextual": "Does EK-UCB keep up with KernelUCB, CBKB and CBBKB?",
    "tuning": "Does botorch-sketch tune beat Ax's default model?",
    "tuning-peers": "Do our samplers tune as well as Optuna's, BoTorch's and Ax?",
    "suggest": "How long does each Optuna sampler take to suggest trial N?",
}

#: Benchmarks with a command of their own (``python -m benchmarks.MODULE``):
#: the module, and the question it answers.
OWN_COMMANDS: dict[str, str] = {
    "ax_baseline": "How long is a warm Ax trial at N attached trials, by model?",
    "surrogate_cma": "Does a GP earn its place in CMA-ES (bbob, vs lq-CMA-ES)?",
}


def menu() -> str:
    r"""The menu a bare ``python -m benchmarks`` prints.

    Returns:
        Plain text: one line per benchmark, its name and the question it
        answers (:data:`QUESTIONS`, then :data:`OWN_COMMANDS` as
        ``benchmarks.MODULE``), and how to run one.
    """
    rows = {**QUESTIONS, **{f"benchmarks.{m}": q for m, q in OWN_COMMANDS.items()}}
    width = max(len(name) for name in rows) + 2
    lines = ["The benchmarks, each with the question it answers:", ""]
    lines += [f"  {name:<{width}}{question}" for name, question in rows.items()]
    lines += [
        "",
        "python -m benchmarks NAME [--budget small|large] [--out DIR] runs one",
        "(all: every one; --help lists each one's budgets and how long they take);",
        "python -m benchmarks.MODULE runs one of the last two (--help: its options).",
    ]
    return "\n".join(lines)


#: What a small budget can and cannot show, printed under the list.
SMALL_BUDGETS_SHOW = (
    "The small budgets (the default) show that a benchmark runs and what its "
    "report looks like, not its result: their models see tens to hundreds of "
    "points, where NystromGP keeps most inputs as inducing points (it is then "
    "the exact GP, plus the cost of choosing them) and no model has learnt "
    "enough to beat a space-filling design (bo --budget headline-small: after "
    "a few batches Sobol can be ahead of every model). The results are in the "
    "large budgets' reports: BENCHMARKS.md and docs/."
)


def _wrap(text: str, width: int, **kwargs) -> list[str]:
    # Never at a hyphen: "TuRBO-ENN" and "headline-small" stay whole.
    return textwrap.wrap(text, width, break_on_hyphens=False, **kwargs)


def help_epilog(width: int = 79) -> str:
    r"""The list of benchmarks and budgets for ``--help``.

    Args:
        width: The column to wrap at.

    Returns:
        Plain text: each benchmark with what it compares, each of its budgets
        with what it runs and about how long, then :data:`SMALL_BUDGETS_SHOW`.
    """
    lines = [
        *_wrap(
            "benchmarks (NAME) and their budgets (--budget), each with about how "
            "long it takes on 2 idle cores (two to four times that on a machine "
            "other jobs share):",
            width,
        ),
        "",
    ]
    # Names in a column as wide as the longest and two spaces.
    left = 2 + max(len(name) for name in CATALOGUE) + 2
    right = 4 + max(len(b) for _, budgets in CATALOGUE.values() for b in budgets) + 2
    for name, (what, budgets) in CATALOGUE.items():
        lines += _wrap(
            what,
            width,
            initial_indent=f"  {name}".ljust(left),
            subsequent_indent=" " * left,
        )
        for budget, entry in budgets.items():
            lines += _wrap(
                f"{entry.what}: {entry.time}",
                width,
                initial_indent=f"    {budget}".ljust(right),
                subsequent_indent=" " * right,
            )
    lines += ["", *_wrap(SMALL_BUDGETS_SHOW, width)]
    return "\n".join(lines)
