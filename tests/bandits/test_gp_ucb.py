import pytest
import torch
from helpers import exact_gp_posterior, rbf_kernel

from botorch_sketch.bandits import FiniteArmEnvironment, run_finite
from botorch_sketch.bandits.dtc_ucb import DTCUCB
from botorch_sketch.bandits.gp_ucb import GPUCB


@pytest.mark.parametrize("lengthscale", [0.05, 0.4])
def test_posterior_is_the_exact_gp_with_repeated_pulls(lengthscale):
    g = torch.Generator().manual_seed(0)
    arms = torch.rand(150, 2, generator=g, dtype=torch.double)
    kernel = rbf_kernel(lengthscale, outputscale=2.0)
    lam = 0.05
    policy = GPUCB(arms, kernel, lam, refactorise_every=37)
    indices = torch.randint(150, (120,), generator=g)  # many repeats
    rewards = torch.randn(120, generator=g, dtype=torch.double)
    for i in range(0, 120, 3):
        policy.update(indices[i : i + 3], rewards[i : i + 3])
    mean, var = exact_gp_posterior(kernel, arms[indices], rewards, lam, arms)
    assert torch.allclose(policy.mean, mean, atol=1e-8)
    assert torch.allclose(policy.candidates.variance, var, atol=1e-8)
    # Short lengthscale: every distinct arm is a new direction; long: the
    # dictionary stops at the numerical rank of the arms' kernel matrix.
    distinct = indices.unique().numel()
    if lengthscale < 0.1:
        assert policy.dictionary_size == distinct
    else:
        assert policy.dictionary_size < distinct


def test_gp_ucb_finds_the_best_arm():
    g = torch.Generator().manual_seed(1)
    arms = torch.rand(400, 2, generator=g, dtype=torch.double)
    env = FiniteArmEnvironment.gp_sample(
        arms, rbf_kernel(0.2, outputscale=2.0), generator=g
    )
    policy = GPUCB(
        arms,
        rbf_kernel(0.2, outputscale=2.0),
        env.noise_std**2,
        beta=1.0,
        generator=torch.Generator().manual_seed(0),
    )
    trace = run_finite(policy, env, num_steps=300, progress=False)
    late = torch.tensor(trace.regret[-100:])
    random_regret = float((env.means.max() - env.means).mean())
    assert float(late.mean()) < 0.05 * random_regret


def test_fixed_dictionary_dtc_ucb_is_the_dtc_posterior():
    g = torch.Generator().manual_seed(2)
    arms = torch.rand(200, 2, generator=g, dtype=torch.double)
    kernel = rbf_kernel(0.3, outputscale=2.0)
    lam = 0.1
    dictionary = torch.arange(0, 200, 10)
    policy = DTCUCB(arms, kernel, lam, dictionary=dictionary)
    indices = torch.randint(200, (50,), generator=g)
    rewards = torch.randn(50, generator=g, dtype=torch.double)
    policy.update(indices, rewards)
    # DTC = exact GP with the Nystrom kernel k_S plus the exact diagonal.
    S = arms[dictionary]
    KS = kernel(S).to_dense()
    KaS = kernel(arms, S).to_dense()
    Q = KaS @ torch.linalg.pinv(KS) @ KaS.mT
    Qx = Q[indices][:, indices] + lam * torch.eye(50, dtype=torch.double)
    mean = Q[:, indices] @ torch.linalg.solve(Qx, rewards)
    var = kernel(arms, diag=True) - (
        Q[:, indices] * torch.linalg.solve(Qx, Q[indices]).mT
    ).sum(-1)
    assert torch.allclose(policy.mean, mean, atol=1e-7)
    assert torch.allclose(policy.candidates.variance, var, atol=1e-7)
    assert policy.dictionary_size == 20


def test_uniform_dictionary_size_and_seed():
    arms = torch.rand(100, 2, dtype=torch.double)
    a = DTCUCB(
        arms,
        rbf_kernel(0.3, outputscale=2.0),
        0.1,
        dictionary=15,
        generator=torch.Generator().manual_seed(3),
    )
    b = DTCUCB(
        arms,
        rbf_kernel(0.3, outputscale=2.0),
        0.1,
        dictionary=15,
        generator=torch.Generator().manual_seed(3),
    )
    assert a.dictionary_size == 15 and torch.equal(a.dictionary, b.dictionary)
