import json
import math

import pytest

pytest.importorskip("optuna")

from benchmarks import suggest, suggest_scratch  # noqa: E402


def test_the_mixed_scratch_budget_runs_whole_studies_of_the_mixed_task():
    budget = suggest.BUDGETS["mixed-scratch"]
    assert budget.task == "mixed" and not budget.sizes
    assert budget.methods == [suggest.SKETCH, suggest.GP, suggest.TPE]
    assert budget.regret_trials == 100 and budget.regret_seeds == [0, 1, 2, 3, 4]


def test_the_objective_asks_the_mixed_space_and_fails_in_its_corner():
    import numpy as np
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction="maximize")
    corner = {"lr": 1e-2, "a": 0.9, "b": 0.9, "c": 0.0, "depth": 7, "act": "relu"}
    study.enqueue_trial(corner)
    study.enqueue_trial({**corner, "b": 0.6})
    objective = suggest_scratch._objective(np.random.default_rng(0))
    study.optimize(objective, n_trials=2, catch=(suggest.Failed,))
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE"]
    assert study.trials[0].distributions == suggest._mixed_space()
    # The bowl's 0.3 ** 2 in a and the ripple 0.3 sin(5.4) cos(-6), noise 0.01.
    ripple = 0.3 * math.sin(5.4) * math.cos(-6.0)
    assert study.trials[1].value == pytest.approx(-0.36 + ripple, abs=0.04)


def test_a_study_from_scratch_is_recorded_and_collected(tmp_path, monkeypatch):
    cell = suggest_scratch._scratch_alone(suggest.TPE, 12, 0)
    again = suggest_scratch._scratch_alone(suggest.TPE, 12, 0)
    assert cell["best"] == again["best"] and math.isfinite(cell["best"])
    assert cell["trials"] == 12 and cell["seconds"] > 0
    assert 0 <= cell["failed_distinct"] <= cell["failed"] <= 12
    assert cell["longest_fail_run"] <= cell["failed"]
    if cell["failed"]:
        assert 0 <= cell["first_failed"] <= 12 - cell["failed"]
    else:
        assert cell["first_failed"] is None
    # The cells survive a line cut short; a cell recorded twice counts once.
    path = str(tmp_path / "cells.jsonl")
    suggest_scratch._append(path, cell)
    suggest_scratch._append(path, {**cell, "seed": 1, "best": cell["best"] + 2})
    suggest_scratch._append(path, {**cell, "seed": 1, "best": cell["best"] + 1})
    with open(path, "a") as f:
        f.write(json.dumps(cell)[:20])
    cells = suggest_scratch.read_cells(path)
    assert sorted(c["seed"] for c in cells) == [0, 1]
    tiny = suggest.Budget([], 0, [suggest.TPE], regret_trials=12, task="mixed")
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest_scratch.rows_from(cells, [suggest.TPE], 12)
    assert rows[0].seeds == [0, 1]
    assert rows[0].median("best") == pytest.approx(cell["best"] + 0.5)
    text = suggest_scratch.render_scratch(rows)
    assert f"| {suggest.TPE} | 2 | {cell['best'] + 0.5:.3f} |" in text
    report = tmp_path / "report.md"
    args = ["--budget", "tiny", "--cells", path, "--collect", "--to", str(report)]
    assert suggest_scratch.main(args) == 0
    assert text in report.read_text()


@pytest.mark.slow
def test_the_scratch_budget_runs_each_study_in_a_process(tmp_path, monkeypatch):
    tiny = suggest.Budget(
        [],
        0,
        [suggest.SKETCH, suggest.GP, suggest.TPE],
        regret_trials=12,
        regret_seeds=[0],
        task="mixed",
    )
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    path = str(tmp_path / "cells.jsonl")
    rows = suggest_scratch.run_scratch("tiny", workers=2, cells=path)
    assert [r.method for r in rows] == tiny.methods
    for row in rows:
        assert row.seeds == [0] and row.cells[0]["trials"] == 12
        assert row.cells[0]["seconds"] > 0
        assert row.cells[0]["best"] < 1.0
    assert len(suggest_scratch.read_cells(path)) == 3
    # A second run finds every cell and runs nothing.
    monkeypatch.setattr(suggest_scratch, "_scratch_alone", None)
    assert suggest_scratch.run_scratch("tiny", workers=1, cells=path) == rows
