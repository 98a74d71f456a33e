import pytest
import torch
from botorch.exceptions.errors import InputDataError
from helpers import rbf_kernel

from botorch_sketch.bandits.contextual import CBBKB, CBKB, EKUCB, KernelUCB
from botorch_sketch.bandits.contextual_environments import Bump
from botorch_sketch.bandits.continuous import ContinuousActionUCB
from botorch_sketch.bandits.continuous_environments import (
    ContinuousActionEnvironment,
    ContinuousBump,
)
from botorch_sketch.bandits.loop import run_continuous_contextual

UNIT = torch.tensor([[0.0], [1.0]], dtype=torch.double)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _trained(grid_size=64, refine=True, n=40, seed=0):
    r"""EK-UCB on 2-d contexts and 2-d actions in [-1, 1] x [0, 0.5], fed n points.

    The reward peaks on a context-dependent ridge inside the box, so the UCB
    maximiser is an interior action that a coarse grid misses.
    """
    bounds = torch.tensor([[-1.0, 0.0], [1.0, 0.5]], dtype=torch.double)
    g = _gen(seed)
    policy = EKUCB(rbf_kernel(0.4), 0.1, 4, gamma=1e12, generator=g)
    wrapper = ContinuousActionUCB(
        policy, bounds, grid_size=grid_size, generator=g, refine=refine
    )
    X = torch.rand(n, 2, generator=g, dtype=torch.double)
    A = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(
        n, 2, generator=g, dtype=torch.double
    )
    y = torch.exp(-((A[:, 0] - 0.5 * X[:, 0]) ** 2 + (A[:, 1] - 0.2) ** 2) / 0.1)
    wrapper.update(torch.cat([X, A], -1), y)
    return wrapper


class _Flat(ContinuousActionEnvironment):
    def context(self):
        return torch.zeros(self.context_dim, dtype=torch.double)

    def expected_reward(self, contexts, actions):
        return torch.zeros(contexts.shape[0], dtype=torch.double)

    def best_reward(self, context):
        return torch.zeros(context.shape[:-1], dtype=torch.double)


def _random_action_regret(seed, num_rounds):
    r"""Cumulative regret of uniform actions, drawing as the loop draws."""
    env = ContinuousBump(generator=_gen(seed))
    g = _gen(1000 + seed)
    total = 0.0
    for _ in range(num_rounds):
        x = env.context()
        a = torch.rand(1, generator=g, dtype=torch.double)
        expected = env.expected_reward(x.unsqueeze(0), a.unsqueeze(0))
        env.noisy(expected)  # the loop's noise draw keeps the contexts aligned
        total += float(env.regret(x.unsqueeze(0), a.unsqueeze(0)).sum())
    return total


def test_continuous_bump_best_reward_is_exact():
    env = ContinuousBump(generator=_gen())
    assert env.dim == 6 and env.action_dim == 1 and env.context_dim == 5
    X = torch.stack([env.context() for _ in range(500)])
    best = env.best_reward(X)
    assert best.shape == (500,)
    # Attained at a*, exactly.
    at_star = env.expected_reward(X, env.best_action.expand(500, 1))
    assert torch.equal(at_star, best)
    # Never beaten: by random actions, nor by a fine grid that contains a*.
    A = torch.rand(500, 1, generator=_gen(1), dtype=torch.double)
    assert bool((env.expected_reward(X, A) <= best).all())
    assert bool((env.regret(X, A) >= 0).all())
    assert float(env.regret(X, A).sum()) > 0
    grid = torch.arange(101, dtype=torch.double) / 100
    rewards = env.expected_reward(
        X.repeat_interleave(101, 0), grid.repeat(500).unsqueeze(-1)
    ).reshape(500, 101)
    assert torch.equal(rewards.max(-1).values, best)
    # One context gives a scalar; the formula is max(0, 1 - <w*, x - x*>).
    x = X[0]
    assert env.best_reward(x).shape == ()
    direct = (1 - (x - env.x_star) @ env.w_star).clamp_min(0)
    assert float(env.best_reward(x)) == pytest.approx(float(direct), abs=1e-15)


def test_continuous_bump_is_bump_with_a_wider_action_set():
    for seed in (123, 7):
        env = ContinuousBump(problem_seed=seed)
        bump = Bump(problem_seed=seed, generator=_gen())
        assert env.best_action == bump.best_action
        assert torch.equal(env.x_star, bump.x_star)
        assert torch.equal(env.w_star, bump.w_star)
        states, expected = bump.candidates()
        ours = env.expected_reward(states[:, :5], states[:, 5:])
        assert torch.equal(ours, expected)


def test_grid_scores_are_the_wrapped_policy_scores():
    wrapper = _trained()
    assert wrapper.grid.shape == (64, 2) and wrapper.grid_size == 64
    lower, upper = wrapper.action_bounds
    assert bool(((wrapper.grid >= lower) & (wrapper.grid <= upper)).all())
    for seed in range(3):
        x = torch.rand(2, generator=_gen(seed), dtype=torch.double)
        states = torch.cat([x.expand(64, 2), wrapper.grid], -1)
        assert torch.equal(wrapper.grid_states(x), states)
        assert torch.equal(wrapper.grid_scores(x), wrapper.policy.scores(states))


def test_refined_action_never_loses_to_the_grid_and_stays_in_bounds():
    # A coarse grid, so that refinement has something to gain.
    wrapper = _trained(grid_size=4)
    lower, upper = wrapper.action_bounds
    gains = []
    for seed in range(5):
        x = torch.rand(2, generator=_gen(seed), dtype=torch.double)
        action = wrapper.select(x)
        assert action.shape == (2,) and action.dtype == torch.double
        assert bool(((action >= lower) & (action <= upper)).all())
        score = wrapper.policy.scores(wrapper.join(x, action).unsqueeze(0))
        best_grid = wrapper.grid_scores(x).max()
        assert float(score) >= float(best_grid)
        gains.append(float(score - best_grid))
    # The optimiser moves off the grid: a wrapper that ignored refine would not.
    assert min(gains) > 1e-3


def test_grid_only_plays_the_argmax_grid_point():
    wrapper = _trained(refine=False)
    assert wrapper.name == "ek-ucb-continuous-grid"
    for seed in range(3):
        x = torch.rand(2, generator=_gen(seed), dtype=torch.double)
        best = int(wrapper.grid_scores(x).argmax())
        assert torch.equal(wrapper.select(x), wrapper.grid[best])


def test_first_round_draws_a_uniform_action_from_the_generator():
    bounds = torch.tensor([[-2.0], [-1.0]], dtype=torch.double)
    x = torch.zeros(5, dtype=torch.double)

    def first(seed):
        g = _gen(seed)
        policy = EKUCB(rbf_kernel(0.3), 0.1, 6, generator=g)
        return ContinuousActionUCB(policy, bounds, generator=g).select(x)

    a = first(0)
    assert a.shape == (1,) and -2 <= float(a) <= -1
    assert torch.equal(a, first(0))
    assert not torch.equal(a, first(1))


@pytest.mark.slow
@pytest.mark.parametrize("cls", [KernelUCB, EKUCB, CBKB, CBBKB])
def test_every_contextual_policy_runs_with_continuous_actions(cls):
    env = ContinuousBump(generator=_gen(3))
    policy = cls(rbf_kernel(0.3), 0.1, env.dim, generator=_gen())
    wrapper = ContinuousActionUCB(policy, UNIT, grid_size=16, generator=_gen(1))
    trace = run_continuous_contextual(wrapper, env, 25, progress=False)
    assert trace.name == f"{cls.name}-continuous"
    assert trace.num_steps == 25 and trace.chosen.shape == (25, 1)
    assert trace.dictionary_size[-1] == policy.dictionary_size > 0
    assert policy.model.num_observations == 25
    # The books: replay the environment's draws (context, then noise) and
    # recompute regret and reward from the actions played.
    replay = ContinuousBump(generator=_gen(3))
    for t in range(25):
        x = replay.context().unsqueeze(0)
        a = trace.chosen[t : t + 1]
        expected = replay.expected_reward(x, a)
        assert trace.regret[t] == pytest.approx(float(replay.regret(x, a)), abs=1e-12)
        assert trace.regret[t] >= 0
        assert trace.reward[t] == pytest.approx(float(replay.noisy(expected)))
    assert torch.equal(policy.model.X[:, -1:], trace.chosen)


@pytest.mark.slow
def test_refined_ek_ucb_beats_random_actions_on_continuous_bump():
    num_rounds, seeds = 150, (0, 1)
    refined, random = [], []
    for seed in seeds:
        env = ContinuousBump(generator=_gen(seed))
        g = _gen(100 + seed)
        policy = EKUCB(rbf_kernel(0.3), 0.1, env.dim, generator=g)
        wrapper = ContinuousActionUCB(policy, UNIT, generator=g)
        trace = run_continuous_contextual(wrapper, env, num_rounds, progress=False)
        refined.append(float(trace.cumulative_regret[-1]))
        random.append(_random_action_regret(seed, num_rounds))
    mean_refined = sum(refined) / len(seeds)
    mean_random = sum(random) / len(seeds)
    # Observed: 15.8 against 43.3 (uniform actions lose ~0.29 a round).
    assert mean_random > 30
    assert mean_refined < 0.6 * mean_random


@pytest.mark.slow
def test_refinement_beats_a_coarse_grid_on_continuous_bump():
    totals = {True: 0.0, False: 0.0}
    for refine in (True, False):
        for seed in (0, 1):
            env = ContinuousBump(generator=_gen(seed))
            g = _gen(100 + seed)
            policy = EKUCB(rbf_kernel(0.3), 0.1, env.dim, generator=g)
            wrapper = ContinuousActionUCB(
                policy, UNIT, grid_size=4, generator=g, refine=refine
            )
            trace = run_continuous_contextual(wrapper, env, 150, progress=False)
            totals[refine] += float(trace.cumulative_regret[-1])
    # Observed: 32.2 (refined) against 52.5 (the 4 grid actions alone).
    assert totals[True] < 0.8 * totals[False]


def test_same_seed_same_actions():
    def run(seed):
        env = ContinuousBump(generator=_gen(4))
        g = _gen(seed)
        wrapper = ContinuousActionUCB(
            EKUCB(rbf_kernel(0.3), 0.1, env.dim, generator=g), UNIT, generator=g
        )
        return run_continuous_contextual(wrapper, env, 20, progress=False)

    a, b = run(0), run(0)
    assert torch.equal(a.chosen, b.chosen) and a.regret == b.regret
    assert not torch.equal(a.chosen, run(1).chosen)


def test_bad_inputs_raise():
    policy = EKUCB(rbf_kernel(0.3), 0.1, 6, generator=_gen())
    with pytest.raises(InputDataError, match="2 x action_dim"):
        ContinuousActionUCB(policy, torch.tensor([0.0, 1.0]))
    with pytest.raises(InputDataError, match="2 x action_dim"):
        ContinuousActionUCB(policy, torch.zeros(3, 1))
    with pytest.raises(InputDataError, match="strictly below"):
        ContinuousActionUCB(policy, torch.tensor([[0.0], [0.0]]))
    with pytest.raises(InputDataError, match="strictly below"):
        ContinuousActionUCB(policy, torch.tensor([[1.0], [0.0]]))
    with pytest.raises(InputDataError, match="NaN"):
        ContinuousActionUCB(policy, torch.tensor([[0.0], [float("nan")]]))
    with pytest.raises(InputDataError, match="context remains"):
        ContinuousActionUCB(policy, torch.tensor([[0.0] * 6, [1.0] * 6]))
    with pytest.raises(InputDataError, match="grid_size"):
        ContinuousActionUCB(policy, UNIT, grid_size=0)
    # A float count failed inside the Sobol engine (TypeError).
    with pytest.raises(InputDataError, match="grid_size must be an integer"):
        ContinuousActionUCB(policy, UNIT, grid_size=1.5)
    with pytest.raises(InputDataError, match="OnlineKernelUCB"):
        ContinuousActionUCB(object(), UNIT)
    wrapper = ContinuousActionUCB(policy, UNIT)
    with pytest.raises(InputDataError, match="context must be a tensor of length 5"):
        wrapper.select(torch.zeros(4, dtype=torch.double))
    with pytest.raises(InputDataError, match="context must be a tensor of length 5"):
        wrapper.select(torch.zeros(1, 5, dtype=torch.double))
    # First round included, where no model evaluated it: a uniform action.
    nan_context = torch.tensor([0.1, float("nan"), 0.2, 0.3, 0.4], dtype=torch.double)
    with pytest.raises(InputDataError, match="context contains NaN or infinite"):
        wrapper.select(nan_context)
    with pytest.raises(InputDataError, match="States must end in 6"):
        wrapper.update(torch.zeros(5, dtype=torch.double), torch.zeros(1))
    with pytest.raises(InputDataError, match="2 x action_dim"):
        _Flat(2, torch.tensor([0.0, 1.0]))
    with pytest.raises(InputDataError, match="lower bound"):
        _Flat(2, torch.tensor([[1.0], [0.0]]))
    with pytest.raises(InputDataError, match="context_dim"):
        _Flat(0, UNIT)
    with pytest.raises(InputDataError, match="noise_std"):
        _Flat(2, UNIT, noise_std=-1.0)
    assert _Flat(2, UNIT).dim == 3
    env = ContinuousBump()
    with pytest.raises(InputDataError, match="contexts"):
        env.expected_reward(torch.zeros(3, 4), torch.zeros(3, 1))
    with pytest.raises(InputDataError, match="Contexts must end in 5"):
        env.best_reward(torch.zeros(3, 4))
