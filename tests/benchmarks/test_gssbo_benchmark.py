import math

import pytest
import torch

from benchmarks import gssbo
from benchmarks.__main__ import main


def _row(method: str, regret: list[list[float]], seconds: list[list[float]]):
    return gssbo.Row(
        problem="P",
        method=method,
        seeds=list(range(len(regret))),
        regret=torch.tensor(regret, dtype=torch.double),
        seconds=torch.tensor(seconds, dtype=torch.double),
        switch=None if method == "full" else 3,
        improvements=[0] * len(regret),
    )


def test_the_report_measures_what_each_subset_kept_of_the_full_gps_gain():
    # 5 evaluations, switched at 2 (the regret after 2, then after 5).
    full = _row("full", [[9, 8, 6, 4, 2], [9, 8, 8, 6, 4]], [[1, 2, 3], [1, 2, 5]])
    gss = _row("gssbo", [[9, 8, 8, 7, 7], [9, 8, 8, 8, 4]], [[1, 1, 2], [1, 1, 2]])
    rnd = _row("rssbo-75", [[9, 8, 8, 8, 8], [9, 8, 8, 8, 8]], [[1, 1, 1], [1, 1, 1]])
    # The full GP's mean regret fell from 8 to 3; GSSBO's from 8 to 5.5.
    assert gssbo.improvement_share(gss, full, 2) == pytest.approx(2.5 / 5)
    assert gssbo.improvement_share(rnd, full, 2) == 0.0
    flat = _row("full", [[9, 8, 8, 8, 8]], [[1, 1, 1]])
    assert math.isnan(gssbo.improvement_share(gss, flat, 2))
    text = gssbo.render([full, gss, rnd], "test machine", switch_at=2)
    line = next(x for x in text.splitlines() if x.startswith("| P | GSSBO"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[3:5] == ["8", "5.5"]
    assert cells[6] == "0.50"  # kept improving
    assert cells[7] == f"{5.5 / 3:.3g}"  # final regret / the full GP's
    assert cells[8] == f"{5.5 / 8:.3g}"  # / RSSBO's
    assert cells[9] == f"{2 / 4:.3g}"  # time: 2 s against the full GP's 4
    full_line = next(x for x in text.splitlines() if x.startswith("| P | Single"))
    assert [c.strip() for c in full_line.split("|")[1:-1]][6] == "-"
    assert "test machine" in text


def test_three_quarters_of_the_free_places_go_to_neighbours(monkeypatch):
    seen = {}

    def fake_run_gssbo(problem, bounds, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr("botorch_sketch.bo.run_gssbo", fake_run_gssbo)
    budget = gssbo.Budget(["Hartmann-6"], 30, [0], switch_at=25, num_initial=5)
    with pytest.raises(RuntimeError, match="stop"):
        gssbo.run_cell(budget, ("Hartmann-6", "rssbo-75", 0))
    # 25 places: 5 of the design, the newest, the best; of the 18 left, 13
    # neighbours and 5 for the rule.
    assert seen["num_neighbours"] == 13 and seen["subset_rule"] == "random"
    assert seen["switch_at"] == 25
    seen.clear()
    with pytest.raises(RuntimeError, match="stop"):
        gssbo.run_cell(budget, ("Hartmann-6", "full", 0))
    assert seen["switch_at"] == 31  # never switches
    assert "num_neighbours" not in seen  # the library's default


def test_cells_give_the_full_gp_its_own_seeds():
    budget = gssbo.Budget(
        ["Levy-20", "Hartmann-6"],
        50,
        [0, 1, 2],
        switch_at=30,
        methods=["full", "gssbo"],
        full_seeds=[0],
    )
    cells = gssbo.cells(budget)
    assert len(cells) == 2 * (1 + 3)
    assert [c for c in cells if c[1] == "full"] == [
        ("Levy-20", "full", 0),
        ("Hartmann-6", "full", 0),
    ]


@pytest.mark.slow
def test_the_grid_runs_writes_each_cell_and_resumes(tmp_path, monkeypatch):
    tiny = gssbo.Budget(
        ["Hartmann-6"],
        9,
        [0],
        switch_at=7,
        num_initial=4,
        num_neighbours=0,
        maxiter=10,
        num_restarts=1,
        raw_samples=16,
        methods=["full", "gssbo", "rssbo-75"],
    )
    monkeypatch.setitem(gssbo.BUDGETS, "tiny", tiny)
    rows = gssbo.run("tiny", folder=tmp_path, workers=2)
    assert [r.method for r in rows] == ["full", "gssbo", "rssbo-75"]
    assert all(r.regret.shape == (1, 9) for r in rows)
    assert rows[0].switch is None and rows[1].switch == 8
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 3
    stamps = [f.stat().st_mtime_ns for f in files]
    again = gssbo.run("tiny", folder=tmp_path, workers=2)  # nothing to run
    assert [f.stat().st_mtime_ns for f in files] == stamps
    assert torch.equal(again[1].regret, rows[1].regret)
    paths = gssbo.plot(rows, str(tmp_path / "g"))
    assert (tmp_path / "g-Hartmann-6.png").stat().st_size > 0 and len(paths) == 1


def test_an_extra_budget_belongs_to_its_benchmark():
    with pytest.raises(SystemExit):
        main(["bo", "--budget", "paper"])
