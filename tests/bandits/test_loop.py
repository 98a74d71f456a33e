import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits import (
    BKB,
    PEGE,
    FiniteArmEnvironment,
    plot_traces,
    run_finite,
)
from botorch_sketch.bandits.random_policy import RandomPolicy


def test_run_finite_books_regret_and_time(tmp_path):
    env = FiniteArmEnvironment.linear(
        num_arms=50, generator=torch.Generator().manual_seed(0)
    )
    policy = RandomPolicy(env.arms, generator=torch.Generator().manual_seed(1))
    trace = run_finite(policy, env, num_steps=40, batch_size=3, progress=False)
    assert trace.num_steps == 40
    chosen = trace.chosen
    assert chosen.shape == (120,)
    expected = env.regret(chosen).reshape(40, 3).sum(-1).cumsum(0)
    assert torch.allclose(trace.cumulative_regret, expected.double())
    assert trace.total_time > 0
    plot_traces([trace], str(tmp_path / "t.png"))
    assert (tmp_path / "t.png").stat().st_size > 0


def test_random_policy_is_reproducible():
    arms = torch.rand(30, 2, dtype=torch.double)
    a = RandomPolicy(arms, generator=torch.Generator().manual_seed(5)).select(10)
    b = RandomPolicy(arms, generator=torch.Generator().manual_seed(5)).select(10)
    assert torch.equal(a, b)


def test_policy_rejects_bad_feedback():
    policy = RandomPolicy(torch.rand(10, 2, dtype=torch.double))
    with pytest.raises(InputDataError, match="indices"):
        policy.update(torch.tensor([10]), torch.tensor([1.0]))
    with pytest.raises(InputDataError, match="rewards"):
        policy.update(torch.tensor([1, 2]), torch.tensor([1.0]))
    with pytest.raises(InputDataError, match="NaN"):
        policy.update(torch.tensor([1]), torch.tensor([float("nan")]))
    with pytest.raises(InputDataError, match="integers"):
        policy.update(torch.tensor([1.0]), torch.tensor([1.0]))
    with pytest.raises(InputDataError, match="A x d"):
        RandomPolicy(torch.rand(10))


def test_counts_are_integers_and_steps_are_not_negative():
    # A float count failed inside ``range`` (TypeError); a negative number of
    # steps ran none, silently.
    env = FiniteArmEnvironment.linear(
        num_arms=20, generator=torch.Generator().manual_seed(0)
    )
    policies = [
        RandomPolicy(env.arms, generator=torch.Generator().manual_seed(1)),
        BKB(env.arms, RBFKernel().double(), 0.1),
        PEGE(3),
    ]
    for policy in policies:
        for q in (0, -2, 1.5, True, "2"):
            with pytest.raises(InputDataError, match="q must be an integer of at"):
                policy.select(q)
        # Any integer type is a count (NumPy's, a 0-dim tensor's index).
        assert len(policy.select(torch.tensor(2))) == 2
    for num_steps in (-3, 2.5):
        with pytest.raises(InputDataError, match="num_steps must be an integer"):
            run_finite(policies[0], env, num_steps, progress=False)
    assert run_finite(policies[0], env, 0, progress=False).num_steps == 0
