import pytest
import torch
from botorch.exceptions.errors import UnsupportedError

from botorch_sketch.models.incremental_nystrom_model import IncrementalNystromModel


def test_posterior_matches_the_model(tkwargs, online_nystrom):
    model = online_nystrom
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
