import torch
from gpytorch.kernels import RBFKernel

from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding
from botorch_sketch.sketching.posterior.statistics import DTCStatistics


def _statistics(n: int, seed: int) -> DTCStatistics:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=torch.double)
    kernel = RBFKernel().to(X)
    embedding = NystromEmbedding(kernel, X[:5], noise=torch.tensor(0.1).to(X))
    residual = torch.randn(n, generator=g, dtype=torch.double)
    return DTCStatistics.from_data(
        embedding, X, residual, torch.full_like(residual, 0.1)
    )


def test_map_applies_to_every_field():
    stats = _statistics(20, seed=0)
    cast = stats.map(lambda t: t.float())
    for name in DTCStatistics.__dataclass_fields__:
        assert getattr(cast, name).dtype == torch.float32
        assert torch.allclose(getattr(cast, name).double(), getattr(stats, name))
    doubled = stats.map(lambda t: 2 * t)
    assert torch.equal(doubled.gram, (stats + stats).gram)
    assert torch.equal(doubled.num_data, (stats + stats).num_data)


def test_one_noise_level_per_batch_gives_the_statistics_of_per_row_noise():
    # A noise level expanded over the rows takes the unweighted gram; the
    # statistics must be those of the same levels written out row by row,
    # gradients included, for plain and batched (fantasy-like) noise.
    g = torch.Generator().manual_seed(1)
    Z = torch.randn(3, 40, 6, generator=g, dtype=torch.double, requires_grad=True)
    residual_var = torch.rand(40, generator=g, dtype=torch.double)
    r = torch.randn(40, generator=g, dtype=torch.double)
    for level in (
        torch.tensor(0.2, dtype=torch.double, requires_grad=True),
        torch.tensor([[0.1], [0.3], [2.0]], dtype=torch.double, requires_grad=True),
    ):
        expanded = (
            level.expand(*level.shape[:-1], 40) if level.ndim else level.expand(40)
        )
        assert expanded.stride(-1) == 0
        fast = DTCStatistics.from_embedded(Z, residual_var, r, expanded)
        slow = DTCStatistics.from_embedded(Z, residual_var, r, expanded.contiguous())
        for name in DTCStatistics.__dataclass_fields__:
            torch.testing.assert_close(getattr(fast, name), getattr(slow, name))
        grads = [
            torch.autograd.grad(s.gram.sum() + s.moment.sum(), (Z, level))
            for s in (fast, slow)
        ]
        for a, b in zip(*grads, strict=True):
            torch.testing.assert_close(a, b)
