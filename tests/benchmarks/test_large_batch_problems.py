import math

import pytest
import torch

from benchmarks.large_batch.problems import PROBLEMS
from botorch_sketch.bo.large_batch import optimal_value


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_problems_are_maximised_with_the_right_dimension(name):
    problem = PROBLEMS[name]()
    # "Levy-100-shifted" and "Cosine8" too.
    dim = int(name.split("-")[1]) if "-" in name else int(name[-1])
    assert problem.dim == dim and problem.bounds.dtype == torch.double
    X = problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * torch.rand(
        16, dim, dtype=torch.double
    )
    values = problem(X, noise=False)
    assert values.shape == (16,)
    # Maximised as built, by BoTorch's own reading of the direction.
    assert problem.is_minimization_problem is False
    best = optimal_value(problem)  # NaN where BoTorch does not know it
    if name not in ("rover-60", "Michalewicz-20"):
        # Negated: every value is at most the maximum.
        assert bool((values <= best + 1e-9).all())
    else:
        assert math.isnan(best)
