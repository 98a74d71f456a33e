#!/usr/bin/env python3
r"""BoTorch models built on :mod:`botorch_sketch.sketching`."""

from botorch_sketch.models import pathwise  # noqa: F401 (registers NystromGP)
from botorch_sketch.models.gradient_subset_gp import (
    GradientSubsetGP,
    feature_residual_gradients,
    hyperparameter_gradients,
    scalar_residual_gradients,
)
from botorch_sketch.models.gss_nystrom import fit_gss_nystrom, nystrom_from_subset
from botorch_sketch.models.incremental_nystrom_model import IncrementalNystromModel
from botorch_sketch.models.nystrom_batched import BatchedNystromGP
from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.models.nystrom_outcomes import MultiOutputNystromGP
from botorch_sketch.models.sgd_linear import SGDLinearModel

__all__ = [
    "BatchedNystromGP",
    "GradientSubsetGP",
    "IncrementalNystromModel",
    "MultiOutputNystromGP",
    "NystromGP",
    "SGDLinearModel",
    "feature_residual_gradients",
    "fit_gss_nystrom",
    "hyperparameter_gradients",
    "nystrom_from_subset",
    "scalar_residual_gradients",
]
