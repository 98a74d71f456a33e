#!/usr/bin/env python3
r"""Acquisition functions on this package's models.

Importing this module registers the BKB bounds and qLogNEI's marginal baseline
with BoTorch's input constructors, so Ax can name them by class.
:class:`LogExpectedHypervolumeImprovement` (the analytic log EHVI of one point,
which ``SketchSampler`` takes for several objectives) has no input constructor.
"""

from botorch_sketch.acquisition.baseline import (
    marginal_baseline,
    marginal_baseline_index,
    qLogNEIMarginalBaseline,
)
from botorch_sketch.acquisition.bkb_ucb import (
    BKBUpperConfidenceBound,
    bkb_beta,
    qBKBUpperConfidenceBound,
)
from botorch_sketch.acquisition.contextual_ucb import ucb_action
from botorch_sketch.acquisition.log_ehvi import LogExpectedHypervolumeImprovement

__all__ = [
    "BKBUpperConfidenceBound",
    "bkb_beta",
    "LogExpectedHypervolumeImprovement",
    "marginal_baseline",
    "marginal_baseline_index",
    "qLogNEIMarginalBaseline",
    "qBKBUpperConfidenceBound",
    "ucb_action",
]
