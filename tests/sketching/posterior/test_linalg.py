import pytest
import torch

from botorch_sketch.sketching.posterior.linalg import folded_matmul, lift_diagonal


@pytest.mark.parametrize("shape", [(6, 5), (4, 6, 5), (2, 4, 6, 5), (3, 1, 6, 5)])
def test_folded_matmul_is_the_broadcast_product(shape):
    # Test batches that the covariance lacks are folded into the rows of one
    # product: the values of the broadcast product.
    g = torch.Generator().manual_seed(0)
    M = torch.randn(4, 5, 3, generator=g, dtype=torch.double)
    Z = torch.randn(*shape, generator=g, dtype=torch.double)
    out = folded_matmul(Z, M)
    assert out.shape == (Z @ M).shape
    torch.testing.assert_close(out, Z @ M, rtol=0, atol=1e-12)


def test_lift_diagonal_raises_only_negative_variances_without_gradient():
    covar = torch.tensor([[-1e-12, -0.5], [-0.5, 2.0]], dtype=torch.double)
    covar.requires_grad_(True)
    lifted = lift_diagonal(covar)
    expected = torch.tensor([[0.0, -0.5], [-0.5, 2.0]], dtype=torch.double)
    assert torch.equal(lifted.detach(), expected)
    lifted.sum().backward()
    assert torch.equal(covar.grad, torch.ones(2, 2, dtype=torch.double))


@pytest.mark.parametrize("rank", [6, 3])
def test_matheron_noise_has_the_gram_covariance(rank):
    # Z^T Lambda^{-1} eps ~ N(0, gram) through a Cholesky factor, or through
    # the eigendecomposition where gram is singular (fewer points than
    # coordinates).
    from botorch_sketch.sketching.posterior.linalg import matheron_rhs
    from botorch_sketch.sketching.posterior.statistics import DTCStatistics

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(rank, 6, generator=g, dtype=torch.double)
    r = torch.randn(rank, generator=g, dtype=torch.double)
    noise = torch.full((rank,), 0.5, dtype=torch.double)
    stats = DTCStatistics.from_embedded(Z, torch.zeros(rank).double(), r, noise)
    w0 = torch.zeros(20000, 6, dtype=torch.double)
    eps = stats.moment - matheron_rhs(stats, w0, generator=g)
    scale = float(stats.gram.diagonal().max())  # Monte Carlo errors ~ scale / 141
    assert torch.allclose(eps.mT @ eps / 20000, stats.gram, atol=0.05 * scale)
    assert eps.mean(0).abs().max() < 5 * (scale / 20000) ** 0.5
