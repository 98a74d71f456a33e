"""Posterior means in chunks (botorch_sketch.bo.sampling)."""

import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch import NystromGP
from botorch_sketch.bo.sampling import posterior_means
from botorch_sketch.bo.thompson import posterior_incumbents


def _model():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(20, 2, generator=g, dtype=torch.double)
    return NystromGP(X, torch.sin(5 * X).sum(-1, keepdim=True)), X


def test_the_chunks_give_the_same_means():
    model, X = _model()
    expected = posterior_means(model, X)
    assert torch.allclose(posterior_means(model, X, chunk_size=3), expected)


@pytest.mark.parametrize("chunk_size", [0, -1, 2.5])
def test_a_chunk_size_that_is_no_count_is_refused_by_name(chunk_size):
    # 0 failed in Tensor.split ("split_size can only be 0 if dimension size is
    # 0"), naming no argument of ours.
    model, X = _model()
    with pytest.raises(InputDataError, match="chunk_size must be an integer"):
        posterior_means(model, X, chunk_size=chunk_size)
    with pytest.raises(InputDataError, match="chunk_size must be an integer"):
        posterior_incumbents(model, X, 3, chunk_size=chunk_size)
