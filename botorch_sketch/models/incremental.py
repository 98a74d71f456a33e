#!/usr/bin/env python3
r"""Deprecated: use :mod:`botorch_sketch.models.incremental_nystrom_model`.

The BoTorch view of the online Nystrom model was renamed so that it is not
confused with :mod:`botorch_sketch.sketching.incremental` (the online model).
"""

from botorch_sketch.deprecation import warn_moved_module
from botorch_sketch.models.incremental_nystrom_model import IncrementalNystromModel

warn_moved_module(__name__, "botorch_sketch.models.incremental_nystrom_model")

__all__ = ["IncrementalNystromModel"]
