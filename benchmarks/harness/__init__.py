r"""The benchmarks' BO harness: loops that run models side by side.

:func:`run_bo` runs one model (any model of this project, or ``SingleTaskGP``,
described by a :class:`ModelSpec`) through a BO loop on a BoTorch test function
and records a :class:`BOTrace`; :func:`run_turbo` does the same inside a
TuRBO-1 trust region. User-facing loop helpers live in :mod:`botorch_sketch.bo`
(GSSBO's subset switch among them: :class:`~botorch_sketch.bo.GSSBOSurrogate`).
"""

from benchmarks.harness.loop import (
    BOTrace,
    ModelSpec,
    build_model,
    count_evaluations,
    fit_model,
    make_acquisition,
    plot_bo_traces,
    run_bo,
)
from benchmarks.harness.turbo_loop import TurboTrace, run_turbo

__all__ = [
    "BOTrace",
    "ModelSpec",
    "TurboTrace",
    "build_model",
    "count_evaluations",
    "fit_model",
    "make_acquisition",
    "plot_bo_traces",
    "run_bo",
    "run_turbo",
]
