import torch
from gpytorch.kernels import RBFKernel

from botorch_sketch.sketching.nystrom import NystromEmbedding
from botorch_sketch.sketching.statistics import DTCStatistics


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
