#!/usr/bin/env python3
r"""The mathematics shared by every model and bandit policy, one folder per idea.

- :mod:`~botorch_sketch.sketching.embedding`: Nystrom embeddings, kernel blocks,
  feature maps.
- :mod:`~botorch_sketch.sketching.posterior`: the weight posterior in Nystrom
  coordinates (the DTC posterior), its statistics and read-outs.
- :mod:`~botorch_sketch.sketching.rules`: selection rules (inducing sets,
  subsets, dictionaries, admissions), each with an explicit generator.
- :mod:`~botorch_sketch.sketching.online`: models and read-outs grown one point
  at a time (EK-UCB's dictionary, tracked candidates).
- :mod:`~botorch_sketch.sketching.linear`: exact online ridge and SGD tracking
  of least-squares solutions.

Torch and gpytorch kernels only; nothing here knows about BoTorch models. The
layers import downwards only (``a`` <- ``b``: ``b`` imports ``a``):
``embedding`` <- ``posterior`` <- ``rules`` <- ``online``, and ``posterior`` <-
``linear`` (exact ridge regression is the weight posterior on the identity
features).
"""

from botorch_sketch.sketching.embedding import (
    FeatureMap,
    IdentityFeatures,
    NystromEmbedding,
    NystromFeatures,
    RandomFourierFeatures,
    kernel_diagonal,
    kernel_matrix,
)
from botorch_sketch.sketching.linear import (
    ArmSetSGD,
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    OnlineRidge,
    PowerRidge,
    Schedule,
    SGDLeastSquares,
    WidthTracker,
    width_step,
)
from botorch_sketch.sketching.online import IncrementalNystrom, TrackedCandidates
from botorch_sketch.sketching.posterior import (
    DTCReadout,
    DTCStatistics,
    EmbeddedPoints,
    WeightPosterior,
    bkb_width,
    posterior_variance,
)
from botorch_sketch.sketching.rules import (
    KORS,
    BernoulliRule,
    Candidates,
    FixedSelector,
    GradientDiversitySubset,
    GreedyVarianceSelector,
    GreedyVarianceSubset,
    InducingSetCapWarning,
    RandomSubset,
    RidgeLeverageSampler,
    SelectionRule,
    UniformSelector,
    distinct_rows,
    expected_size,
    greedy_variance_pivots,
    leverage_scores,
    theoretical_gamma,
)

__all__ = [
    "ArmSetSGD",
    "BernoulliRule",
    "Candidates",
    "Constant",
    "DTCReadout",
    "DTCStatistics",
    "EmbeddedPoints",
    "FeatureMap",
    "FixedSelector",
    "GradientDiversitySubset",
    "GreedyVarianceSelector",
    "GreedyVarianceSubset",
    "HarmonicStep",
    "IdentityFeatures",
    "IncrementalNystrom",
    "InducingSetCapWarning",
    "InverseRidge",
    "KORS",
    "NystromEmbedding",
    "NystromFeatures",
    "OffsetHarmonicStep",
    "OnlineRidge",
    "PowerRidge",
    "RandomFourierFeatures",
    "RandomSubset",
    "RidgeLeverageSampler",
    "SGDLeastSquares",
    "Schedule",
    "SelectionRule",
    "TrackedCandidates",
    "UniformSelector",
    "WeightPosterior",
    "WidthTracker",
    "bkb_width",
    "distinct_rows",
    "expected_size",
    "greedy_variance_pivots",
    "kernel_diagonal",
    "kernel_matrix",
    "leverage_scores",
    "posterior_variance",
    "theoretical_gamma",
    "width_step",
]
