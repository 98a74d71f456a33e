import pytest
import torch
from botorch.exceptions.errors import UnsupportedError
from gpytorch.kernels import RBFKernel

from botorch_sketch.models.incremental import IncrementalNystromModel
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


def test_posterior_matches_the_model(tkwargs):
    model = _model(tkwargs)
    wrapper = IncrementalNystromModel(model)
    X = torch.rand(3, 5, 2, **tkwargs)
    post = wrapper.posterior(X)
    assert post.mean.shape == (3, 5, 1)
    mean, var = model.mean_and_variance(X.reshape(-1, 2))
    assert torch.allclose(post.mean.reshape(-1), mean, atol=1e-12)
    assert torch.allclose(post.variance.reshape(-1), var, atol=1e-10)
    covar = post.distribution.covariance_matrix
    assert bool((torch.linalg.eigvalsh(covar) > -1e-10).all())
    noisy = wrapper.posterior(X, observation_noise=True)
    assert torch.allclose(noisy.variance, post.variance + 0.5)
    with pytest.raises(UnsupportedError):
        wrapper.posterior(X, output_indices=[1])
