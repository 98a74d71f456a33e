#!/usr/bin/env python3
r"""The ``botorch-sketch`` command.

Subcommands:
    tune: tune a scikit-learn estimator or your own objective through Ax or
        Optuna (:mod:`botorch_sketch.tune`).

A subcommand's module is imported only when the command line names it, so that
``botorch-sketch --help`` answers at once: the tuning code imports torch, BoTorch
and Ax, which take seconds.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

#: Each subcommand and its one-line help.
COMMANDS = {
    "tune": "tune a scikit-learn estimator or your own objective through Ax or "
    "Optuna with NystromGP",
}


def build_parser(
    argv: Sequence[str],
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    r"""The command's parser, with the options of the subcommands ``argv`` names.

    Args:
        argv: The command line (without the program's name). A subcommand that
            appears in it gets its options (and imports its module); the others
            get only their one-line help, which is all ``--help`` shows of them.

    Returns:
        The parser and each subcommand's parser, by name.
    """
    parser = argparse.ArgumentParser(
        prog="botorch-sketch",
        epilog="Run `botorch-sketch COMMAND --help` for a command's options.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    subparsers = {
        name: commands.add_parser(
            name, help=text, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        for name, text in COMMANDS.items()
    }
    if "tune" in argv:
        from botorch_sketch.tune import cli as tune_cli

        tune = subparsers["tune"]
        tune.description, tune.epilog = tune_cli.help_texts()
        tune_cli.add_arguments(tune)
    return parser, subparsers


def main(argv: Sequence[str] | None = None) -> int:
    r"""Parse the subcommand and run it; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, subparsers = build_parser(argv)
    args = parser.parse_args(argv)
    from botorch_sketch.tune import cli as tune_cli

    return tune_cli.dispatch(subparsers[args.command], args)


if __name__ == "__main__":
    sys.exit(main())
