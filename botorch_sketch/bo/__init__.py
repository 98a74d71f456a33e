r"""Bayesian-optimisation loop helpers.

The incremental surrogate a user's loop calls each iteration, and loops that
compare models side by side.
"""

from botorch_sketch.bo.incremental_gp import IncrementalGP, UpdateCounts
from botorch_sketch.bo.loop import (
    BOTrace,
    ModelSpec,
    make_acquisition,
    plot_bo_traces,
    run_bo,
)
from botorch_sketch.bo.triggers import CountTrigger, SubsetTrigger, TimeTrigger

__all__ = [
    "BOTrace",
    "CountTrigger",
    "IncrementalGP",
    "ModelSpec",
    "SubsetTrigger",
    "TimeTrigger",
    "UpdateCounts",
    "make_acquisition",
    "plot_bo_traces",
    "run_bo",
]
