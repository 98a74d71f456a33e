import math

import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.bandits.linear_environments import SphereEnvironment
from botorch_sketch.bandits.loop import run_finite
from botorch_sketch.bandits.pege import PEGE, SGDPEGE


def _slope(cumulative, checkpoints):
    logs = torch.tensor([[math.log(c), 1.0] for c in checkpoints], dtype=torch.double)
    values = cumulative[[c - 1 for c in checkpoints]].log().unsqueeze(-1)
    return float(torch.linalg.lstsq(logs, values).solution[0])


@pytest.mark.slow
@pytest.mark.parametrize("cls", [PEGE, SGDPEGE])
def test_regret_grows_like_square_root_of_n(cls):
    d, n = 4, 12000
    kwargs = {"generator": torch.Generator().manual_seed(0)} if cls is SGDPEGE else {}
    env = SphereEnvironment.random(
        d, noise_std=0.5, generator=torch.Generator().manual_seed(1)
    )
    trace = run_finite(cls(d, **kwargs), env, n, progress=False)
    slope = _slope(trace.cumulative_regret, [750, 1500, 3000, 6000, 12000])
    assert 0.4 < slope < 0.65, slope
    # sqrt(n) regret means the average regret per round vanishes
    assert float(trace.cumulative_regret[-1]) / n < 0.05


def test_schedule_and_estimates(tkwargs):
    d = 3
    env = SphereEnvironment(torch.tensor([0.0, 2.0, 0.0], **tkwargs), noise_std=0.0)
    policy = PEGE(d, **tkwargs)
    # phase 1: e_1, e_2, e_3 then one greedy round
    actions = policy.select(3)
    torch.testing.assert_close(actions, torch.eye(3, **tkwargs))
    policy.update(actions, env.pull(actions))
    torch.testing.assert_close(policy.theta, env.theta)
    greedy = policy.select(1)
    torch.testing.assert_close(greedy[0], torch.tensor([0.0, 1.0, 0.0], **tkwargs))
    assert float(env.regret(greedy)) == pytest.approx(0.0)


def test_bad_input(tkwargs):
    with pytest.raises(InputDataError):
        PEGE(2, basis=torch.tensor([[1.0, 0.0], [1.0, 0.0]], **tkwargs))
    with pytest.raises(InputDataError):
        PEGE(2, basis=2 * torch.eye(2, **tkwargs))
    policy = SGDPEGE(2)
    with pytest.raises(InputDataError):
        policy.update(torch.ones(1, 2, **tkwargs), torch.tensor([float("nan")]))
