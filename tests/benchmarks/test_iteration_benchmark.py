import math

import pytest

from benchmarks import iteration


@pytest.mark.slow
def test_one_iteration_per_model_with_wall_and_cpu_ratios(monkeypatch):
    monkeypatch.setitem(iteration.BUDGETS, "tiny", ([30], 2, 1))
    # q = 2 instead of 10: the suite checks the mechanics, not the timings.
    label, make, _ = iteration.ACQUISITIONS[0]
    monkeypatch.setattr(iteration, "ACQUISITIONS", [(label, make, 2)])
    optimize = iteration.optimize_acqf  # cheaper settings, same call
    monkeypatch.setattr(
        iteration,
        "optimize_acqf",
        lambda acqf, bounds, q, **kw: optimize(
            acqf, bounds, q=q, num_restarts=1, raw_samples=8, options={"maxiter": 5}
        ),
    )
    rows = iteration.run("tiny")
    assert len(rows) == 4
    # The models take turns in which goes first.
    assert [r.model for r in rows] == [
        "SingleTaskGP",
        "NystromGP",
        "NystromGP",
        "SingleTaskGP",
    ]
    for row in rows:
        assert row.evaluations > 0 and row.n == 30
        assert row.fit_cpu_s > 0 and math.isfinite(row.acquisition_cpu_s)
    assert all(r.m == 30 for r in rows if r.model == "NystromGP")  # exact regime
    text = iteration.render(rows, "test machine")
    line = next(x for x in text.splitlines() if x.startswith("| 30 |"))
    ratios = [float(c) for c in line.split("|")[3:9]]
    assert all(r > 0 for r in ratios)
    assert "CPU iteration ratio" in text
