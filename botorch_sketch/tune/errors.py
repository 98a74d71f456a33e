#!/usr/bin/env python3
r"""The error a tune run reports as a message, and values shown in messages."""

from __future__ import annotations

from typing import Any


class TuneError(Exception):
    r"""A problem with the user's input or checkpoint, reported without traceback."""


def describe(value: Any) -> str:
    r"""A value for a message, at most 60 characters long.

    A 4000-digit integer or a long nested list from a damaged file must neither
    flood the terminal nor fail to print.

    Args:
        value: Any value (read from the command line or a checkpoint).

    Returns:
        Its ``repr``, shortened with ``...``, or a description of it.
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1e18:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."
