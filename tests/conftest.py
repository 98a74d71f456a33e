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
