r"""Bayesian-optimisation loop helpers.

The incremental surrogate a user's loop calls each iteration, and loops that
compare models side by side.
"""

from botorch_sketch.bo.incremental_gp import IncrementalGP, UpdateCounts
from botorch_sketch.bo.large_batch import (
    Batch,
    LargeBatchTrace,
    candidate_set,
    default_surrogate,
    plot_large_batch,
    posterior_incumbents,
    run_large_batch,
    thompson_batch,
)
from botorch_sketch.bo.loop import (
    BOTrace,
    ModelSpec,
    make_acquisition,
    plot_bo_traces,
    run_bo,
)
from botorch_sketch.bo.triggers import CountTrigger, SubsetTrigger, TimeTrigger
from botorch_sketch.bo.trust_region import (
    TurboState,
    generate_batch,
    lengthscale_weights,
    restart_state,
    trust_region_bounds,
    update_state,
)
from botorch_sketch.bo.turbo_loop import TurboTrace, run_turbo

__all__ = [
    "BOTrace",
    "Batch",
    "LargeBatchTrace",
    "candidate_set",
    "default_surrogate",
    "plot_large_batch",
    "posterior_incumbents",
    "run_large_batch",
    "thompson_batch",
    "CountTrigger",
    "IncrementalGP",
    "ModelSpec",
    "SubsetTrigger",
    "TimeTrigger",
    "TurboState",
    "TurboTrace",
    "UpdateCounts",
    "generate_batch",
    "lengthscale_weights",
    "make_acquisition",
    "plot_bo_traces",
    "restart_state",
    "run_bo",
    "run_turbo",
    "trust_region_bounds",
    "update_state",
]
