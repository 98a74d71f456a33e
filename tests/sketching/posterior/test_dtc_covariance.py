"""The DTC covariance operator: the dense covariance's numbers, rows on demand."""

import pytest
import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.models.transforms.outcome import ChainedOutcomeTransform, Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.distributions import MultivariateNormal
from helpers import sine_sum, toy_data
from linear_operator import to_linear_operator

from botorch_sketch import NystromGP
from botorch_sketch.sketching.posterior.dtc import DTCReadout
from botorch_sketch.sketching.posterior.dtc_covariance import DTCCovarianceOperator


def _model(tkwargs, **kwargs):
    X, Y = toy_data(60, 2, sine_sum(3), 0.1, seed=0, **tkwargs)
    model = NystromGP(X, Y, inducing=X[:25], **kwargs).eval()
    return model, X


def _dense_readout(monkeypatch):
    # What the posterior was before the operator: the dense covariance.
    def dense(self, X, K, scale=None):
        mean, covar = self(X, K.to_dense())
        if scale is not None:
            mean, covar = scale * mean, scale.square() * covar
        return mean, covar

    monkeypatch.setattr(DTCReadout, "lazy", dense)


def _operator(model, X):
    readout = model.nystrom_state.readout
    X = model.transform_inputs(X)
    return readout, readout.lazy(X, model.covar_module(X))


def test_the_operator_reads_as_the_dense_covariance(tkwargs):
    model, X = _model(tkwargs)
    Xt = torch.rand(3, 9, 2, generator=torch.Generator().manual_seed(1)).to(X)
    Xt.requires_grad_(True)
    readout, (mean, covar) = _operator(model, Xt)
    assert isinstance(covar, DTCCovarianceOperator)
    dense_mean, dense = readout(Xt, model.covar_module(Xt).to_dense())
    torch.testing.assert_close(mean, dense_mean)
    torch.testing.assert_close(covar.to_dense(), dense)
    torch.testing.assert_close(covar[..., -2:, :].to_dense(), dense[..., -2:, :])
    torch.testing.assert_close(covar[..., 1, :].to_dense(), dense[..., 1, :])
    torch.testing.assert_close(covar[1, 2:4, 3:5].to_dense(), dense[1, 2:4, 3:5])
    torch.testing.assert_close(covar.diagonal(), dense.diagonal(dim1=-2, dim2=-1))
    # Batch reshaping (a model list concatenates its outputs' covariances so)
    # leaves the inducing-set pieces alone.
    unsqueezed = covar.unsqueeze(1)
    torch.testing.assert_close(
        unsqueezed[..., -1:, :].to_dense(), dense.unsqueeze(1)[..., -1:, :]
    )
    expanded = covar.unsqueeze(0).expand(2, 3, 9, 9)
    torch.testing.assert_close(
        expanded[..., -1:, :].to_dense(), dense.expand(2, 3, 9, 9)[..., -1:, :]
    )
    rhs = torch.randn(3, 9, 4, generator=torch.Generator().manual_seed(2)).to(X)
    torch.testing.assert_close(covar @ rhs, dense @ rhs)
    # The rows' gradient is the dense rows' gradient.
    (g_rows,) = torch.autograd.grad(covar[..., -2:, :].to_dense().sum(), Xt)
    (g_dense,) = torch.autograd.grad(dense[..., -2:, :].sum(), Xt)
    torch.testing.assert_close(g_rows, g_dense)


def test_reading_rows_does_not_form_the_matrix(tkwargs, monkeypatch):
    model, X = _model(tkwargs)
    _, (_, covar) = _operator(model, X[:30])

    def refuse(self):
        raise AssertionError("the dense matrix was formed")

    monkeypatch.setattr(DTCCovarianceOperator, "_factor", refuse)
    assert covar[..., -3:, :].to_dense().shape == (3, 30)


@pytest.mark.parametrize(
    "transform",
    ["default", None, lambda: ChainedOutcomeTransform(s=Standardize(m=1))],
    ids=["standardize", "none", "chained"],
)
def test_the_posterior_is_the_untransformed_dense_posterior(tkwargs, transform):
    if transform == "default":
        kwargs = {}  # NystromGP standardises by default, as SingleTaskGP does
    else:
        kwargs = {"outcome_transform": None if transform is None else transform()}
    model, X = _model(tkwargs, **kwargs)
    outcome_transform = getattr(model, "outcome_transform", None)
    Xt = torch.rand(2, 5, 2, generator=torch.Generator().manual_seed(3)).to(X)
    lazy = model.posterior(Xt)
    if not isinstance(outcome_transform, ChainedOutcomeTransform):
        # No transform, or a plain Standardize undone on the operator's pieces.
        covar = lazy.distribution.lazy_covariance_matrix
        assert isinstance(covar, DTCCovarianceOperator)
    readout = model.nystrom_state.readout
    Xt = model.transform_inputs(Xt)
    delta, dense = readout(Xt, model.covar_module(Xt).to_dense())
    expected = GPyTorchPosterior(
        MultivariateNormal(model.mean_module(Xt) + delta, to_linear_operator(dense))
    )
    if outcome_transform is not None:
        expected = outcome_transform.untransform_posterior(expected)
    torch.testing.assert_close(lazy.mean, expected.mean)
    torch.testing.assert_close(
        lazy.distribution.covariance_matrix, expected.distribution.covariance_matrix
    )


def test_qlognei_gives_the_dense_values_and_gradients(tkwargs, monkeypatch):
    # qLogNEI caches the baseline's Cholesky factor and reads q rows per call.
    model, X = _model(tkwargs, outcome_transform=Standardize(m=1))
    Xq = torch.rand(4, 2, 2, generator=torch.Generator().manual_seed(4)).to(X)

    def evaluate():
        acqf = qLogNoisyExpectedImprovement(
            model,
            X[:40],
            prune_baseline=False,
            sampler=SobolQMCNormalSampler(torch.Size([64]), seed=0),
        )
        assert acqf._cache_root
        x = Xq.clone().requires_grad_(True)
        value = acqf(x)
        (grad,) = torch.autograd.grad(value.sum(), x)
        return value.detach(), grad

    lazy_value, lazy_grad = evaluate()
    _dense_readout(monkeypatch)
    dense_value, dense_grad = evaluate()
    torch.testing.assert_close(lazy_value, dense_value)
    torch.testing.assert_close(lazy_grad, dense_grad)


def test_rows_are_read_through_the_gram_matrix_formed_once(tkwargs):
    # q rows of a batched covariance: one (batch q) x m by m x m product by
    # P P^T, not two products by the root P per batch element.
    model, X = _model(tkwargs)
    readout = model.nystrom_state.readout
    P = readout.covariance_root
    torch.testing.assert_close(readout.covariance_gram, P @ P.mT)
    assert readout.covariance_gram is readout.covariance_gram  # formed once
    Xt = torch.rand(7, 6, 2, generator=torch.Generator().manual_seed(5)).to(X)
    Xt = model.transform_inputs(Xt)
    _, covar = readout.lazy(Xt, model.covar_module(Xt))
    assert covar.gram is readout.covariance_gram
    _, dense = readout(Xt, model.covar_module(Xt).to_dense())
    # Without the root the rows are still read (through the Gram matrix alone),
    # and an expanded batch keeps the Gram matrix.
    blind = DTCCovarianceOperator(
        covar.prior, covar.rows, torch.full_like(P, float("nan")), gram=covar.gram
    )
    torch.testing.assert_close(blind[..., -2:, :].to_dense(), dense[..., -2:, :])
    expanded = blind.unsqueeze(0).expand(3, 7, 6, 6)
    torch.testing.assert_close(
        expanded[..., -1:, :].to_dense(), dense.expand(3, 7, 6, 6)[..., -1:, :]
    )
    # An operator built without it (as before) reads the same rows from P.
    plain = DTCCovarianceOperator(covar.prior, covar.rows, P)
    torch.testing.assert_close(plain[..., -2:, :].to_dense(), dense[..., -2:, :])
