import statistics

import pytest

pytest.importorskip("optuna")

from benchmarks import suggest  # noqa: E402


@pytest.mark.slow
def test_suggest_times_each_sampler_in_turns_and_alone(monkeypatch):
    tiny = suggest.Budget([12], 3, [suggest.SKETCH, suggest.GP], isolate=False)
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest.run("tiny")
    rows += [
        suggest._row(m, 12, "alone", suggest._alone(m, 12, 3))
        for m in (suggest.SKETCH, suggest.GP)
    ]
    assert [(r.method, r.way) for r in rows] == [
        (suggest.SKETCH, "turns"),
        (suggest.GP, "turns"),
        (suggest.SKETCH, "alone"),
        (suggest.GP, "alone"),
    ]
    for row in rows:
        assert len(row.seconds) == 3 and all(s > 0 for s in row.seconds)
        assert row.first == row.seconds[0]
        assert row.median == statistics.median(row.seconds[1:])
    text = suggest.render(rows, "test machine")
    ratios = [line for line in text.splitlines() if line.startswith("| 12 | ")]
    # One ratio line per way, then one absolute line per row.
    assert len(ratios) == 2 + 4 and "test machine" in text
    sketch = rows[0]
    line = next(x for x in ratios if "| turns | SketchSampler | GPSampler |" in x)
    assert float(line.split("|")[5]) == pytest.approx(
        rows[1].median / sketch.median, abs=0.06
    )


def test_the_scores_have_one_optimum_inside_the_box():
    import numpy as np

    rng = np.random.default_rng(0)
    best = {"lr": 1e-2, "reg": 1e-3, "a": 0.3, "b": 0.6, "c": 0.0, "depth": 7}
    worse = {**best, "lr": 1e-4}
    scores = [suggest._score(best, rng) for _ in range(50)]
    assert abs(np.mean(scores)) < 0.03 and 0.03 < np.std(scores) < 0.07
    assert suggest._score(worse, rng) < -3.5
    with pytest.raises(KeyError, match="Unknown method"):
        suggest.make_sampler("TPE")


@pytest.mark.slow
def test_regret_runs_report_the_best_noise_free_value(monkeypatch):
    tiny = suggest.Budget(
        [], 0, [suggest.SKETCH, suggest.GP], regret_trials=12, regret_seeds=[0]
    )
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest.run_regret("tiny")
    assert [r.method for r in rows] == [suggest.SKETCH, suggest.GP]
    for row in rows:
        # Hartmann-6's optimum is -3.32237: nothing found beats it.
        assert len(row.regrets) == 1 and 0 < row.regrets[0] < 3.4
        assert row.seconds[0] > 0
    text = suggest.render_regret(rows)
    assert "12 trials, 1 seeds" in text
    assert f"| {suggest.SKETCH} | {rows[0].regrets[0]:.4f} |" in text


def test_the_mixed_task_has_failed_trials_and_times_suggestions():
    import numpy as np

    rng = np.random.default_rng(0)
    params = [suggest._random_params("mixed", rng) for _ in range(4000)]
    failed = 0
    for p in params:
        try:
            suggest._mixed_score(p, rng)
        except suggest.Failed:
            failed += 1
    # The corner a + b > 1.7 holds 4.5% of the box.
    assert 0.03 < failed / len(params) < 0.06
    assert {type(p["act"]) for p in params} == {str}
    assert suggest.BUDGETS["mixed"].task == "mixed"
    study, step = suggest._study(suggest.SKETCH, 60, "mixed")
    states = {t.state.name for t in study.trials}
    assert states == {"COMPLETE", "FAIL"} and len(study.trials) == 59
    assert step() > 0 and len(study.trials) == 60
    assert study.trials[-1].state.name in ("COMPLETE", "FAIL")


def test_gp_without_greenlet_is_refused_where_greenlet_imports():
    pytest.importorskip("greenlet")
    assert suggest.GP_NO_GREENLET in suggest.BUDGETS["mixed"].methods
    assert suggest.GP_NO_GREENLET in suggest.SEPARATE
    with pytest.raises(RuntimeError, match="greenlet cannot be imported"):
        suggest.make_sampler(suggest.GP_NO_GREENLET)
    with pytest.raises(RuntimeError, match="greenlet imports"):
        suggest._alone_unbatched(suggest.GP_NO_GREENLET, 12, 1, "mixed")


@pytest.mark.slow
def test_gp_without_greenlet_runs_alone_in_a_process_of_its_own(monkeypatch):
    tiny = suggest.Budget(
        [12], 2, [suggest.TPE, suggest.GP_NO_GREENLET], isolate=False, task="mixed"
    )
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest.run("tiny")
    # The no-greenlet method never takes turns: it runs alone even so.
    assert [(r.method, r.way) for r in rows] == [
        (suggest.TPE, "turns"),
        (suggest.GP_NO_GREENLET, "alone"),
    ]
    assert len(rows[1].seconds) == 2 and all(s > 0 for s in rows[1].seconds)
    text = suggest.render(rows, "test machine")
    assert f"| 12 | alone | {suggest.GP_NO_GREENLET} |" in text
    assert "logged its fallback to sequential L-BFGS-B" in text


def test_each_sampler_warms_up_untimed_before_its_timed_study(monkeypatch):
    # A process's one-time costs (imports) go to no sampler's cold start: each
    # method suggests once on a small study of the task before the timed ones.
    built = []
    original = suggest._study

    def spy(method, n, task="smooth"):
        built.append((method, n))
        return original(method, n, task)

    monkeypatch.setattr(suggest, "_study", spy)
    methods = [suggest.SKETCH, suggest.TPE]
    rows = suggest._turns(methods, 30, 2, "smooth")
    assert built == [(m, 30) for m in methods] * 2
    assert [row.method for row in rows] == methods
    built.clear()
    suggest._alone(suggest.TPE, 60, 1)
    assert built == [(suggest.TPE, suggest._WARM_UP_TRIALS), (suggest.TPE, 60)]
