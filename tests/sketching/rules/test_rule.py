import math

import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from helpers import rbf_kernel
from torch import Tensor

from botorch_sketch import GradientSubsetGP, NystromGP
from botorch_sketch.sketching import (
    KORS,
    BernoulliRule,
    Candidates,
    FixedSelector,
    GradientDiversitySubset,
    GreedyVarianceSelector,
    GreedyVarianceSubset,
    RandomSubset,
    RidgeLeverageSampler,
    SelectionRule,
    UniformSelector,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


class FirstRows(SelectionRule):
    # A user's rule: the forced points, then the lowest other indices.
    depends_on_hyperparameters = False

    def select(self, candidates, size=None, *, current=None, forced=None) -> Tensor:
        n, size, forced = self._request(candidates, size, forced, budget=5)
        free = torch.ones(n, dtype=torch.bool)
        free[forced] = False
        rest = free.nonzero().squeeze(-1)[: size - forced.numel()]
        return torch.cat([forced, rest])


def test_every_rule_is_a_selection_rule():
    rules = [
        RidgeLeverageSampler(),
        GreedyVarianceSelector(),
        UniformSelector(),
        FixedSelector([0]),
        RandomSubset(),
        GradientDiversitySubset(),
        GreedyVarianceSubset(),
        KORS(mu=1.0),
    ]
    assert all(isinstance(rule, SelectionRule) for rule in rules)
    assert isinstance(rules[0], BernoulliRule) and isinstance(rules[-1], BernoulliRule)


def test_candidates_know_their_number_and_name_what_is_missing(tkwargs):
    assert len(Candidates(scores=torch.ones(7, **tkwargs))) == 7
    assert len(Candidates(num_points=4)) == 4
    with pytest.raises(InputDataError, match="num_points"):
        len(Candidates())
    X = torch.rand(10, 2, **tkwargs)
    with pytest.raises(InputDataError, match="GreedyVarianceSelector.*kernel"):
        GreedyVarianceSelector(3).select(Candidates(X=X))
    with pytest.raises(InputDataError, match="RidgeLeverageSampler.*kernel, noise"):
        RidgeLeverageSampler().select(Candidates(X=X))
    with pytest.raises(InputDataError, match="no size of its own"):
        RandomSubset().select(Candidates(X=X))


def test_bernoulli_coins_follow_their_probabilities(tkwargs):
    # The online method: each coin comes up with min(1, qbar s), or with
    # 1 - (1 - p)^c for c observations; checked on 20000 coins.
    rule = RidgeLeverageSampler(qbar=2.0, generator=_gen(0))
    scores = torch.tensor([0.05, 0.2, 0.4, 1.0], **tkwargs).repeat(5000)
    counts = torch.tensor([1, 3, 1, 2], **tkwargs).repeat(5000)
    for c, expected in ((None, [0.1, 0.4, 0.8, 1.0]), (counts, [0.1, 0.784, 0.8, 1])):
        coins, p = rule.consider(scores, c)
        assert torch.allclose(p[:4], torch.tensor(expected, **tkwargs))
        freq = coins.reshape(5000, 4).to(scores).mean(0)
        sd = (p[:4] * (1 - p[:4]) / 5000).sqrt()
        assert ((freq - p[:4]).abs() <= 4 * sd + 1e-12).all()


def test_one_float_coin_is_the_same_draw_as_a_tensor_coin(tkwargs):
    # BKB's single-pull path draws one coin from a float: the same stream,
    # across the blocks of uniforms it draws ahead (300 > UNIFORM_BLOCK).
    scores = torch.rand(300, generator=_gen(1), **tkwargs)
    a = RidgeLeverageSampler(qbar=1.5, generator=_gen(2))
    b = RidgeLeverageSampler(qbar=1.5, generator=_gen(2))
    floats = [a.consider_one(float(s), tkwargs["dtype"]) for s in scores]
    tensors = [bool(b.consider(s.reshape(1))[0]) for s in scores]
    assert floats == tensors
    assert 0 < sum(floats) < 300
    # A new generator takes effect at the next coin, not after the block.
    a.generator = _gen(2)
    again = [a.consider_one(float(s), tkwargs["dtype"]) for s in scores[:20]]
    assert again == floats[:20]


def test_kors_online_method_draws_at_its_leverage(tkwargs):
    rule = KORS(mu=1.0, gamma=0.5, generator=_gen(3))
    tau = rule.leverage(torch.zeros(1, 0, **tkwargs), torch.ones(1, **tkwargs))
    coins, p = rule.consider(tau.expand(4000))
    assert torch.allclose(p[0], 0.5 * tau[0])
    assert abs(coins.to(p).mean() - p[0]) < 4 * math.sqrt(0.375 * 0.625 / 4000)
    # The batch method: the candidates whose coins came up, in random order.
    kept = rule.select(Candidates(scores=tau.expand(40)))
    assert kept.unique().numel() == kept.numel() and int(kept.max()) < 40


def test_set_rules_have_no_online_method(tkwargs):
    scores = torch.ones(3, **tkwargs)
    for rule in (GreedyVarianceSelector(), UniformSelector(), FixedSelector([0])):
        with pytest.raises(UnsupportedError, match="whole sets"):
            rule.consider(scores)
        with pytest.raises(UnsupportedError, match="whole sets"):
            rule.consider_one(0.5)


def test_rules_that_cannot_honour_forced_points_say_so(tkwargs):
    pool = Candidates(scores=torch.ones(5, **tkwargs))
    forced = torch.tensor([1])
    for rule in (RidgeLeverageSampler(), KORS(mu=1.0), FixedSelector([0])):
        with pytest.raises(UnsupportedError, match="forced"):
            rule.select(pool, forced=forced)


def test_scores_draw_is_never_empty_and_size_keeps_a_prefix(tkwargs):
    scores = torch.full((50,), 1e-12, **tkwargs)
    assert (
        RidgeLeverageSampler(generator=_gen(0))
        .select(Candidates(scores=scores))
        .numel()
        == 1
    )
    full = RidgeLeverageSampler(qbar=1e9, generator=_gen(4))
    kept = full.select(Candidates(scores=torch.ones(50, **tkwargs)))
    assert sorted(kept.tolist()) == list(range(50))
    again = RidgeLeverageSampler(qbar=1e9, generator=_gen(4))
    prefix = again.select(Candidates(scores=torch.ones(50, **tkwargs)), size=7)
    assert torch.equal(prefix, kept[:7])


def test_inducing_rules_choose_subsets_with_forced_points(tkwargs):
    X = torch.rand(40, 2, generator=_gen(5), **tkwargs)
    pool = Candidates(X=X, kernel=rbf_kernel(0.2, scaled=True))
    forced = torch.tensor([3, 17])
    greedy = GreedyVarianceSelector(tolerance=None).select(pool, 10, forced=forced)
    assert torch.equal(greedy, GreedyVarianceSubset().select(pool, 10, forced=forced))
    uniform = UniformSelector(generator=_gen(6)).select(pool, 10, forced=forced)
    subset = RandomSubset(generator=_gen(6)).select(pool, 10, forced=forced)
    assert torch.equal(uniform, subset) and torch.equal(uniform[:2], forced)
    # Without forced points, a uniform subset is a prefix of a permutation.
    alone = UniformSelector(10, generator=_gen(7)).select(pool)
    assert torch.equal(alone, torch.randperm(40, generator=_gen(7))[:10])


def test_one_rule_serves_both_models(tkwargs):
    X = torch.rand(30, 2, generator=_gen(8), **tkwargs)
    Y = torch.sin(5 * X).sum(-1, keepdim=True)
    model = NystromGP(X, Y, inducing=FirstRows())
    # The model offers its distinct inputs in sorted order: the first five.
    first = X[:, 0].argsort()[:5]
    assert sorted(model.inducing_index.tolist()) == sorted(first.tolist())
    subset = GradientSubsetGP(X, Y, subset_size=12, subset_rule=FirstRows())
    forced = subset.forced_indices
    assert torch.equal(subset.subset_indices[: forced.numel()], forced)
    assert subset.subset_indices.numel() == 12
    greedy = GradientSubsetGP(
        X, Y, subset_size=12, subset_rule=GreedyVarianceSelector(tolerance=None)
    )
    index = greedy.select_subset()
    assert index.numel() == 12 and torch.equal(index[: forced.numel()], forced)
