#!/usr/bin/env python3
r"""An Optuna sampler backed by this package's models and BoTorch's acquisitions.

:class:`SketchSampler` is an Optuna sampler that fits
:class:`~botorch_sketch.models.NystromGP` (or
:class:`~botorch_sketch.models.GradientSubsetGP`, or any model a factory returns)
to the completed trials and suggests the next one by maximising BoTorch's
``qLogNoisyExpectedImprovement`` (one objective) or
``qLogNoisyExpectedHypervolumeImprovement`` (several), with the running trials as
pending points (a trial chosen alone: analytic ``LogExpectedImprovement``, or
``qLogExpectedHypervolumeImprovement`` over the posterior means' Pareto front).
Its model costs ``O(n m^2)`` per fit for ``n`` trials and an
inducing set of ``m``, against the ``O(n^3)`` of Optuna's exact-GP ``GPSampler``;
BoTorch's acquisition optimisation adds about a second per trial whatever ``n``,
so ``GPSampler`` is the faster of the two below about a thousand trials.

:func:`nystrom_candidates_func` plugs the same model into optuna-integration's
``BoTorchSampler`` through its ``candidates_func`` argument, refitted from
scratch each trial as optuna-integration's own candidates functions are;
:class:`NystromCandidates` does the same with the model carried from trial to
trial.

Install with ``pip install -e ".[optuna]"``.

The modules: :mod:`.sampler` (``SketchSampler``), :mod:`.options` (its checked
options), :mod:`.state` (what it carries from trial to trial), :mod:`.trials`
(what it reads from and writes to a study's trials), :mod:`.encoding` (the
search space as the unit cube), :mod:`.warping` (observed values as modelled),
:mod:`.acquisition` (fitting and maximising the acquisition) and
:mod:`.candidates` (the candidates functions for ``BoTorchSampler``).

Example:
    >>> import optuna
    >>> from botorch_sketch.integrations.optuna import SketchSampler
    >>> study = optuna.create_study(sampler=SketchSampler(seed=0))
    >>> study.optimize(objective, n_trials=500)
"""

try:
    import optuna  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "botorch_sketch.integrations.optuna needs Optuna: "
        "pip install -e '.[optuna]' in a clone"
    ) from e

from botorch_sketch.integrations.optuna.candidates import (
    NystromCandidates,
    nystrom_candidates_func,
)
from botorch_sketch.integrations.optuna.options import ModelFactory as ModelFactory
from botorch_sketch.integrations.optuna.sampler import SketchSampler

# Samplers pickled before this module became a package name the warping here.
from botorch_sketch.integrations.optuna.warping import _HalfRankWarp  # noqa: F401

__all__ = ["NystromCandidates", "SketchSampler", "nystrom_candidates_func"]
