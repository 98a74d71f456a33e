import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import LinearKernel, RBFKernel

from botorch_sketch.bandits import FiniteArmEnvironment, run_finite
from botorch_sketch.bandits.bkb import BKB
from botorch_sketch.bandits.gp_ucb import GPUCB


def _problem(num_arms=300, dim=2, lengthscale=0.2, seed=0):
    g = torch.Generator().manual_seed(seed)
    arms = torch.rand(num_arms, dim, generator=g, dtype=torch.double)
    kernel = RBFKernel().double()
    kernel.lengthscale = lengthscale
    kernel.requires_grad_(False)
    env = FiniteArmEnvironment.gp_sample(
        arms, kernel, generator=torch.Generator().manual_seed(seed + 1)
    )
    return arms, kernel, env


@pytest.mark.parametrize("beta", [2.0, "theory"])
def test_bkb_with_every_arm_kept_picks_the_arms_of_exact_gp_ucb(beta):
    arms, kernel, env = _problem()
    lam = env.noise_std**2
    # qbar so large that every p = 1: the dictionary is every pulled arm.
    bkb = BKB(
        arms,
        kernel,
        lam,
        qbar=1e9,
        beta=beta,
        epsilon=0.0,
        generator=torch.Generator().manual_seed(3),
    )
    exact = GPUCB(
        arms, kernel, lam, beta=beta, generator=torch.Generator().manual_seed(3)
    )
    for _ in range(120):
        i, j = bkb.select(), exact.select()
        assert int(i) == int(j)
        reward = env.pull(i)
        bkb.update(i, reward)
        exact.update(j, reward)
    assert bkb.dictionary_size == exact.dictionary_size
    assert torch.allclose(bkb.mean, exact.mean, atol=1e-8)
    assert torch.allclose(bkb.candidates.variance, exact.candidates.variance, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_variances_within_alpha_and_dictionary_bounded_at_qbar_10(seed):
    # Theorem 1 with alpha = 3 (eps = 1/2), on the pulls BKB itself makes.
    arms, kernel, env = _problem(num_arms=400, seed=seed)
    lam = env.noise_std**2
    bkb = BKB(
        arms, kernel, lam, qbar=10.0, generator=torch.Generator().manual_seed(seed)
    )
    exact = GPUCB(arms, kernel, lam)
    for t in range(1, 301):
        i = bkb.select()
        reward = env.pull(i)
        bkb.update(i, reward)
        exact.update(i, reward)
        if t % 50 == 0:
            ratio = bkb.scaled_variance / exact.scaled_variance
            assert float(ratio.min()) >= 1 / 3 and float(ratio.max()) <= 3
            d_eff = float((exact.counts * exact.scaled_variance).sum())
            assert bkb.dictionary_size <= 3 * 3 * bkb.qbar * d_eff
            # and far below the number of distinct pulled arms' upper bound t.
            assert bkb.dictionary_size <= int((exact.counts > 0).sum())


@pytest.mark.slow
def test_sublinear_regret_on_the_authors_linear_example():
    env = FiniteArmEnvironment.linear(
        num_arms=1000, dim=3, generator=torch.Generator().manual_seed(0)
    )
    lam = env.noise_std**2
    policy = BKB(
        env.arms,
        LinearKernel().double().requires_grad_(False),
        lam,
        beta="authors",
        generator=torch.Generator().manual_seed(1),
    )
    trace = run_finite(policy, env, num_steps=800, progress=False)
    cum = trace.cumulative_regret
    # Sublinear: the second half adds far less regret than the first half.
    assert float(cum[-1] - cum[399]) < 0.25 * float(cum[399])
    # A linear kernel in R^3 has d_eff <= 3: the dictionary stays tiny.
    assert max(trace.dictionary_size) <= 10


def test_adaptive_mode_tracks_the_posterior_of_its_dictionary():
    arms, kernel, env = _problem(num_arms=500)
    lam = env.noise_std**2
    policy = BKB(
        arms,
        kernel,
        lam,
        resample="adaptive",
        generator=torch.Generator().manual_seed(0),
    )
    run_finite(policy, env, num_steps=300, progress=False)
    assert policy.num_resamples < 300
    tracked_mean = policy.mean.clone()
    tracked_var = policy.candidates.variance.clone()
    policy._rebuild(policy.dictionary)  # from the pull counts, from scratch
    assert torch.allclose(tracked_mean, policy.mean, atol=1e-8)
    assert torch.allclose(tracked_var, policy.candidates.variance, atol=1e-8)


def test_adaptive_mode_regret_close_to_every_step_mode():
    arms, kernel, env = _problem(num_arms=500, seed=4)
    lam = env.noise_std**2
    traces = [
        run_finite(
            BKB(
                arms,
                kernel,
                lam,
                resample=mode,
                beta="authors",
                generator=torch.Generator().manual_seed(0),
            ),
            env,
            num_steps=400,
            progress=False,
        )
        for mode in ("every_step", "adaptive")
    ]
    r_full, r_fast = (float(t.cumulative_regret[-1]) for t in traces)
    assert r_fast < 1.5 * r_full + 1.0


def test_exact_batch_equals_one_at_a_time_with_no_innovation():
    # GP-BUCB: a batch equals picking one arm at a time and "observing" its
    # current mean (only the variances move), with a fixed width.
    arms, kernel, env = _problem()
    lam = env.noise_std**2
    policy = GPUCB(
        arms, kernel, lam, beta=2.0, generator=torch.Generator().manual_seed(0)
    )
    for _ in range(5):
        i = policy.select()
        policy.update(i, env.pull(i))
    batch = policy.select(4)
    assert batch.unique().numel() == 4
    for k in range(4):
        i = policy.select()
        assert int(i) == int(batch[k])
        policy._grow(i, policy.scaled_variance)
        policy._rank_update(i, policy.mean[i].clone())


def test_bkb_batches_spread_outside_the_dictionary():
    arms, kernel, env = _problem()
    policy = BKB(
        arms,
        kernel,
        env.noise_std**2,
        beta=2.0,
        resample="adaptive",
        generator=torch.Generator().manual_seed(0),
    )
    for _ in range(5):
        i = policy.select()
        policy.update(i, env.pull(i))
    batch = policy.select(6)
    assert batch.unique().numel() == 6
    assert int(batch[0]) == int(policy.select())


def test_runs_are_reproducible_under_a_seed():
    arms, kernel, env = _problem(num_arms=200)

    def run():
        env.generator = torch.Generator().manual_seed(9)
        p = BKB(
            arms,
            kernel,
            env.noise_std**2,
            qbar=1.0,
            generator=torch.Generator().manual_seed(5),
        )
        return run_finite(p, env, num_steps=60, progress=False).chosen

    assert torch.equal(run(), run())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"resample": "sometimes"}, "resample"),
        ({"growth_factor": 1.0}, "growth_factor"),
        ({"beta": "large"}, "beta"),
        ({"noise_var": 0.0}, "noise_var"),
        ({"noise_var": float("nan")}, "noise_var must be finite and positive"),
        ({"qbar": float("nan")}, "qbar"),
        ({"rkhs_norm": -1.0}, "rkhs_norm"),
    ],
)
def test_bad_configuration_is_named(kwargs, match):
    arms = torch.rand(10, 2, dtype=torch.double)
    kw = {"noise_var": 0.1, **kwargs}
    with pytest.raises(InputDataError, match=match):
        BKB(arms, RBFKernel().double(), **kw)
    with pytest.raises(InputDataError, match="q must"):
        BKB(arms, RBFKernel().double(), 0.1).select(0)
