"""NystromGP driven by BoTorch's own acquisition functions and optimisers."""

import pytest
import torch
from botorch.acquisition import (
    LogExpectedImprovement,
    UpperConfidenceBound,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.fit import fit_gpytorch_mll
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models import ModelListGP
from botorch.models.transforms import Normalize
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.test_functions import Hartmann
from gpytorch.mlls import ExactMarginalLogLikelihood, SumMarginalLogLikelihood

from botorch_sketch import NystromGP, RidgeLeverageSampler


@pytest.fixture(scope="module", params=[torch.double, torch.float], ids=["f64", "f32"])
def fitted(request, tkwargs):
    dtype, device = request.param, tkwargs["device"]
    torch.manual_seed(0)
    f = Hartmann(dim=6, negate=True, noise_std=0.1).to(device)
    # Drawn on the CPU, then moved: the same inputs on every device.
    X = torch.rand(120, 6, dtype=dtype).to(device)
    Y = f(X).unsqueeze(-1).to(dtype)
    model = NystromGP(
        X,
        Y,
        inducing=RidgeLeverageSampler(
            qbar=2, generator=torch.Generator().manual_seed(0)
        ),
        input_transform=Normalize(6),
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    bounds = torch.stack([torch.zeros(6), torch.ones(6)]).to(X)
    return model, X, Y, bounds


ACQFS = {
    "UCB": (lambda m, X, Y: UpperConfidenceBound(m, beta=4.0), 1),
    "LogEI": (lambda m, X, Y: LogExpectedImprovement(m, best_f=Y.max()), 1),
    "qUCB": (lambda m, X, Y: qUpperConfidenceBound(m, beta=4.0), 2),
    "qLogEI": (lambda m, X, Y: qLogExpectedImprovement(m, best_f=Y.max()), 2),
    "qLogNEI": (lambda m, X, Y: qLogNoisyExpectedImprovement(m, X_baseline=X), 2),
    "qKG": (lambda m, X, Y: qKnowledgeGradient(m, num_fantasies=4), 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ACQFS))
def test_optimize_acqf(name, fitted):
    model, X, Y, bounds = fitted
    make, q = ACQFS[name]
    candidates, value = optimize_acqf(
        make(model, X, Y),
        bounds=bounds,
        q=q,
        num_restarts=2,
        raw_samples=16,
        options={"maxiter": 20},
    )
    assert candidates.shape == (q, 6) and candidates.dtype == X.dtype
    assert candidates.device == X.device
    assert torch.isfinite(value).all()
    assert ((candidates >= 0) & (candidates <= 1)).all()


def test_ucb_gradient_reaches_the_inputs(fitted):
    model, X, Y, _ = fitted
    Xt = torch.rand(5, 1, 6, dtype=X.dtype, device=X.device, requires_grad=True)
    UpperConfidenceBound(model, beta=4.0)(Xt).sum().backward()
    assert torch.isfinite(Xt.grad).all() and Xt.grad.abs().sum() > 0


def test_discrete_optimisation_and_thompson_sampling(fitted):
    model, X, _, _ = fitted
    choices = torch.rand(300, 6, dtype=X.dtype, device=X.device)
    candidates, _ = optimize_acqf_discrete(
        qUpperConfidenceBound(model, beta=4.0), q=3, choices=choices
    )
    assert candidates.shape == (3, 6)
    picked = MaxPosteriorSampling(model, replacement=False)(choices, num_samples=4)
    assert picked.shape == (4, 6)
    assert all((choices == p).all(-1).any() for p in picked)


def test_model_list_of_nystrom_gps(tkwargs):
    torch.manual_seed(0)
    X = torch.rand(50, 2, dtype=torch.double).to(**tkwargs)
    Y1, Y2 = X.sin().sum(-1, keepdim=True), X.cos().prod(-1, keepdim=True)
    model = ModelListGP(NystromGP(X, Y1), NystromGP(X, Y2))
    fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
    post = model.posterior(torch.rand(4, 2, **tkwargs))
    assert post.mean.shape == (4, 2)


def test_model_call_and_gibbon_batches_match_single_task_gp(tkwargs):
    # GIBBON at q > 1 reads ``model(X)``, which was gpytorch's bare
    # NotImplementedError; with every input inducing, it equals SingleTaskGP's.
    import warnings

    from botorch.acquisition.max_value_entropy_search import (
        qLowerBoundMaxValueEntropy,
    )
    from botorch.models import SingleTaskGP

    g = torch.Generator().manual_seed(0)
    X = torch.rand(30, 3, generator=g, **tkwargs)
    Y = torch.sin(5 * X).sum(-1, keepdim=True)
    Y = Y + 0.05 * torch.randn(30, 1, generator=g, **tkwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NystromGP(X, Y).eval()
        twin = SingleTaskGP(X, Y)
    assert model.inducing_index.numel() == 30
    twin.load_state_dict(model.state_dict(), strict=False)
    twin.eval()
    Xt = torch.rand(4, 5, 3, generator=g, **tkwargs)
    ours, theirs = model(Xt), twin(Xt)
    torch.testing.assert_close(ours.mean, theirs.mean, rtol=0, atol=1e-10)
    torch.testing.assert_close(
        ours.covariance_matrix, theirs.covariance_matrix, rtol=0, atol=1e-10
    )
    candidates = torch.rand(100, 3, generator=g, **tkwargs)
    pending = torch.rand(2, 3, generator=g, **tkwargs)
    values = []
    for m in (model, twin):
        torch.manual_seed(5)
        acqf = qLowerBoundMaxValueEntropy(m, candidates, X_pending=pending)
        values.append(acqf(Xt[:, :1]))
    torch.testing.assert_close(values[0], values[1], rtol=0, atol=1e-9)
    model.train()
    prior = model(Xt)
    torch.testing.assert_close(
        prior.covariance_matrix, model.covar_module(Xt).to_dense(), rtol=0, atol=0
    )
    model.eval()
