r"""Least squares on features: exact online ridge and SGD tracking.

Exact ridge regression by rank-one updates (:mod:`.ridge`), SGD tracking of a
drifting least-squares solution (:mod:`.sgd`) with its step and ridge schedules
(:mod:`.schedules`), SGD tracking of the LinUCB widths (:mod:`.width`), and
fLinUCB-GD's two iterations on a fixed arm set (:mod:`.arm_set_sgd`).
"""

from botorch_sketch.sketching.linear.arm_set_sgd import ArmSetSGD
from botorch_sketch.sketching.linear.ridge import OnlineRidge
from botorch_sketch.sketching.linear.schedules import (
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    PowerRidge,
    Schedule,
)
from botorch_sketch.sketching.linear.sgd import SGDLeastSquares
from botorch_sketch.sketching.linear.width import WidthTracker, width_step

__all__ = [
    "ArmSetSGD",
    "Constant",
    "HarmonicStep",
    "InverseRidge",
    "OffsetHarmonicStep",
    "OnlineRidge",
    "PowerRidge",
    "SGDLeastSquares",
    "Schedule",
    "WidthTracker",
    "width_step",
]
