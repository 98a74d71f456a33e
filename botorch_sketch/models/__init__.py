#!/usr/bin/env python3
r"""BoTorch models built on :mod:`botorch_sketch.sketching`."""

from botorch_sketch.models.nystrom_gp import NystromGP

__all__ = ["NystromGP"]
