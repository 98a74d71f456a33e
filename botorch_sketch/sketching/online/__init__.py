r"""Online sketched regression: a dictionary and read-outs grown one point at a time.

EK-UCB's model, whose dictionary grows with the data (:mod:`.incremental`), and
a fixed candidate set's means and variances kept current under rank-one
updates (:mod:`.tracked`).
"""

from botorch_sketch.sketching.online.incremental import (
    DictionaryRule,
    Evaluation,
    IncrementalNystrom,
)
from botorch_sketch.sketching.online.tracked import TrackedCandidates

__all__ = ["DictionaryRule", "Evaluation", "IncrementalNystrom", "TrackedCandidates"]
