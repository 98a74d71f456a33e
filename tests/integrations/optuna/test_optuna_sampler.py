import json
import logging
import math
import os
import subprocess
import sys

import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.fit import fit_gpytorch_mll  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402
from optuna_helpers import FAST, model_based, quadratic  # noqa: E402

import botorch_sketch.integrations.optuna as sketch_optuna  # noqa: E402
from botorch_sketch import GradientSubsetGP, NystromGP  # noqa: E402
from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.trials import _RELATIVE_PARAMS_KEY  # noqa: E402


@pytest.mark.slow
def test_every_distribution_type():
    def objective(trial):
        x = trial.suggest_float("x", -2.0, 2.0)
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        n = trial.suggest_int("n", 1, 9)
        width = trial.suggest_int("width", 8, 512, log=True)
        frac = trial.suggest_float("frac", 0.0, 1.0, step=0.25)
        kind = trial.suggest_categorical("kind", ["a", "b", None, 3])
        return (
            x**2
            + (math.log10(lr) + 2.0) ** 2
            + (n - 4) ** 2 / 10
            + (math.log2(width) - 6) ** 2 / 10
            + (frac - 0.5) ** 2
            + (kind != "b")
        )

    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=6, **FAST)
    )
    study.optimize(objective, n_trials=14)
    chosen = model_based(study)
    assert len(chosen) == 8
    for t in study.trials:
        p = t.params
        assert -2.0 <= p["x"] <= 2.0 and 1e-4 <= p["lr"] <= 1e-1
        assert isinstance(p["n"], int) and 1 <= p["n"] <= 9
        assert isinstance(p["width"], int) and 8 <= p["width"] <= 512
        assert p["frac"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert p["kind"] in ("a", "b", None, 3)
    # The encoding is Optuna's: the model's point round-trips exactly.
    for t in chosen:
        assert json.loads(t.system_attrs[f"{_RELATIVE_PARAMS_KEY}:0"]) == (t.params)


def test_conditional_parameters_fall_back_to_the_independent_sampler(caplog):
    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        kind = trial.suggest_categorical("kind", ["linear", "square"])
        if kind == "linear":
            return abs(trial.suggest_float("slope", 0.0, 2.0) * x)
        return trial.suggest_int("power", 1, 3) * x**2

    study = optuna.create_study(
        sampler=SketchSampler(seed=1, n_startup_trials=5, **FAST)
    )
    with caplog.at_level(logging.WARNING, logger=sketch_optuna.__name__):
        study.optimize(objective, n_trials=12)
    chosen = model_based(study)
    assert chosen
    for t in chosen:
        relative = json.loads(t.system_attrs[f"{_RELATIVE_PARAMS_KEY}:0"])
        assert set(relative) == {"x", "kind"}
    assert "`slope`" in caplog.text or "`power`" in caplog.text


def test_a_trial_started_in_the_startup_is_not_warned_as_conditional(caplog):
    # Two trials in flight (n_jobs=2): the first starts while 9 of 10 startup
    # trials are complete, the other completes the tenth, then the first
    # suggests its next parameter independently. No parameter is conditional.
    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=10, **FAST)
    )
    for _ in range(9):
        t = study.ask()
        study.tell(t, t.suggest_float("x", 0, 1) + t.suggest_int("depth", 2, 12))
    first = study.ask()
    first.suggest_float("x", 0, 1)
    other = study.ask()
    study.tell(
        other, other.suggest_float("x", 0, 1) + other.suggest_int("depth", 2, 12)
    )
    with caplog.at_level(logging.WARNING, logger=sketch_optuna.__name__):
        first.suggest_int("depth", 2, 12)
    assert "sampled by" not in caplog.text


@pytest.mark.parametrize("failed_trials", ["constraint", "ignore"])
def test_failed_trials_are_modelled_and_pruned_ones_ignored(pending_log, failed_trials):
    def objective(trial):
        value = quadratic(trial)
        if trial.number % 4 == 1:
            raise RuntimeError("diverged")
        if trial.number % 4 == 2:
            trial.report(value, step=0)
            raise optuna.TrialPruned()
        if trial.number == 7:
            # Failed before its parameters were all suggested: left out.
            raise RuntimeError("diverged")
        return value

    study = optuna.create_study(
        sampler=SketchSampler(
            seed=2, n_startup_trials=4, failed_trials=failed_trials, **FAST
        )
    )
    study.optimize(objective, n_trials=16, catch=(RuntimeError,))
    states = [t.state for t in study.trials]
    assert optuna.trial.TrialState.FAIL in states
    assert optuna.trial.TrialState.PRUNED in states
    # Each fit of the objective saw the trials complete before it, never a
    # failed or pruned one; with "constraint", the failures' model saw the
    # completed and failed ones with both parameters.
    before = [study.trials[: t.number] for t in model_based(study)]
    complete = [sum(u.state.name == "COMPLETE" for u in b) for b in before]
    failed = [
        sum(u.state.name == "FAIL" and len(u.params) == 2 for u in b) for b in before
    ]
    assert complete and [call["n"] for call in pending_log] == complete
    expected = (
        [c + f if f else None for c, f in zip(complete, failed, strict=True)]
        if failed_trials == "constraint"
        else [None] * len(complete)
    )
    assert [call["failures"] for call in pending_log] == expected
    assert any(expected) or failed_trials == "ignore"


@pytest.mark.slow
def test_a_failing_point_is_not_proposed_again_and_again():
    # The objective rises into a corner where trials fail. Ignoring the
    # failures, the model's maximum stays on one failing point and the
    # sampler proposes it again and again; with the failures modelled, it
    # probes the edge of the failing region at new points and finds the
    # optimum on that edge (x + y = 1.6).
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        if x + y > 1.6:
            raise RuntimeError("diverged")
        return x + y

    failed, best = {}, {}
    for failed_trials in ("constraint", "ignore"):
        sampler = SketchSampler(
            seed=0, n_startup_trials=6, failed_trials=failed_trials, **FAST
        )
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(objective, n_trials=26, catch=(RuntimeError,))
        failed[failed_trials] = [
            (round(t.params["x"], 2), round(t.params["y"], 2))
            for t in study.trials[6:]
            if t.state == optuna.trial.TrialState.FAIL
        ]
        best[failed_trials] = study.best_value
    assert len(failed["ignore"]) > 10 and len(set(failed["ignore"])) <= 2
    repeats = len(failed["constraint"]) - len(set(failed["constraint"]))
    assert repeats <= 3
    assert best["constraint"] > max(best["ignore"], 1.58)


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_directions(direction):
    sign = 1.0 if direction == "minimize" else -1.0
    study = optuna.create_study(
        direction=direction, sampler=SketchSampler(seed=3, n_startup_trials=8)
    )
    study.optimize(lambda t: sign * quadratic(t), n_trials=18)
    # The optimum is 0 at (1, -0.5); random search over [-3, 3]^2 with 18 points
    # reaches about 0.3 (the first 8 trials here reach more than 0.4).
    startup_best = min(sign * t.value for t in study.trials[:8])
    assert sign * study.best_value < min(0.05, startup_best / 4)


@pytest.mark.slow
def test_seed_repeats_suggestions():
    def run(seed):
        sampler = SketchSampler(seed=seed, n_startup_trials=5, **FAST)
        study = optuna.create_study(sampler=sampler)
        study.optimize(quadratic, n_trials=9)
        return [t.params for t in study.trials]

    first = run(7)
    assert first == run(7)
    assert first[5:] != run(8)[5:]


@pytest.mark.slow
def test_beats_random_search_on_a_quadratic():
    # Same seed, same 25-trial budget, same first 10 (random) trials: the
    # sampler's best must be far better than RandomSampler's best.
    def objective(trial):
        return sum(
            (trial.suggest_float(name, -5.0, 5.0) - c) ** 2
            for name, c in (("a", 1.0), ("b", -2.0), ("c", 0.5))
        )

    ours = optuna.create_study(sampler=SketchSampler(seed=0))
    ours.optimize(objective, n_trials=25)
    random = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    random.optimize(objective, n_trials=25)
    assert [t.params for t in ours.trials[:10]] == [
        t.params for t in random.trials[:10]
    ]
    assert ours.best_value < random.best_value / 10


@pytest.mark.slow
def test_multi_objective():
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        return x**2 + y**2, (x - 1.0) ** 2 + y**2

    study = optuna.create_study(
        directions=["minimize", "minimize"],
        sampler=SketchSampler(seed=5, n_startup_trials=8, **FAST),
    )
    study.optimize(objective, n_trials=16)
    assert len(model_based(study)) == 8
    # The Pareto set is y = 0: the model's points should crowd towards it.
    model_y = [t.params["y"] for t in study.trials[8:]]
    random_y = [t.params["y"] for t in study.trials[:8]]
    assert sum(model_y) / 8 < sum(random_y) / 8
    assert len(study.best_trials) >= 2


@pytest.mark.slow
def test_constraints_set_on_the_trial():
    def objective(trial):
        value = quadratic(trial)
        trial.set_constraint("x_below_0", trial.params["x"])  # feasible: x <= 0
        return value

    study = optuna.create_study(
        sampler=SketchSampler(seed=6, n_startup_trials=8, **FAST)
    )
    study.optimize(objective, n_trials=16)
    model_x = [t.params["x"] for t in study.trials[8:]]
    assert sum(x <= 0.05 for x in model_x) >= 6


def test_gradient_subset_model_and_factory(pending_log):
    sizes = []

    def factory(train_X, train_Y):
        sizes.append(len(train_X))
        model = NystromGP(train_X, train_Y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    for sampler in (
        SketchSampler(
            model=GradientSubsetGP,
            model_options={"subset_size": 6},
            seed=0,
            n_startup_trials=5,
        ),
        SketchSampler(model=factory, seed=0, n_startup_trials=5),
    ):
        study = optuna.create_study(sampler=sampler)
        study.optimize(quadratic, n_trials=8)
        assert len(model_based(study)) == 3
    assert sizes == [5, 6, 7]


@pytest.mark.slow
@pytest.mark.cpu_only
def test_importing_the_package_does_not_import_optuna_and_error_names_the_extra():
    code = (
        "import sys, botorch_sketch, botorch_sketch.integrations\n"
        "assert 'optuna' not in sys.modules, 'botorch_sketch imported optuna'\n"
        "sys.modules['optuna'] = None\n"
        "try:\n"
        "    import botorch_sketch.integrations.optuna\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert ".[optuna]" in out.stdout


def test_a_flat_constraint_explores_rather_than_repeating_a_point():
    # Every trial infeasible at one value: the constraint's model was flat and
    # the acquisition went to the objective's optimum (0.2, 0.2), infeasible,
    # ten times in a row.
    def objective(trial):
        value = (trial.suggest_float("x", 0, 1) - 0.2) ** 2
        value += (trial.suggest_float("y", 0, 1) - 0.2) ** 2
        trial.set_constraint("flag", 1.0)
        return value

    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=6, **FAST)
    )
    study.optimize(objective, n_trials=12)
    X = torch.tensor([[t.params["x"], t.params["y"]] for t in study.trials])
    distances = torch.cdist(X[6:], X) + torch.eye(12)[6:] * 10
    # Each new point away from every tried one: space-filling.
    assert distances.min() > 0.1


def test_a_flat_constraint_finds_a_feasible_region():
    # Feasible only in the corner x, y > 0.7 (9% of the square), reported as a
    # flag; GPSampler finds it within 10 trials after 10 infeasible random ones
    # on 9 seeds of 10.
    def objective(trial):
        x, y = trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)
        trial.set_constraint("flag", -1.0 if x > 0.7 and y > 0.7 else 1.0)
        return (x - 0.2) ** 2 + (y - 0.2) ** 2

    def stop_when_feasible(study, trial):
        if trial.constraints["flag"] <= 0:
            study.stop()

    found, tried = 0, 0
    for seed in range(60):
        study = optuna.create_study(
            sampler=SketchSampler(seed=seed, n_startup_trials=10, **FAST)
        )
        study.optimize(objective, n_trials=10)
        if any(t.constraints["flag"] <= 0 for t in study.trials):
            continue  # A feasible startup trial: not the case in question.
        tried += 1
        study.optimize(objective, n_trials=10, callbacks=[stop_when_feasible])
        found += study.trials[-1].constraints["flag"] <= 0
        if tried == 10:
            break
    assert tried == 10 and found >= 8, (tried, found)
