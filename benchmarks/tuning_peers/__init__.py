r"""The ``tuning`` benchmark extended: our samplers against Optuna's and Ax's.

Seven methods tune the same scikit-learn estimators:

- ``SketchSampler`` (this package's Optuna sampler: ``NystromGP`` + qLogNEI);
- optuna-integration's ``BoTorchSampler`` with ``NystromCandidates()`` (a carried
  ``NystromGP`` plugged into it);
- Ax with ``NystromGP`` + qLogEI (``botorch-sketch tune``'s strategy);
- Optuna's ``GPSampler`` (an exact GP), ``TPESampler`` (Optuna's default),
  optuna-integration's ``BoTorchSampler`` as it comes (exact ``SingleTaskGP``)
  and Ax's default (``SingleTaskGP`` + qLogNEI).

Every method uses its own default settings and 10 initial (random or Sobol)
trials, one trial at a time, torch and scikit-learn on one thread each.
Three measurements:

- **Seconds to suggest trial N.** ``N - 1`` settings of a scrambled Sobol
  sample with their real scores are added to a study (an Ax client), then the
  next suggestion is timed. ``repeats`` suggestions are timed in a row, each
  discarded (a failed trial) and followed by one more Sobol trial, so that the
  model carries its state from one trial to the next as in a run; the median
  is reported. A method whose median passes ``suggest_cap_s`` is not timed at
  larger N.
- **Best score at equal trials and at equal wall clock.** Each method tunes
  each task for ``trials`` trials (or until ``run_cap_s`` seconds have passed:
  the time cap of the slow peers) with each seed; the best score after each
  trial and the wall clock (suggestion and evaluation) are kept. Noise is
  measured as in ``tuning``: a best score's noise is the standard deviation of
  that setting's accuracy over ``noise_splits`` other fold splits, and two best
  scores are "within noise" when they differ by less than twice the root sum of
  squares of their two standard deviations (with several seeds, the standard
  error of the mean over seeds is added in quadrature).
- **Peak memory.** With ``isolate``, each run and each timing runs in a process
  of its own, whose peak resident set (``ru_maxrss``) is reported, with its
  increase over the process's size once the libraries are imported.
"""

from benchmarks.tuning_peers.config import (
    AX_DEFAULT,
    AX_OURS,
    BOTORCH,
    BOTORCH_NYSTROM,
    BUDGETS,
    GP,
    METHODS,
    OPTUNA,
    PAIRS,
    SKETCH,
    TASKS,
    TPE,
    Budget,
    RunResult,
    Task,
    TimeResult,
)
from benchmarks.tuning_peers.methods import tune_once
from benchmarks.tuning_peers.reporting import (
    best_at_seconds,
    best_at_trials,
    plot,
    render,
    report,
)
from benchmarks.tuning_peers.runner import run
from benchmarks.tuning_peers.timing import (
    sobol_history,
    time_interleaved,
    time_suggestions,
)

__all__ = [
    "AX_DEFAULT",
    "AX_OURS",
    "BOTORCH",
    "BOTORCH_NYSTROM",
    "BUDGETS",
    "GP",
    "METHODS",
    "OPTUNA",
    "PAIRS",
    "SKETCH",
    "TASKS",
    "TPE",
    "Budget",
    "RunResult",
    "Task",
    "TimeResult",
    "best_at_seconds",
    "best_at_trials",
    "plot",
    "render",
    "report",
    "run",
    "sobol_history",
    "time_interleaved",
    "time_suggestions",
    "tune_once",
]
