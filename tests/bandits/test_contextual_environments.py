import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.bandits.contextual_environments import (
    Bump,
    Chessboard,
    DigitsBandit,
    StepDiagonal,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_bump_definition():
    env = Bump(generator=_gen())
    assert env.actions.shape == (10,) and env.dim == 6
    assert len(set(env.actions.tolist())) == 10
    assert bool(((env.actions * 100).round() == env.actions * 100).all())
    assert float(env.best_action) in env.actions.tolist()
    assert bool((env.w_star.abs() <= 1).all()) and bool((env.x_star >= 0).all())
    states, expected = env.candidates()
    x, a = states[:, :5], states[:, 5]
    assert bool((x == x[0]).all())  # one context per round
    assert sorted(a.tolist()) == sorted(env.actions.tolist())
    direct = 1 - (a - env.best_action).abs() - (x[0] - env.x_star) @ env.w_star
    assert torch.allclose(expected, direct.clamp_min(0))
    # At x = x*, the best action a* earns exactly 1.
    star = env.expected_reward(env.x_star.unsqueeze(0), env.best_action.reshape(1))
    assert float(star) == 1.0
    # Same problem seed, same problem; the rounds come from the generator.
    assert torch.equal(Bump(generator=_gen(5)).actions, env.actions)


def test_candidate_order_is_shuffled():
    env = Bump(generator=_gen(1))
    orders = {tuple(env.candidates()[0][:, -1].tolist()) for _ in range(5)}
    assert len(orders) > 1


def test_chessboard_cells():
    env = Chessboard(generator=_gen())
    x = torch.tensor([0.3, 0.3, 0.3, 0.8, 0.1, 0.6, 0.6, 0.1, 0.8, 0.6])
    a = torch.tensor([0.1, 0.6, 0.3, 0.6, 0.3, 0.3, 0.9, 0.1, 0.1, 0.6])
    want = torch.tensor([1, 1, 0, 1, 0.5, 0.5, 0.5, 0, 0, 0], dtype=torch.double)
    assert torch.equal(env.expected_reward(x.double().unsqueeze(-1), a.double()), want)
    states, expected = env.candidates()
    assert states.shape == (10, 2)
    assert torch.equal(expected, env.expected_reward(states[:, :1], states[:, 1]))


def test_step_diagonal_bands():
    env = StepDiagonal(generator=_gen())
    a = torch.full((5,), 0.4, dtype=torch.double)
    x = torch.tensor([0.55, 0.64, 0.25, 0.16, 0.4], dtype=torch.double)
    want = torch.tensor([1, 1, 0.5, 0.5, 0], dtype=torch.double)
    assert torch.equal(env.expected_reward(x.unsqueeze(-1), a), want)


def test_regret_is_against_best_available_and_noise():
    env = StepDiagonal(noise_std=0.1, generator=_gen(3))
    best = [float(env.candidates()[1].max()) for _ in range(200)]
    # No action earns 1 in some rounds: a constant-1 oracle would be wrong.
    assert min(best) < 1
    r = env.noisy(torch.zeros(1000, dtype=torch.double))
    assert 0.08 < float(r.std()) < 0.12
    with pytest.raises(InputDataError):
        Bump(num_actions=0)


def test_digits_bandit():
    pytest.importorskip("sklearn")
    env = DigitsBandit(generator=_gen())
    states, expected = env.candidates()
    assert states.shape == (10, 74) and env.dim == 74
    assert float(expected.sum()) == 1.0
    assert bool((states[:, :64] <= 1).all()) and bool((states[:, :64] >= 0).all())
    assert torch.equal(states[:, 64:], torch.eye(10, dtype=torch.double))
    label = int(expected.argmax())
    i = int(((env.images - states[0, :64]).abs().sum(-1) == 0).nonzero()[0])
    assert int(env.labels[i]) == label
    assert torch.equal(env.noisy(expected), expected)  # exact rewards
