#!/usr/bin/env python3
r"""Integrations with other libraries, each an optional extra.

:mod:`botorch_sketch.integrations.ax` (the ``ax`` extra: ``pip install -e ".[ax]"``
in a clone) builds Ax generation strategies that use this package's models, and
:mod:`botorch_sketch.integrations.ax_carried` a ``NystromGP`` that carries its
hyperparameters from one Ax trial to the next;
:mod:`botorch_sketch.integrations.optuna` (the ``optuna`` extra:
``pip install -e ".[optuna]"``) is an Optuna sampler on them;
:mod:`botorch_sketch.integrations.ray_statistics` (the ``ray`` extra) builds a
``NystromGP`` on sharded data, its statistics summed on Ray workers, and
:mod:`botorch_sketch.integrations.ray_async` runs a ``LargeBatchOptimizer``'s
evaluations asynchronously on Ray workers. Importing this package imports none
of them.
"""
