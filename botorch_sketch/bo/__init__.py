r"""Bayesian-optimisation loop helpers.

The incremental surrogate a user's loop calls each iteration
(:class:`IncrementalGP`), TuRBO-1 trust regions, and the large-batch Thompson
loop (:func:`run_large_batch`) and its ask/tell form
(:class:`LargeBatchOptimizer`, with data-only checkpoints), and CMA-ES
pre-screened by the same carried surrogate (:class:`ScreenedCMAES`). The benchmarks'
side-by-side loops live in
:mod:`benchmarks.harness`.
"""

from botorch_sketch.bo.ask_tell import AskRecord, LargeBatchOptimizer
from botorch_sketch.bo.checkpoint import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from botorch_sketch.bo.gssbo import (
    GSSBO,
    GSSBOSurrogate,
    GSSBOTrace,
    acquisition_factory,
    run_gssbo,
)
from botorch_sketch.bo.incremental_gp import IncrementalGP, UpdateCounts
from botorch_sketch.bo.large_batch import (
    FailedBatchWarning,
    LargeBatchTrace,
    plot_large_batch,
    run_large_batch,
    trace_from_checkpoint,
)
from botorch_sketch.bo.regions import TrustRegions
from botorch_sketch.bo.sampling import path_values, posterior_means
from botorch_sketch.bo.screened_cma import ScreenedCMAES
from botorch_sketch.bo.surrogate_cma import SurrogateCMAES
from botorch_sketch.bo.thompson import (
    Batch,
    candidate_set,
    default_surrogate,
    posterior_incumbents,
    thompson_batch,
)
from botorch_sketch.bo.trust_region import (
    TurboState,
    generate_batch,
    lengthscale_weights,
    restart_state,
    trust_region_bounds,
    update_state,
)

__all__ = [
    "AskRecord",
    "CheckpointError",
    "LargeBatchOptimizer",
    "load_checkpoint",
    "save_checkpoint",
    "Batch",
    "FailedBatchWarning",
    "GSSBO",
    "GSSBOSurrogate",
    "GSSBOTrace",
    "acquisition_factory",
    "run_gssbo",
    "TrustRegions",
    "ScreenedCMAES",
    "SurrogateCMAES",
    "path_values",
    "posterior_means",
    "LargeBatchTrace",
    "candidate_set",
    "default_surrogate",
    "plot_large_batch",
    "posterior_incumbents",
    "run_large_batch",
    "thompson_batch",
    "trace_from_checkpoint",
    "IncrementalGP",
    "TurboState",
    "UpdateCounts",
    "generate_batch",
    "lengthscale_weights",
    "restart_state",
    "trust_region_bounds",
    "update_state",
]
