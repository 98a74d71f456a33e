#!/usr/bin/env python3
r"""The ``botorch-sketch`` command.

Subcommands:
    tune: tune a scikit-learn estimator or your own objective through Ax or
        Optuna (:mod:`botorch_sketch.tune`).
"""

from __future__ import annotations

import argparse
import sys

from botorch_sketch.tune import cli as tune_cli


def main(argv: list[str] | None = None) -> int:
    r"""Parse the subcommand and run it; returns the exit status."""
    parser = argparse.ArgumentParser(prog="botorch-sketch")
    commands = parser.add_subparsers(dest="command", required=True)
    description, epilog = tune_cli.help_texts()
    tune = commands.add_parser(
        "tune",
        help="tune a scikit-learn estimator or your own objective through Ax or "
        "Optuna with NystromGP",
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tune_cli.add_arguments(tune)
    args = parser.parse_args(argv)
    return tune_cli.dispatch(tune, args)


if __name__ == "__main__":
    sys.exit(main())
