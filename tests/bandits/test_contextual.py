import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from gpytorch.kernels import ProductKernel, RBFKernel
from helpers import exact_gp_posterior, rbf_kernel

from botorch_sketch.bandits.contextual import CBBKB, CBKB, EKUCB, KernelUCB
from botorch_sketch.bandits.contextual_environments import Bump
from botorch_sketch.bandits.loop import run_contextual


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_kernel_ucb_scores_are_the_dense_k_ucb_scores():
    env = Bump(generator=_gen(1))
    lam, beta = 2.0, 0.7
    policy = KernelUCB(rbf_kernel(0.1), lam, env.dim, beta=beta, generator=_gen())
    states, rewards = [], []
    for _ in range(60):
        cands, expected = env.candidates()
        i = policy.select(cands)
        r = env.noisy(expected[i].reshape(1))
        policy.update(cands[i].reshape(1, -1), r)
        states.append(cands[i])
        rewards.append(r)
    S, Y = torch.stack(states), torch.cat(rewards)
    cands, _ = env.candidates()
    k = rbf_kernel(0.1)
    mu, var = exact_gp_posterior(k, S, Y, lam, cands)
    sigma2 = var / lam
    expected_scores = mu + beta * sigma2.sqrt()
    assert torch.allclose(policy.scores(cands), expected_scores, atol=1e-10)


def test_ek_ucb_with_huge_gamma_plays_as_kernel_ucb():
    traces = []
    policies = (
        EKUCB(rbf_kernel(0.1), 10.0, 6, gamma=1e12, generator=_gen()),
        KernelUCB(rbf_kernel(0.1), 10.0, 6, generator=_gen()),
    )
    for policy in policies:
        env = Bump(generator=_gen(2))
        traces.append(run_contextual(policy, env, 100, progress=False))
        assert policy.dictionary_size == 100
    assert torch.equal(traces[0].chosen, traces[1].chosen)
    assert traces[0].regret == traces[1].regret
    cands, _ = Bump(generator=_gen(9)).candidates()
    assert torch.equal(policies[0].scores(cands), policies[1].scores(cands))


def test_ek_ucb_is_reproducible_and_sketches():
    runs = []
    for _ in range(2):
        policy = EKUCB(rbf_kernel(0.1), 10.0, 6, gamma=1.0, generator=_gen(5))
        trace = run_contextual(policy, Bump(generator=_gen(3)), 150, progress=False)
        runs.append((trace.chosen, trace.dictionary_size))
    assert torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    assert 0 < runs[0][1][-1] < 100


@pytest.mark.parametrize("cls", [CBKB, CBBKB])
def test_resampling_policies_learn_and_redraw(cls):
    policy = cls(rbf_kernel(0.1), 10.0, 6, generator=_gen())
    env = Bump(generator=_gen(4))
    trace = run_contextual(policy, env, 80, progress=False)
    assert policy.dictionary_size >= 1
    # A redraw by variance keeps some but not all of the 80 states.
    kept = set(policy.model.dictionary.tolist())
    assert 0 < len(kept) < 80 and kept <= set(range(80))
    assert trace.dictionary_size[-1] == len(kept)
    # Its model is the DTC posterior on that dictionary, fitted from scratch.
    from botorch_sketch.sketching import DTCPosterior, DTCStatistics

    model = policy.model
    emb = model.embedding
    stats = DTCStatistics.from_data(
        emb, model.X, model.y, torch.full_like(model.y, 10.0)
    )
    cands, _ = env.candidates()
    mean, _ = model.mean_and_variance(cands)
    assert torch.allclose(mean, DTCPosterior(stats).mean(emb(cands)), atol=1e-10)
    if cls is CBBKB:
        assert 1 <= policy.num_redraws < 80


def test_product_kernel_and_learning_beats_random():
    # Context kernel times action kernel, ARD on the context.
    ctx = RBFKernel(ard_num_dims=5, active_dims=torch.arange(5)).double()
    ctx.lengthscale = torch.full((1, 5), 0.3)
    act = RBFKernel(active_dims=torch.tensor([5])).double()
    act.lengthscale = 0.1
    kernel = ProductKernel(ctx, act)
    kernel.requires_grad_(False)
    policy = EKUCB(kernel, 1.0, 6, gamma=5.0, generator=_gen())
    trace = run_contextual(policy, Bump(generator=_gen(6)), 300, progress=False)
    g = _gen(7)
    env = Bump(generator=_gen(6))
    random_regret = 0.0
    for _ in range(300):
        _, expected = env.candidates()
        i = torch.randint(10, (1,), generator=g)
        random_regret += float(expected.max() - expected[i])
    assert float(trace.cumulative_regret[-1]) < 0.5 * random_regret


def test_validation():
    policy = EKUCB(rbf_kernel(0.1), 1.0, 6, generator=_gen())
    with pytest.raises(BotorchTensorDimensionError):
        policy.select(torch.rand(4, 3, dtype=torch.double))
    with pytest.raises(InputDataError):
        policy.update(torch.rand(2, 6, dtype=torch.double), torch.zeros(3))
    with pytest.raises(InputDataError):
        KernelUCB(rbf_kernel(0.1), 1.0, 6, beta=-1.0)
    with pytest.raises(InputDataError):
        CBBKB(rbf_kernel(0.1), 1.0, 6, threshold=0.5)
