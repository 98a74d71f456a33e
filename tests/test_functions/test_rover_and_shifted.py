import math

import pytest
import torch
from botorch.test_functions import Ackley, Levy

from botorch_sketch.test_functions import (
    ROVER_OBSTACLES,
    RoverTrajectory,
    ShiftedProblem,
    clamped_bspline_basis,
)


def _straight(a: tuple[float, float], b: tuple[float, float]) -> torch.Tensor:
    # 30 control points evenly spaced on the segment from a to b, as one input.
    t = torch.linspace(0, 1, 30, dtype=torch.double).unsqueeze(-1)
    start, end = (torch.tensor(p, dtype=torch.double) for p in (a, b))
    points = start + t * (end - start)
    # Inputs in [0, 1] map to the plane's [-0.1, 1.1].
    return ((points + 0.1) / 1.2).reshape(1, 60)


def _diagonal_reward() -> float:
    # By hand: the straight path from (0.05, 0.05) to (0.95, 0.95) runs along
    # y = x; a square of half-width r centred at (cx, cy) covers the t in
    # [max(cx, cy) - r, min(cx, cy) + r]; the union of those intervals, times
    # sqrt(2), is the length inside obstacles.
    r, spans = 0.025, []
    for cx, cy in ROVER_OBSTACLES:
        low, high = max(max(cx, cy) - r, 0.05), min(min(cx, cy) + r, 0.95)
        if high > low:
            spans.append((low, high))
    covered, end = 0.0, -1.0
    for low, high in sorted(spans):
        covered += max(0.0, high - max(low, end))
        end = max(end, high)
    length = 0.9 * math.sqrt(2)
    return 5 - 0.05 * length - 20 * math.sqrt(2) * covered


def test_batch_shapes_are_botorchs():
    # b x d -> b, and batch x q x d -> batch x q, as BoTorch's test functions.
    rover = RoverTrajectory()
    shifted = ShiftedProblem(Ackley, dim=4, negate=True)
    for f, d in ((rover, 60), (shifted, 4)):
        assert f(torch.rand(5, d, dtype=torch.double)).shape == (5,)
        assert f(torch.rand(2, 3, d, dtype=torch.double)).shape == (2, 3)
    assert rover.dim == 60 and rover.bounds.shape == (2, 60)
    assert not rover.is_minimization_problem


def test_basis_is_a_clamped_partition_of_unity():
    basis = clamped_bspline_basis(30, 1000)
    assert basis.shape == (1000, 30)
    assert torch.allclose(basis.sum(-1), torch.ones(1000, dtype=torch.double))
    assert bool((basis >= 0).all())
    # Clamped: the curve starts at the first control point and ends at the last.
    assert basis[0, 0] == 1 and basis[-1, -1] == 1
    # Cubic: each parameter value touches at most four control points.
    assert int((basis > 0).sum(-1).max()) == 4


def test_straight_diagonal_path_has_the_reward_computed_by_hand():
    rover = RoverTrajectory()
    expected = _diagonal_reward()
    assert expected == pytest.approx(-2.487, abs=1e-3)  # 12 squares on the way
    value = float(rover(_straight((0.05, 0.05), (0.95, 0.95))))
    # The trapezoidal rule over 1000 points: a few hundredths at 20 crossings.
    assert value == pytest.approx(expected, abs=0.05)


def test_collapsed_path_outside_the_square_pays_only_the_misses():
    # Every control point at the corner (-0.1, -0.1): a path of length zero.
    value = float(RoverTrajectory()(torch.zeros(1, 60, dtype=torch.double)))
    assert value == pytest.approx(5 - 10 * (0.15 + 0.15) - 10 * (1.05 + 1.05))


def test_a_free_path_pays_only_its_length_and_misses():
    # From the start (0.05, 0.05) along y = 0.05 to (0.25, 0.05): no square of
    # the large domain touches that segment.
    r, y = 0.025, 0.05
    assert not any(
        abs(cy - y) <= r and cx - r <= 0.25 and cx + r >= 0.05
        for cx, cy in ROVER_OBSTACLES
    )
    value = float(RoverTrajectory()(_straight((0.05, y), (0.25, y))))
    goal_miss = 10 * ((0.95 - 0.25) + (0.95 - 0.05))
    assert value == pytest.approx(5 - 0.05 * 0.2 - goal_miss, abs=1e-9)


def test_vectorised_equals_a_loop_and_values_are_at_most_five():
    rover = RoverTrajectory(chunk_size=7)
    g = torch.Generator().manual_seed(0)
    # Random inputs, and inputs near the straight diagonal (many near-misses).
    X = torch.cat(
        [
            torch.rand(20, 60, generator=g, dtype=torch.double),
            (
                _straight((0.05, 0.05), (0.95, 0.95))
                + 0.02 * torch.randn(20, 60, generator=g, dtype=torch.double)
            ).clamp(0, 1),
        ]
    )
    batch = rover(X)
    loop = torch.stack([rover(x.unsqueeze(0)).squeeze(0) for x in X])
    assert torch.allclose(batch, loop, rtol=0, atol=1e-10)
    assert bool((batch <= 5).all())
    # Batch shapes are kept.
    assert rover(X.reshape(4, 10, 60)).shape == (4, 10)


def test_obstacle_hits_match_every_obstacle_compared():
    rover = RoverTrajectory()
    g = torch.Generator().manual_seed(1)
    points = torch.rand(50, 400, 2, generator=g, dtype=torch.double) * 1.2 - 0.1
    centres = torch.tensor(ROVER_OBSTACLES, dtype=torch.double)
    # Points on the squares' edges and corners too.
    edges = centres + 0.025 * torch.tensor([1.0, -1.0], dtype=torch.double)
    points = torch.cat([points, edges.expand(50, -1, -1)], dim=1)
    gap = (points.unsqueeze(-2) - centres).abs()
    direct = (gap <= 0.025).all(-1).any(-1)
    assert torch.equal(rover.obstacle_hits(points), direct)
    assert bool(direct.any()) and not bool(direct.all())


@pytest.mark.parametrize("base", [Ackley, Levy])
def test_shifted_problem_moves_the_optimum_off_the_centre_and_keeps_the_box(base):
    plain = base(dim=8)
    shifted = ShiftedProblem(base, dim=8, negate=True)
    assert torch.equal(shifted.bounds, plain.bounds)
    optimum = shifted.optimizers
    # The optimum is where the shift says, and it is the maximum there.
    assert torch.allclose(optimum[0], plain.optimizers[0] + shifted.shift)
    assert float(shifted(optimum, noise=False)) == pytest.approx(0.0, abs=1e-9)
    # f(x) = base(x - s), also where x - s leaves the base's box.
    X = plain.bounds[0] + (plain.bounds[1] - plain.bounds[0]) * torch.rand(
        32, 8, dtype=torch.double
    )
    wide = base(dim=8, bounds=[(-100.0, 100.0)] * 8)
    expected = -wide.evaluate_true(X - shifted.shift)
    assert torch.allclose(shifted(X, noise=False), expected)
    # The box's centre is no longer at or next to the optimum.
    centre = plain.bounds.mean(0, keepdim=True)
    assert float(shifted(centre, noise=False)) < -1.0
    assert float(-plain(centre, noise=False)) > float(shifted(centre, noise=False))


def test_a_shift_that_leaves_the_box_is_refused():
    with pytest.raises(ValueError, match="out of its box"):
        ShiftedProblem(Levy, dim=8, fraction=0.9)
