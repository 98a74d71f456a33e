import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.bandits.linucb import LinUCB, SGDLinUCB
from botorch_sketch.bandits.replay import (
    ReplayLog,
    digits_log,
    replay,
    replay_side_by_side,
)


class _Always:
    name = "always"
    dictionary_size = 0

    def __init__(self, action):
        self.action = action
        self.updates = 0

    def select(self, candidates):
        return torch.tensor(self.action)

    def update(self, features, rewards):
        self.updates += 1


def test_replay_keeps_only_matching_events(tkwargs):
    log = ReplayLog(
        contexts=torch.randn(6, 2, **tkwargs),
        actions=torch.tensor([0, 1, 1, 0, 1, 2]),
        rewards=torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 1.0], **tkwargs),
        num_actions=3,
    )
    policy = _Always(1)
    result = replay(policy, log, progress=False)
    assert result.num_accepted == 3 == policy.updates
    assert result.ctr == pytest.approx(2 / 3)
    C = log.candidates(0)
    assert C.shape == (3, 6)
    torch.testing.assert_close(C[1, 2:4], log.contexts[0])
    assert float(C[1, :2].abs().sum() + C[1, 4:].abs().sum()) == 0.0


def test_replay_is_unbiased_for_a_fixed_policy():
    # A policy that always plays class 3 has CTR = P(label = 3) ~ 0.1.
    log = digits_log(20000, 5, generator=torch.Generator().manual_seed(0))
    result = replay(_Always(3), log, progress=False)
    assert result.num_accepted == pytest.approx(2000, rel=0.1)
    assert result.ctr == pytest.approx(0.1, abs=0.025)


@pytest.mark.slow
def test_learning_policies_beat_uniform_on_digits():
    # About 300 of the 3000 events are accepted, so one run's CTR has a standard
    # error near 0.025 and SGDLinUCB's varies with its SGD seed (0.19-0.27 here):
    # every run must clear uniform (0.1) by two standard errors, and the runs'
    # mean must double it.
    log = digits_log(3000, 10, generator=torch.Generator().manual_seed(1))
    assert log.dim == 100
    policies = [LinUCB(log.dim, width=0.5)] + [
        SGDLinUCB(
            log.dim,
            width=0.5,
            steps_per_update=16,
            generator=torch.Generator().manual_seed(seed),
        )
        for seed in range(3)
    ]
    results = replay_side_by_side(policies, log, progress=False)
    for result in results:
        assert result.ctr > 0.15, result.ctr  # uniform random: 0.1
        assert result.time_per_event > 0
    assert sum(r.ctr for r in results) / len(results) > 0.2


def test_bad_log(tkwargs):
    with pytest.raises(InputDataError):
        ReplayLog(torch.randn(3, 2), torch.tensor([0, 1, 5]), torch.ones(3), 3)
    with pytest.raises(InputDataError):
        ReplayLog(torch.randn(3, 2), torch.tensor([0, 1]), torch.ones(3), 3)
