import math

import pytest
import torch
from botorch.acquisition.multi_objective.analytic import ExpectedHypervolumeImprovement
from botorch.exceptions.errors import UnsupportedError
from botorch.models import ModelListGP, SingleTaskGP
from botorch.utils.multi_objective.box_decompositions.non_dominated import (
    FastNondominatedPartitioning,
)
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch.distributions import Normal

from botorch_sketch.acquisition.log_ehvi import LogExpectedHypervolumeImprovement, log_h
from botorch_sketch.models import NystromGP

TKWARGS = {"dtype": torch.float64}


def _problem(n_objectives: int, model_class=SingleTaskGP, n: int = 25):
    generator = torch.Generator().manual_seed(n_objectives)
    X = torch.rand(n, 3, generator=generator, **TKWARGS)
    columns = [
        torch.sin(3 * X[:, 0]) + X[:, 1],
        torch.cos(2 * X[:, 1]) - X[:, 2],
        X[:, 0] * X[:, 2],
    ]
    Y = torch.stack(columns[:n_objectives], dim=-1)
    # Hyperparameters at their initial values: the test is of the acquisition.
    model = ModelListGP(*[model_class(X, Y[:, i : i + 1]) for i in range(n_objectives)])
    model.eval()
    ref = Y.min(dim=0).values - 0.1
    partitioning = FastNondominatedPartitioning(ref_point=ref, Y=Y[is_non_dominated(Y)])
    return model, ref, partitioning


def test_log_h_is_log_of_phi_plus_z_Phi_and_stays_finite_far_out():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    z = torch.tensor(
        [-5e3, -300.0, -40.0, -8.0, -3.0, -1.0 - 1e-9, -1.0, -0.5, 0.0, 2.0, 8.0],
        **TKWARGS,
    )
    exact = torch.tensor(
        [
            float(mpmath.log(mpmath.npdf(v) + v * mpmath.ncdf(v)))
            for v in map(mpmath.mpf, z.tolist())
        ],
        **TKWARGS,
    )
    assert torch.allclose(log_h(z), exact, rtol=1e-10, atol=1e-12)
    # Far in the tail: the asymptote phi(z) / z^2 to leading order, finite
    # gradients, increasing (h' = Phi > 0), across the branches' seams.
    far = torch.tensor(
        [-1e8, -1e4 - 1, -1e4, -1e4 + 1, -1e3, -40.0, -1.0 - 1e-9, -1.0, -1.0 + 1e-9],
        **TKWARGS,
    ).requires_grad_(True)
    values = log_h(far)
    (grad,) = torch.autograd.grad(values.sum(), far)
    assert values.isfinite().all() and grad.isfinite().all()
    assert (values.diff() > 0).all()
    normal = Normal(torch.zeros((), **TKWARGS), torch.ones((), **TKWARGS))
    asymptote = normal.log_prob(far[:5]) - 2 * far[:5].abs().log()
    assert torch.allclose(values[:5], asymptote, rtol=1e-9)


@pytest.mark.parametrize("n_objectives", [2, 3])
def test_exp_equals_botorch_s_analytic_ehvi(n_objectives):
    model, ref, partitioning = _problem(n_objectives)
    ours = LogExpectedHypervolumeImprovement(model, ref, partitioning)
    theirs = ExpectedHypervolumeImprovement(model, ref.tolist(), partitioning)
    X = torch.rand(300, 1, 3, generator=torch.Generator().manual_seed(7), **TKWARGS)
    with torch.no_grad():
        log_value, value = ours(X), theirs(X)
    assert log_value.shape == value.shape == (300,)
    visible = value > 1e-8
    assert visible.sum() > 50
    assert torch.allclose(log_value[visible].exp(), value[visible], rtol=1e-7)
    # Where BoTorch's underflows to nothing, ours still ranks the points.
    assert log_value.isfinite().all()


def test_gradients_are_finite_and_match_finite_differences():
    model, ref, partitioning = _problem(2)
    acqf = LogExpectedHypervolumeImprovement(model, ref, partitioning)
    X = torch.rand(20, 1, 3, generator=torch.Generator().manual_seed(1), **TKWARGS)
    X.requires_grad_(True)
    (grad,) = torch.autograd.grad(acqf(X).sum(), X)
    assert grad.isfinite().all()
    step = 1e-6
    shift = torch.zeros_like(X)
    shift[..., 0] = step
    with torch.no_grad():
        numeric = (acqf(X + shift) - acqf(X - shift)) / (2 * step)
    assert torch.allclose(grad[..., 0, 0], numeric, rtol=1e-4, atol=1e-6)


def test_batch_shapes_and_a_nystrom_model_list():
    model, ref, partitioning = _problem(2, model_class=NystromGP, n=40)
    acqf = LogExpectedHypervolumeImprovement(model, ref, partitioning)
    X = torch.rand(4, 5, 1, 3, generator=torch.Generator().manual_seed(2), **TKWARGS)
    with torch.no_grad():
        values = acqf(X)
        one = acqf(X[0, 0])  # a 1 x d point: a batch of one
    assert values.shape == (4, 5) and one.shape == (1,)
    assert torch.allclose(values[0, 0], one[0])
    # One posterior per output equals the list's joint posterior's marginals.
    posterior = model.posterior(X)
    mean, variance = acqf._marginals(X)
    assert torch.allclose(mean, posterior.mean)
    assert torch.allclose(variance, posterior.variance)


def test_q_above_one_and_a_wrong_reference_point_are_refused():
    model, ref, partitioning = _problem(2)
    acqf = LogExpectedHypervolumeImprovement(model, ref, partitioning)
    with pytest.raises(AssertionError, match="q=1"):
        acqf(torch.rand(3, 2, 3, **TKWARGS))
    with pytest.raises(UnsupportedError, match="reference point"):
        LogExpectedHypervolumeImprovement(model, ref[:1], partitioning)


def test_an_empty_decomposition_gives_minus_infinity():
    model, ref, _ = _problem(2)
    # A front that dominates the whole box above the reference point.
    partitioning = FastNondominatedPartitioning(
        ref_point=ref, Y=torch.full((1, 2), math.inf, **TKWARGS)
    )
    acqf = LogExpectedHypervolumeImprovement(model, ref, partitioning)
    with torch.no_grad():
        values = acqf(torch.rand(3, 1, 3, **TKWARGS))
    assert values.shape == (3,) and (values == -math.inf).all()


def test_a_model_whose_outputs_are_not_the_objectives_is_refused():
    model, ref, partitioning = _problem(2)
    X = model.models[0].train_inputs[0]
    # One output for two objectives broadcast silently over both.
    one = SingleTaskGP(X, model.models[0].train_targets.unsqueeze(-1))
    with pytest.raises(UnsupportedError, match="1 output.*2 objectives"):
        LogExpectedHypervolumeImprovement(one, ref, partitioning)
    # Three outputs for two objectives failed at the first evaluation only.
    three, _, _ = _problem(3)
    with pytest.raises(UnsupportedError, match="3 outputs.*2 objectives"):
        LogExpectedHypervolumeImprovement(three, ref, partitioning)
    # A multi-output model of as many outputs as objectives is taken.
    Y = torch.stack([m.train_targets for m in model.models], dim=-1)
    acqf = LogExpectedHypervolumeImprovement(SingleTaskGP(X, Y), ref, partitioning)
    assert acqf(X[:4].unsqueeze(-2)).shape == (4,)
