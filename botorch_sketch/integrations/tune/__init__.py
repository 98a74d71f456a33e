#!/usr/bin/env python3
r"""Tuning scikit-learn estimators or your own objective: ``botorch-sketch tune``.

Needs the ``tune`` extra (``ray`` for ``--ray``, ``optuna`` for ``--backend
optuna``); see :mod:`botorch_sketch.integrations.tune.cli`.
"""

from botorch_sketch.integrations.tune.run import TuneConfig, TuneError, tune

__all__ = ["TuneConfig", "TuneError", "tune"]
