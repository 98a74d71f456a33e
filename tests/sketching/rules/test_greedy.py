import pytest
import torch
from botorch.exceptions.errors import InputDataError
from helpers import rbf_kernel

from botorch_sketch.sketching import (
    Candidates,
    GreedyVarianceSelector,
    NystromEmbedding,
)
from botorch_sketch.sketching.rules.greedy import greedy_variance_pivots


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _pool(X, k, noise, counts=None):
    return Candidates(X=X, kernel=k, noise=noise, counts=counts)


def test_greedy_variance_is_a_pivoted_cholesky(tkwargs):
    k = rbf_kernel(0.3, outputscale=1.0, frozen=False)
    X = torch.rand(80, 2, generator=_gen(0), **tkwargs)
    noise = torch.full((80,), 0.01, **tkwargs)
    with torch.no_grad():
        idx = GreedyVarianceSelector(num_inducing=10, tolerance=None).select(
            _pool(X, k, noise)
        )
        assert idx.numel() == 10 and idx.unique().numel() == 10
        # Each pick maximises the residual variance given the earlier picks.
        for j in range(1, 10):
            residual = NystromEmbedding(k, X[idx[:j]]).residual_variance(X)
            assert residual[idx[j]] >= residual.max() - 1e-9
        # With a tolerance it stops once every leverage is small.
        short = GreedyVarianceSelector(num_inducing=80, tolerance=1e-2).select(
            _pool(X, k, noise)
        )
        residual = NystromEmbedding(k, X[short]).residual_variance(X)
    assert short.numel() < 80
    assert residual.max() / 0.01 < 1e-2


@pytest.mark.parametrize("check_every", [2, 3, 16, 1000])
def test_greedy_pivots_read_in_blocks_stop_where_a_read_per_pivot_stops(
    check_every, tkwargs
):
    # Tolerances that stop at the first checked pivot, mid-block, at a block's
    # end and never; with and without start pivots and weights.
    k = rbf_kernel(0.3, outputscale=1.0)
    X = torch.rand(120, 2, generator=_gen(1), **tkwargs)
    weights = 1 + torch.rand(120, generator=_gen(2), **tkwargs)
    stops = set()
    for start in (None, torch.tensor([7, 3])):
        for w in (None, weights):
            for tolerance in (10.0, 0.5, 1e-2, 1e-4, None):
                kwargs = dict(start=start, weights=w, tolerance=tolerance)
                reference = greedy_variance_pivots(X, k, 60, check_every=1, **kwargs)
                blocks = greedy_variance_pivots(
                    X, k, 60, check_every=check_every, **kwargs
                )
                assert torch.equal(blocks, reference)
                stops.add(reference.numel())
    assert len(stops) >= 4  # the tolerances did stop at different pivots
    with pytest.raises(InputDataError, match="check_every"):
        greedy_variance_pivots(X, k, 5, tolerance=0.1, check_every=0)


def test_selector_rejects_bad_configuration():
    with pytest.raises(InputDataError, match="num_inducing"):
        GreedyVarianceSelector(num_inducing=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: GreedyVarianceSelector(num_inducing=2.5), "num_inducing must be an"),
        (lambda: GreedyVarianceSelector(num_inducing=True), "num_inducing must be an"),
        (lambda: GreedyVarianceSelector(tolerance=float("nan")), "tolerance must be"),
        (lambda: GreedyVarianceSelector(tolerance=-1.0), "tolerance must be"),
    ],
)
def test_settings_that_passed_comparisons_are_named(make, match):
    # NaN failed every comparison and passed; True capped a set at one point
    # and 2.5 at three; float sizes failed in a slice or ``new_empty``.
    with pytest.raises(InputDataError, match=match):
        make()
