import math
import warnings

import cma
import numpy as np
import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.test_functions import Levy

from botorch_sketch.bo import ScreenedCMAES, posterior_means
from botorch_sketch.bo.large_batch import run_large_batch
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning

pytestmark = pytest.mark.cpu_only  # cma's draws are NumPy arrays


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        yield


def _f(X):
    # A smooth bowl with its top at 0.3 in every coordinate of [0, 1]^d.
    return -((X - 0.3) ** 2).sum(-1)


def _unit(d):
    return torch.stack([torch.zeros(d), torch.ones(d)]).double()


class _Spy:
    r"""A surrogate that keeps the model it returns (the default's)."""

    def __init__(self):
        from botorch_sketch.bo import default_surrogate

        self.inner = default_surrogate()
        self.model = None

    def __call__(self, X, Y):
        self.model = self.inner(X, Y)
        return self.model


def _recording(optimizer):
    # Record every set of draws CMA-ES hands out.
    drawn = []
    ask = optimizer.es.ask

    def recorded(number=None, **kwargs):
        out = ask(number, **kwargs)
        drawn.append(np.asarray(out))
        return out

    optimizer.es.ask = recorded
    return drawn


def test_a_screened_generation_is_the_q_draws_of_largest_posterior_mean():
    spy = _Spy()
    opt = ScreenedCMAES(  # dense draws only: the pool is cma's own draws
        _unit(5), q=10, surrogate=spy, oversample=4, sparse_share=0.0, seed=0
    )
    X = opt.ask()
    opt.tell(X, _f(X))
    drawn = _recording(opt)
    X = opt.ask()
    draws = torch.as_tensor(drawn[-1]).clamp(0, 1)
    assert draws.shape == (40, 5)
    with opt.random_state():
        means = posterior_means(spy.model, draws)
    expected = draws[means.topk(10).indices]
    assert set(map(tuple, X.tolist())) == set(map(tuple, expected.tolist()))
    assert opt.screened == [False, True]


@pytest.fixture
def pools(monkeypatch):
    # Every screening pool the model ranks, in order.
    import botorch_sketch.bo.screened_cma as module

    recorded = []

    def spy(model, X):
        recorded.append(X.clone())
        return posterior_means(model, X)

    monkeypatch.setattr(module, "posterior_means", spy)
    return recorded


def test_a_share_of_the_pool_steps_from_the_mean_on_a_few_coordinates(pools):
    # d = 40, 5 coordinates on average: a sparse draw keeps 1-15 of its 40
    # steps; a dense draw changes (almost) every coordinate.
    d, q = 40, 30
    opt = ScreenedCMAES(_unit(d), q=q, seed=0)
    X = opt.ask()
    opt.tell(X, _f(X))
    mean = torch.as_tensor(opt.es.result.xfavorite).clamp(0, 1)
    X = opt.ask()
    pool = pools[-1]
    assert pool.shape == (3 * q, d)
    changed = ((pool - mean).abs() > 1e-12).sum(-1)
    assert (changed[:60] >= 35).all()
    sparse = changed[60:]
    assert (sparse >= 1).all() and (sparse <= 15).all()
    assert 3.0 <= sparse.double().mean() <= 7.0
    assert (pool >= 0).all() and (pool <= 1).all()
    # The generation is chosen from that pool, sparse draws included (on this
    # bowl the model keeps 22 of the 30 sparse ones).
    assert {tuple(x) for x in X.tolist()} <= {tuple(x) for x in pool.tolist()}
    kept = {tuple(x) for x in pool[60:].tolist()}
    assert sum(tuple(x) in kept for x in X.tolist()) >= 10


def test_no_sparse_draws_where_the_share_is_zero_or_the_pool_has_no_spare(pools):
    for kwargs in ({"sparse_share": 0.0}, {"oversample": 1}):
        opt = ScreenedCMAES(_unit(40), q=20, seed=0, **kwargs)
        for _ in range(2):
            X = opt.ask()
            opt.tell(X, _f(X))
        mean = torch.as_tensor(opt.es.result.xfavorite).clamp(0, 1)
        opt.ask()
        changed = ((pools[-1] - mean).abs() > 1e-12).sum(-1)
        assert (changed >= 35).all()


def test_a_model_that_ranks_poorly_leaves_the_next_generation_unscreened():
    # rank_tolerance 2 (above any tau): every generation after the first
    # unscreened, the first q of the draws; -2: every one screened.
    never = ScreenedCMAES(_unit(4), q=8, rank_tolerance=2.0, seed=1)
    always = ScreenedCMAES(_unit(4), q=8, rank_tolerance=-2.0, seed=1)
    for opt in (never, always):
        for _ in range(4):
            X = opt.ask()
            opt.tell(X, _f(X))
        assert len(opt.rank_correlation) == 3
        assert all(-1.0 <= t <= 1.0 for t in opt.rank_correlation)
    # The second generation is screened (no tau yet), the others follow tau.
    assert never.screened == [False, True, False, False]
    assert always.screened == [False, True, True, True]


def test_unscreened_generations_are_the_first_draws():
    opt = ScreenedCMAES(_unit(4), q=8, rank_tolerance=2.0, seed=1)
    drawn = _recording(opt)
    for _ in range(3):
        X = opt.ask()
        opt.tell(X, _f(X))
    assert opt.screened[-1] is False
    assert torch.equal(X, torch.as_tensor(drawn[-1][:8]).clamp(0, 1))


def test_oversample_one_is_cma_es_itself():
    # Same draws, same values: the same distribution as cma's own loop.
    d, q, seed = 6, 12, 3
    opt = ScreenedCMAES(_unit(d), q=q, oversample=1, seed=seed)
    rng = np.random.default_rng(seed)
    options = {
        "popsize": q,
        "bounds": [0, 1],
        "seed": math.nan,
        "randn": lambda *shape: rng.standard_normal(shape),
        "verbose": -9,
    }
    es = cma.CMAEvolutionStrategy(np.full(d, 0.5), opt.sigma0, options)
    for _ in range(5):
        X = opt.ask()
        opt.tell(X, _f(X))
        x = np.asarray(es.ask())
        es.tell(list(x), (-_f(torch.as_tensor(x))).tolist())
    assert np.allclose(opt.es.mean, es.mean, atol=1e-12)
    assert opt.es.sigma == pytest.approx(es.sigma, rel=1e-12)


def test_the_run_does_not_depend_on_the_objectives_units():
    # CMA-ES's stopping rules have absolute tolerances: told raw values of
    # order 1e-12 it stopped and restarted at every generation.
    runs = []
    for scale in (1.0, 1e-5, 1e-12):
        opt = ScreenedCMAES(_unit(3), q=6, seed=0)
        for _ in range(6):
            X = opt.ask()
            opt.tell(X, scale * _f(X))
        runs.append((X, opt.restarts))
    assert [restarts for _, restarts in runs] == [0, 0, 0]
    # Above BoTorch's Standardize floor (1e-8) the model reads the same data.
    assert torch.allclose(runs[0][0], runs[1][0], atol=1e-6)


def test_the_callers_random_streams_are_left_alone():
    torch.manual_seed(5)
    np.random.seed(5)
    torch_before, np_before = torch.get_rng_state(), np.random.get_state()[1].copy()
    opt = ScreenedCMAES(_unit(3), q=6, seed=0)
    for _ in range(3):
        X = opt.ask()
        opt.tell(X, _f(X))
    assert torch.equal(torch.get_rng_state(), torch_before)
    assert np.array_equal(np.random.get_state()[1], np_before)


def test_the_same_seed_gives_the_same_points_and_another_seed_others():
    runs = []
    for seed in (0, 0, 1):
        opt = ScreenedCMAES(_unit(3), q=6, seed=seed)
        for _ in range(3):
            X = opt.ask()
            opt.tell(X, _f(X))
        runs.append(X)
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_failures_are_not_modelled_and_a_failed_generation_does_not_stop_it():
    opt = ScreenedCMAES(_unit(3), q=6, seed=0)
    X = opt.ask()
    y = _f(X)
    y[:2] = torch.tensor([math.nan, math.inf])
    opt.tell(X, y)
    assert opt.train_X.shape[0] == 4
    X = opt.ask()
    opt.tell(X, torch.full((6,), math.nan))  # every point failed
    assert opt.train_X.shape[0] == 4
    X = opt.ask()
    assert X.shape == (6, 3) and bool(torch.isfinite(X).all())


def test_points_are_told_in_any_order_and_parts_each_once():
    opt = ScreenedCMAES(_unit(3), q=6, seed=0)
    X = opt.ask()
    opt.tell(X[3:].flip(0), _f(X[3:].flip(0)))
    with pytest.raises(UnsupportedError, match="not told"):
        opt.ask()
    with pytest.raises(InputDataError, match="told already"):
        opt.tell(X[3:4], _f(X[3:4]))
    with pytest.raises(InputDataError, match="not asked"):
        opt.tell(X[:1] + 0.01, _f(X[:1]))
    with pytest.raises(InputDataError, match="twice"):
        opt.tell(X[[0, 0]], _f(X[[0, 0]]))
    # A refused tell records nothing: the points are still to be told.
    with pytest.raises(InputDataError, match="not asked"):
        opt.tell(torch.cat([X[:1], X[:1] + 0.01]), _f(X[:2]))
    assert opt.pending == 3
    opt.tell(X[:3], _f(X[:3]))
    assert opt.pending == 0 and opt.train_X.shape[0] == 6
    assert opt.best()[1] == pytest.approx(float(_f(X).max()))


def test_bad_arguments_are_refused():
    with pytest.raises(InputDataError, match="bounds"):
        ScreenedCMAES(torch.tensor([[0.0, 0.0], [1.0, math.inf]]))
    with pytest.raises(UnsupportedError, match="at least 2 inputs"):
        ScreenedCMAES(_unit(1))
    with pytest.raises(InputDataError, match="q"):
        ScreenedCMAES(_unit(2), q=1)
    with pytest.raises(InputDataError, match="surrogate"):
        ScreenedCMAES(_unit(2), surrogate="gp")
    for share in (-0.1, 1.5, math.nan):
        with pytest.raises(InputDataError, match="sparse_share"):
            ScreenedCMAES(_unit(2), sparse_share=share)
    with pytest.raises(InputDataError, match="sparse_coordinates"):
        ScreenedCMAES(_unit(2), sparse_coordinates=0)
    opt = ScreenedCMAES(_unit(2), q=4)
    with pytest.raises(InputDataError, match="at most q"):
        opt.ask(5)
    X = opt.ask()
    with pytest.raises(InputDataError, match="Y has shape"):
        opt.tell(X, torch.zeros(3))


def test_a_stopped_search_restarts_from_a_new_point_keeping_the_data():
    opt = ScreenedCMAES(_unit(3), q=6, seed=0)
    X = opt.ask()
    opt.tell(X, _f(X))
    first = opt.es
    first.stop = lambda: {"forced": True}
    X = opt.ask()
    opt.tell(X, _f(X))
    assert opt.restarts == 1 and opt.es is not first
    assert opt.train_X.shape[0] == 12
    assert opt.region_length == pytest.approx(opt.sigma0)


@pytest.mark.slow
def test_run_large_batch_with_cma_climbs_levy_and_keeps_its_trace():
    problem = Levy(dim=10, negate=True)
    trace = run_large_batch(
        problem, problem.bounds, evaluations=1500, q=50, seed=0, strategy="cma",
        progress=False,
    )  # fmt: skip
    assert trace.evaluated[-1] == 1500
    assert float(trace.best_value[-1]) > trace.initial_best + 5
    assert float(trace.best_value[-1]) > -3.0
    assert all(0 < s < 1 for s in trace.region_length)
    assert trace.distinct_points == [50] * len(trace.distinct_points)
    with pytest.raises(InputDataError, match="strategy"):
        run_large_batch(problem, problem.bounds, 100, q=50, strategy="turbo")
    with pytest.raises(InputDataError, match="num_initial"):
        run_large_batch(
            problem, problem.bounds, 100, q=50, num_initial=20, strategy="cma"
        )


def test_observations_that_are_not_numbers_are_refused_by_name():
    opt = ScreenedCMAES(_unit(3), q=6, seed=0)
    X = opt.ask()
    # A raw ValueError of torch's ("too many dimensions 'str'").
    with pytest.raises(InputDataError, match="Y must be a tensor of 6 obs"):
        opt.tell(X, ["a"] * 6)
    assert opt.pending == 6


def test_a_box_narrower_than_float64_resolution_does_not_wedge_the_search():
    # Bounds a few float64 steps wide: the draws of a generation round to
    # repeated points, told back as asked (refused as "the same point twice"
    # before, and the generation stayed pending for good).
    bounds = torch.tensor([[1.0, 1.0], [1.0 + 1e-15] * 2], dtype=torch.double)
    opt = ScreenedCMAES(bounds, q=4, seed=0)
    repeated = 0
    for _ in range(6):
        X = opt.ask()
        repeated += X.shape[0] - torch.unique(X, dim=0).shape[0]
        opt.tell(X[:1], -(X[:1] - 1.0).square().sum(-1))
        opt.tell(X[1:], -(X[1:] - 1.0).square().sum(-1))
        assert opt.pending == 0
    assert repeated > 0
    assert opt.train_X.shape[0] == 24 and len(opt.screened) == 6
    # A point told more often than the generation holds it is still refused.
    X = opt.ask()
    with pytest.raises(InputDataError, match="twice"):
        opt.tell(X[[0] * 5], torch.zeros(5))


def test_no_injection_warning_from_the_draws_screening_leaves_out():
    # At q < 6 cma injects mirrored draws; screening keeps q of 3 q draws, and
    # cma warned "orphanated injected solution" for each one left out.
    opt = ScreenedCMAES(_unit(3), q=2, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(12):
            X = opt.ask()
            opt.tell(X, _f(X))
    injected = [
        w
        for w in caught
        if issubclass(w.category, cma.evolution_strategy.InjectionWarning)
    ]
    assert injected == []


def test_a_population_that_does_not_fit_is_refused_by_name(monkeypatch):
    # q = 10^8 set out to allocate tens of GB (CMA-ES's books and draws).
    with pytest.raises(InputDataError, match="q = 100000000 .* GiB"):
        ScreenedCMAES(_unit(2), q=10**8)
    from botorch_sketch import checks

    monkeypatch.setattr(checks, "MAX_BYTES", 10**6)
    with pytest.raises(InputDataError, match="q = 1000 .* Use at most [1-9]"):
        ScreenedCMAES(_unit(2), q=1000)
    assert ScreenedCMAES(_unit(2), q=10).ask().shape == (10, 2)
