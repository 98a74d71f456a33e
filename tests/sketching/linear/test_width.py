import pytest
import torch
from helpers import sphere_normal_noise, sphere_uniform_noise

from botorch_sketch.sketching.linear.schedules import (
    Constant,
    HarmonicStep,
    InverseRidge,
)
from botorch_sketch.sketching.linear.sgd import SGDLeastSquares
from botorch_sketch.sketching.linear.width import WidthTracker, width_step


def test_tracked_width_matches_regularised_inverse(tkwargs):
    # Streaming: phi_k tracks (A_n + n lambda_n I)^{-1} x_k; then at a fixed n,
    # extra steps converge to it (the fixed point is exact).
    d, n = 6, 3000
    X, y = sphere_normal_noise(n, d, seed=0, **tkwargs)
    arms = sphere_normal_noise(5, d, seed=1, **tkwargs)[0]
    solver = SGDLeastSquares(
        d,
        HarmonicStep(3.5 * d),
        InverseRidge(1.0),
        generator=torch.Generator().manual_seed(0),
    )
    tracker = WidthTracker(arms, width_step(d), solver.ridge, initial_scale=1.0)
    for x, t in zip(X, y, strict=True):
        i = solver.observe(x, t)
        tracker.step(solver.sample(i)[0], solver.n)
    exact = torch.linalg.solve(X.mT @ X + torch.eye(d, **tkwargs), arms.mT).mT
    rel = (tracker.inverse_products() - exact).norm(dim=-1) / exact.norm(dim=-1)
    assert rel.max() < 0.3, rel
    quad = (arms * exact).sum(-1)
    assert torch.allclose(tracker.quadratic_forms(), quad, rtol=0.3)
    # Constant small steps at fixed n: the mean fixed point is exact.
    tracker.step_size = Constant(0.002)
    for _ in range(20000):
        tracker.step(solver.sample(solver.draw_index())[0], solver.n)
    rel = (tracker.inverse_products() - exact).norm(dim=-1) / exact.norm(dim=-1)
    assert rel.max() < 0.05, rel


def test_unexplored_directions_keep_their_prior_width(tkwargs):
    # With lambda_n = lambda / n, directions no data reach keep x / lambda exactly:
    # the reason phi (not n phi) is tracked.
    d = 4
    solver = SGDLeastSquares(d, HarmonicStep(14.0), InverseRidge(2.0))
    e = torch.eye(d, **tkwargs)
    tracker = WidthTracker(e, width_step(d), solver.ridge, initial_scale=2.0)
    for _ in range(200):
        i = solver.observe(e[0], 1.0)
        tracker.step(solver.sample(i)[0], solver.n)
    q = tracker.quadratic_forms()
    torch.testing.assert_close(q[1:], torch.full((3,), 0.5, **tkwargs))
    assert q[0] == pytest.approx(1 / (200 + 2.0), rel=0.3)


def test_width_tracker_on_long_samples_tracks_its_own_step_scale():
    # Without a solver's scale the tracker divides its steps by the largest
    # squared norm it stepped on: phi on s x is phi on x, ridge over s^2, / s.
    s, d = 10.0, 4
    X, _ = sphere_uniform_noise(400, d, seed=4)
    arms = X[:6]
    long = WidthTracker(s * arms, width_step(d), InverseRidge(1.0), initial_scale=s**2)
    unit = WidthTracker(arms, width_step(d), InverseRidge(1 / s**2))
    for n, x in enumerate(X, start=1):
        long.step(s * x, n)
        unit.step(x, n)
    assert long.step_scale == pytest.approx(1 / s**2)
    torch.testing.assert_close(s * long.phi, unit.phi, rtol=1e-8, atol=1e-10)


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


def test_transformed_solver_and_tracker_continue_as_on_the_mapped_features():
    # With an orthonormal basis Q, SGD on x and SGD on Q x are the same
    # iterates, sample for sample: map half-way, then continue both.
    d, D = 3, 7
    X, y = sphere_uniform_noise(120, d, seed=9)
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
