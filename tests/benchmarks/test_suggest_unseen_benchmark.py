import math

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from benchmarks import suggest, suggest_unseen  # noqa: E402


@pytest.mark.parametrize("task", suggest_unseen.TASKS)
def test_the_unseen_tasks_fail_often_and_their_trials_are_valid(task):
    # A failure rate of 15-45% and random trials every distribution accepts.
    assert 0.15 < suggest_unseen.failed_fraction(task, n=400) < 0.45
    space = suggest_unseen.space(task)
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = suggest_unseen.random_params(task, rng)
        optuna.trial.create_trial(params=p, distributions=space, value=0.0)


def test_an_unseen_task_study_is_seeded_and_its_step_tells_failures():
    sampler = optuna.samplers.RandomSampler(seed=0)
    study, step = suggest_unseen.study(sampler, "categories", 40)
    states = [t.state for t in study.trials]
    assert len(states) == 39
    assert optuna.trial.TrialState.FAIL in states
    for _ in range(10):
        assert step() >= 0.0
    assert len(study.trials) == 49
    assert all(t.state != optuna.trial.TrialState.RUNNING for t in study.trials)
    values = [t.value for t in study.trials if t.value is not None]
    assert all(math.isfinite(v) for v in values)


def test_the_budget_times_each_task_and_renders_a_task_column():
    budget = suggest.BUDGETS["mixed-unseen"]
    assert budget.tasks == suggest_unseen.TASKS
    rows = [
        suggest._row(m, 1000, "turns", [2.0, s, s], task=t)
        for t in budget.tasks
        for m, s in ((suggest.SKETCH, 0.5), (suggest.GP, 5.0))
    ]
    text = suggest.render(rows, "machine")
    assert "| task | N |" in text
    for task in budget.tasks:
        assert f"| {task} | 1000 | turns | SketchSampler | GPSampler | 10.0 |" in text


def test_loss_cost_times_the_three_losses():
    costs = suggest_unseen.loss_cost(20, 3, repeats=1)
    assert set(costs) == {"ours", "gpytorch log_prob", "GPSampler"}
    assert all(math.isfinite(c) and c > 0 for c in costs.values())


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["sketch", "gp"])
def test_continued_runs_either_sampler_on_the_same_study(sampler):
    # The quality side of the budget, for our sampler or the peer: the new
    # trials' best and mean are of completed trials, failures counted apart.
    result = suggest_unseen.continued("wide", 0, trials=3, n=40, sampler=sampler)
    assert result["sampler"] == sampler
    assert result["failed"] <= 3 and result["cpu"] >= result["cold"] > 0.0
    if result["failed"] < 3:
        assert result["mean"] <= result["best"]


def test_continued_refuses_an_unknown_sampler():
    with pytest.raises(KeyError, match="tpe"):
        suggest_unseen.continued("wide", 0, trials=1, n=40, sampler="tpe")
