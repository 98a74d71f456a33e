import itertools

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from gpytorch.kernels import MaternKernel

from botorch_sketch.sketching.embedding.kernels import kernel_matrix
from botorch_sketch.sketching.rules.greedy import GreedyVarianceSelector
from botorch_sketch.sketching.rules.rule import Candidates
from botorch_sketch.sketching.rules.subset import (
    GradientDiversitySubset,
    GreedyVarianceSubset,
    RandomSubset,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _inputs(n=60, d=3, p=5, seed=0):
    g = _gen(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    G = torch.randn(n, p, generator=g, dtype=torch.double)
    kernel = MaternKernel(nu=2.5).double()
    kernel.lengthscale = 0.3
    return X, G, kernel


RULES = [
    lambda seed: RandomSubset(generator=_gen(seed)),
    lambda seed: GradientDiversitySubset(generator=_gen(seed)),
    lambda seed: GreedyVarianceSubset(generator=_gen(seed)),
]


@pytest.mark.parametrize("make_rule", RULES)
@pytest.mark.parametrize("size", [7, 25, 60])
def test_subset_has_the_forced_points_first_and_the_right_size(make_rule, size):
    X, G, kernel = _inputs()
    forced = torch.tensor([0, 1, 2, 59])
    index = make_rule(0).select(
        Candidates(X=X, kernel=kernel, gradients=G), size, forced=forced
    )
    assert index.shape == (size,)
    assert index.unique().numel() == size
    assert torch.equal(index[:4], forced)
    assert int(index.min()) >= 0 and int(index.max()) < 60


@pytest.mark.parametrize("make_rule", RULES)
def test_selection_is_deterministic_under_a_seed(make_rule):
    X, G, kernel = _inputs()
    forced = torch.arange(3)
    a = make_rule(5).select(
        Candidates(X=X, kernel=kernel, gradients=G), 20, forced=forced
    )
    b = make_rule(5).select(
        Candidates(X=X, kernel=kernel, gradients=G), 20, forced=forced
    )
    assert torch.equal(a, b)


def test_random_and_perturbed_rules_change_with_the_seed():
    X, G, kernel = _inputs()
    forced = torch.arange(3)
    for rule in (RandomSubset, GradientDiversitySubset):
        a = rule(generator=_gen(1)).select(Candidates(gradients=G), 20, forced=forced)
        b = rule(generator=_gen(2)).select(Candidates(gradients=G), 20, forced=forced)
        assert set(a.tolist()) != set(b.tolist())


def test_greedy_step_is_the_argmin_of_the_summed_cosines():
    # Against the definition: each added point minimises its summed cosine
    # similarity to the points chosen before it (an explicit N x N check).
    _, G, _ = _inputs(n=30, p=4, seed=3)
    forced = torch.tensor([4, 17])
    index = GradientDiversitySubset(noise_std=0.0).select(
        Candidates(gradients=G), 12, forced=forced
    )
    U = G / G.norm(dim=-1, keepdim=True)
    cos = U @ U.T
    for k in range(2, 12):
        chosen = index[:k]
        free = torch.ones(30, dtype=torch.bool)
        free[chosen] = False
        scores = cos[:, chosen].sum(-1)
        best = scores[free].min()
        assert torch.isclose(scores[index[k]], best)


def test_greedy_ranks_near_the_exhaustive_optimum():
    # N = 12, M = 5 with two forced: the greedy subset's summed pairwise cosine
    # is in the best tenth of all 120 admissible subsets.
    _, G, _ = _inputs(n=12, p=3, seed=11)
    forced = torch.tensor([0, 11])
    index = GradientDiversitySubset(noise_std=0.0).select(
        Candidates(gradients=G), 5, forced=forced
    )
    U = G / G.norm(dim=-1, keepdim=True)

    def objective(idx):
        return float(U[torch.tensor(idx)].sum(0).pow(2).sum())

    free = range(1, 11)
    values = sorted(objective([0, 11, *c]) for c in itertools.combinations(free, 3))
    assert objective(index.tolist()) <= values[len(values) // 10]


def test_scalar_gradients_only_balance_signs():
    # The paper's literal scalar gradient: cosines are signs, so the greedy
    # subset alternates signs. This is the degeneracy the default avoids.
    g = torch.randn(100, 1, generator=_gen(0), dtype=torch.double)
    index = GradientDiversitySubset(noise_std=0.0).select(
        Candidates(gradients=g), 30, forced=torch.arange(0)
    )
    assert abs(int(g[index].sign().sum())) <= 1


def test_greedy_variance_matches_the_inducing_rule_without_forced_points():
    X, _, kernel = _inputs()
    ours = GreedyVarianceSubset().select(
        Candidates(X=X, kernel=kernel), 15, forced=torch.arange(0)
    )
    noise = torch.ones(60, dtype=torch.double)
    theirs = GreedyVarianceSelector(num_inducing=15, tolerance=None).select(
        Candidates(X=X, kernel=kernel, noise=noise)
    )
    assert torch.equal(ours, theirs)


def test_greedy_variance_prefers_points_far_from_the_forced_ones():
    X, _, kernel = _inputs(n=80)
    kernel.requires_grad_(False)
    forced = torch.arange(5)
    index = GreedyVarianceSubset().select(
        Candidates(X=X, kernel=kernel), 10, forced=forced
    )
    K = kernel_matrix(kernel, X[index[5:6]], X[forced])
    # The first free pick is the point least explained by the forced ones: its
    # largest correlation with them is at most that of any other point.
    others = kernel_matrix(kernel, X, X[forced]).amax(-1)
    assert float(K.amax()) <= float(others.median())


def test_bad_requests_name_the_problem():
    X, G, kernel = _inputs()
    rule = GradientDiversitySubset()
    with pytest.raises(InputDataError, match="do not fit"):
        rule.select(Candidates(gradients=G), 2, forced=torch.arange(3))
    with pytest.raises(InputDataError, match="not in"):
        rule.select(Candidates(gradients=G), 61, forced=torch.arange(3))
    with pytest.raises(InputDataError, match="gradients"):
        rule.select(Candidates(num_points=60), 10, forced=torch.arange(3))
    with pytest.raises(InputDataError, match="distinct"):
        rule.select(Candidates(gradients=G), 10, forced=torch.tensor([1, 1]))
    with pytest.raises(InputDataError, match="kernel"):
        GreedyVarianceSubset().select(
            Candidates(num_points=60), 10, forced=torch.arange(3)
        )
    for noise_std in (-1.0, float("nan"), float("inf")):  # NaN passed ``< 0``
        with pytest.raises(InputDataError, match="noise_std must be finite"):
            GradientDiversitySubset(noise_std=noise_std)


def test_neighbourhood_subset_forced_then_nearest_then_uniform():
    from botorch_sketch.sketching.rules import NeighbourhoodSubset

    g = torch.Generator().manual_seed(0)
    X = torch.rand(500, 4, generator=g, dtype=torch.double)
    scores = -(X - 0.8).square().sum(-1)
    forced = torch.arange(490, 500)
    rule = NeighbourhoodSubset(local_fraction=0.5, generator=g)
    rows = rule.select(Candidates(X=X, scores=scores), 60, forced=forced)
    assert rows.numel() == rows.unique().numel() == 60
    assert torch.equal(rows[:10], forced)
    best = X[scores.argmax()]
    distance = (X - best).norm(dim=-1)
    # The 25 after the forced ones are the nearest free rows to the best row.
    free = torch.ones(500, dtype=torch.bool)
    free[forced] = False
    nearest = distance.masked_fill(~free, float("inf")).topk(25, largest=False)
    assert set(rows[10:35].tolist()) == set(nearest.indices.tolist())
    # The rest are uniform among the others: all farther, and spread out.
    assert float(distance[rows[35:]].min()) >= float(nearest.values.max())
    assert float(distance[rows[35:]].median()) > 1.5 * float(nearest.values.max())
    with pytest.raises(InputDataError, match="scores"):
        rule.select(Candidates(X=X), 60)
    with pytest.raises(InputDataError, match="local_fraction"):
        NeighbourhoodSubset(local_fraction=1.5)


def test_neighbourhood_subset_farthest_spread_picks_the_farthest_rows_in_turn():
    from botorch_sketch.sketching.rules import NeighbourhoodSubset

    X = torch.linspace(0, 1, 101, dtype=torch.double).unsqueeze(-1)
    scores = -X.squeeze(-1)  # the best row is 0
    rule = NeighbourhoodSubset(local_fraction=0.5, spread=1.0)
    rows = rule.select(Candidates(X=X, scores=scores), 5, forced=torch.tensor([50]))
    # The forced row, the best row's two neighbours, then the row farthest
    # from {0, 0.01, 0.5} (1.0), then the one farthest from those four (0.75).
    assert rows.tolist() == [50, 0, 1, 100, 75]
    with pytest.raises(InputDataError, match="spread"):
        NeighbourhoodSubset(spread=1.5)


def test_neighbourhood_subset_farthest_spread_matches_a_direct_greedy_in_chunks():
    from botorch_sketch.sketching.rules import NeighbourhoodSubset

    g = _gen(3)
    # Most rows piled near one corner (a converged search), a few spread out.
    X = torch.cat(
        [
            0.9 + 0.05 * torch.rand(4500, 3, generator=g, dtype=torch.double),
            torch.rand(500, 3, generator=g, dtype=torch.double),
        ]
    )
    scores = -(X - 0.92).square().sum(-1)
    forced = torch.arange(4990, 5000)
    rule = NeighbourhoodSubset(local_fraction=0.5, spread=1.0)
    rows = rule.select(Candidates(X=X, scores=scores), 60, forced=forced)
    assert rows.numel() == rows.unique().numel() == 60
    # The greedy by hand, from the forced rows and the 25 neighbours.
    chosen = rows[:35].tolist()
    expected = []
    for _ in range(25):
        gap = torch.cdist(X, X[chosen]).min(-1).values
        gap[chosen] = -1.0
        i = int(gap.argmax())
        expected.append(i)
        chosen.append(i)
    assert rows[35:].tolist() == expected
    # The spread rows are far from the pile, where a uniform sample is not.
    uniform = NeighbourhoodSubset(local_fraction=0.5, generator=_gen(0))
    other = uniform.select(Candidates(X=X, scores=scores), 60, forced=forced)
    pile = (X - 0.925).abs().max(-1).values <= 0.025
    assert int(pile[rows[35:]].sum()) == 0
    assert int(pile[other[35:]].sum()) > 12
    # Half of each: the greedy's first picks, then a uniform sample.
    half = NeighbourhoodSubset(local_fraction=0.5, spread=0.5, generator=_gen(0))
    mixed = half.select(Candidates(X=X, scores=scores), 60, forced=forced)
    assert mixed.numel() == mixed.unique().numel() == 60
    assert mixed[35:47].tolist() == expected[:12]
    assert int(pile[mixed[47:]].sum()) > 6


def test_neighbourhood_subset_farthest_spread_picks_among_a_bounded_pool():
    from botorch_sketch.sketching.rules import NeighbourhoodSubset

    X = torch.rand(3000, 3, generator=_gen(4), dtype=torch.double)
    scores = -X.sum(-1)
    forced = torch.arange(2990, 3000)
    picks = []
    for seed in (0, 1):
        rule = NeighbourhoodSubset(spread=1.0, generator=_gen(seed))
        rule.pool = 40
        rows = rule.select(Candidates(X=X, scores=scores), 60, forced=forced)
        assert rows.numel() == rows.unique().numel() == 60
        assert torch.equal(rows[:10], forced)
        picks.append(set(rows[35:].tolist()))
    # Beyond the pool the candidates are a uniform draw: another generator,
    # other picks (without a pool both would be the same greedy).
    assert picks[0] != picks[1]
    unpooled = NeighbourhoodSubset(spread=1.0, generator=_gen(0))
    rows = unpooled.select(Candidates(X=X, scores=scores), 60, forced=forced)
    assert set(rows[35:].tolist()) != picks[0]
