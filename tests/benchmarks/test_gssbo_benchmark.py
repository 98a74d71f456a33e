import warnings

import pytest
import torch

from benchmarks import gssbo
from benchmarks.__main__ import main


@pytest.mark.slow
def test_gssbo_benchmark_runs_and_reports_ratios(monkeypatch, tmp_path):
    tiny = gssbo.Budget(
        ["Hartmann-6"],
        5,
        [0],
        subset_size=8,
        num_initial=5,
        maxiter=20,
        num_restarts=2,
        raw_samples=32,
    )
    monkeypatch.setitem(gssbo.BUDGETS, "tiny", tiny)
    rows = gssbo.run("tiny")
    assert [r.method for r in rows] == [gssbo.FULL, gssbo.GSS, gssbo.RANDOM]
    full, gss, rand = rows
    # The subset methods fit on 8 of the observations after the switch.
    assert full.traces[0].train_size == [5, 6, 7, 8, 9]
    assert gss.traces[0].train_size == [5, 6, 7, 8, 8]
    assert rand.traces[0].train_size == [5, 6, 7, 8, 8]
    text = gssbo.render(rows, "test machine")
    line = next(
        x for x in text.splitlines() if x.startswith(f"| Hartmann-6 | {gssbo.RANDOM}")
    )
    # RSSBO against itself.
    assert line.split("|")[6].strip() in ("1.000", "1 (both 0)")
    assert "test machine" in text and gssbo.FULL not in text.split("Absolute")[0]
    paths = gssbo.plot(rows, str(tmp_path / "g"))
    assert len(paths) == 1 and (tmp_path / "g-Hartmann-6.png").stat().st_size > 0


@pytest.mark.slow
def test_the_interpretations_run_and_compare_against_random(monkeypatch):
    methods = gssbo.BUDGETS["interpretations"].methods
    assert methods == [gssbo.GSS, gssbo.GSS_HYPER, gssbo.GREEDY, gssbo.RANDOM]
    tiny = gssbo.Budget(
        ["Hartmann-6"],
        4,
        [0],
        subset_size=7,
        num_initial=5,
        maxiter=20,
        num_restarts=1,
        raw_samples=16,
        methods=methods,
    )
    monkeypatch.setitem(gssbo.BUDGETS, "tiny", tiny)
    rows = gssbo.run("tiny")
    assert [r.method for r in rows] == methods
    for row in rows:
        assert row.traces[0].train_size == [5, 6, 7, 7]
    # No full GP in this budget: its ratios are left blank, random's are given.
    line = next(
        x
        for x in gssbo.render(rows, "m").splitlines()
        if x.startswith(f"| Hartmann-6 | {gssbo.GSS_HYPER}")
    )
    cells = [c.strip() for c in line.split("|")]
    assert cells[3] == "-" and cells[6] != "-"


def test_an_extra_budget_belongs_to_its_benchmark():
    with pytest.raises(SystemExit):
        main(["bo", "--budget", "interpretations"])


@pytest.mark.slow
def test_the_hybrid_row_keeps_the_gss_subset_and_every_observation(monkeypatch):
    tiny = gssbo.Budget(
        ["Hartmann-6"],
        4,
        [0],
        subset_size=7,
        num_initial=5,
        maxiter=20,
        num_restarts=1,
        raw_samples=16,
        methods=[gssbo.GSS, gssbo.RANDOM, gssbo.HYBRID],
    )
    monkeypatch.setitem(gssbo.BUDGETS, "tiny", tiny)
    rows = gssbo.run("tiny")
    assert [r.method for r in rows] == tiny.methods
    # The subset GPs fit on 7 points; the hybrid's likelihood sees them all.
    assert rows[0].traces[0].train_size == [5, 6, 7, 7]
    assert rows[2].traces[0].train_size == [5, 6, 7, 8]


def test_the_hybrid_inducing_set_is_the_subset_and_its_fit_is_warm_started():
    torch.manual_seed(0)
    budget = gssbo.Budget(["Hartmann-6"], 1, [0], subset_size=6, num_initial=3)
    hybrid = gssbo.WarmHybrid(budget)
    X = torch.rand(12, 2, dtype=torch.float64)
    Y = torch.sin(6 * X).sum(-1, keepdim=True)
    model = hybrid(X, Y)
    subset = hybrid.previous
    assert torch.equal(model.inducing_points, X[subset.subset_indices])
    assert model.train_X.shape[0] == 12
    fitted = subset.covar_module.lengthscale.detach().clone()
    cold = gssbo.GradientSubsetGP(X, Y).covar_module.lengthscale.detach()
    assert not torch.allclose(cold, fitted, rtol=0.05)
    # (Almost) no optimiser steps: a warm-started fit stays at the previous fit.
    hybrid.budget = gssbo.Budget(
        ["Hartmann-6"], 1, [0], subset_size=6, num_initial=3, maxiter=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hybrid(torch.cat([X, X[:1] * 0.5]), torch.cat([Y, Y[:1]]))
    assert torch.allclose(hybrid.previous.covar_module.lengthscale, fitted, rtol=0.05)
    assert hybrid.previous is not subset
