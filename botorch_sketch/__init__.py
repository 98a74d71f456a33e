#!/usr/bin/env python3
r"""botorch-sketch: scalable Gaussian-process Bayesian optimisation for BoTorch.

Models whose cost grows with the effective dimension of the data rather than
with the number of observations, as drop-in replacements for ``SingleTaskGP``.
"""

from botorch_sketch.acquisition import (
    BKBUpperConfidenceBound,
    qBKBUpperConfidenceBound,
)
from botorch_sketch.models import (
    GradientSubsetGP,
    IncrementalNystromModel,
    NystromGP,
    SGDLinearModel,
)
from botorch_sketch.sketching import (
    Candidates,
    FixedSelector,
    GradientDiversitySubset,
    GreedyVarianceSelector,
    GreedyVarianceSubset,
    RandomSubset,
    RidgeLeverageSampler,
    SelectionRule,
    UniformSelector,
)

__version__ = "0.1.0"

__all__ = [
    "BKBUpperConfidenceBound",
    "Candidates",
    "FixedSelector",
    "GradientDiversitySubset",
    "GradientSubsetGP",
    "GreedyVarianceSubset",
    "GreedyVarianceSelector",
    "IncrementalNystromModel",
    "NystromGP",
    "RandomSubset",
    "RidgeLeverageSampler",
    "SGDLinearModel",
    "SelectionRule",
    "UniformSelector",
    "qBKBUpperConfidenceBound",
]
