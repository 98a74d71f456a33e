import math

import pytest
import torch
from scipy.stats import kendalltau

from botorch_sketch.bo.rank_agreement import MAX_PAIRWISE, kendall_tau


@pytest.mark.parametrize("n", [2, 3, 15, 200, MAX_PAIRWISE + 5])
@pytest.mark.parametrize("ties", [False, True])
def test_equals_scipys_tau_b(n, ties):
    g = torch.Generator().manual_seed(n)
    a = torch.randn(n, generator=g, dtype=torch.double)
    b = a + torch.randn(n, generator=g, dtype=torch.double)
    if ties:
        a, b = a.round(), (0.5 * b).round()
    expected = kendalltau(a.numpy(), b.numpy()).statistic
    if math.isnan(expected):
        assert math.isnan(kendall_tau(a, b))
    else:
        assert kendall_tau(a, b) == pytest.approx(expected, abs=1e-12)


def test_perfect_and_reversed_orders():
    a = torch.arange(10.0)
    assert kendall_tau(a, a.exp()) == 1.0
    assert kendall_tau(a, -a) == -1.0


def test_constant_or_single_points_give_nan():
    assert math.isnan(kendall_tau(torch.ones(5), torch.arange(5.0)))
    assert math.isnan(kendall_tau(torch.ones(1), torch.ones(1)))


def test_vectors_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="one length"):
        kendall_tau(torch.ones(3), torch.ones(4))
