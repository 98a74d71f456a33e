#!/usr/bin/env python3
r"""The grid's problems, all maximised: three BoTorch functions and rover-60.

- ``Hartmann-6``: ``Hartmann(dim=6, noise_std=0.5, negate=True)`` (max 3.32237);
- ``Ackley-20``: ``Ackley(dim=20, noise_std=0.5, negate=True)`` (max 0);
- ``rover-60``: :class:`~botorch_sketch.test_functions.RoverTrajectory`,
  noise-free (max below 5);
- ``Levy-100``: ``Levy(dim=100, negate=True)``, noise-free (max 0);
- ``Ackley-20-shifted`` and ``Levy-100-shifted``: the same functions with their
  optimum moved off the box's centre
  (:class:`~botorch_sketch.test_functions.ShiftedProblem`). Ackley's
  optimum is the centre of its box and Levy's next to it (``x_i = 1`` in
  ``[-10, 10]``), so a method that starts at the centre, as CMA-ES does by
  default, starts at or near the answer.
- ``headline-wide``'s ten and ``headline-check``'s sixteen: other BoTorch
  functions in 4-100 dimensions, five of them shifted the same way.

Every method observes the noisy values; the grid records the noise-free values
(``problem(X, noise=False)``) of the points evaluated.
"""

from __future__ import annotations

from collections.abc import Callable

from botorch.test_functions import (
    Ackley,
    Cosine8,
    DixonPrice,
    Griewank,
    Hartmann,
    Levy,
    Michalewicz,
    Powell,
    Rastrigin,
    Rosenbrock,
    Shekel,
    StyblinskiTang,
)
from botorch.test_functions.synthetic import SyntheticTestFunction

from botorch_sketch.test_functions import RoverTrajectory, ShiftedProblem

#: Problems by name, each a factory of a fresh (maximised) test function.
PROBLEMS: dict[str, Callable[[], SyntheticTestFunction]] = {
    "Hartmann-6": lambda: Hartmann(dim=6, noise_std=0.5, negate=True),
    "Ackley-20": lambda: Ackley(dim=20, noise_std=0.5, negate=True),
    "rover-60": lambda: RoverTrajectory(),
    "Levy-100": lambda: Levy(dim=100, negate=True),
    "Ackley-20-shifted": lambda: ShiftedProblem(
        Ackley, dim=20, noise_std=0.5, negate=True
    ),
    "Levy-100-shifted": lambda: ShiftedProblem(Levy, dim=100, negate=True),
    # BoTorch's own test functions in 4-60 dimensions, none of them used to
    # choose a setting: the check that a default does not fit the six above.
    "Shekel-4": lambda: Shekel(m=10, negate=True),
    "Michalewicz-10": lambda: Michalewicz(dim=10, negate=True),
    "Rosenbrock-30": lambda: Rosenbrock(dim=30, negate=True),
    "Rastrigin-30-noisy": lambda: Rastrigin(dim=30, noise_std=1.0, negate=True),
    "StyblinskiTang-40": lambda: StyblinskiTang(dim=40, negate=True),
    "DixonPrice-40": lambda: DixonPrice(dim=40, negate=True),
    "Levy-40": lambda: Levy(dim=40, negate=True),
    "Powell-48": lambda: Powell(dim=48, negate=True),
    "Griewank-50": lambda: Griewank(dim=50, negate=True),
    "Ackley-60-noisy": lambda: Ackley(dim=60, noise_std=0.5, negate=True),
    # Sixteen more, run after sketch-CMA's initial step was chosen on the
    # sixteen above: eleven other BoTorch functions in 6-100 dimensions, and
    # five whose optima are moved off the centre, where CMA-ES starts.
    "Hartmann-6-clean": lambda: Hartmann(dim=6, negate=True),
    "Cosine8": lambda: Cosine8(),
    "Rastrigin-20": lambda: Rastrigin(dim=20, negate=True),
    "Griewank-20": lambda: Griewank(dim=20, negate=True),
    "StyblinskiTang-20": lambda: StyblinskiTang(dim=20, negate=True),
    "Michalewicz-20": lambda: Michalewicz(dim=20, negate=True),
    "DixonPrice-20": lambda: DixonPrice(dim=20, negate=True),
    "Powell-24": lambda: Powell(dim=24, negate=True),
    "Levy-60-noisy": lambda: Levy(dim=60, noise_std=1.0, negate=True),
    "Rosenbrock-60": lambda: Rosenbrock(dim=60, negate=True),
    "Ackley-100": lambda: Ackley(dim=100, negate=True),
    "Griewank-20-shifted": lambda: ShiftedProblem(Griewank, 20, seed=1, negate=True),
    "Powell-24-shifted": lambda: ShiftedProblem(Powell, 24, seed=2, negate=True),
    "StyblinskiTang-20-shifted": lambda: ShiftedProblem(
        StyblinskiTang, 20, fraction=0.2, seed=3, negate=True
    ),
    "Ackley-60-shifted": lambda: ShiftedProblem(Ackley, 60, seed=4, negate=True),
    "Rastrigin-20-shifted": lambda: ShiftedProblem(Rastrigin, 20, seed=5, negate=True),
}
#: The problems no setting was chosen on (``headline-wide``).
WIDE_PROBLEMS = list(PROBLEMS)[6:16]
#: The problems run after sketch-CMA's step was chosen (``headline-check``).
CHECK_PROBLEMS = list(PROBLEMS)[16:]
