import math

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from helpers import sphere_normal_noise, sphere_uniform_noise

from botorch_sketch.sketching.linear.schedules import (
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    PowerRidge,
)
from botorch_sketch.sketching.linear.sgd import SGDLeastSquares


def test_tracking_error_decays_like_inverse_square_root_of_n():
    # Theorem 1 of paper 002: ||theta_n - theta_hat_n|| = O(n^-1/2) with
    # gamma_n = c / (4 (c + n)) and mu c / 4 in (2/3, 1) (mu = 1/d on the sphere).
    d, n = 8, 16000
    X, y = sphere_uniform_noise(n, d, seed=0)
    checkpoints = [500, 1000, 2000, 4000, 8000, 16000]
    slopes = []
    for seed in range(3):
        solver = SGDLeastSquares(
            d, HarmonicStep(3.5 * d), generator=torch.Generator().manual_seed(seed)
        )
        A = torch.zeros(d, d, dtype=torch.double)
        b = torch.zeros(d, dtype=torch.double)
        errors = []
        for t in range(n):
            solver.observe(X[t], y[t])
            A += torch.outer(X[t], X[t])
            b += y[t] * X[t]
            if t + 1 in checkpoints:
                errors.append(float((solver.theta - torch.linalg.solve(A, b)).norm()))
        logs = torch.tensor([[math.log(c), 1.0] for c in checkpoints])
        fit = torch.linalg.lstsq(logs, torch.tensor(errors).log().unsqueeze(-1))
        slopes.append(float(fit.solution[0]))
    slope = sum(slopes) / len(slopes)
    assert -0.8 < slope < -0.3, slopes


def test_ridge_fixed_point_is_the_regularised_solution():
    d = 5
    X, y = sphere_uniform_noise(200, d, seed=1)
    solver = SGDLeastSquares(
        d,
        Constant(0.02),
        ridge=InverseRidge(2.0),
        averaging=True,
        generator=torch.Generator().manual_seed(0),
    )
    solver.observe_batch(X, y)
    for _ in range(30000):
        solver.sgd_step()
    target = torch.linalg.solve(X.mT @ X + 2.0 * torch.eye(d, dtype=X.dtype), X.mT @ y)
    torch.testing.assert_close(solver.reference_solution(), target)
    assert (solver.estimate - target).norm() < 0.05 * target.norm()
    # averaging removes most of the constant-step noise
    assert (solver.estimate - target).norm() < (solver.theta - target).norm()


@pytest.mark.parametrize("ridge", [None, InverseRidge(2.0)])
def test_long_features_take_the_steps_of_unit_features(ridge):
    # SGD on s x with the step over s^2 is SGD on x with the ridge over s^2,
    # theta scaled by 1 / s; without the scaling the iterates diverged.
    s, d = 10.0, 5
    X, y = sphere_uniform_noise(300, d, seed=3)

    def run(features, ridge):
        solver = SGDLeastSquares(
            d,
            HarmonicStep(3.5 * d),
            ridge=ridge,
            generator=torch.Generator().manual_seed(0),
        )
        solver.observe_batch(features, y)
        return solver

    long = run(s * X, ridge)
    unit = run(X, None if ridge is None else InverseRidge(ridge.ridge / s**2))
    assert float(long.step_scale) == pytest.approx(1 / s**2)
    torch.testing.assert_close(s * long.theta, unit.theta, rtol=1e-8, atol=1e-10)


def test_deterministic_under_a_seed():
    X, y = sphere_uniform_noise(300, 4, seed=2)
    runs = []
    for seed in (5, 5, 6):
        solver = SGDLeastSquares(
            4,
            OffsetHarmonicStep(100),
            ridge=PowerRidge(0.6),
            generator=torch.Generator().manual_seed(seed),
        )
        solver.observe_batch(X, y)
        runs.append(solver.theta)
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_history_grows_past_its_initial_buffer():
    X, y = sphere_uniform_noise(150, 3, seed=3)
    solver = SGDLeastSquares(3, HarmonicStep(10.0))
    solver.observe_batch(X, y)
    assert solver.n == 150 and torch.equal(solver.X, X) and torch.equal(solver.y, y)


def test_bad_observations_get_clear_errors():
    solver = SGDLeastSquares(3, HarmonicStep(10.0))
    with pytest.raises(BotorchTensorDimensionError, match="shape"):
        solver.observe(torch.ones(4, dtype=torch.double), 1.0)
    with pytest.raises(InputDataError, match="NaN"):
        solver.observe(torch.tensor([1.0, float("nan"), 0.0]), 1.0)
    assert solver.n == 0


def test_solver_scale_folds_into_the_tensor_when_the_shrink_is_not_positive():
    X, y = sphere_uniform_noise(200, 3, seed=8)
    solver = SGDLeastSquares(3, Constant(0.3), ridge=Constant(5.0))
    theta = torch.zeros(3, dtype=torch.double)
    g = torch.Generator().manual_seed(0)
    solver.generator = g
    reference = torch.Generator().manual_seed(0)
    uniforms: list[float] = []
    for n, (x, target) in enumerate(zip(X, y, strict=True), start=1):
        solver.observe(x, target)
        if not uniforms:
            uniforms = torch.rand(1024, generator=reference, dtype=torch.double)
            uniforms = uniforms.tolist()[::-1]
        i = min(int(uniforms.pop() * n), n - 1)
        theta = (1 - 0.3 * 5.0) * theta + 0.3 * (y[i] - theta @ X[i]) * X[i]
    assert solver.theta_scale == 1.0
    torch.testing.assert_close(solver.theta, theta, rtol=1e-9, atol=1e-12)


def test_fork_shares_history_without_disturbing_the_parent(tkwargs):
    X, y = sphere_normal_noise(100, 3, seed=2, **tkwargs)
    solver = SGDLeastSquares(3, HarmonicStep(10.0), generator=torch.Generator())
    solver.observe_batch(X[:60], y[:60])
    child = solver.fork()
    child.observe_batch(X[60:], y[60:])
    solver.observe_batch(-X[60:70], y[60:70])
    assert child.n == 100 and solver.n == 70
    torch.testing.assert_close(child.X, X)
    torch.testing.assert_close(solver.X[60:], -X[60:70])
    assert not torch.equal(child.theta, solver.theta)


def test_isotropic_scale(tkwargs):
    X, y = sphere_normal_noise(10, 5, seed=3, **tkwargs)
    solver = SGDLeastSquares(5, HarmonicStep(10.0), PowerRidge(0.5))
    assert solver.isotropic_scale() == pytest.approx(1.0)
    solver.observe_batch(X, y)
    assert solver.isotropic_scale() == pytest.approx(10 / 5 + 10**0.5)


def test_block_drawn_indices_are_uniform():
    solver = SGDLeastSquares(
        1, Constant(0.0), generator=torch.Generator().manual_seed(0)
    )
    for _ in range(7):
        solver.observe(torch.ones(1, dtype=torch.double), 0.0)
    counts = torch.bincount(
        torch.tensor([solver.draw_index() for _ in range(7000)]), minlength=7
    )
    assert counts.min() > 850 and counts.max() < 1150
    assert math.isclose(float(counts.sum()), 7000)
