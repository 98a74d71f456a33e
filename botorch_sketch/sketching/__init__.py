#!/usr/bin/env python3
r"""The mathematics shared by every model and bandit policy.

Nystrom embeddings, the weight posterior in their coordinates (the DTC posterior,
its online updates, ridge regression and KORS's leverage), selection rules (one
way to choose points: inducing sets, subsets, dictionaries, admissions),
and SGD tracking of least-squares solutions. Torch and gpytorch kernels only;
nothing here knows about BoTorch models.
"""

from botorch_sketch.sketching.arm_set_sgd import ArmSetSGD
from botorch_sketch.sketching.bernoulli import BernoulliRule
from botorch_sketch.sketching.confidence import bkb_width
from botorch_sketch.sketching.dtc import (
    DTCPosterior,
    DTCReadout,
    DTCStatistics,
    posterior_variance,
)
from botorch_sketch.sketching.embedded import EmbeddedPoints
from botorch_sketch.sketching.features import (
    FeatureMap,
    IdentityFeatures,
    NystromFeatures,
    RandomFourierFeatures,
)
from botorch_sketch.sketching.incremental import IncrementalNystrom
from botorch_sketch.sketching.kernels import kernel_diagonal, kernel_matrix
from botorch_sketch.sketching.kors import KORS, theoretical_gamma
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.online import OnlineDTC, TrackedCandidates
from botorch_sketch.sketching.ridge import OnlineRidge
from botorch_sketch.sketching.rule import Candidates, SelectionRule
from botorch_sketch.sketching.selection import (
    FixedSelector,
    GreedyVarianceSelector,
    InducingSelector,
    InducingSetCapWarning,
    RidgeLeverageSampler,
    UniformSelector,
    distinct_rows,
    expected_size,
    greedy_variance_pivots,
    leverage_scores,
)
from botorch_sketch.sketching.sgd import (
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    PowerRidge,
    Schedule,
    SGDLeastSquares,
    WidthTracker,
    width_step,
)
from botorch_sketch.sketching.subset import (
    GradientDiversitySubset,
    GreedyVarianceSubset,
    RandomSubset,
    SubsetRule,
)
from botorch_sketch.sketching.weight_posterior import WeightPosterior

__all__ = [
    "BernoulliRule",
    "Candidates",
    "SelectionRule",
    "GradientDiversitySubset",
    "GreedyVarianceSubset",
    "RandomSubset",
    "SubsetRule",
    "greedy_variance_pivots",
    "KORS",
    "IncrementalNystrom",
    "theoretical_gamma",
    "FeatureMap",
    "IdentityFeatures",
    "NystromFeatures",
    "OnlineDTC",
    "OnlineRidge",
    "RandomFourierFeatures",
    "TrackedCandidates",
    "WidthTracker",
    "bkb_width",
    "kernel_diagonal",
    "kernel_matrix",
    "width_step",
    "Constant",
    "HarmonicStep",
    "InverseRidge",
    "OffsetHarmonicStep",
    "PowerRidge",
    "SGDLeastSquares",
    "ArmSetSGD",
    "Schedule",
    "DTCPosterior",
    "DTCReadout",
    "DTCStatistics",
    "EmbeddedPoints",
    "WeightPosterior",
    "FixedSelector",
    "GreedyVarianceSelector",
    "InducingSelector",
    "InducingSetCapWarning",
    "NystromEmbedding",
    "RidgeLeverageSampler",
    "UniformSelector",
    "distinct_rows",
    "expected_size",
    "leverage_scores",
    "posterior_variance",
]
