import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import RBFKernel

from botorch_sketch.acquisition.contextual_ucb import ucb_action
from botorch_sketch.sketching.incremental import IncrementalNystrom
from botorch_sketch.sketching.kors import KORS


def _model(tkwargs, n=80):
    k = RBFKernel().to(**tkwargs)
    k.lengthscale = 0.2
    k.requires_grad_(False)
    g = torch.Generator().manual_seed(0)  # on the CPU, whatever the device
    rule = KORS(mu=0.5, gamma=3.0, generator=g)
    model = IncrementalNystrom(k, 0.5, 2, rule=rule, **tkwargs)
    X = torch.rand(n, 2, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    y = torch.exp(-((X[:, 1] - 0.3 - 0.4 * X[:, 0]) ** 2) / 0.02)
    for i in range(n):
        model.observe(X[i], y[i])
    return model


def test_ucb_action_refines_a_grid_with_the_context_fixed(tkwargs):
    model = _model(tkwargs)
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
