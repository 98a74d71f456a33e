#!/usr/bin/env python3
r"""Finite-arm and contextual bandits: policies, environments, loops."""

from botorch_sketch.bandits.environments import (
    ContextualEnvironment,
    FiniteArmEnvironment,
)
from botorch_sketch.bandits.loop import (
    BanditTrace,
    plot_traces,
    run_contextual,
    run_finite,
)
from botorch_sketch.bandits.policy import (
    ContextualPolicy,
    FiniteArmPolicy,
    argmax_first,
)

__all__ = [
    "BanditTrace",
    "ContextualEnvironment",
    "ContextualPolicy",
    "FiniteArmEnvironment",
    "FiniteArmPolicy",
    "argmax_first",
    "plot_traces",
    "run_contextual",
    "run_finite",
]
