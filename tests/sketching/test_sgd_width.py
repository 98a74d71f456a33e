import math

import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError

from botorch_sketch.sketching.features import (
    IdentityFeatures,
    NystromFeatures,
    RandomFourierFeatures,
)
from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.ridge import OnlineRidge
from botorch_sketch.sketching.sgd import (
    Constant,
    HarmonicStep,
    InverseRidge,
    PowerRidge,
    SGDLeastSquares,
    WidthTracker,
    width_step,
)


def _sphere(n, d, seed, **tkwargs):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, **tkwargs)
    X = X / X.norm(dim=-1, keepdim=True)
    theta = torch.randn(d, generator=g, **tkwargs)
    y = X @ (theta / theta.norm()) + 0.3 * torch.randn(n, generator=g, **tkwargs)
    return X, y


def test_tracked_width_matches_regularised_inverse(tkwargs):
    # Streaming: phi_k tracks (A_n + n lambda_n I)^{-1} x_k; then at a fixed n,
    # extra steps converge to it (the fixed point is exact).
    d, n = 6, 3000
    X, y = _sphere(n, d, seed=0, **tkwargs)
    arms = _sphere(5, d, seed=1, **tkwargs)[0]
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


def test_fork_shares_history_without_disturbing_the_parent(tkwargs):
    X, y = _sphere(100, 3, seed=2, **tkwargs)
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
    X, y = _sphere(10, 5, seed=3, **tkwargs)
    solver = SGDLeastSquares(5, HarmonicStep(10.0), PowerRidge(0.5))
    assert solver.isotropic_scale() == pytest.approx(1.0)
    solver.observe_batch(X, y)
    assert solver.isotropic_scale() == pytest.approx(10 / 5 + 10**0.5)


def test_online_ridge_matches_direct_solve(tkwargs):
    X, y = _sphere(300, 8, seed=4, **tkwargs)
    ridge = OnlineRidge(8, noise_var=0.5, **tkwargs)
    ridge.observe_batch(X, y)
    V = X.mT @ X + 0.5 * torch.eye(8, **tkwargs)
    torch.testing.assert_close(ridge.inverse, torch.linalg.inv(V))
    torch.testing.assert_close(ridge.theta, torch.linalg.solve(V, X.mT @ y))
    C = X[:5]
    torch.testing.assert_close(
        ridge.quadratic_forms(C), (C @ torch.linalg.solve(V, C.mT)).diagonal()
    )
    copy = ridge.clone()
    copy.observe(X[0], 1.0)
    torch.testing.assert_close(ridge.inverse, torch.linalg.inv(V))
    with pytest.raises(InputDataError):
        ridge.observe(torch.full((8,), float("nan"), **tkwargs), 0.0)
    with pytest.raises(BotorchTensorDimensionError):
        ridge.observe(torch.ones(3, **tkwargs), 0.0)


def test_random_fourier_features_approximate_the_kernel(tkwargs):
    from gpytorch.kernels import RBFKernel, ScaleKernel

    kernel = ScaleKernel(RBFKernel(ard_num_dims=2)).to(**tkwargs)
    kernel.base_kernel.lengthscale = torch.tensor([0.3, 0.6], **tkwargs)
    kernel.outputscale = 2.0
    X = torch.rand(30, 2, generator=torch.Generator().manual_seed(0), **tkwargs)
    rff = RandomFourierFeatures(
        kernel, 2, 20000, generator=torch.Generator().manual_seed(1), **tkwargs
    )
    Z = rff(X)
    K = kernel(X).to_dense().detach()
    assert Z.shape == (30, 20000)
    assert (Z @ Z.mT - K).abs().max() < 0.1
    again = RandomFourierFeatures(
        kernel, 2, 20000, generator=torch.Generator().manual_seed(1), **tkwargs
    )
    torch.testing.assert_close(again(X), Z)


def test_identity_and_nystrom_features(tkwargs):
    from gpytorch.kernels import MaternKernel, RBFKernel

    X = torch.rand(10, 3, **tkwargs)
    assert torch.equal(IdentityFeatures(3)(X), X)
    with pytest.raises(BotorchTensorDimensionError):
        IdentityFeatures(2)(X)
    kernel = RBFKernel().to(**tkwargs)
    emb = NystromEmbedding(kernel, X[:4])
    nys = NystromFeatures(emb)
    assert nys.dim == emb.dim and nys.input_dim == 3
    torch.testing.assert_close(nys(X), emb(X))
    from botorch.exceptions.errors import UnsupportedError

    with pytest.raises(UnsupportedError):
        RandomFourierFeatures(MaternKernel(), 3, 10)


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
