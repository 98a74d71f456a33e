import math

import pytest
import torch

from benchmarks.scale import (
    RaceResult,
    Row,
    _data,
    race_svgp,
    render,
    render_sharded,
    run_sharded,
    svgp_ratio,
)


def _row(n, m, race=None):
    return Row(6, n, m, 1.0, 2.0, 1.0, 0.5, -0.4, 100.0, race)


@pytest.mark.slow
def test_svgp_race_stops_at_the_target_and_books_its_time():
    X, Y = _data(3000, 6, 0)
    Xt, Yt = _data(500, 6, 1)
    # An easy target is reached at the first check, a hopeless one never.
    easy = race_svgp(X, Y, Xt, Yt, 10.0, 16, 30.0, batch_size=256, check_every=5)
    assert easy.seconds_to_target is not None and easy.steps == 5
    assert easy.curve[0][1] <= 10.0 and easy.seconds_to_target == easy.curve[0][0]
    assert easy.build_seconds <= easy.seconds_to_target
    hard = race_svgp(X, Y, Xt, Yt, -100.0, 16, 2.0, batch_size=256, check_every=5)
    assert hard.seconds_to_target is None and hard.seconds >= 2.0
    assert hard.best_nll == min(nll for _, nll in hard.curve) > -100.0
    # The NLL is in the units of Y: scaling Y by 10 adds log(10) to a fresh
    # model's NLL at the same point of training.
    torch.manual_seed(0)  # the variational model draws its initial state
    a = race_svgp(X, Y, Xt, Yt, 1e9, 16, 60.0, batch_size=256, check_every=3)
    torch.manual_seed(0)
    b = race_svgp(X, 10 * Y, Xt, 10 * Yt, 1e9, 16, 60.0, batch_size=256, check_every=3)
    assert abs((b.curve[0][1] - a.curve[0][1]) - math.log(10.0)) < 1e-6


def test_render_reports_growth_and_the_svgp_ratio():
    reached = RaceResult(9.0, 0.1, -0.45, 9.0, 600)
    missed = RaceResult(None, 0.1, -0.2, 120.0, 9000)
    rows = [_row(100_000, 256), _row(1_000_000, 256, reached)]
    rows.append(_row(1_000_000, 512, missed))
    text = render(rows, "a machine")
    assert "n 100000 -> 1000000 (m = 256)" in text
    assert "m 256 -> 512 (n = 1000000)" in text
    assert svgp_ratio(rows[1]) == "2.2"  # 9 s against 1 + 2 + 1 s
    assert svgp_ratio(rows[2]) == "> 30.0"
    assert svgp_ratio(rows[0]) == ""
    assert "not in 120" in text and "a machine" in text


@pytest.mark.slow
def test_sharded_case_times_each_worker_count_and_projects():
    pytest.importorskip("ray")
    row = run_sharded("tiny")
    assert row.n == 5_000 and row.shards == 4 and set(row.statistics) == {1, 2}
    assert row.peak_mb > 0 and row.reduce_seconds > 0 and row.efficiency > 0
    assert row.projection() > row.fit
    text = render_sharded(row, "a machine")
    assert "scaling efficiency 1 -> 2 workers" in text and "projection" in text


def test_render_adds_the_gpu_peak_only_for_a_gpu_run():
    cpu = render([_row(100_000, 256)], "a machine")
    assert "GPU peak MB" not in cpu
    row = _row(100_000, 256)
    row.device_peak_mb = 1234.4
    gpu = render([row], "a GPU machine")
    assert "| held-out NLL | peak MB | GPU peak MB |" in gpu
    assert "| -0.400 | 100 | 1234 |" in gpu
    assert "ran untimed" in gpu and "ran untimed" not in cpu
