"""``GPSampler``'s arguments on ``SketchSampler``: swapping it in is a rename.

``deterministic_objective`` and ``constraints_func`` as Optuna's own
``GPSampler`` tests use them (``tests/samplers_tests/test_gp.py``), and the
acquisition when no trial is feasible yet.
"""

import logging
import math
import warnings

import pytest

optuna = pytest.importorskip("optuna")

from botorch.acquisition.logei import qLogProbabilityOfFeasibility  # noqa: E402
from botorch.exceptions.errors import InputDataError, UnsupportedError  # noqa: E402
from botorch.exceptions.warnings import BotorchWarning  # noqa: E402
from botorch.models import SingleTaskGP  # noqa: E402
from optuna_helpers import FAST  # noqa: E402

import botorch_sketch.integrations.optuna as sketch_optuna  # noqa: E402
from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.acquisition import FAILURES  # noqa: E402


def _line(trial):
    return trial.suggest_float("x", 0, 1)


@pytest.mark.parametrize("constraint_value", [-1.0, 0.0, 1.0, -math.inf, math.inf])
@pytest.mark.parametrize("n_objectives", [1, 2])
def test_constraints_func_values_become_the_trials_constraints(
    constraint_value, n_objectives
):
    calls = []

    def constraints_func(trial):
        calls.append(trial.number)
        return (constraint_value + trial.number,)

    def objective(trial):
        x = _line(trial)
        return x if n_objectives == 1 else (x, (x - 2) ** 2)

    sampler = SketchSampler(n_startup_trials=2, constraints_func=constraints_func)
    study = optuna.create_study(directions=["minimize"] * n_objectives, sampler=sampler)
    study.optimize(objective, n_trials=5)
    assert calls == [0, 1, 2, 3, 4]
    for trial in study.trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE
        assert list(trial.constraints.values()) == [constraint_value + trial.number]


@pytest.mark.parametrize(
    "returned, message",
    [
        ((math.nan,), "cannot be NaN"),
        ((), "non-empty sequence"),
        ("high", "non-empty sequence"),
        (0.5, "non-empty sequence"),
        ([[1.0], [2.0]], "non-empty sequence"),
    ],
)
def test_bad_constraints_func_values_stop_the_study_and_keep_the_trial(
    returned, message
):
    # As GPSampler: the error stops the optimisation; the trial is recorded
    # with its parameters and values and without constraints.
    sampler = SketchSampler(n_startup_trials=2, constraints_func=lambda t: returned)
    study = optuna.create_study(sampler=sampler)
    with pytest.raises(ValueError, match=message):
        study.optimize(_line, n_trials=5)
    (trial,) = study.trials
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert 0 <= trial.params["x"] <= 1 and trial.values == [trial.params["x"]]
    assert trial.constraints == {}


def test_constraints_func_is_not_called_for_failed_trials():
    calls = []

    def objective(trial):
        x = _line(trial)
        if trial.number == 1:
            raise RuntimeError("diverged")
        return x

    sampler = SketchSampler(
        n_startup_trials=3, constraints_func=lambda t: calls.append(t.number) or (0.0,)
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=3, catch=(RuntimeError,))
    assert calls == [0, 2]


def test_constraints_func_constraints_are_modelled():
    # Minimise x with x >= 0.6 required: after 6 random trials, the model's
    # suggestions stay near the boundary, feasible.
    sampler = SketchSampler(
        seed=0, n_startup_trials=6, constraints_func=lambda t: (0.6 - t.params["x"],)
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(_line, n_trials=14)
    chosen = [t.params["x"] for t in study.trials[6:]]
    assert sum(0.55 <= x <= 0.75 for x in chosen) >= 5, chosen
    assert min(x for x in chosen if x >= 0.6) < 0.65


def test_a_function_not_callable_is_refused():
    with pytest.raises(UnsupportedError, match="constraints_func"):
        SketchSampler(constraints_func=[0.0])


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"deterministic_objective": 1}, InputDataError, "deterministic_objective"),
        (
            {"deterministic_objective": True, "model": lambda X, Y: None},
            UnsupportedError,
            "factory",
        ),
        (
            {
                "deterministic_objective": True,
                "model_options": {"likelihood": None},
            },
            UnsupportedError,
            "likelihood too",
        ),
    ],
)
def test_bad_deterministic_objective_options_are_refused(options, error, message):
    with pytest.raises(error, match=message):
        SketchSampler(**options)


def _failing_half(trial):
    x = _line(trial)
    y = trial.suggest_float("y", 0, 1)
    if y > 0.5 and trial.number % 2:
        raise RuntimeError("failed")
    trial.set_constraint("c", x - 0.8)
    return (x - 0.3) ** 2 + y


@pytest.mark.parametrize("deterministic", [False, True])
def test_deterministic_objective_holds_the_noise_but_of_the_failures(deterministic):
    sampler = SketchSampler(
        seed=0, n_startup_trials=6, deterministic_objective=deterministic, **FAST
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(_failing_half, n_trials=12, catch=(RuntimeError,))
    carried = sampler._carried.incremental
    assert set(carried) == {"objective 0", "constraint 0", FAILURES}
    for name, surrogate in carried.items():
        likelihood = surrogate.model.likelihood
        held = deterministic and name != FAILURES
        assert likelihood.raw_noise.requires_grad is not held
        noise = float(likelihood.noise.detach().max())
        if held:
            assert noise == pytest.approx(1e-6, rel=1e-3)
        else:
            assert noise > 1e-5  # inferred, at least BoTorch's floor


def test_deterministic_objective_with_another_model_class():
    sampler = SketchSampler(
        seed=0,
        n_startup_trials=5,
        model=SingleTaskGP,
        deterministic_objective=True,
        **FAST,
    )
    models = []
    original = sampler._carried.fit

    def spy(train_X, train_Y, name):
        models.append(original(train_X, train_Y, name))
        return models[-1]

    sampler._carried.fit = spy
    study = optuna.create_study(sampler=sampler)
    study.optimize(_line, n_trials=8)
    assert len(models) == 3
    for model in models:
        assert float(model.likelihood.noise.detach().max()) == pytest.approx(
            1e-6, rel=1e-3
        )
    # A new likelihood for each model: none shares another's.
    assert len({id(m.likelihood) for m in models}) == 3


def test_no_feasible_trial_maximises_the_probability_of_feasibility(acqf_calls):
    # Every startup trial infeasible, by different amounts: BoTorch's qLogNEI
    # warned at each suggestion that it is better to use the probability of
    # feasibility; the sampler now does, as GPSampler does, until a trial is
    # feasible.
    def objective(trial):
        x, y = _line(trial), trial.suggest_float("y", 0, 1)
        trial.set_constraint("c", x + y - 0.3)  # feasible: x + y <= 0.3
        return x - y

    study = optuna.create_study(sampler=SketchSampler(seed=0, n_startup_trials=6))
    for x, y in [(0.5, 0.6), (0.9, 0.4), (0.7, 0.7), (0.45, 0.95), (1, 1), (0.6, 0.5)]:
        study.enqueue_trial({"x": x, "y": y})
    study.optimize(objective, n_trials=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BotorchWarning)
        study.optimize(objective, n_trials=4)
    feasible = [t.constraints["c"] <= 0 for t in study.trials[6:]]
    kinds = [type(acqf) for acqf, _ in acqf_calls]
    assert len(kinds) == 4 and kinds[0] is qLogProbabilityOfFeasibility
    assert feasible[:2] != [False, False], [t.params for t in study.trials[6:]]
    first = feasible.index(True)
    assert qLogProbabilityOfFeasibility not in kinds[first + 1 :]


def test_the_first_trial_is_not_warned_as_conditional(caplog):
    # With n_startup_trials=0 the first trial has nothing to model: its
    # parameters were reported as conditional or dynamic.
    study = optuna.create_study(sampler=SketchSampler(n_startup_trials=0, **FAST))
    with caplog.at_level(logging.WARNING, logger=sketch_optuna.__name__):
        study.optimize(_line, n_trials=1)
    assert "sampled by" not in caplog.text
