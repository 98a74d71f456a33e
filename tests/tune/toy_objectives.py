"""Toy objectives for the ``--objective`` tests (imported by name, like a user's)."""

import math
import os

#: Not a function: ``--objective toy_objectives:NOT_CALLABLE`` must say so.
NOT_CALLABLE = 3


def quadratic(params):
    """A float to minimise: a bowl in x and n, plus a penalty for kind "b"."""
    penalty = 0.5 if params["kind"] == "b" else 0.0
    return (params["x"] - 0.3) ** 2 + (params["n"] - 4) ** 2 / 10 + penalty


def two(params):
    """Two objectives and an extra key (ignored): loss to minimise, size to keep."""
    return {
        "loss": (params["x"] - 0.3) ** 2,
        "size": float(params["n"]),
        "note": "extra keys are ignored",
    }


def nan_above(params):
    """NaN (a failed trial) for x above 0.7, else a float."""
    return math.nan if params["x"] > 0.7 else (params["x"] - 0.3) ** 2


def text(params):
    """Returns a text: a bad return value."""
    return "high"


def inf_above(params):
    """Infinity for x above 0.8 (minus infinity below 0.05), else a float."""
    if params["x"] > 0.8:
        return math.inf
    return -math.inf if params["x"] < 0.05 else (params["x"] - 0.3) ** 2


def size(params):
    """The integer parameter n as a float (a space of n alone)."""
    return float(params["n"])


def nan_half(params):
    """NaN (a failed trial) for x above 0.5: half the space, else a float."""
    return math.nan if params["x"] > 0.5 else (params["x"] - 0.3) ** 2


def exit_above(params):
    """Ends its process (as a crash or the OOM killer would) for x above 0.7."""
    if params["x"] > 0.7:
        os._exit(1)
    return (params["x"] - 0.3) ** 2
