import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.acquisition.contextual_ucb import ucb_action


def test_ucb_action_refines_a_grid_with_the_context_fixed(tkwargs, online_nystrom):
    model = online_nystrom
    context = torch.tensor([0.5], **tkwargs)
    bounds = torch.tensor([[0.0], [1.0]], **tkwargs)
    beta = 0.3
    action, value = ucb_action(model, context, bounds, beta)
    assert action.shape == (1,) and 0 <= float(action) <= 1
    grid = torch.linspace(0, 1, 11, **tkwargs)
    states = torch.stack([torch.full_like(grid, 0.5), grid], -1)
    mean, var = model.mean_and_variance(states)
    grid_scores = mean + beta * (var / model.noise_var).sqrt()
    # The optimiser's score is the policy's score, and beats the coarse grid.
    state = torch.cat([context, action]).unsqueeze(0)
    m, v = model.mean_and_variance(state)
    assert float(value) == pytest.approx(float(m + beta * (v / 0.5).sqrt()), abs=1e-8)
    assert float(value) >= float(grid_scores.max()) - 1e-9
    # The learned ridge a = 0.3 + 0.4 x puts the best action near 0.5.
    assert abs(float(action) - 0.5) < 0.15
    # Refining the grid's best action: never worse than the grid, near the ridge.
    refined, refined_value = ucb_action(
        model, context, bounds, beta, grid=grid.unsqueeze(-1)
    )
    assert float(refined_value) >= float(grid_scores.max()) - 1e-12
    assert abs(float(refined) - 0.5) < 0.15
    with pytest.raises(InputDataError):
        ucb_action(model, torch.zeros(2, **tkwargs), bounds, beta)
    with pytest.raises(InputDataError):
        ucb_action(model, context, bounds, beta, grid=torch.zeros(3, 2, **tkwargs))
