import math

import pytest

from benchmarks import demo
from benchmarks.__main__ import main


@pytest.fixture
def tiny(monkeypatch):
    # Seconds: 60 evaluations, 10 a batch, refits every 2 iterations.
    budget = demo.Budget(60, 10, 2, 32, (30, 60), num_candidates=128)
    monkeypatch.setitem(demo.BUDGETS, "small", budget)
    return budget


def test_the_demo_tabulates_both_models_and_plots(tiny, tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "demo-small.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(tiny.checkpoints)  # the header, then one per n
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| 30", "| 60"]
    assert all(r.split(" | ")[3].endswith("x") for r in rows[1:])
    assert (tmp_path / "demo-small.png").stat().st_size > 1000
    assert "wrote" in capsys.readouterr().out


def test_rows_hold_both_models_and_their_ratio(tiny):
    traces = demo.run("small", progress=False)
    assert list(traces) == list(demo.METHODS)
    for trace in traces.values():
        assert trace.evaluations[-1] == tiny.evaluations
        assert trace.num_batches == (tiny.evaluations - tiny.q) // tiny.q
    table = demo.rows(traces, tiny.checkpoints)
    assert [r.n for r in table] == list(tiny.checkpoints)
    for r in table:
        assert set(r.seconds) == set(r.cumulative) == set(r.best) == set(demo.METHODS)
        assert all(s > 0 for s in r.seconds.values())
        assert r.ratio == pytest.approx(r.seconds[demo.EXACT] / r.seconds[demo.SKETCH])
        assert all(not math.isnan(b) for b in r.best.values())
    # The runs share the design; the best value never falls.
    assert table[0].best[demo.SKETCH] <= table[1].best[demo.SKETCH]
    assert table[0].cumulative[demo.EXACT] <= table[1].cumulative[demo.EXACT]
