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


@pytest.mark.parametrize("cls", [EKUCB, CBBKB])
def test_update_reuses_the_played_states_kernel_row_and_nothing_stale(cls):
    # ``update`` reuses what ``select`` computed for the played state (no kernel
    # call unless the dictionary grows); states that were not the played one,
    # or an evaluation made before the dictionary changed, are recomputed.
    # Either way the run equals one whose model recomputes everything.
    env, twin_env = Bump(generator=_gen(4)), Bump(generator=_gen(4))
    policy = cls(rbf_kernel(0.1), 10.0, 6, generator=_gen(6))
    twin = cls(rbf_kernel(0.1), 10.0, 6, generator=_gen(6))
    calls = []
    forward = policy.model.kernel.forward

    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)

    policy.model.kernel.forward = counted
    quiet_updates = 0
    for t in range(80):
        cands, expected = env.candidates()
        twin_cands, twin_expected = twin_env.candidates()
        i = policy.select(cands)
        assert i == twin.select(twin_cands)
        r, twin_r = (
            env.noisy(expected[i].reshape(1)),
            twin_env.noisy(twin_expected[i].reshape(1)),
        )
        version = policy.model.version
        calls.clear()
        states = cands[i].reshape(1, -1)
        if t % 10 == 9:
            # Two states, the played one second: the first changes nothing the
            # second's evaluation depends on unless it grows the dictionary.
            states = torch.cat([cands[(i + 1) % len(cands)].reshape(1, -1), states])
            r = torch.cat([r, r])
        policy.update(states, r)
        twin._played = None  # the twin recomputes every state's kernel row
        twin_states = twin_cands[i].reshape(1, -1)
        if t % 10 == 9:
            twin_states = torch.cat(
                [twin_cands[(i + 1) % len(twin_cands)].reshape(1, -1), twin_states]
            )
            twin_r = torch.cat([twin_r, twin_r])
        twin.update(twin_states, twin_r)
        if states.shape[0] == 1 and policy.model.version == version and t > 0:
            quiet_updates += 1
            assert not calls, "update recomputed the played state's kernel row"
    assert quiet_updates > 10
    assert policy.dictionary_size == twin.dictionary_size > 0
    cands, _ = Bump(generator=_gen(9)).candidates()
    torch.testing.assert_close(policy.scores(cands), twin.scores(cands))


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
    from botorch_sketch.sketching import DTCStatistics, WeightPosterior

    model = policy.model
    emb = model.embedding
    stats = DTCStatistics.from_data(
        emb, model.X, model.y, torch.full_like(model.y, 10.0)
    )
    cands, _ = env.candidates()
    mean, _ = model.mean_and_variance(cands)
    assert torch.allclose(mean, WeightPosterior(stats).mean(emb(cands)), atol=1e-10)
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


def test_integer_states_are_named():
    kernel = RBFKernel().double()
    policy = EKUCB(kernel, 0.1, 2)
    with pytest.raises(InputDataError, match="floating point, got torch.int64"):
        policy.select(torch.ones(5, 2, dtype=torch.long))


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda k: EKUCB(k, 1.0, 2, gamma=float("nan")), "KORS needs"),
        (lambda k: EKUCB(k, 1.0, 2, mu=float("inf")), "KORS needs"),
        (lambda k: EKUCB(k, 1.0, 2, beta=float("nan")), "beta must be"),
        (lambda k: KernelUCB(k, float("nan"), 2), "noise_var must be finite"),
        (lambda k: KernelUCB(k, float("inf"), 2), "noise_var must be finite"),
        (lambda k: KernelUCB(k, 1.0, 0), "dim must be an integer of at least 1"),
        (lambda k: CBBKB(k, 1.0, 2, threshold=float("nan")), "threshold must be"),
    ],
)
def test_nan_and_infinite_settings_are_named(build, match):
    # Each passed a ``<=`` test and ran with NaN scores or no dictionary rule.
    with pytest.raises(InputDataError, match=match):
        build(RBFKernel().double())


def test_first_round_candidates_are_checked():
    # The first round draws uniformly without evaluating the candidates, so
    # NaN ones were played and refused only at the update.
    policy = EKUCB(RBFKernel().double(), 1.0, 2)
    with pytest.raises(InputDataError, match="NaN or infinite"):
        policy.select(torch.full((4, 2), float("nan"), dtype=torch.double))
