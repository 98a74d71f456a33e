import time

import pytest
import torch
from botorch.optim.core import OptimizationResult, OptimizationStatus

from benchmarks import inference
from benchmarks.inference import (
    BUDGETS,
    Budget,
    Progress,
    Row,
    expected_seconds,
    render,
)
from benchmarks.peers import CappedOptimizer, fit_sgpr


def _result(message=None):
    return OptimizationResult(
        step=1, fval=0.0, status=OptimizationStatus.STOPPED, message=message
    )


def test_capped_optimizer_shares_one_deadline_across_attempts():
    timeouts = []

    def optimizer(mll, timeout_sec, **kwargs):
        timeouts.append(timeout_sec)
        time.sleep(0.05)
        return _result("converged")

    capped = CappedOptimizer(optimizer, cap_seconds=0.2)
    capped(None, closure=None)
    capped(None, closure=None)
    assert 0.15 < timeouts[0] <= 0.2
    assert timeouts[1] < timeouts[0] - 0.04  # the second attempt gets what is left
    assert not capped.stopped_at_cap


def test_capped_optimizer_records_botorchs_timeout():
    capped = CappedOptimizer(
        lambda mll, timeout_sec, **kw: _result("Optimization timed out after 1 s."),
        cap_seconds=1.0,
    )
    capped(None)
    assert capped.stopped_at_cap


@pytest.mark.slow
def test_a_peer_fit_stops_at_the_cap():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(200, 3, generator=g, dtype=torch.double)
    Y = X.sin().sum(-1, keepdim=True) + 0.1 * torch.randn(200, 1, generator=g)
    start = time.perf_counter()
    model = fit_sgpr(X, Y.double(), 16, cap_seconds=0.01)
    assert model.stopped_at_cap
    assert time.perf_counter() - start < 5.0
    assert not fit_sgpr(X, Y.double(), 16).stopped_at_cap


def test_render_says_where_a_peer_stopped_at_the_cap():
    rows = [
        Row("frontier", "SingleTaskGP", 100, None, 10.0, 0.30, 0.3),
        Row("frontier", "SGPR (GPyTorch, fast paths)", 100, 8, 5.0, 0.4, 0.3, True),
        Row("frontier", "NystromGP uniform", 100, 8, 1.0, 0.4, 0.3),
    ]
    text = render(rows, {}, "test machine")
    assert "| SGPR (GPyTorch, fast paths), stopped at the cap | 100 | 8 |" in text
    assert "| NystromGP uniform | 100 | 8 |" in text
    assert "keeps the values it had reached" in text


def test_progress_scales_the_expected_time_left_by_the_speed_so_far():
    progress = Progress([1.0, 1.0, 2.0])
    progress.done = 1
    assert progress.seconds_left(elapsed=2.0) == pytest.approx(6.0)
    progress.done = 0
    assert progress.seconds_left(elapsed=0.0) == pytest.approx(4.0)
    assert "s left]" in progress.step_done()


def test_small_budget_leaves_out_the_slow_peer_caps_the_others_and_is_short():
    small = BUDGETS["small"]
    assert small.svgp_m == [] and small.sgpr_m
    assert small.threads == 1
    assert small.peer_cap_seconds <= 15
    steps = inference._steps(small, {})
    expected = sum(expected_seconds(s.method, s.n, s.m, small) for s in steps)
    assert expected < 120  # seconds on one free core; the target is 3 minutes
    assert BUDGETS["large"].svgp_m  # the slow peer stays in the large budget


TINY = Budget(
    frontier_n=60,
    frontier_m=[8],
    qbars=[1.0],
    sgpr_m=[8],
    svgp_m=[8],
    growth_n=[60],
    growth_exact_max_n=60,
    bo_n=90,
    bo_batch=50,
    num_test=20,
    peer_cap_seconds=0.01,
    threads=1,
)


@pytest.mark.slow
def test_run_sets_threads_caps_peers_and_prints_the_time_left(monkeypatch, capsys):
    monkeypatch.setitem(BUDGETS, "tiny", TINY)
    seen = []
    fit = inference.fit_single_task_gp

    def exact(X, Y):
        seen.append(torch.get_num_threads())
        return fit(X, Y)

    monkeypatch.setattr(inference, "fit_single_task_gp", exact)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        rows, d_eff = inference.run("tiny")
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(threads)
    assert seen and set(seen) == {1}
    assert set(d_eff) == {"frontier", "growth n=60", "bo-data"}
    peers = [r for r in rows if not r.method.startswith(("NystromGP", "SingleTaskGP"))]
    assert len(peers) == 4 and all(r.capped for r in peers)
    assert not any(r.capped for r in rows if r not in peers)
    out = capsys.readouterr().out
    assert "stopped at the cap" in out
    assert out.count("s left]") == len(rows) + 1  # every fit and the BO data
