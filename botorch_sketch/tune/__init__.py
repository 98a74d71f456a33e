#!/usr/bin/env python3
r"""Tuning scikit-learn estimators through Ax: ``botorch-sketch tune``.

Needs the ``ax`` extra (and ``ray`` for ``--ray``); see
:mod:`botorch_sketch.tune.cli`.
"""

from botorch_sketch.tune.run import TuneConfig, TuneError, tune

__all__ = ["TuneConfig", "TuneError", "tune"]
