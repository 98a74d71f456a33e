#!/usr/bin/env python3
r"""Tuning scikit-learn estimators or your own objective: ``botorch-sketch tune``.

Needs the ``tune`` extra (``ray`` for ``--ray``, ``optuna`` for ``--backend
optuna``); the command is :mod:`botorch_sketch.tune.cli`, also run as
``python -m botorch_sketch.tune``. The modules, by idea:

- :mod:`~botorch_sketch.tune.config`: the run's settings (:class:`TuneConfig`).
- :mod:`~botorch_sketch.tune.loop`: the tuning loop (:func:`tune`).
- :mod:`~botorch_sketch.tune.ax_backend` and :mod:`~botorch_sketch.tune.ax_client`:
  the Ax side; :mod:`~botorch_sketch.tune.optuna_backend` and
  :mod:`~botorch_sketch.tune.study`: the Optuna side.
- :mod:`~botorch_sketch.tune.checkpoint`, :mod:`~botorch_sketch.tune.validation`
  and :mod:`~botorch_sketch.tune.lock`: the checkpoint file, its checks and lock.
- :mod:`~botorch_sketch.tune.pools`, :mod:`~botorch_sketch.tune.workers` and
  :mod:`~botorch_sketch.tune.evaluation`: where and what trials evaluate.
- :mod:`~botorch_sketch.tune.problems`, :mod:`~botorch_sketch.tune.objective`
  and :mod:`~botorch_sketch.tune.space`: the problems, your objective, its space.
- :mod:`~botorch_sketch.tune.plot`: plots of runs from their checkpoints.
"""

from botorch_sketch.tune.config import TuneConfig
from botorch_sketch.tune.errors import TuneError
from botorch_sketch.tune.loop import tune

__all__ = ["TuneConfig", "TuneError", "tune"]
