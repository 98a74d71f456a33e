"""Random draws from a CUDA ``torch.Generator`` (skipped without CUDA)."""

import pytest
import torch
from gpytorch.kernels import RBFKernel

from botorch_sketch.sketching.embedding import RandomFourierFeatures
from botorch_sketch.sketching.posterior import DTCStatistics, WeightPosterior

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA is not available"
)

DEVICE = torch.device("cuda")


def _generator(seed):
    return torch.Generator(device=DEVICE).manual_seed(seed)


def test_random_fourier_features_draw_from_a_cuda_generator():
    tkwargs = {"dtype": torch.double, "device": DEVICE}
    kernel = RBFKernel().to(**tkwargs)
    a = RandomFourierFeatures(kernel, 3, 50, generator=_generator(0), **tkwargs)
    b = RandomFourierFeatures(kernel, 3, 50, generator=_generator(0), **tkwargs)
    assert a.weights.device.type == a.phases.device.type == "cuda"
    assert torch.equal(a.weights, b.weights) and torch.equal(a.phases, b.phases)
    assert a(torch.rand(4, 3, **tkwargs)).shape == (4, 50)


def test_matheron_update_draws_from_a_cuda_generator():
    tkwargs = {"dtype": torch.double, "device": DEVICE}
    Z = torch.rand(20, 5, **tkwargs)
    r = torch.randn(20, **tkwargs)
    stats = DTCStatistics.from_embedded(
        Z, torch.zeros(20, **tkwargs), r, torch.full((20,), 0.1, **tkwargs)
    )
    posterior = WeightPosterior(stats)
    w0 = torch.randn(7, 5, **tkwargs)
    v = posterior.matheron_update(w0, generator=_generator(0))
    assert v.shape == (7, 5) and v.device.type == "cuda"
    torch.testing.assert_close(v, posterior.matheron_update(w0, _generator(0)))
