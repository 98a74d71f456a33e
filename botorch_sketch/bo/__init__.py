r"""Bayesian-optimisation loops that compare models side by side."""

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
    "ModelSpec",
    "SubsetTrigger",
    "TimeTrigger",
    "make_acquisition",
    "plot_bo_traces",
    "run_bo",
]
