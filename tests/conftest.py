import pytest
import torch


@pytest.fixture
def tkwargs():
    return {"dtype": torch.double, "device": torch.device("cpu")}
