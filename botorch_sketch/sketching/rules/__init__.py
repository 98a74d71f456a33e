r"""Selection rules: one way to choose points, a small object with one method.

Every rule is a :class:`SelectionRule` (:mod:`.rule`) holding an explicit random
generator (:mod:`.random_rule`): inducing-set rules (ridge leverage sampling,
:mod:`.leverage`; greedy variance, :mod:`.greedy`; uniform and fixed,
:mod:`.selection`), subset rules for subset GPs (:mod:`.subset`), Bernoulli
admission (:mod:`.bernoulli`) and KORS's online dictionary (:mod:`.kors`).
"""

from botorch_sketch.sketching.rules.bernoulli import BernoulliRule
from botorch_sketch.sketching.rules.greedy import (
    GreedyVarianceSelector,
    greedy_variance_pivots,
)
from botorch_sketch.sketching.rules.kors import KORS, theoretical_gamma
from botorch_sketch.sketching.rules.leverage import (
    InducingSetCapWarning,
    RidgeLeverageSampler,
    expected_size,
    leverage_scores,
)
from botorch_sketch.sketching.rules.random_rule import RandomRule
from botorch_sketch.sketching.rules.rule import Candidates, SelectionRule
from botorch_sketch.sketching.rules.selection import (
    FixedSelector,
    UniformSelector,
    distinct_rows,
)
from botorch_sketch.sketching.rules.subset import (
    GradientDiversitySubset,
    GreedyVarianceSubset,
    NeighbourhoodSubset,
    RandomSubset,
)

__all__ = [
    "BernoulliRule",
    "Candidates",
    "FixedSelector",
    "GradientDiversitySubset",
    "GreedyVarianceSelector",
    "GreedyVarianceSubset",
    "InducingSetCapWarning",
    "KORS",
    "NeighbourhoodSubset",
    "RandomRule",
    "RandomSubset",
    "RidgeLeverageSampler",
    "SelectionRule",
    "UniformSelector",
    "distinct_rows",
    "expected_size",
    "greedy_variance_pivots",
    "leverage_scores",
    "theoretical_gamma",
]
