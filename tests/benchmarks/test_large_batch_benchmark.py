import os
import warnings

import pytest

from botorch_sketch.benchmarks import large_batch
from botorch_sketch.benchmarks.__main__ import main


@pytest.fixture
def tiny(monkeypatch):
    # Two cheap cells under the name of the suite's budget.
    cells = [
        large_batch.Cell("B", "Hartmann-6", large_batch.SKETCH, 0, 50, 10),
        large_batch.Cell("B", "Hartmann-6", large_batch.SOBOL, 0, 50, 10),
    ]
    monkeypatch.setitem(large_batch.GRIDS, "headline-small", large_batch.Grid(cells))
    return "headline-small"


@pytest.mark.slow
def test_cells_are_written_once_and_collect_merges_two_runs(tiny, tmp_path):
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Two runs, each with half of the grid (as on two machines).
        a = large_batch.run_grid(tiny, first, workers=1, shard=(0, 2), progress=False)
        b = large_batch.run_grid(tiny, second, workers=1, shard=(1, 2), progress=False)
    assert [r["cell"]["method"] for r in a] == [large_batch.SKETCH]
    assert [r["cell"]["method"] for r in b] == [large_batch.SOBOL]
    path = os.path.join(
        large_batch.cells_dir(first), os.listdir(large_batch.cells_dir(first))[0]
    )
    stamp = os.stat(path).st_mtime_ns
    # A cell already written is not run (or written) again.
    again = large_batch.run_grid(tiny, first, workers=1, shard=(0, 2), progress=False)
    assert os.stat(path).st_mtime_ns == stamp and len(again) == 1
    record = again[0]
    assert record["evaluations"][-1] == 50
    assert len(record["simple_regret"]) == len(record["cumulative_seconds"]) == 4
    report = str(tmp_path / "merged.md")
    assert main(["--collect", first, second, "--budget", tiny, "--to", report]) == 0
    text = open(report).read()
    assert "2 cells merged" in text
    assert f"| {large_batch.SKETCH} | 50 |" in text
    assert f"| {large_batch.SOBOL} | 50 |" in text
    assert os.path.exists(str(tmp_path / "merged-B-Hartmann-6.png"))


def test_bad_shard_and_collect_options_are_named(capsys):
    with pytest.raises(SystemExit):
        main(["bo", "--budget", "headline-small", "--shard", "2/2"])
    assert "--shard" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--collect", "a", "b", "--budget", "small"])
    assert "one folder" in capsys.readouterr().err
