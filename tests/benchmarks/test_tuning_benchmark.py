import json
import os

import pytest
import torch

pytest.importorskip("ax")
pytest.importorskip("sklearn")

from benchmarks import tuning  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_tuning_benchmark_runs_both_models_and_reports_ratios(monkeypatch, tmp_path):
    tiny = tuning.Budget(
        "iris",
        "svm",
        trials=6,
        seeds=(0,),
        sizes=(10, 6),
        repeats=1,
        noise_splits=2,
        initial=4,
        num_restarts=2,
        raw_samples=32,
    )
    monkeypatch.setitem(tuning.BUDGETS, "tiny", tiny)
    tune_rows, time_rows = tuning.run("tiny", str(tmp_path))
    assert [(r.setup, r.seed) for r in tune_rows] == [
        (tuning.OURS, 0),
        (tuning.SUBSET, 0),
        (tuning.AX_DEFAULT, 0),
    ]
    for row in tune_rows:
        record = json.loads(open(row.checkpoint).read())["botorch_sketch_tune"]
        scores = [t["score"] for t in record["trials"].values() if "score" in t]
        assert len(scores) == 6 and row.best == max(scores)
        assert row.noise_sd >= 0 and row.median_suggest_s > 0
    assert [(r.setup, r.n) for r in time_rows] == [
        (setup, n) for n in (6, 10) for setup in tuning.SETUPS
    ]
    assert all(r.seconds > 0 for r in time_rows)

    text = tuning.render(tune_rows, time_rows, "tiny", "test machine")
    ratio = time_rows[-1].seconds / time_rows[-4].seconds
    subset = time_rows[-1].seconds / time_rows[-3].seconds
    assert f"- N = 10: {ratio:.1f}x, {subset:.1f}x " in text
    assert "test machine" in text
    (figure,) = tuning.plot(tune_rows, str(tmp_path / "tuning-tiny"))
    assert (
        figure.endswith("-seed0.png") and (tmp_path / "tuning-tiny-seed0.png").exists()
    )


def test_sobol_history_covers_the_log_scaled_space(monkeypatch):
    monkeypatch.setattr(tuning, "evaluate", lambda d, e, setting: (0.5, 0.0))
    budget = tuning.BUDGETS["small"]
    history = tuning.sobol_history(budget, 64)
    C = torch.tensor([s["C"] for s, _ in history])
    assert len(history) == 64 and bool(((C >= 1e-3) & (C <= 1e3)).all())
    # Log scale: about half the points below the geometric midpoint 1.
    assert 24 <= int((C < 1).sum()) <= 40


@pytest.mark.slow
def test_tuning_peers_benchmark_runs_every_method_and_reports(monkeypatch, tmp_path):
    pytest.importorskip("optuna_integration")
    from benchmarks import tuning_peers

    tiny = tuning_peers.Budget(
        ("svm",),
        "svm",
        trials=11,
        seeds=(0,),
        sizes=(11, 12),
        repeats=1,
        checkpoints=(5, 11),
        noise_splits=2,
        initial=10,
        isolate=False,
        num_restarts=2,
        raw_samples=32,
    )
    monkeypatch.setitem(tuning_peers.BUDGETS, "tiny", tiny)
    runs, times = tuning_peers.run("tiny")
    assert [r.method for r in runs] == list(tuning_peers.METHODS)
    for r in runs:
        assert len(r.best) == len(r.seconds) == 11 and not r.capped
        assert r.best == sorted(r.best) and r.best[-1] == max(r.best)
        assert r.peak_mib > 0 and r.noise_sd >= 0
        assert tuning_peers.TASKS["svm"].score(r.best_parameters) == r.best[-1]
    assert [t.method for t in times] == list(tuning_peers.METHODS)
    for t in times:
        assert set(t.seconds) | set(t.failures) == {11, 12}
        assert all(s > 0 for s in t.seconds.values())
    text = tuning_peers.render(runs, times, "tiny", "test machine")
    assert "- GPSampler / SketchSampler: N = 11: " in text
    assert "SketchSampler against TPESampler at N = 11: " in text
    assert "test machine" in text
    figures = tuning_peers.plot(runs, times, str(tmp_path / "peers"))
    assert [os.path.basename(f) for f in figures] == [
        "peers-svm.png",
        "peers-suggest.png",
    ]
    assert all(os.path.getsize(f) > 10_000 for f in figures)


def test_tuning_peers_stops_a_run_at_its_time_cap(monkeypatch):
    pytest.importorskip("optuna")
    from benchmarks import tuning_peers

    capped = tuning_peers.Budget(("svm",), "svm", 50, (0,), (11,), run_cap_s=0.0)
    monkeypatch.setattr(tuning_peers.Task, "score", lambda self, p, seed=0: 0.5)
    result = tuning_peers.tune_once(tuning_peers.TPE, "svm", 0, capped)
    assert len(result.best) == 1 and result.capped
