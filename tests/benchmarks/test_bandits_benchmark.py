from benchmarks import bandits


def test_bandit_benchmark_runs_and_reports_ratios(monkeypatch, tmp_path):
    tiny = [
        bandits.Case("setting-1", 200, 2, 0.3, 40, 0, bandits.ALL),
        bandits.Case("crossover", 300, 2, 0.3, 30, 0, bandits.FAST, noise_fraction=1.0),
    ]
    monkeypatch.setitem(bandits.BUDGETS, "tiny", tiny)
    rows, traces = bandits.run("tiny")
    assert len(rows) == len(bandits.ALL) + len(bandits.FAST)
    text = bandits.render(rows, "test machine")
    # The exact row is its own reference.
    exact = [line for line in text.splitlines() if "| gp-ucb |" in line]
    assert len(exact) == 2 and all("| 1.00x | 1.00 |" in line for line in exact)
    assert "test machine" in text
    paths = bandits.plot(traces, str(tmp_path / "b"))
    assert len(paths) == 2 and all(
        (tmp_path / p.split("/")[-1]).stat().st_size > 0 for p in paths
    )
    dtc = next(r for r in rows if r.method == "dtc-uniform")
    bkb = next(r for r in rows if r.method == "bkb")
    assert dtc.dictionary == bkb.dictionary
    # Every model-based row has a floor, and the table shows the gap to it.
    assert all((r.floor_ms is None) == (r.method == "random") for r in rows)
    assert "floor ms/step | x floor" in text
    # Every row counts its torch calls per step, and the table shows them.
    assert all(r.calls_per_step is not None and r.calls_per_step > 0 for r in rows)
    assert "| calls/step |" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| experiment"))
    body = [line for line in lines if line.startswith(("| setting-1", "| crossover"))]
    assert len(body) == len(rows)
    assert all(line.count("|") == header.count("|") for line in body)
