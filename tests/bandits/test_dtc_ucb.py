import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import RBFKernel

from botorch_sketch.bandits.dtc_ucb import DTCUCB


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dictionary": [0, 99]}, r"\[0, 50\).*\[99\]"),
        ({"dictionary": [-1]}, r"\[0, 50\).*\[-1\]"),
        ({"dictionary": [0.5, 2.0]}, "integer"),
        ({"dictionary": [3, 3]}, "distinct"),
        ({"dictionary": -5}, "non-negative int"),
        ({"noise_var": float("nan")}, "noise_var must be finite and positive"),
        ({"beta": float("nan")}, "beta must be finite and non-negative"),
        ({"beta": -1.0}, "beta must be finite and non-negative"),
        ({"rkhs_norm": -1.0}, "rkhs_norm must be finite and non-negative"),
    ],
)
def test_bad_configuration_is_named(kwargs, match):
    arms = torch.rand(50, 2, dtype=torch.double)
    kw = {"noise_var": 0.1, **kwargs}
    with pytest.raises(InputDataError, match=match):
        DTCUCB(arms, RBFKernel().double(), **kw)


def test_a_valid_dictionary_is_kept():
    arms = torch.rand(50, 2, dtype=torch.double)
    policy = DTCUCB(arms, RBFKernel().double(), 0.1, dictionary=[7, 0, 49])
    assert policy.dictionary.tolist() == [7, 0, 49]
    assert DTCUCB(arms, RBFKernel().double(), 0.1, dictionary=[]).dictionary_size == 0
