import pytest
import torch
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from gpytorch.kernels import RBFKernel, ScaleKernel

from botorch_sketch.sketching.embedding.features import (
    IdentityFeatures,
    NystromFeatures,
    RandomFourierFeatures,
)
from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding


def test_random_fourier_features_approximate_the_kernel(tkwargs):
    from gpytorch.kernels import RBFKernel, ScaleKernel

    kernel = ScaleKernel(RBFKernel(ard_num_dims=2)).to(**tkwargs)
    kernel.base_kernel.lengthscale = torch.tensor([0.3, 0.6], **tkwargs)
    kernel.outputscale = 2.0
    X = torch.rand(30, 2, generator=torch.Generator().manual_seed(0), **tkwargs)
    rff = RandomFourierFeatures(
        kernel, 2, 20000, generator=torch.Generator().manual_seed(1), **tkwargs
    )
    Z = rff(X)
    K = kernel(X).to_dense().detach()
    assert Z.shape == (30, 20000)
    assert (Z @ Z.mT - K).abs().max() < 0.1
    again = RandomFourierFeatures(
        kernel, 2, 20000, generator=torch.Generator().manual_seed(1), **tkwargs
    )
    torch.testing.assert_close(again(X), Z)


def test_identity_and_nystrom_features(tkwargs):
    from gpytorch.kernels import MaternKernel, RBFKernel

    X = torch.rand(10, 3, **tkwargs)
    assert torch.equal(IdentityFeatures(3)(X), X)
    with pytest.raises(BotorchTensorDimensionError):
        IdentityFeatures(2)(X)
    kernel = RBFKernel().to(**tkwargs)
    emb = NystromEmbedding(kernel, X[:4])
    nys = NystromFeatures(emb)
    assert nys.dim == emb.dim and nys.input_dim == 3
    torch.testing.assert_close(nys(X), emb(X))
    from botorch.exceptions.errors import UnsupportedError

    with pytest.raises(UnsupportedError):
        RandomFourierFeatures(MaternKernel(), 3, 10)


def test_bad_feature_counts_are_input_data_errors(tkwargs):
    k = ScaleKernel(RBFKernel())
    with pytest.raises(InputDataError, match="num_features"):
        RandomFourierFeatures(k, input_dim=2, num_features=0)
