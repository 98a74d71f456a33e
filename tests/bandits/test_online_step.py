r"""The in-place single-pull path of the finite-arm DTC loops against references.

Every step's tracked means and variances are compared with the DTC posterior
computed from scratch (DESIGN.md's formulas on the pull history, in the
policy's current dictionary), and every chosen arm with the argmax of the
reference scores, so a faster update cannot drift from the mathematics.
"""

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits import FiniteArmEnvironment
from botorch_sketch.bandits.bkb import BKB
from botorch_sketch.bandits.dtc_ucb import DTCUCB
from botorch_sketch.bandits.gp_ucb import GPUCB
from botorch_sketch.sketching import NystromEmbedding
from botorch_sketch.sketching.embedding import kernel_diagonal
from botorch_sketch.sketching.online import TrackedCandidates
from botorch_sketch.sketching.posterior import WeightPosterior


def _problem(num_arms=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    arms = torch.rand(num_arms, 2, generator=g, dtype=torch.double)
    kernel = RBFKernel().double()
    kernel.lengthscale = 0.3
    kernel.requires_grad_(False)
    env = FiniteArmEnvironment.gp_sample(
        arms, kernel, generator=torch.Generator().manual_seed(seed + 1)
    )
    return arms, kernel, env


def _reference(arms, kernel, lam, dictionary, pulled, rewards):
    # mu(x) = z^T V^{-1} Z^T y, var(x) = k - z^T z + lam z^T V^{-1} z with
    # V = Z^T Z + lam I, one row of Z per pull (repeats included).
    k = kernel_diagonal(kernel, arms)
    if dictionary.numel() == 0:
        return torch.zeros_like(k), k
    Z_all = NystromEmbedding(kernel, arms[dictionary])(arms)
    Z = Z_all[pulled]
    V = Z.mT @ Z + lam * torch.eye(Z.shape[1], dtype=Z.dtype)
    mean = Z_all @ torch.linalg.solve(V, Z.mT @ rewards)
    quad = (Z_all * torch.linalg.solve(V, Z_all.mT).mT).sum(-1)
    var = (k - Z_all.pow(2).sum(-1) + lam * quad).clamp_min(0)
    return mean, var


@pytest.mark.parametrize(
    "make",
    [
        lambda a, k, lam, g: BKB(a, k, lam, qbar=1.0, resample="adaptive", generator=g),
        lambda a, k, lam, g: BKB(a, k, lam, qbar=2.0, generator=g),
        lambda a, k, lam, g: GPUCB(a, k, lam, generator=g),
        lambda a, k, lam, g: DTCUCB(a, k, lam, dictionary=15, generator=g),
    ],
    ids=["bkb-adaptive", "bkb-every-step", "gp-ucb", "dtc-fixed"],
)
def test_every_step_matches_the_from_scratch_posterior_and_its_argmax(make):
    arms, kernel, env = _problem()
    lam = env.noise_std**2
    # Rare refactorisations: the rank-one recursion itself is under test.
    policy = make(arms, kernel, lam, torch.Generator().manual_seed(5))
    policy.refactorise_every = 10**9
    pulled, rewards = [], []
    for t in range(150):
        scaled = policy.candidates.variance / lam
        width = policy.width()
        i = policy.select()
        if t > 0:
            scores = policy.mean + width * scaled.sqrt()
            assert int(i) == int(scores.argmax())
        r = env.pull(i)
        policy.update(i, r)
        pulled.append(int(i))
        rewards.append(float(r))
        mean, var = _reference(
            arms,
            kernel,
            lam,
            policy.dictionary,
            torch.tensor(pulled),
            torch.tensor(rewards, dtype=torch.double),
        )
        assert torch.allclose(policy.mean, mean, atol=1e-8, rtol=0)
        assert torch.allclose(policy.candidates.variance, var, atol=1e-8, rtol=0)
        # The width's sum over the pulls, read from tr(C) and the statistics,
        # against the from-scratch variances of the pulled arms.
        expected = float(policy.counts @ var) / lam
        total = policy.posterior.data_variance_sum()
        assert total == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_update_one_equals_the_general_update_and_leaves_copies_apart(tkwargs):
    g = torch.Generator().manual_seed(0)
    kernel = RBFKernel().to(**tkwargs)
    kernel.requires_grad_(False)
    emb = NystromEmbedding(kernel, torch.rand(12, 2, generator=g, **tkwargs))
    cands = torch.rand(40, 2, generator=g, **tkwargs)
    X = torch.rand(30, 2, generator=g, **tkwargs)
    r = torch.randn(30, generator=g, **tkwargs)
    Z = emb(X)
    resid = emb.residual_variance(X, Z)
    a, b = (
        WeightPosterior.prior(emb.dim, like=X),
        WeightPosterior.prior(emb.dim, like=X),
    )
    ta, tb = TrackedCandidates(emb, a, cands), TrackedCandidates(emb, b, cands)
    frozen, frozen_mean = None, None
    for i in range(30):
        noise = torch.full((1,), 0.1, **tkwargs)
        ta.apply(a.update(Z[i : i + 1], resid[i : i + 1], r[i : i + 1], noise))
        tb.apply_one(*b.update_one_(Z[i], float(resid[i]), float(r[i]), 0.1))
        if i == 10:
            frozen = b.copy()
            frozen_mean = frozen.mean(Z).clone()
            frozen_stats = frozen.statistics
    assert torch.allclose(ta.mean, tb.mean, atol=1e-10)
    assert torch.allclose(ta.variance, tb.variance, atol=1e-10)
    for name in ("gram", "moment", "sq_residual", "log_noise", "trace_gap", "num_data"):
        assert torch.allclose(
            getattr(a.statistics, name), getattr(b.statistics, name), atol=1e-10
        )
    # The copy taken mid-way did not follow the in-place updates.
    assert torch.equal(frozen.mean(Z), frozen_mean)
    assert (
        float(frozen_stats.num_data) == 11 and float(frozen.statistics.num_data) == 11
    )


def test_one_point_products_feed_update_one_and_keep_the_trace(tkwargs):
    # ``product_one`` against the products of the formed C and w; an update
    # fed with them equals one that computes its own; ``tr(C)``, kept by the
    # in-place downdates, against a fresh trace; a copy taken before is left
    # apart although the products' buffer held its weights.
    g = torch.Generator().manual_seed(3)
    kernel = RBFKernel().to(**tkwargs)
    kernel.requires_grad_(False)
    emb = NystromEmbedding(kernel, torch.rand(9, 2, generator=g, **tkwargs))
    X = torch.rand(25, 2, generator=g, **tkwargs)
    r = torch.randn(25, generator=g, **tkwargs)
    Z, resid = emb(X), emb.residual_variance(X, emb(X))
    a, b = (
        WeightPosterior.prior(emb.dim, like=X),
        WeightPosterior.prior(emb.dim, like=X),
    )
    frozen = None
    for i in range(25):
        C, w = a.weight_covariance.clone(), a.weights64.clone()
        zd = Z[i].double()
        product = a.product_one(Z[i])
        torch.testing.assert_close(product.P, C @ zd)
        assert product.quadratic == pytest.approx(float(zd @ C @ zd), rel=1e-12)
        assert product.mean == pytest.approx(float(zd @ w), rel=1e-12, abs=1e-14)
        assert product.squared_norm == pytest.approx(float((C @ zd).square().sum()))
        out_a = a.update_one_(Z[i], float(resid[i]), float(r[i]), 0.1, product=product)
        out_b = b.update_one_(Z[i], float(resid[i]), float(r[i]), 0.1)
        assert out_a[1:] == pytest.approx(out_b[1:], rel=1e-12)
        trace = float(torch.trace(a.weight_covariance))
        assert a._covariance_trace() == pytest.approx(trace, rel=1e-12)
        if i == 5:
            frozen, frozen_w = a.copy(), a.weights64.clone()
    torch.testing.assert_close(a.weights64, b.weights64, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(frozen.weights64, frozen_w, rtol=0, atol=0)
    fresh = a.copy()
    fresh.refactorise()
    expected = fresh.data_variance_sum()
    assert a.data_variance_sum() == pytest.approx(expected, rel=1e-9)


def test_sgd_linucb_fast_paths_take_the_steps_of_the_public_api():
    # The policy (in the arms' coordinates while the arm set is fixed, with
    # kept means and widths) against the solver's and tracker's public steps
    # in R^d, by hand under one seed: the same scores, choices and iterates,
    # before and after the arm set changes (which leaves the coordinates).
    from botorch_sketch.bandits.linear_environments import sphere_arms_environment
    from botorch_sketch.bandits.linucb import SGDLinUCB
    from botorch_sketch.sketching.linear import (
        HarmonicStep,
        InverseRidge,
        SGDLeastSquares,
        WidthTracker,
        width_step,
    )

    d = 30
    env = sphere_arms_environment(
        10, d, 0.3, generator=torch.Generator().manual_seed(0)
    )
    other = sphere_arms_environment(
        10, d, 0.3, generator=torch.Generator().manual_seed(5)
    )
    fast = SGDLinUCB(d, width=0.5, generator=torch.Generator().manual_seed(1))
    solver = SGDLeastSquares(
        d,
        HarmonicStep(3.5 * d),
        InverseRidge(1.0),
        generator=torch.Generator().manual_seed(1),
    )
    tracker = WidthTracker(env.arms, width_step(d), solver.ridge, initial_scale=1.0)
    noise = 0.3 * torch.randn(700, generator=torch.Generator().manual_seed(2))
    for t in range(700):
        arms = env.arms if t < 600 else other.arms
        if t == 600:
            tracker.retarget(arms)
            k = solver.draw_index()
            tracker.step(solver.sample(k)[0], solver.n, solver.step_scale)
        i = int(fast.select(arms))
        assert (fast.basis is not None) == (t < 600)
        expected = arms @ solver.theta + 0.5 * tracker.quadratic_forms().sqrt()
        torch.testing.assert_close(fast.scores(arms), expected, rtol=1e-9, atol=1e-12)
        assert float(expected[i]) >= float(expected.max()) - 1e-9  # ties: rounding
        r = (env.means[i] + noise[t]).reshape(1).to(arms)
        fast.update(arms[i : i + 1], r)
        k = solver.observe(arms[i], r[0])
        tracker.step(solver.sample(k)[0], solver.n, solver.step_scale)
        torch.testing.assert_close(fast.theta, solver.theta, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(fast.tracker.phi, tracker.phi, rtol=1e-9, atol=1e-12)


def test_sgd_linucb_single_pull_path_rejects_non_finite_feedback():
    from botorch.exceptions.errors import InputDataError

    from botorch_sketch.bandits.linucb import SGDLinUCB

    policy = SGDLinUCB(3, generator=torch.Generator().manual_seed(0))
    x = torch.tensor([[0.1, float("nan"), 0.2]], dtype=torch.double)
    with pytest.raises(InputDataError, match="NaN or infinite"):
        policy.update(x, torch.ones(1, dtype=torch.double))
    with pytest.raises(InputDataError, match="NaN or infinite"):
        policy.update(x.nan_to_num(), torch.full((1,), float("inf")))
    # Huge but finite features overflow x^T x and are still accepted.
    policy.update(torch.full((1, 3), 1e200, dtype=torch.double), torch.ones(1))
    assert policy.solver.n == 1


def test_width_tracker_copies_are_left_apart_by_in_place_steps():
    import copy

    from botorch_sketch.sketching.linear import HarmonicStep, WidthTracker

    g = torch.Generator().manual_seed(0)
    tracker = WidthTracker(
        torch.rand(4, 5, generator=g, dtype=torch.double), step=HarmonicStep(10.0)
    )
    before = tracker.phi.clone()
    other = copy.copy(tracker)
    other.step(torch.rand(5, generator=g, dtype=torch.double), 1)
    assert torch.equal(tracker.phi, before)
    assert not torch.equal(other.phi, before)
    tracker.step(torch.rand(5, generator=g, dtype=torch.double), 1)
    assert not torch.equal(tracker.phi, before)


def test_statistics_read_before_an_in_place_update_keep_their_values():
    g = torch.Generator().manual_seed(3)
    online = WeightPosterior.prior(4, like=torch.empty(0, dtype=torch.double))
    Z = torch.rand(6, 4, generator=g, dtype=torch.double)
    for i in range(3):
        online.update_one_(Z[i], 0.1, 1.0, 0.5)
    seen = online.statistics
    gram = seen.gram.clone()
    for i in range(3, 6):
        online.update_one_(Z[i], 0.1, 1.0, 0.5)
    assert torch.equal(seen.gram, gram) and float(seen.num_data) == 3
    assert float(online.statistics.num_data) == 6


def test_a_subclass_absorb_rule_is_not_bypassed_by_the_single_pull_path():
    calls = []

    class Counting(DTCUCB):
        def _absorb(self, indices, rewards, previous):
            calls.append(int(indices[0]))
            super()._absorb(indices, rewards, previous)

    arms, kernel, env = _problem(num_arms=50)
    policy = Counting(arms, kernel, env.noise_std**2, dictionary=5)
    for _ in range(3):
        i = policy.select()
        policy.update(i, env.pull(i))
    assert len(calls) == 3


def test_pending_rows_of_update_one_fold_into_the_statistics_across_growth():
    # update_one_ leaves z z^T / noise and z r / noise to the next read of the
    # statistics; observations with different noise, then a coordinate added
    # (extend), then more observations in the grown dimension: the statistics
    # must equal those of all the data computed at once.
    g = torch.Generator().manual_seed(5)
    Z = torch.rand(40, 5, generator=g, dtype=torch.double)
    r = torch.randn(40, generator=g, dtype=torch.double)
    noise = 0.1 + torch.rand(40, generator=g, dtype=torch.double)
    online = WeightPosterior.prior(4, like=Z)
    for i in range(20):
        online.update_one_(Z[i, :4], 0.0, float(r[i]), float(noise[i]))
    # The fifth coordinate of the first 20 observations is column 4 of Z.
    online.extend_with_data(Z[:20, :4], Z[:20, 4], r[:20], noise[:20])
    for i in range(20, 40):
        online.update_one_(Z[i], 0.0, float(r[i]), float(noise[i]))
    st = online.statistics
    weights = 1 / noise
    assert torch.allclose(st.gram, (Z.mT * weights) @ Z, atol=1e-10)
    assert torch.allclose(st.moment, Z.mT @ (weights * r), atol=1e-10)
    assert float(st.num_data) == 40
    assert torch.allclose(st.sq_residual, (weights * r * r).sum(), atol=1e-10)
    # The posterior read from the statistics afresh is the one updated in place.
    w = online.weights.clone()
    online.refactorise()
    assert torch.allclose(online.weights, w, atol=1e-8)
