import pytest
import torch


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cpu_only: measures or needs something only the CPU has (process memory, "
        "a subprocess); tests/cuda does not rerun it on CUDA",
    )


@pytest.fixture(scope="session")
def tkwargs():
    # Session-scoped so that module-scoped fixtures can build on it;
    # tests/cuda/test_cuda_models.py overrides it with the CUDA device.
    return {"dtype": torch.double, "device": torch.device("cpu")}


@pytest.fixture
def online_nystrom(tkwargs):
    """An EK-UCB online model on 80 points of a ridge-shaped function of 2 inputs.

    Shared by the tests of its BoTorch view and of the contextual UCB action.
    """
    from helpers import rbf_kernel

    from botorch_sketch.sketching.online import IncrementalNystrom
    from botorch_sketch.sketching.rules import KORS

    n = 80
    k = rbf_kernel(0.2, **tkwargs)
    g = torch.Generator().manual_seed(0)  # on the CPU, whatever the device
    rule = KORS(mu=0.5, gamma=3.0, generator=g)
    model = IncrementalNystrom(k, 0.5, 2, rule=rule, **tkwargs)
    X = torch.rand(n, 2, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    y = torch.exp(-((X[:, 1] - 0.3 - 0.4 * X[:, 0]) ** 2) / 0.02)
    for i in range(n):
        model.observe(X[i], y[i])
    return model
