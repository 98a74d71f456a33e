import math

import pytest
import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models import SingleTaskGP
from botorch.models.transforms import Standardize
from botorch.optim import optimize_acqf
from botorch.test_functions import Branin
from botorch.utils.datasets import SupervisedDataset

from botorch_sketch import (
    BKBUpperConfidenceBound,
    NystromGP,
    qBKBUpperConfidenceBound,
)
from botorch_sketch.acquisition import bkb_beta
from botorch_sketch.sketching.posterior import bkb_width


@pytest.fixture(scope="module")
def model():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 2, generator=g, dtype=torch.double)
    f = Branin(negate=True)
    Y = f(f.bounds[0] + (f.bounds[1] - f.bounds[0]) * X).unsqueeze(-1)
    # Every training input inducing: the width must then be the exact one.
    m = NystromGP(X, Y, inducing=X.clone(), outcome_transform=Standardize(1))
    m.covar_module.lengthscale = 0.3
    m.likelihood.noise = 0.01
    return m.eval()


def test_beta_uses_the_exact_effective_dimension(model):
    X = model.train_X
    lam = float(model.likelihood.noise.detach())
    K = model.covar_module(X).to_dense().detach()
    evals = torch.linalg.eigvalsh(K)
    d_eff = float((evals / (evals + lam)).sum())
    assert float(model.effective_dimension()) == pytest.approx(d_eff, rel=1e-8)
    kappa2 = 1.0  # BoTorch's default RBF kernel has no output scale
    width = bkb_width(d_eff, 40, math.sqrt(lam), lam, kappa2=kappa2, epsilon=0.0)
    assert bkb_beta(model, epsilon=0.0) == pytest.approx(width**2 / lam, rel=1e-8)


def test_value_is_mean_plus_bkb_width_times_sigma_tilde(model):
    acqf = BKBUpperConfidenceBound(model, form="authors", rkhs_norm=2.0)
    Xt = torch.rand(7, 1, 2, dtype=torch.double)
    post = model.posterior(Xt)
    lam = float(model.likelihood.noise.detach())
    # In the model's standardised units, sigma_tilde = std_std / sqrt(lam); the
    # outcome transform scales mean and std alike.
    d_eff = float(model.effective_dimension())
    width = bkb_width(d_eff, 40, math.sqrt(lam), lam, rkhs_norm=2.0, form="authors")
    expected = post.mean.reshape(-1) + width * post.variance.sqrt().reshape(
        -1
    ) / math.sqrt(lam)
    assert torch.allclose(acqf(Xt), expected, atol=1e-10)
    lcb = BKBUpperConfidenceBound(model, form="authors", rkhs_norm=2.0, maximize=False)
    expected_lcb = post.mean.reshape(-1) - width * post.variance.sqrt().reshape(
        -1
    ) / math.sqrt(lam)
    assert torch.allclose(lcb(Xt), -expected_lcb, atol=1e-10)


def test_driven_by_optimize_acqf_analytic_and_batch(model):
    # optimize_acqf's raw samples come from torch's global generator: fixed here
    # so that the test does not depend on the tests run before it.
    torch.manual_seed(0)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
    x, _ = optimize_acqf(
        BKBUpperConfidenceBound(model), bounds, q=1, num_restarts=4, raw_samples=64
    )
    assert x.shape == (1, 2) and bool(((x >= 0) & (x <= 1)).all())
    qacqf = qBKBUpperConfidenceBound(model)
    xq, _ = optimize_acqf(qacqf, bounds, q=3, num_restarts=4, raw_samples=64)
    assert xq.shape == (3, 2)
    assert qacqf.beta == pytest.approx(bkb_beta(model))
    # The batch is not one point repeated (L-BFGS-B may still leave two
    # restarts in the same corner of the box).
    assert float(torch.pdist(xq).max()) > 1e-3


def test_registered_with_botorch_input_constructors(model):
    data = SupervisedDataset(
        model.train_X, model.train_Y, feature_names=["a", "b"], outcome_names=["y"]
    )
    for cls in (BKBUpperConfidenceBound, qBKBUpperConfidenceBound):
        kwargs = get_acqf_input_constructor(cls)(
            model=model, training_data=data, form="authors", delta=0.1
        )
        acqf = cls(**kwargs)
        assert acqf.beta == pytest.approx(bkb_beta(model, form="authors", delta=0.1))


@pytest.mark.parametrize("cls", [BKBUpperConfidenceBound, qBKBUpperConfidenceBound])
def test_negative_rkhs_norm_is_rejected(cls, model):
    # It entered the width as sqrt(lambda) * F and silently narrowed it.
    with pytest.raises(InputDataError, match="rkhs_norm.*-1.0"):
        cls(model, rkhs_norm=-1.0)


def test_other_models_get_a_clear_error():
    X = torch.rand(5, 2, dtype=torch.double)
    with pytest.raises(UnsupportedError, match="NystromGP"):
        BKBUpperConfidenceBound(SingleTaskGP(X, X.sum(-1, keepdim=True)))
