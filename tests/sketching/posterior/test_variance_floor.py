"""Variances below GPyTorch's floor are raised to it before GPyTorch reads them.

GPyTorch's ``MultivariateNormal.variance`` rounds every variance below
``gpytorch.settings.min_variance`` up to it and warns "Negative variance values
detected" each time (for positive ones too): SketchSampler's acquisition, read
at the observed discrete choices of a nearly noise-free objective, warned 120
times in the README's 300-trial Optuna example.
"""

import warnings

import pytest
import torch
from gpytorch import settings
from gpytorch.distributions import MultivariateNormal
from gpytorch.utils.warnings import NumericalWarning
from linear_operator import to_linear_operator

from botorch_sketch.sketching.posterior.dtc_covariance import DTCCovarianceOperator
from botorch_sketch.sketching.posterior.linalg import lift_diagonal, variance_floor


def _operator(variances: list[float], dtype: torch.dtype) -> DTCCovarianceOperator:
    # K = I and one inducing direction per point: variance_i = 1 - rows_i^2.
    rows = torch.diag(torch.tensor([1.0 - v for v in variances], dtype=dtype).sqrt())
    prior = to_linear_operator(torch.eye(len(variances), dtype=dtype))
    return DTCCovarianceOperator(prior, rows, root=torch.eye(len(variances)).to(dtype))


@pytest.mark.parametrize("dtype", [torch.double, torch.float])
def test_the_floor_is_gpytorchs(dtype):
    assert variance_floor(dtype) == settings.min_variance.value(dtype)
    assert variance_floor(torch.double) < variance_floor(torch.float)


def test_tiny_variances_reach_gpytorch_without_a_warning():
    dtype = torch.double
    floor = variance_floor(dtype)
    covar = _operator([3e-11, 0.0, 0.5], dtype)
    # The values GPyTorch's rounding gives, exactly, in the diagonal and in the
    # dense matrix.
    for diagonal in (covar.diagonal(), covar.to_dense().diagonal()):
        assert diagonal[:2].tolist() == [floor, floor]
        assert diagonal[2].item() == pytest.approx(0.5)
    mvn = MultivariateNormal(torch.zeros(3, dtype=dtype), covar)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)
        variance = mvn.variance
    assert variance[:2].tolist() == [floor, floor]


def test_the_lift_only_raises_and_carries_no_gradient():
    covar = torch.tensor([[3e-11, -0.5], [-0.5, 2.0]], dtype=torch.double)
    covar.requires_grad_(True)
    lifted = lift_diagonal(covar, variance_floor(torch.double))
    expected = torch.tensor([[1e-10, -0.5], [-0.5, 2.0]], dtype=torch.double)
    assert torch.equal(lifted.detach(), expected)
    lifted.sum().backward()
    assert torch.equal(covar.grad, torch.ones(2, 2, dtype=torch.double))
