import math

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError

from botorch_sketch.sketching.sgd import (
    Constant,
    HarmonicStep,
    InverseRidge,
    OffsetHarmonicStep,
    PowerRidge,
    SGDLeastSquares,
    WidthTracker,
    width_step,
)


def _sphere(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.double)
    X = X / X.norm(dim=-1, keepdim=True)
    theta = torch.randn(d, generator=g, dtype=torch.double)
    theta = theta / theta.norm()
    y = X @ theta + 0.5 * (2 * torch.rand(n, generator=g, dtype=torch.double) - 1)
    return X, y


def test_tracking_error_decays_like_inverse_square_root_of_n():
    # Theorem 1 of paper 002: ||theta_n - theta_hat_n|| = O(n^-1/2) with
    # gamma_n = c / (4 (c + n)) and mu c / 4 in (2/3, 1) (mu = 1/d on the sphere).
    d, n = 8, 16000
    X, y = _sphere(n, d, seed=0)
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
    X, y = _sphere(200, d, seed=1)
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
    X, y = _sphere(300, d, seed=3)

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


def test_width_tracker_on_long_samples_tracks_its_own_step_scale():
    # Without a solver's scale the tracker divides its steps by the largest
    # squared norm it stepped on: phi on s x is phi on x, ridge over s^2, / s.
    s, d = 10.0, 4
    X, _ = _sphere(400, d, seed=4)
    arms = X[:6]
    long = WidthTracker(s * arms, width_step(d), InverseRidge(1.0), initial_scale=s**2)
    unit = WidthTracker(arms, width_step(d), InverseRidge(1 / s**2))
    for n, x in enumerate(X, start=1):
        long.step(s * x, n)
        unit.step(x, n)
    assert long.step_scale == pytest.approx(1 / s**2)
    torch.testing.assert_close(s * long.phi, unit.phi, rtol=1e-8, atol=1e-10)


def test_deterministic_under_a_seed():
    X, y = _sphere(300, 4, seed=2)
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
    X, y = _sphere(150, 3, seed=3)
    solver = SGDLeastSquares(3, HarmonicStep(10.0))
    solver.observe_batch(X, y)
    assert solver.n == 150 and torch.equal(solver.X, X) and torch.equal(solver.y, y)


def test_schedules():
    assert HarmonicStep(4.0)(4) == pytest.approx(4 / 32)
    assert OffsetHarmonicStep(100)(50) == pytest.approx(1 / 150)
    assert InverseRidge(3.0)(6) == pytest.approx(0.5)
    assert PowerRidge(0.6, 2.0)(32) == pytest.approx(2 * 32**-0.4)
    for bad in (lambda: HarmonicStep(0), lambda: PowerRidge(1.0), lambda: Constant(-1)):
        with pytest.raises(InputDataError):
            bad()


def test_bad_observations_get_clear_errors():
    solver = SGDLeastSquares(3, HarmonicStep(10.0))
    with pytest.raises(BotorchTensorDimensionError, match="shape"):
        solver.observe(torch.ones(4, dtype=torch.double), 1.0)
    with pytest.raises(InputDataError, match="NaN"):
        solver.observe(torch.tensor([1.0, float("nan"), 0.0]), 1.0)
    assert solver.n == 0


@pytest.mark.parametrize(
    "step, ridge",
    [
        (HarmonicStep(400.0), InverseRidge(1.0)),
        # A shrink 1 - 0.3 * 5 < 0 every step: the scale is folded each time.
        (Constant(0.3), Constant(5.0)),
        (HarmonicStep(10.0), None),
    ],
)
def test_width_tracker_takes_the_steps_of_eq_11_written_out(step, ridge):
    # The kept representation (phi = a V + b R, forms kept, refreshed every few
    # hundred steps) against the step written out on phi itself.
    g = torch.Generator().manual_seed(7)
    V = torch.randn(6, 4, generator=g, dtype=torch.double)
    samples = torch.randn(700, 4, generator=g, dtype=torch.double)
    samples = samples / samples.norm(dim=-1, keepdim=True)
    tracker = WidthTracker(V, step, ridge, initial_scale=2.0)
    phi = V / 2.0
    for n, x in enumerate(samples, start=1):
        tracker.step(x, n, 1.0)
        gamma = step(n)
        lam = ridge(n) if ridge is not None else 0.0
        phi = phi + gamma * (V / n - torch.outer(phi @ x, x) - lam * phi)
        if n in (1, 255, 256, 257, 700):
            torch.testing.assert_close(tracker.phi, phi, rtol=1e-9, atol=1e-12)
            forms = torch.linalg.vecdot(V, phi).clamp_min(0)
            torch.testing.assert_close(
                tracker.quadratic_forms(), forms, rtol=1e-9, atol=1e-12
            )


def test_solver_scale_folds_into_the_tensor_when_the_shrink_is_not_positive():
    X, y = _sphere(200, 3, seed=8)
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


def test_transformed_solver_and_tracker_continue_as_on_the_mapped_features():
    # With an orthonormal basis Q, SGD on x and SGD on Q x are the same
    # iterates, sample for sample: map half-way, then continue both.
    d, D = 3, 7
    X, y = _sphere(120, d, seed=9)
    Q = torch.linalg.qr(
        torch.randn(D, d, generator=torch.Generator().manual_seed(1), dtype=X.dtype)
    )[0]
    arms = X[:4]
    small = SGDLeastSquares(
        d, HarmonicStep(10.0), InverseRidge(1.0), generator=torch.Generator()
    )
    tracker = WidthTracker(arms, width_step(d), InverseRidge(1.0))
    for x, target in zip(X[:60], y[:60], strict=True):
        k = small.observe_shared(x, float(target), float(x @ x))[0]
        tracker.step(small.sample(k)[0], small.n, small.step_scale)
    child = small.fork()  # a parent's history is mapped too
    child.observe(X[60], y[60])
    big = child.transformed(Q)
    big_tracker = tracker.transformed(Q, arms @ Q.mT)
    assert big.n == 61 and big.X.shape == (61, D)
    torch.testing.assert_close(big.X, child.X @ Q.mT)
    for x, target in zip(X[61:], y[61:], strict=True):
        i = child.observe(x, target)
        j = big.observe(Q @ x, target)
        assert i == j
        big_tracker.step(big.sample(j)[0], big.n, big.step_scale)
        tracker.step(child.sample(i)[0], child.n, child.step_scale)
    torch.testing.assert_close(big.theta, Q @ child.theta, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(
        big_tracker.phi, tracker.phi @ Q.mT, rtol=1e-9, atol=1e-12
    )
