import json

import numpy as np
import pytest

pytest.importorskip("cocoex")
pytest.importorskip("cma")

from benchmarks.surrogate_cma.__main__ import main  # noqa: E402
from benchmarks.surrogate_cma.report import _at, _at_cpu, write_report  # noqa: E402
from benchmarks.surrogate_cma.run import Problem, run_cell  # noqa: E402


def test_a_problem_knows_its_optimum():
    problem = Problem(1, 3, 2)  # the sphere: its optimum is where f is smallest
    x = np.full(3, 0.5)
    assert problem(x) > problem.optimum
    assert problem.values and problem.optimum < problem.values[0]


@pytest.mark.parametrize("method", ["gp", "lq", "lq-cma-es", "cma-es"])
def test_a_cell_records_regret_and_cpu_that_never_rise(method):
    record = run_cell(method, 1, 3, 2, q=1, budget=60, seed=0)
    regret, cpu = np.asarray(record["regret"]), np.asarray(record["cpu"])
    assert record["evaluations"][-1] == 60
    assert (np.diff(regret) <= 0).all() and (regret >= 0).all()
    assert (np.diff(cpu) >= 0).all()


@pytest.mark.slow  # five methods in worker processes
def test_the_report_is_written_whole_from_the_cells(tmp_path):
    out, docs = tmp_path / "cells", tmp_path / "docs"
    main(
        [
            "run",
            "--setting",
            "q1",
            "--dims",
            "2",
            "--instances",
            "2",
            "--functions",
            "1",
            "--workers",
            "1",
            "--budget",
            "40",
            "--out",
            str(out),
        ]
    )
    files = sorted(out.glob("*.json"))
    assert len(files) == 5  # every method of the setting
    path = write_report(out, docs)
    text = path.read_text()
    assert "lq-CMA-ES" in text and "| f1 d2 |" in text
    assert (docs / "surrogate-cma-q1.png").exists()
    assert write_report(out, docs).read_text() == text  # regenerated, not appended


def test_a_record_is_read_at_an_evaluation_count_and_a_cpu_budget():
    record = {
        "evaluations": [1, 2, 4],
        "regret": [3.0, 2.0, 1.0],
        "cpu": [0.1, 0.2, 0.4],
    }
    assert _at(record, 3) == 2.0 and _at(record, 4) == 1.0
    assert _at_cpu(record, 0.25) == 2.0 and _at_cpu(record, 0.05) == float("inf")
    assert json.dumps(record)


def test_the_paired_table_pools_run_by_run_log_ratios():
    from benchmarks.surrogate_cma.report import _paired_table

    def record(regret):
        return {"evaluations": [1, 10], "regret": [1.0, regret], "cpu": [0.0, 1.0]}

    by = {
        "gp": {(1, 5, 2): record(1e-3), (2, 5, 2): record(1e-12), (1, 5, 3): record(1)},
        "lq": {(1, 5, 2): record(1e-1), (2, 5, 2): record(1e-6), (1, 5, 3): record(1)},
    }
    lines = _paired_table(by, ["gp", "lq"], [5], (10,))
    row = next(line for line in lines if line.startswith("| LQ"))
    # log10 ratios -2, -2 (1e-12 floored at 1e-8 against 1e-6), 0: mean -1.33.
    ratios = np.array([-2.0, -2.0, 0.0])
    error = ratios.std(ddof=1) / np.sqrt(3)
    assert f"{ratios.mean():+.2f} ± {error:.2f}" in row and row.endswith("| 3 |")
