"""NystromGP conditioned on statistics of data it does not hold."""

import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import Normalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import sine_sum, toy_data

from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.rules import GreedyVarianceSelector


def _data(n, tkwargs, seed=0):
    return toy_data(n, 2, sine_sum(5), 0.1, seed, **tkwargs)


def test_statistics_of_held_out_data_give_the_full_posterior(tkwargs):
    X, Y = _data(300, tkwargs)
    full = NystromGP(
        X, Y, inducing=GreedyVarianceSelector(20), input_transform=Normalize(2)
    )
    inducing = X[full.inducing_index]
    sample = NystromGP(X[:40], Y[:40], inducing=inducing, input_transform=Normalize(2))
    sample.load_state_dict(full.state_dict())
    stats = sample.observation_statistics(X[:100], Y[:100])
    stats = stats + sample.observation_statistics(X[100:], Y[100:])
    sample.set_data_statistics(stats)  # its 40 rows are among the 300
    Xt = torch.rand(3, 4, 2, **tkwargs)
    a, b = full.posterior(Xt), sample.posterior(Xt)
    assert torch.allclose(a.mean, b.mean, atol=1e-10)
    assert torch.allclose(a.variance, b.variance, atol=1e-10)
    # Rows added later count on top of the statistics.
    Xn, Yn = _data(5, tkwargs, seed=1)
    c, d = (
        full.condition_on_observations(Xn, Yn),
        sample.condition_on_observations(Xn, Yn),
    )
    c.clear_posterior_state()
    d.clear_posterior_state()
    assert torch.allclose(c.posterior(Xt).mean, d.posterior(Xt).mean, atol=1e-10)
    moved = sample.to(dtype=torch.double)
    assert torch.allclose(moved.posterior(Xt).mean, b.mean)


@pytest.mark.parametrize("chunk_size", [0, -1])
def test_a_chunk_size_that_is_no_count_is_refused_by_name(tkwargs, chunk_size):
    # 0 failed in range() ("arg 3 must not be zero"); -1 summed no rows.
    X, Y = _data(50, tkwargs)
    model = NystromGP(X, Y, inducing=GreedyVarianceSelector(10))
    with pytest.raises(InputDataError, match="chunk_size must be an integer"):
        model.observation_statistics(X, Y, chunk_size=chunk_size)


def test_statistics_freeze_the_hyperparameters(tkwargs):
    X, Y = _data(120, tkwargs)
    model = NystromGP(X[:30], Y[:30])
    rule_set = model.inducing_points.clone()
    model.set_data_statistics(model.observation_statistics(X, Y), rows_included=0)
    # The rule's set became fixed inputs: the statistics are its coordinates.
    assert model.inducing_rule is None
    assert torch.equal(model.inducing_points, rule_set)
    with pytest.raises(UnsupportedError, match="Rebuild"):
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    with pytest.raises(UnsupportedError, match="Rebuild"):
        model.effective_dimension()
    model.posterior(X[:2])
    with torch.no_grad():
        model.covar_module.lengthscale = 0.5
    model.clear_posterior_state()
    with pytest.raises(UnsupportedError, match="lengthscale"):
        model.posterior(X[:2])
    with pytest.raises(InputDataError, match="rows_included"):
        model.set_data_statistics(model.observation_statistics(X, Y), rows_included=31)
