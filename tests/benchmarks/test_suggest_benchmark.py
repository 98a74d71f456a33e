import statistics

import pytest

pytest.importorskip("optuna")

from benchmarks import suggest, suggest_pareto  # noqa: E402


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


def test_the_two_objective_task_and_its_hypervolume(monkeypatch):
    import numpy as np

    # Two points against (4, 3): 1 x 2 + 1 x 1 (the second's own strip).
    assert (
        suggest_pareto.hypervolume_2d(np.array([[3.0, 1.0], [2.0, 2.0]]), (4, 3)) == 3.0
    )
    # Dominated points and points beyond the reference add nothing.
    points = np.array([[3.0, 1.0], [2.0, 2.0], [3.5, 2.5], [5.0, 0.0]])
    assert suggest_pareto.hypervolume_2d(points, (4, 3)) == 3.0
    # Width lowers the loss and raises the cost: a trade-off.
    p = {"lr": 10**-2.5, "a": 0.5, "b": 0.6, "dropout": 0.2, "width": 2}
    narrow, wide = (
        suggest_pareto._two_objective(p),
        suggest_pareto._two_objective({**p, "width": 12}),
    )
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    tiny = suggest.Budget([], 0, [suggest.TPE], pareto_trials=6, pareto_seeds=[0, 1])
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest_pareto.run_pareto("tiny")
    assert [r.method for r in rows] == [suggest.TPE]
    assert len(rows[0].hypervolumes) == 2 and all(s > 0 for s in rows[0].seconds)
    assert all(0 <= h < 4.4 for h in rows[0].hypervolumes)
    assert "| TPESampler |" in suggest_pareto.render_pareto(rows)


def test_the_dtlz2_budget_runs_whole_studies_against_its_reference(monkeypatch):
    assert suggest.BUDGETS["two-objective-dtlz2"].task == "dtlz2"
    tiny = suggest.Budget(
        [], 0, [suggest.TPE], task="dtlz2", pareto_trials=8, pareto_seeds=[0]
    )
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    (row,) = suggest_pareto.run_pareto("tiny")
    # DTLZ2's front bounds the hypervolume against (1.1, 1.1): 1.21 - pi / 4.
    assert 0 <= row.hypervolumes[0] < 1.21 - 3.14159 / 4
    assert row.task == "dtlz2"
    assert suggest_pareto.render_pareto([row]).startswith("DTLZ2")


def test_the_unseen_budget_runs_each_task_against_its_reference(monkeypatch):
    assert suggest.BUDGETS["two-objective-unseen"].task == "unseen"
    tiny = suggest.Budget(
        [], 0, [suggest.TPE], task="unseen", pareto_trials=6, pareto_seeds=[0]
    )
    monkeypatch.setitem(suggest.BUDGETS, "tiny", tiny)
    rows = suggest_pareto.run_pareto("tiny")
    assert [r.task for r in rows] == list(suggest_pareto.UNSEEN_TASKS)
    assert all(r.hypervolumes[0] >= 0 and r.seconds[0] > 0 for r in rows)
    # The error is minimised and the throughput maximised: a point better in
    # both adds to the hypervolume, a point beyond the reference adds nothing.
    ref = suggest_pareto.UNSEEN_REFERENCE["scaled"]
    one = suggest_pareto.hypervolume([(0.002, 1000.0)], ref, [-1.0, 1.0])
    assert one == pytest.approx((0.012 - 0.002) * 1000.0)
    two = [(0.002, 1000.0), (0.001, 1500.0), (0.02, 3000.0)]
    assert suggest_pareto.hypervolume(two, ref, [-1.0, 1.0]) == pytest.approx(
        (0.012 - 0.001) * 1500.0
    )
    with pytest.raises(suggest_pareto._Failed):
        suggest_pareto._scaled(
            {"lr": 1e-3, "a": 0.95, "b": 0.95, "width": 4, "act": "relu"}
        )
    assert "| zdt3 | TPESampler |" in suggest_pareto.render_pareto(rows)


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
