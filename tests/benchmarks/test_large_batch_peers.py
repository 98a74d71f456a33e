import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from botorch.test_functions import Hartmann

from benchmarks.large_batch import peers, sketch
from benchmarks.large_batch.grid import (
    CMA_ES,
    SOBOL,
    TURBO_ENN,
    TURBO_ONE,
)
from benchmarks.large_batch.record import SERIES

pytest.importorskip("enn")
pytest.importorskip("cma")

FAST = [TURBO_ENN, CMA_ES, SOBOL]


@pytest.fixture(autouse=True)
def one_thread():
    # As the grid runs them (two threads on a busy machine triple TuRBO-1's time).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _check(record: dict, evaluations: int, q: int, method: str) -> None:
    sizes = [min(q, evaluations - i) for i in range(0, evaluations, q)]
    assert record["evaluations"] == list(np.cumsum(sizes))
    for name in SERIES:
        assert len(record[name]) == len(sizes), name
    best = record["best_value"]
    assert all(b <= a for a, b in zip(best[1:], best, strict=False))
    assert all(math.isfinite(b) for b in best)
    assert best[-1] <= 3.32237 + 1e-6  # noise-free values of Hartmann-6
    seconds = record["cumulative_seconds"]
    assert all(b >= a for a, b in zip(seconds, seconds[1:], strict=False))
    if method != SOBOL:
        assert seconds[-1] > 0
    assert record["refit_seconds"] is None and not record["stopped_at_cap"]


@pytest.mark.parametrize("method", FAST)
def test_peers_make_monotone_records_on_a_tiny_budget(method):
    problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    record = peers.run_peer(problem, peers.PEERS[method](6, 10, 0), 30, 10, seed=0)
    _check(record, 30, 10, method)
    # The best value is the noise-free one: some evaluated point has it.
    assert record["optimal_value"] == pytest.approx(3.32237, abs=1e-4)


@pytest.mark.slow
def test_turbo_one_makes_a_monotone_record_on_a_tiny_budget():
    problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    record = peers.run_peer(problem, peers.PEERS[TURBO_ONE](6, 10, 0), 30, 10, 0)
    _check(record, 30, 10, TURBO_ONE)
    # The GP is fitted in tell: the model's share is most of the CPU.
    assert sum(record["model_seconds"]) > sum(record["batch_seconds"])


@pytest.mark.parametrize("method", [TURBO_ENN, CMA_ES])
def test_a_batch_size_that_does_not_divide_the_budget(method):
    # 35 = 3 x 10 + 5: the last batch is the first 5 of a full one.
    problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    record = peers.run_peer(problem, peers.PEERS[method](6, 10, 1), 35, 10, seed=1)
    _check(record, 35, 10, method)


class _Failing(torch.nn.Module):
    # Hartmann-6 whose every fourth evaluated point fails (NaN observation).
    def __init__(self):
        super().__init__()
        self.inner = Hartmann(dim=6, noise_std=0.5, negate=True)
        self.bounds, self.dim, self.noise_std = self.inner.bounds, 6, 0.5
        self.optimal_value = self.inner.optimal_value

    def forward(self, X, noise=True):
        y = self.inner(X, noise=noise)
        if noise:
            y = y.clone()
            y[::4] = math.nan
        return y


@pytest.mark.parametrize("method", [TURBO_ENN, CMA_ES])
def test_failed_evaluations_do_not_stop_the_peers(method):
    # ennbo's next ask fails after a NaN is told; the adapter drops it. cma
    # would replace it by the median; the adapter gives it the worst value.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cma's NaN warning would be an error
        record = peers.run_peer(
            _Failing(), peers.PEERS[method](6, 10, 2), 50, 10, seed=2
        )
    _check(record, 50, 10, method)


def test_cma_restarts_with_twice_the_population(monkeypatch):
    es = peers.CMAES(4, q=6, seed=0)
    calls = []
    original = es._search

    def search(x0, seed):
        calls.append((es.popsize, seed))
        return original(x0, seed)

    monkeypatch.setattr(es, "_search", search)
    # The first generation runs; then the search says it is done.
    X = es.ask(6)
    es.tell(X, -((X - 0.3) ** 2).sum(-1))
    monkeypatch.setattr(es._es, "stop", lambda: {"tolfun": 1e-11})
    first = es.ask(6)
    # A population of 12, served as two batches of 6 from one generation.
    assert es.restarts == 1 and calls == [(12, calls[0][1])]
    with pytest.raises(ValueError, match="must not exceed q"):
        es.ask(7)
    second = es.ask(6)
    assert not np.allclose(first, second)
    es.tell(first, -first.sum(-1))
    assert es._es.countiter == 0  # told once the whole generation is back
    es.tell(second, -second.sum(-1))
    assert es._es.countiter == 1


def test_turbo_enn_counts_its_restarts():
    enn = peers.TurboENN(3, q=4, seed=0)
    for _ in range(3):
        X = enn.ask(4)
        enn.tell(X, -X.sum(-1))
    assert enn.restarts == 0 and enn.train_size == 12
    # A trust region shrunk below its minimum restarts with no data.
    enn._optimizer._tr_state.length = 0.0
    enn.ask(4)
    assert enn.restarts == 1 and enn.train_size == 0


def test_time_cap_stops_before_a_batch():
    problem = Hartmann(dim=6, noise_std=0.5, negate=True)
    record = peers.run_peer(
        problem, peers.PEERS[TURBO_ENN](6, 10, 0), 100, 10, seed=0, time_cap=1e-9
    )
    assert record["stopped_at_cap"] and record["evaluations"][-1] < 100


def _trace(breakdown: bool) -> SimpleNamespace:
    # A stand-in for run_large_batch's trace: a design of 10, then 2 batches.
    trace = SimpleNamespace(
        initial_best=1.0,
        train_size=[10, 20],
        evaluations=torch.tensor([20.0, 30.0], dtype=torch.double),
        best_value=torch.tensor([1.5, 2.0], dtype=torch.double),
        iteration_seconds=torch.tensor([0.3, 0.7], dtype=torch.double),
        model_seconds=[0.1, 0.5],
        batch_seconds=[0.2, 0.2],
        inducing_size=[10, 20],
        stopped_at_cap=False,
    )
    if breakdown:
        trace.refit_seconds = [0.0, 0.4]
        trace.incumbent_seconds = torch.tensor([0.01, 0.01])
        trace.refitted = [False, True]
    return trace


@pytest.mark.parametrize("breakdown", [False, True])
def test_sketch_record_adds_the_design_and_reads_the_breakdown(monkeypatch, breakdown):
    monkeypatch.setattr(sketch, "run_large_batch", lambda *a, **k: _trace(breakdown))
    problem = Hartmann(dim=6, negate=True)
    record = sketch.run_sketch(problem, 30, 10, seed=0)
    assert record["evaluations"] == [10, 20, 30]
    assert record["best_value"] == [1.0, 1.5, 2.0]
    assert record["cumulative_seconds"] == pytest.approx([0.0, 0.3, 1.0])
    assert record["train_size"] == [0, 10, 20]
    if breakdown:
        assert record["refit_seconds"] == [0.0, 0.0, 0.4]
        assert record["refitted"] == [False, False, True]
        assert record["incumbent_seconds"] == pytest.approx([0.0, 0.01, 0.01])
    else:
        assert record["refit_seconds"] is None and record["refitted"] is None
