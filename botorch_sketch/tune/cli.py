#!/usr/bin/env python3
r"""``botorch-sketch tune`` (also ``python -m botorch_sketch.tune``).

Tune a scikit-learn estimator's hyperparameters on a data set that ships with
scikit-learn, or your own objective function, through Ax with
:class:`~botorch_sketch.models.NystromGP` or Ax's default model, or through
Optuna with :class:`~botorch_sketch.integrations.optuna.SketchSampler`.

Examples::

    botorch-sketch tune --dataset digits --estimator svm --trials 500 --workers 4
    botorch-sketch tune --checkpoint tune-svm-digits-nystrom.json --resume
    botorch-sketch tune --model default --checkpoint ax.json --trials 300
    botorch-sketch tune --compare tune-svm-digits-nystrom.json ax.json --plot c.png
    botorch-sketch tune --objective mypackage.train:objective --space space.json \
        --objectives loss=min --backend optuna --trials 300
    botorch-sketch tune --objective mypackage.train:objective \
        --checkpoint tune-objective-nystrom.db --resume

Your own objective is a function of a dict of parameters returning a float, or
a dict of floats for several objectives (named, each min or max, by
``--objectives``; without it one float is minimised). The ``--space`` file is a
JSON object such as ``{"C": {"type": "float", "low": 0.001, "high": 1000,
"log": true}, "n": {"type": "int", "low": 1, "high": 50}, "kernel": {"type":
"categorical", "choices": ["rbf", "poly"]}}``. A returned NaN, or an exception,
makes the trial FAILED. ``--backend optuna`` keeps the run in an SQLite file
(an Optuna storage). A checkpoint is data: ``--resume`` imports and runs the
objective the command names (``--objective``, which must be the checkpoint's),
never one a checkpoint names.

Exit status: 0 on success, 2 on bad input (with a message; also for a damaged,
read-only or unwritable checkpoint, or one another run is using), 130 if
interrupted (the checkpoint holds every completed trial: continue with
``--resume``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import textwrap
from collections.abc import Callable

from botorch_sketch.tune.config import (
    ACQUISITIONS,
    BACKENDS,
    LIMITS,
    MODELS,
    TuneConfig,
)
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.objective import (
    ObjectiveError,
    load_objective,
    parse_objectives,
)
from botorch_sketch.tune.problems import DATASETS, ESTIMATORS
from botorch_sketch.tune.space import read_space, to_dict

PROG = "botorch-sketch tune"

# The loop, the checkpoint reader and the plots import torch, BoTorch and Ax
# (seconds): they are imported where a run needs them, so that --help and bad
# options are answered at once.


def _plain(text: str) -> str:
    # Sphinx markup reads as noise in a terminal: a role becomes its target (the
    # last name for ``~``), a literal becomes its text, ``::`` a colon.
    def role(match: re.Match) -> str:
        target = match.group(2)
        return target.rsplit(".", 1)[-1] if match.group(1) else target

    text = re.sub(r":[\w:]+:`(~?)([^`]+)`", role, text)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def help_texts(width: int = 79) -> tuple[str, str]:
    r"""The ``--help`` description and epilog, plain text from this module's doc.

    Args:
        width: The column to wrap prose at.

    Returns:
        The description (the command in a sentence) and the epilog (examples
        and exit status), for ``argparse.RawDescriptionHelpFormatter``.
    """
    paragraphs = [_plain(p) for p in __doc__.strip().split("\n\n")[1:]]

    def fill(paragraph: str) -> str:
        if paragraph.startswith(" "):  # a literal block: keep its lines
            return textwrap.indent(textwrap.dedent(paragraph), "  ")
        return textwrap.fill(" ".join(paragraph.split()), width)

    return fill(paragraphs[0]), "\n\n".join(fill(p) for p in paragraphs[1:])


def _bounds(text: str) -> tuple[str, tuple[float, float]]:
    name, sep, rest = text.partition("=")
    low, sep2, high = rest.partition(":")
    try:
        if not (name and sep and sep2):
            raise ValueError
        return name, (float(low), float(high))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=LOW:HIGH (e.g. C=1e-2:1e2), got {text!r}"
        ) from None


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    r"""Add the ``tune`` options to ``parser``."""
    estimators = ", ".join(f"{k} ({v.description})" for k, v in ESTIMATORS.items())
    problem = parser.add_argument_group(
        "problem (on --resume, taken from the checkpoint unless given; "
        "--objective never is)"
    )
    problem.add_argument(
        "--dataset", choices=sorted(DATASETS), help="scikit-learn data set [digits]"
    )
    problem.add_argument(
        "--estimator", choices=sorted(ESTIMATORS), help=f"{estimators} [svm]"
    )
    problem.add_argument(
        "--objective",
        metavar="MODULE:FUNCTION",
        help="your own objective: a function of a dict of parameters returning a "
        "float or a dict of floats (with --space); needed on --resume too, which "
        "runs no code a checkpoint names",
    )
    problem.add_argument(
        "--space",
        metavar="FILE",
        help="the JSON search space of --objective: {NAME: {type: float|int|"
        "categorical, low, high, log | choices}}",
    )
    problem.add_argument(
        "--objectives",
        nargs="+",
        metavar="NAME=min|max",
        help="the names and directions of --objective's values (several: it "
        "returns a dict) [value=min]",
    )
    problem.add_argument(
        "--backend",
        choices=BACKENDS,
        help="ax (a JSON checkpoint) or optuna (SketchSampler; an SQLite "
        "checkpoint) [ax]",
    )
    problem.add_argument(
        "--model",
        choices=MODELS,
        help=(
            "the GP: nystrom (NystromGP), subset (GradientSubsetGP on "
            "--subset-size trials) or default (Ax's SingleTaskGP; with --backend "
            "optuna, Optuna's GPSampler) [nystrom]"
        ),
    )
    problem.add_argument(
        "--acquisition",
        choices=ACQUISITIONS,
        help="auto (Ax's: qLogNEI, slower as trials accumulate), qlogei "
        "(qLogEI), bkb (qBKB-UCB) [auto]",
    )
    problem.add_argument(
        "--bounds",
        type=_bounds,
        action="append",
        metavar="NAME=LOW:HIGH",
        help="replace a parameter's range (repeatable)",
    )
    problem.add_argument(
        "--folds", type=_count(*LIMITS["folds"]), help="cross-validation folds [3]"
    )
    problem.add_argument(
        "--seed", type=_count(*LIMITS["seed"]), help="seed of Sobol, Ax and folds [0]"
    )
    run = parser.add_argument_group("run")
    run.add_argument(
        "--trials",
        type=_count(*LIMITS["trials"]),
        help="completed trials to reach [100]",
    )
    run.add_argument(
        "--initial",
        type=_count(*LIMITS["initial"]),
        help="Sobol trials before the model [10]",
    )
    run.add_argument(
        "--workers",
        type=_count(0, 1024),
        help="trials at once (0: in this process) [CPUs, or the Ray cluster's]",
    )
    run.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run trials on the Ray cluster at ADDRESS ('auto': this machine's)",
    )
    run.add_argument(
        "--checkpoint",
        help="the run's file [tune-ESTIMATOR-DATASET-MODEL.json, or "
        "tune-FUNCTION-MODEL.json with --objective; .db with --backend optuna]",
    )
    mode = run.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume", action="store_true", help="continue the run in --checkpoint"
    )
    mode.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh even if --checkpoint exists",
    )
    run.add_argument(
        "--subset-size",
        type=_count(*LIMITS["subset_size"]),
        help="observations GradientSubsetGP is fitted on (--model subset) [100]",
    )
    run.add_argument(
        "--num-restarts",
        type=_count(*LIMITS["num_restarts"]),
        help="acquisition restarts",
    )
    run.add_argument(
        "--raw-samples",
        type=_count(*LIMITS["raw_samples"]),
        help="acquisition raw samples",
    )
    run.add_argument("--threads", type=_count(1, 1024), help="torch threads for the GP")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--verbose", action="store_true", help="show Ax's log messages and warnings"
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--plot", help="the figure [the checkpoint's name with .png; compare.png]"
    )
    out.add_argument(
        "--compare",
        nargs="+",
        metavar="CHECKPOINT",
        help="only plot these runs on the same axes (e.g. ours against Ax's)",
    )
    return parser


def _config(args: argparse.Namespace) -> TuneConfig:
    given = {
        name: getattr(args, name)
        for name in (
            "dataset",
            "estimator",
            "model",
            "acquisition",
            "folds",
            "seed",
            "trials",
            "initial",
            "num_restarts",
            "raw_samples",
            "subset_size",
            "backend",
            "objective",
        )
        if getattr(args, name) is not None
    }
    if args.bounds:
        given["bounds"] = dict(args.bounds)
    if args.objectives:
        try:
            given["objectives"] = parse_objectives(args.objectives)
        except ObjectiveError as e:
            raise TuneError(str(e)) from None
    if args.space is not None:
        try:
            given["space"] = [to_dict(p) for p in read_space(args.space)]
        except ValueError as e:
            raise TuneError(f"--space {e}") from None
    if args.resume:
        if args.checkpoint is None:
            raise TuneError("--resume needs --checkpoint")
        from botorch_sketch.tune.checkpoint import read_record

        stored = read_record(args.checkpoint)[1]["config"]
        _check_trusted_objective(args, stored)
        base = {k: stored[k] for k in TuneConfig.__dataclass_fields__ if k in stored}
        base["bounds"] = {k: tuple(v) for k, v in base.get("bounds", {}).items()}
        config = TuneConfig(**{**base, **given})
    else:
        _check_problem_options(args)
        if args.objective is not None:
            given.setdefault("objectives", parse_objectives(None))
            # Load it now: a misspelt module fails before any checkpoint exists.
            try:
                load_objective(args.objective)
            except ObjectiveError as e:
                raise TuneError(str(e)) from None
        config = TuneConfig(**given)
    config.validate()
    return config


def _check_trusted_objective(args: argparse.Namespace, stored: dict) -> None:
    # A checkpoint is data, and may come from anyone: the function it names
    # ("os:system" as well as "mypackage.train:objective") is imported and run
    # only if the command names it too. A different one is refused later, as
    # every setting that defines the problem is.
    if stored.get("objective") is not None and args.objective is None:
        raise TuneError(
            f"checkpoint {args.checkpoint} names the objective "
            f"{stored['objective']!r}; --resume runs only the function the "
            "command names, never one a checkpoint names: pass --objective "
            f"{stored['objective']} if you trust it"
        )


def _check_problem_options(args: argparse.Namespace) -> None:
    # Your own objective or a built-in problem, not a mixture of the two.
    builtin = [
        f"--{name}"
        for name in ("dataset", "estimator", "bounds", "folds")
        if getattr(args, name) is not None
    ]
    if args.objective is not None:
        if args.space is None:
            raise TuneError("--objective needs --space FILE (its search space)")
        if builtin:
            raise TuneError(
                f"{builtin[0]} is an option of the built-in problems, not of "
                "--objective (whose --space gives the parameters)"
            )
    elif args.space is not None or args.objectives:
        option = "--space" if args.space is not None else "--objectives"
        raise TuneError(f"{option} goes with --objective MODULE:FUNCTION")


def run(args: argparse.Namespace) -> int:
    r"""Carry out parsed ``tune`` arguments; raises ``TuneError`` on bad input."""
    from botorch_sketch.tune.ax_client import quiet_ax
    from botorch_sketch.tune.loop import tune
    from botorch_sketch.tune.plot import plot_checkpoints, summary

    if args.compare:
        path, runs = plot_checkpoints(args.compare, args.plot or "compare.png")
        print(summary(runs))
        print(f"wrote {path}")
        return 0
    config = _config(args)
    suffix = ".db" if config.backend == "optuna" else ".json"
    checkpoint = args.checkpoint or f"tune-{config.name()}-{config.model}{suffix}"
    with contextlib.nullcontext() if args.verbose else quiet_ax():
        record = tune(
            config,
            checkpoint,
            resume=args.resume,
            overwrite=args.overwrite,
            workers=args.workers,
            ray_address=args.ray,
            threads=args.threads,
            progress=not args.quiet,
        )
    path, runs = plot_checkpoints([checkpoint], args.plot or _png(checkpoint))
    print(summary(runs))
    done = [t for t in record["trials"].values() if "score" in t]
    if len(config.objectives) == 1:
        sign = 1 if next(iter(config.objectives.values())) == "max" else -1
        best = max(done, key=lambda t: sign * t["score"])
        print(f"best parameters: {best['parameters']}")
    else:
        front = pareto_front(done, config.objectives)
        print(f"{len(front)} Pareto-optimal trials; the first few:")
        for t in front[:5]:
            print(f"  {t['values']}: {t['parameters']}")
    print(f"wrote {checkpoint} and {path}")
    return 0


def pareto_front(trials: list[dict], objectives: dict[str, str]) -> list[dict]:
    r"""The trials no other trial dominates, given each objective's direction."""
    signs = {n: 1.0 if d == "max" else -1.0 for n, d in objectives.items()}

    def key(t: dict) -> list[float]:
        return [signs[n] * t["values"][n] for n in objectives]

    points = [key(t) for t in trials]
    return [
        t
        for t, p in zip(trials, points, strict=True)
        if not any(
            all(a >= b for a, b in zip(q, p, strict=True)) and q != p for q in points
        )
    ]


def _png(checkpoint: str) -> str:
    stem, ext = os.path.splitext(checkpoint)
    return (stem if ext in (".json", ".db") else checkpoint) + ".png"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    r"""The ``tune`` command; returns the exit status."""
    description, epilog = help_texts()
    parser = add_arguments(
        argparse.ArgumentParser(
            prog=prog,
            description=description,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    )
    return dispatch(parser, parser.parse_args(argv))


def dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    r"""Run ``args``, reporting ``TuneError`` as ``parser``'s error (exit 2)."""
    try:
        return run(args)
    except TuneError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted; continue with --resume", file=sys.stderr)
        return 130
