#!/usr/bin/env python3
r"""Finite-arm and contextual bandits: policies, environments, loops."""

from botorch_sketch.bandits.bkb import BKB
from botorch_sketch.bandits.contextual import (
    CBBKB,
    CBKB,
    EKUCB,
    KernelUCB,
    OnlineKernelUCB,
)
from botorch_sketch.bandits.contextual_environments import (
    Bump,
    Chessboard,
    DigitsBandit,
    GridActionEnvironment,
    StepDiagonal,
)
from botorch_sketch.bandits.continuous import ContinuousActionUCB
from botorch_sketch.bandits.continuous_environments import (
    ContinuousActionEnvironment,
    ContinuousBump,
)
from botorch_sketch.bandits.dtc_ucb import DTCUCB
from botorch_sketch.bandits.environments import (
    ContextualEnvironment,
    FiniteArmEnvironment,
)
from botorch_sketch.bandits.fixed_arms import FixedArmSet
from botorch_sketch.bandits.gp_ucb import GPUCB
from botorch_sketch.bandits.linear_environments import (
    SphereEnvironment,
    sphere_arms_environment,
)
from botorch_sketch.bandits.linucb import LinUCB, SGDLinUCB
from botorch_sketch.bandits.loop import (
    BanditTrace,
    plot_experiments,
    plot_traces,
    run_contextual,
    run_continuous_contextual,
    run_finite,
)
from botorch_sketch.bandits.pege import PEGE, SGDPEGE
from botorch_sketch.bandits.policy import (
    ContextualPolicy,
    FiniteArmPolicy,
    argmax_first,
)
from botorch_sketch.bandits.random_policy import RandomPolicy
from botorch_sketch.bandits.replay import (
    ReplayLog,
    ReplayResult,
    digits_log,
    replay,
    replay_side_by_side,
)

__all__ = [
    "BKB",
    "CBBKB",
    "CBKB",
    "EKUCB",
    "Bump",
    "Chessboard",
    "ContinuousActionEnvironment",
    "ContinuousActionUCB",
    "ContinuousBump",
    "DigitsBandit",
    "GridActionEnvironment",
    "KernelUCB",
    "OnlineKernelUCB",
    "StepDiagonal",
    "DTCUCB",
    "GPUCB",
    "PEGE",
    "SGDPEGE",
    "BanditTrace",
    "ContextualEnvironment",
    "ContextualPolicy",
    "FiniteArmEnvironment",
    "FiniteArmPolicy",
    "FixedArmSet",
    "LinUCB",
    "RandomPolicy",
    "ReplayLog",
    "ReplayResult",
    "SGDLinUCB",
    "SphereEnvironment",
    "argmax_first",
    "digits_log",
    "plot_experiments",
    "plot_traces",
    "replay",
    "replay_side_by_side",
    "run_contextual",
    "run_continuous_contextual",
    "run_finite",
    "sphere_arms_environment",
]
