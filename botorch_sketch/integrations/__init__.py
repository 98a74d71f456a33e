#!/usr/bin/env python3
r"""Integrations with other libraries, each an optional extra.

:mod:`botorch_sketch.integrations.ax` (``pip install botorch-sketch[ax]``) builds
Ax generation strategies that use this package's models;
:mod:`botorch_sketch.integrations.optuna` (``pip install botorch-sketch[optuna]``)
is an Optuna sampler on them. Importing this package imports none of them.
"""
