import json
import math
import os
import warnings

import pytest

from benchmarks import large_batch
from benchmarks.__main__ import main
from benchmarks.large_batch import reporting
from benchmarks.large_batch.grid import Cell, Grid


def _cells(budget, evaluations, problems=("Hartmann-6", "Ackley-20")):
    # Sobol cells: the grid's machinery without the peers' packages.
    return [
        Cell(budget, p, large_batch.SOBOL, 0, evaluations, 10, 30.0) for p in problems
    ]


@pytest.fixture
def tiny(monkeypatch):
    # Two cheap cells under the names of the suite's budget and of a larger one
    # that shares its problem, methods and seed.
    monkeypatch.setitem(
        large_batch.GRIDS, "headline-small", Grid(_cells("headline-small", 30))
    )
    monkeypatch.setitem(large_batch.GRIDS, "headline", Grid(_cells("headline", 50)))
    return "headline-small"


def _run(budget, out, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return large_batch.run_grid(budget, out, workers=1, progress=False, **kwargs)


def test_keys_hold_the_budget_and_every_setting():
    cell = Cell(
        "headline-small", "rover-60", large_batch.TURBO_ONE, 2, 1000, 100, 150.0
    )
    assert cell.key == "headline-small__rover-60__TuRBO-1__q100-n1000-cap150__seed2"
    others = [
        Cell("headline", "rover-60", large_batch.TURBO_ONE, 2, 1000, 100, 150.0),
        Cell("headline-small", "rover-60", large_batch.TURBO_ONE, 2, 2000, 100, 150.0),
        Cell("headline-small", "rover-60", large_batch.TURBO_ONE, 2, 1000, 50, 150.0),
        Cell("headline-small", "rover-60", large_batch.TURBO_ONE, 2, 1000, 100, None),
    ]
    assert len({cell.key} | {c.key for c in others}) == 5
    # Every grid's keys are distinct, within and across grids.
    keys = [c.key for g in large_batch.GRIDS.values() for c in g.cells]
    assert len(keys) == len(set(keys))


def test_a_smaller_budgets_cells_are_not_reused(tiny, tmp_path):
    out = str(tmp_path / "run")
    small = _run(tiny, out)
    assert sorted(r["cell"]["budget"] for r in small) == ["headline-small"] * 2
    # The larger budget runs its own cells beside them, to its own length.
    large = _run("headline", out)
    assert [r["evaluations"][-1] for r in large] == [50, 50]
    assert len(os.listdir(large_batch.cells_dir(out))) == 4
    # A file under a cell's name but run at other settings is run again.
    cell = large_batch.GRIDS[tiny].cells[0]
    path = os.path.join(large_batch.cells_dir(out), cell.key + ".json")
    record = json.load(open(path))
    record["cell"]["evaluations"] = 20
    json.dump(record, open(path, "w"))
    assert not large_batch.is_done(large_batch.cells_dir(out), cell)
    again = _run(tiny, out)
    assert {r["evaluations"][-1] for r in again} == {30}


def test_cells_are_written_once_and_collect_merges_two_runs(tiny, tmp_path):
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    # Two runs, each with half of the grid (as on two machines).
    a = _run(tiny, first, shard=(0, 2))
    b = _run(tiny, second, shard=(1, 2))
    assert [r["cell"]["problem"] for r in a] == ["Hartmann-6"]
    assert [r["cell"]["problem"] for r in b] == ["Ackley-20"]
    directory = large_batch.cells_dir(first)
    path = os.path.join(directory, os.listdir(directory)[0])
    stamp = os.stat(path).st_mtime_ns
    # A cell already written is not run (or written) again.
    again = _run(tiny, first, shard=(0, 2))
    assert os.stat(path).st_mtime_ns == stamp and len(again) == 1
    record = again[0]
    assert record["evaluations"] == [10, 20, 30] and record["threads"] == 1
    assert len(record["best_value"]) == len(record["cumulative_seconds"]) == 3
    merged = str(tmp_path / "merged.md")
    assert main(["--collect", first, second, "--budget", tiny, "--to", merged]) == 0
    text = open(merged).read()
    assert "2 cells merged" in text
    assert "### Hartmann-6 (headline-small)" in text
    assert "### Ackley-20 (headline-small)" in text
    assert text.count(f"| {large_batch.SOBOL} | 1 | 30 |") == 2
    assert os.path.exists(str(tmp_path / "merged-Hartmann-6.png"))
    assert os.path.exists(str(tmp_path / "merged-Ackley-20.png"))
    # The larger budget's report does not take the small budget's cells.
    assert (
        main(["--collect", first, second, "--budget", "headline", "--to", merged]) == 0
    )
    assert "0 cells merged" in open(merged).read()


@pytest.mark.slow
def test_headline_small_runs_every_method_end_to_end(tmp_path):
    pytest.importorskip("enn")
    pytest.importorskip("cma")
    out = str(tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (
            main(["bo", "--budget", "headline-small", "--out", out, "--workers", "1"])
            == 0
        )
    records = large_batch.cells_of("headline-small", large_batch.read_cells([out]))
    assert sorted(r["cell"]["method"] for r in records) == sorted(large_batch.METHODS)
    text = open(os.path.join(out, "bo-headline-small.md")).read()
    for method in large_batch.METHODS:
        assert f"| {method} | 1 | 40 |" in text
    assert f"{large_batch.SKETCH} / {large_batch.TURBO_ENN}: CPU per evaluation" in text


def _record(method, seed, seconds, best, refits=None):
    # A run of 3 batches of 100, with proposing CPU per batch ``seconds``.
    cumulative = [sum(seconds[: i + 1]) for i in range(3)]
    return {
        "cell": {
            "budget": "b",
            "problem": "p",
            "method": method,
            "seed": seed,
            "evaluations": 300,
            "q": 100,
            "time_cap": None,
        },
        "optimal_value": math.nan,
        "evaluations": [100, 200, 300],
        "best_value": best,
        "cumulative_seconds": cumulative,
        "iteration_seconds": seconds,
        "refit_seconds": refits,
        "stopped_at_cap": False,
    }


def test_report_reads_equal_evaluations_equal_cpu_and_ratios():
    records = [
        _record(large_batch.SKETCH, 0, [0.0, 3.0, 3.0], [1, 2, 4], [0, 1.5, 1.5]),
        _record(large_batch.SKETCH, 1, [0.0, 2.0, 2.0], [1, 3, 5], [0, 1.0, 0.6]),
        _record(large_batch.TURBO_ENN, 0, [0.1, 0.1, 0.1], [1, 2, 3]),
        _record(large_batch.TURBO_ENN, 1, [0.1, 0.1, 0.1], [1, 1, 2]),
    ]
    r = records[0]
    assert reporting.best_at_evaluations(r, 250) == 2
    assert math.isnan(reporting.best_at_evaluations(r, 301))
    assert reporting.best_at_seconds(r, 0.3) == 1
    assert reporting.refit_share(r) == pytest.approx(0.5)
    text = reporting.render(records, "test machine")
    # Sketch: 6 and 4 CPU s over 300 evaluations (median 5/300 s), TuRBO-ENN
    # 0.3/300: 16.7x; at TuRBO-ENN's 0.3 CPU s the sketch has only its design.
    sketch_row = next(x for x in text.splitlines() if x.startswith("| sketch |"))
    cells = [c.strip() for c in sketch_row.strip("|").split("|")]
    assert cells[:4] == ["sketch", "2", "300", "4.5"]  # median best at 300
    assert cells[4] == "1" and cells[5] == "3.5"  # at 0.3 s and at 5 s
    assert cells[6] == "5" and cells[7] == "16.7" and cells[8] == "16.7x"
    assert cells[9] == "45%"  # median of 50% and 40%
    assert "sketch / TuRBO-ENN: CPU per evaluation 16.7x" in text
    assert "best at 300 evaluations (reached by every run of both) 4.5 vs 2.5" in text
    assert "at TuRBO-ENN's 0.3 CPU s the sketch had 1, TuRBO-ENN 2.5." in text


def test_bad_shard_and_collect_options_are_named(capsys):
    with pytest.raises(SystemExit):
        main(["bo", "--budget", "headline-small", "--shard", "2/2"])
    assert "--shard" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--collect", "a", "b", "--budget", "small"])
    assert "one folder" in capsys.readouterr().err
