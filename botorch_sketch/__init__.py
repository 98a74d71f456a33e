#!/usr/bin/env python3
r"""botorch-sketch: scalable Gaussian-process Bayesian optimisation for BoTorch.

Models whose cost grows with the effective dimension of the data rather than
with the number of observations, as drop-in replacements for ``SingleTaskGP``.

The names below are imported on first use (``from botorch_sketch import
NystromGP`` works as before): importing the package itself, as the
``botorch-sketch`` command does, loads neither torch nor BoTorch, which take
seconds to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botorch_sketch.lazy import lazy_exports

if TYPE_CHECKING:
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

#: Each public name and the subpackage it is imported from on first use.
_EXPORTS: dict[str, str] = {
    "BKBUpperConfidenceBound": "botorch_sketch.acquisition",
    "qBKBUpperConfidenceBound": "botorch_sketch.acquisition",
    "GradientSubsetGP": "botorch_sketch.models",
    "IncrementalNystromModel": "botorch_sketch.models",
    "NystromGP": "botorch_sketch.models",
    "SGDLinearModel": "botorch_sketch.models",
    "Candidates": "botorch_sketch.sketching",
    "FixedSelector": "botorch_sketch.sketching",
    "GradientDiversitySubset": "botorch_sketch.sketching",
    "GreedyVarianceSelector": "botorch_sketch.sketching",
    "GreedyVarianceSubset": "botorch_sketch.sketching",
    "RandomSubset": "botorch_sketch.sketching",
    "RidgeLeverageSampler": "botorch_sketch.sketching",
    "SelectionRule": "botorch_sketch.sketching",
    "UniformSelector": "botorch_sketch.sketching",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
