import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.test_functions import Hartmann
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits import Bump, FiniteArmEnvironment, SphereEnvironment


@pytest.mark.slow
def test_gp_sample_matches_prior_covariance_at_centres(tkwargs):
    # Over many draws, the empirical covariance of f at a few arms tends to K.
    arms = torch.rand(6, 2, **tkwargs)
    kernel = RBFKernel().to(**tkwargs)
    kernel.lengthscale = 0.5
    g = torch.Generator().manual_seed(0)
    draws = torch.stack(
        [
            FiniteArmEnvironment.gp_sample(arms, kernel, generator=g).means
            for _ in range(4000)
        ]
    )
    emp = draws.T @ draws / draws.shape[0]
    K = kernel(arms).to_dense().detach()
    assert torch.allclose(emp, K, atol=0.08)


def test_gp_sample_rkhs_norm_and_noise(tkwargs):
    arms = torch.rand(300, 3, **tkwargs)
    kernel = RBFKernel().to(**tkwargs)
    kernel.lengthscale = 0.5
    env = FiniteArmEnvironment.gp_sample(
        arms, kernel, num_centres=50, generator=torch.Generator().manual_seed(1)
    )
    f_range = float(env.means.max() - env.means.min())
    assert env.noise_std == pytest.approx((0.01 * f_range) ** 0.5)
    assert env.rkhs_norm > 0
    # RKHS norm of f = z^T xi is ||xi|| when the centres' embedding is full rank.
    assert env.rkhs_norm**2 == pytest.approx(50, rel=0.6)


def test_regret_and_pull(tkwargs):
    env = FiniteArmEnvironment.linear(
        num_arms=100, generator=torch.Generator().manual_seed(0)
    )
    best = int(env.means.argmax())
    assert float(env.regret(torch.tensor([best]))) == 0
    assert bool((env.regret(torch.arange(100)) >= 0).all())
    rewards = torch.stack([env.pull(torch.tensor([best])) for _ in range(2000)])
    assert float(rewards.mean()) == pytest.approx(env.best_mean, abs=0.1)
    assert float(rewards.std()) == pytest.approx(env.noise_std, rel=0.1)


def test_test_function_arms_in_unit_cube(tkwargs):
    env = FiniteArmEnvironment.from_test_function(
        Hartmann(dim=6, negate=True), 256, generator=torch.Generator().manual_seed(0)
    )
    assert env.arms.shape == (256, 6)
    assert bool(((env.arms >= 0) & (env.arms <= 1)).all())
    # Hartmann-6's maximum of the negated function is 3.32; a Sobol set gets near.
    assert 1.0 < env.best_mean < 3.33


def test_bad_environment_input(tkwargs):
    with pytest.raises(InputDataError, match="means"):
        FiniteArmEnvironment(torch.rand(5, 2), torch.rand(4), 0.1)
    with pytest.raises(InputDataError, match="noise_std"):
        FiniteArmEnvironment(torch.rand(5, 2), torch.rand(5), -1.0)


def test_environment_settings_that_passed_comparisons_are_named():
    # NaN passed ``noise_std < 0``; NaN means and an empty theta were kept.
    arms = torch.rand(4, 2, dtype=torch.double)
    with pytest.raises(InputDataError, match="means contain NaN"):
        FiniteArmEnvironment(arms, torch.tensor([0.0, float("nan"), 1.0, 2.0]), 0.1)
    for noise in (float("nan"), float("inf"), -1.0):
        with pytest.raises(InputDataError, match="noise_std must be finite"):
            FiniteArmEnvironment(arms, torch.zeros(4, dtype=torch.double), noise)
        with pytest.raises(InputDataError, match="noise_std must be finite"):
            Bump(noise_std=noise)
    with pytest.raises(InputDataError, match="theta must be a finite d tensor"):
        SphereEnvironment.random(0)


def test_pulls_of_arms_that_do_not_exist_are_refused():
    # A negative index read an arm from the end: a reward and a regret booked
    # for an arm nobody chose. One past the end was torch's IndexError.
    means = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.double)
    env = FiniteArmEnvironment(torch.rand(4, 2, dtype=torch.double), means, 0.0)
    for bad in ([-1], [4], [0, 7]):
        for method in (env.pull, env.regret):
            with pytest.raises(InputDataError, match=r"must lie in \[0, 4\)"):
                method(torch.tensor(bad))
    with pytest.raises(InputDataError, match="must be integers"):
        env.pull(torch.tensor([1.0]))
    assert env.pull(torch.tensor([3, 0])).tolist() == [3.0, 0.0]
    assert env.regret(torch.tensor([1])).tolist() == [2.0]
    assert env.noise_std == 0.0 and type(env.noise_std) is float
