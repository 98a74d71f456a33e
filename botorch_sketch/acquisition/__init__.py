#!/usr/bin/env python3
r"""Acquisition functions on this package's models.

Importing this module registers them with BoTorch's input constructors, so Ax
can name them by class.
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

__all__ = [
    "BKBUpperConfidenceBound",
    "bkb_beta",
    "marginal_baseline",
    "marginal_baseline_index",
    "qLogNEIMarginalBaseline",
    "qBKBUpperConfidenceBound",
    "ucb_action",
]
