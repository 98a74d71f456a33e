#!/usr/bin/env python3
r"""BoTorch models built on :mod:`botorch_sketch.sketching`."""

from botorch_sketch.models import pathwise  # noqa: F401 (registers NystromGP)
from botorch_sketch.models.incremental import IncrementalNystromModel, ucb_action
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.models.sgd_linear import SGDLinearModel

__all__ = ["IncrementalNystromModel", "NystromGP", "SGDLinearModel", "ucb_action"]
