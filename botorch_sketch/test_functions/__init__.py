r"""Test functions for large-budget BO, in BoTorch's ``SyntheticTestFunction`` form.

:class:`RoverTrajectory` (rover-60, maximised) and :class:`ShiftedProblem` (a
BoTorch function whose optimum is moved off the centre of its box, where
CMA-ES and a centred design start). Both take ``b x d`` inputs and return
``b`` values, as BoTorch's do.
"""

from botorch_sketch.test_functions.rover import (
    ROVER_OBSTACLES,
    RoverTrajectory,
    clamped_bspline_basis,
)
from botorch_sketch.test_functions.shifted import ShiftedProblem

__all__ = [
    "ROVER_OBSTACLES",
    "RoverTrajectory",
    "ShiftedProblem",
    "clamped_bspline_basis",
]
