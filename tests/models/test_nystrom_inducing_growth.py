import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from helpers import toy_data

from botorch_sketch import NystromGP
from botorch_sketch.sketching.rules import RidgeLeverageSampler


def _data(n=30, d=2, **tkwargs):
    return toy_data(n, d, lambda X: torch.cos(3 * X).sum(-1, keepdim=True), **tkwargs)


def test_add_inducing_points_equals_a_model_built_with_that_set(tkwargs):
    X, Y = _data(**tkwargs)
    # A seeded rule: under some global seeds the default draw holds all 30 rows.
    rule = RidgeLeverageSampler(qbar=1.0, generator=torch.Generator().manual_seed(0))
    model = NystromGP(X, Y, inducing=rule)
    before = model.inducing_index.tolist()
    assert len(before) < 27
    outside = [i for i in range(30) if i not in before][:3]
    Xt = torch.rand(4, 2, generator=torch.Generator().manual_seed(1)).to(X)
    stale = model.posterior(Xt)  # folds a readout that the growth must replace
    # A duplicate of a current row is ignored; new rows are appended.
    model.add_inducing_points(torch.tensor([before[0], *outside]))
    assert model.inducing_index.tolist() == before + outside
    reference = NystromGP(X, Y, inducing=X[model.inducing_index])
    reference.load_state_dict(model.state_dict())
    grown, rebuilt = model.posterior(Xt), reference.posterior(Xt)
    torch.testing.assert_close(grown.mean, rebuilt.mean, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(grown.variance, rebuilt.variance, rtol=1e-9, atol=1e-9)
    assert not torch.allclose(stale.variance, grown.variance, rtol=0, atol=1e-12)


def test_add_inducing_points_rejects_bad_rows(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y)
    with pytest.raises(InputDataError, match="training rows"):
        model.add_inducing_points(torch.tensor([30]))
    with pytest.raises(InputDataError, match="training rows"):
        model.add_inducing_points(torch.tensor([0.5]))
    fixed = NystromGP(X, Y, inducing=X[:5])
    with pytest.raises(UnsupportedError, match="rule"):
        fixed.add_inducing_points(torch.tensor([6]))


def test_log_marginal_likelihood_is_the_fitting_objective_without_priors(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y)
    model.train()
    loss = model.compute_custom_loss()
    priors = sum(
        prior.log_prob(closure(module)).sum()
        for _, module, prior, closure, _ in model.named_priors()
    )
    model.eval()
    expected = -loss * X.shape[0] - priors
    torch.testing.assert_close(
        model.log_marginal_likelihood(), expected.detach(), rtol=1e-9, atol=1e-9
    )
