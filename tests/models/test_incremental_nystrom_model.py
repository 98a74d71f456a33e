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


def test_single_output_conventions_of_the_models_without_fantasies(
    tkwargs, online_nystrom
):
    # subset_output was BoTorch's bare NotImplementedError (SingleTaskGP
    # returns itself for [0]); qKnowledgeGradient failed on an AttributeError.
    from botorch.acquisition import qKnowledgeGradient

    from botorch_sketch import NystromGP
    from botorch_sketch.models.sgd_linear import SGDLinearModel

    X = torch.rand(30, 2, **tkwargs)
    Y = X.sum(-1, keepdim=True)
    models = [
        IncrementalNystromModel(online_nystrom),
        SGDLinearModel(X, Y),
        NystromGP(X, Y),
    ]
    for model in models:
        assert model.subset_output([0]) is model
        with pytest.raises(NotImplementedError, match="one output"):
            model.subset_output([1])
    for model in models[:2]:
        with pytest.raises(UnsupportedError, match="does not support fantasies"):
            qKnowledgeGradient(model, num_fantasies=2)(torch.rand(1, 3, 2, **tkwargs))
