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

from __future__ import annotations

from typing import TYPE_CHECKING

from botorch_sketch.lazy import lazy_exports

if TYPE_CHECKING:
    from botorch_sketch.tune.config import TuneConfig
    from botorch_sketch.tune.errors import TuneError
    from botorch_sketch.tune.loop import tune

#: Each public name and its module, imported on first use, so that ``botorch-sketch
#: tune --help`` does not wait for torch, BoTorch and Ax (the loop's imports).
_EXPORTS: dict[str, str] = {
    "TuneConfig": "botorch_sketch.tune.config",
    "TuneError": "botorch_sketch.tune.errors",
    "tune": "botorch_sketch.tune.loop",
}

__all__ = ["TuneConfig", "TuneError", "tune"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
