import json
import logging
import math
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError, UnsupportedError  # noqa: E402
from botorch.fit import fit_gpytorch_mll  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402
from optuna.distributions import (  # noqa: E402
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

import botorch_sketch.integrations.optuna as sketch_optuna  # noqa: E402
from botorch_sketch import GradientSubsetGP, NystromGP  # noqa: E402
from botorch_sketch.integrations.optuna import (  # noqa: E402
    NystromCandidates,
    SketchSampler,
    nystrom_candidates_func,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
REPO = Path(__file__).resolve().parents[2]
# A smaller acquisition optimisation where a test checks behaviour, not quality.
FAST = {"num_restarts": 4, "raw_samples": 64, "mc_samples": 32}


def quadratic(trial):
    x = trial.suggest_float("x", -3.0, 3.0)
    y = trial.suggest_float("y", -3.0, 3.0)
    return (x - 1.0) ** 2 + (y + 0.5) ** 2


def model_based(study):
    # Trials whose parameters the model chose carry the shared relative params.
    return [
        t
        for t in study.trials
        if any(k.startswith(sketch_optuna._RELATIVE_PARAMS_KEY) for k in t.system_attrs)
    ]


@pytest.fixture
def pending_log(monkeypatch):
    """Record the pending points and training sizes passed to the acquisition."""
    calls = []
    original = sketch_optuna._suggest

    def spy(**kwargs):
        calls.append(
            {
                "n": len(kwargs["train_X"]),
                "pending": None
                if kwargs["pending_X"] is None
                else len(kwargs["pending_X"]),
            }
        )
        return original(**kwargs)

    monkeypatch.setattr(sketch_optuna, "_suggest", spy)
    return calls


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
        assert json.loads(
            t.system_attrs[f"{sketch_optuna._RELATIVE_PARAMS_KEY}:0"]
        ) == (t.params)


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
        relative = json.loads(t.system_attrs[f"{sketch_optuna._RELATIVE_PARAMS_KEY}:0"])
        assert set(relative) == {"x", "kind"}
    assert "`slope`" in caplog.text or "`power`" in caplog.text


def test_failed_and_pruned_trials_are_ignored(pending_log):
    def objective(trial):
        value = quadratic(trial)
        if trial.number % 4 == 1:
            raise RuntimeError("diverged")
        if trial.number % 4 == 2:
            trial.report(value, step=0)
            raise optuna.TrialPruned()
        return value

    study = optuna.create_study(
        sampler=SketchSampler(seed=2, n_startup_trials=4, **FAST)
    )
    study.optimize(objective, n_trials=16, catch=(RuntimeError,))
    states = [t.state for t in study.trials]
    assert optuna.trial.TrialState.FAIL in states
    assert optuna.trial.TrialState.PRUNED in states
    # Each fit saw exactly the trials complete before it: none failed or pruned.
    expected = [
        sum(u.state.name == "COMPLETE" for u in study.trials[: t.number])
        for t in model_based(study)
    ]
    assert expected and [call["n"] for call in pending_log] == expected


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


def test_n_jobs_passes_running_trials_as_pending(pending_log):
    def objective(trial):
        value = quadratic(trial)
        time.sleep(0.2)  # keep the other thread's trial running
        return value

    study = optuna.create_study(
        sampler=SketchSampler(seed=4, n_startup_trials=4, **FAST)
    )
    study.optimize(objective, n_trials=12, n_jobs=2)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 12
    assert any(call["pending"] for call in pending_log)
    params = [tuple(t.params.values()) for t in study.trials]
    assert len(set(params)) == len(params)


_WORKER = textwrap.dedent(
    """
    import sys
    import time
    import optuna
    import botorch_sketch.integrations.optuna as sketch_optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pending = []
    original = sketch_optuna._suggest

    def spy(**kwargs):
        pending.append(0 if kwargs["pending_X"] is None else len(kwargs["pending_X"]))
        return original(**kwargs)

    sketch_optuna._suggest = spy

    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        y = trial.suggest_float("y", -3.0, 3.0)
        # Longer than a suggestion, so that each process suggests while the
        # other's trial runs.
        time.sleep(1.0)
        return (x - 1.0) ** 2 + (y + 0.5) ** 2

    study = optuna.load_study(
        study_name="shared",
        storage=sys.argv[1],
        sampler=sketch_optuna.SketchSampler(seed=int(sys.argv[2]), n_startup_trials=4),
    )
    study.optimize(objective, n_trials=7)
    print("PENDING", sum(p > 0 for p in pending))
    """
)


@pytest.mark.slow
@pytest.mark.cpu_only
def test_rdb_storage_shared_by_two_processes(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="shared", storage=storage)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), storage, str(seed)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (0, 1)
    ]
    outputs = []
    try:
        for worker in workers:
            out, err = worker.communicate(timeout=240)
            assert worker.returncode == 0, err[-2000:]
            outputs.append(out)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    study = optuna.load_study(study_name="shared", storage=storage)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 14
    assert model_based(study)
    # Each process saw the other's running trial as a pending point.
    seen = [int(out.split("PENDING")[-1]) for out in outputs]
    assert sum(seen) > 0, outputs


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


def test_infinite_constraints_and_huge_values_are_modelled_in_order():
    # A +inf constraint raised "train_Y contains infinite values" out of
    # optimize; objectives near 1e160 overflowed in the standardisation.
    values = torch.tensor(
        [[1e160, -math.inf], [1.0, 2.0], [-3e159, math.inf], [2.0, 0.5]],
        dtype=torch.double,
    )
    modelled = sketch_optuna._modelable(values)
    assert bool(torch.isfinite(modelled).all())
    for column in range(2):
        order = values[:, column].argsort()
        assert torch.equal(modelled[:, column].argsort(), order)
        assert torch.equal(modelled[:, column].sign(), values[:, column].sign())
    assert modelled[:, 1].tolist() == [-1.5, 2.0, 3.5, 0.5]
    assert modelled[:, 0].abs().max() <= 1

    def objective(trial):
        x = trial.suggest_float("x", 0, 1)
        trial.suggest_float("y", 0, 1)
        trial.set_constraint("c", math.inf if trial.number == 1 else x - 0.5)
        return 1e160 * x if trial.number < 3 else x

    study = optuna.create_study(
        sampler=SketchSampler(seed=2, n_startup_trials=4, **FAST)
    )
    study.optimize(objective, n_trials=6)
    states = [t.state for t in study.trials]
    assert states.count(optuna.trial.TrialState.COMPLETE) == 6
    assert len(model_based(study)) == 2


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


def test_warm_start_carries_the_model(monkeypatch):
    # NystromGP is carried by IncrementalGP: built once, then refitted from the
    # previous hyperparameters (refit_every=1) or conditioned (refit_every=3).
    for refit_every, refits, conditioned in ((1, 2, 0), (3, 0, 2)):
        sampler = SketchSampler(
            seed=0, n_startup_trials=5, refit_every=refit_every, **FAST
        )
        study = optuna.create_study(sampler=sampler)
        study.optimize(quadratic, n_trials=8)
        counts = sampler._incremental["objective 0"].counts
        assert (counts.builds, counts.refits, counts.conditioned) == (
            1,
            refits,
            conditioned,
        )
    # Other classes get the previous hyperparameters loaded before the fit.
    starts = []
    original = sketch_optuna.fit_gpytorch_mll

    def spy(mll, **kwargs):
        starts.append(mll.model.covar_module.lengthscale.detach().clone())
        return original(mll, **kwargs)

    monkeypatch.setattr(sketch_optuna, "fit_gpytorch_mll", spy)
    sampler = SketchSampler(model=GradientSubsetGP, seed=0, n_startup_trials=5, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=7)
    assert len(starts) == 2 and not torch.equal(starts[0], starts[1])
    assert sampler._warm_states["objective 0"][
        "covar_module.raw_lengthscale"
    ].dtype == (torch.float64)
    # A sampler pickles (Optuna's way to save its state) and keeps working.
    restored = pickle.loads(pickle.dumps(sampler))
    study.sampler = restored
    study.optimize(quadratic, n_trials=1)


def test_nystrom_candidates_func_in_botorch_sampler():
    from optuna_integration import BoTorchSampler

    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        n = trial.suggest_int("n", 0, 4)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        return (x - 1.0) ** 2 + (n - 2) ** 2 + (kind == "a")

    sampler = BoTorchSampler(
        candidates_func=nystrom_candidates_func,
        n_startup_trials=6,
        consider_running_trials=True,
        seed=0,
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=10)
    assert len(study.trials) == 10
    assert study.best_value < min(t.value for t in study.trials[:6])


@pytest.mark.slow
def test_nystrom_candidates_func_shapes_and_bounds():
    torch.manual_seed(0)
    bounds = torch.tensor([[-1.0, 10.0, 0.0, 0.0], [1.0, 20.0, 1.0, 1.0]])
    train_x = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(12, 4)
    train_obj = -(train_x[:, :1] ** 2)
    train_con = train_x[:, 1:2] - 15.0
    pending = train_x[:2] + 0.01
    for obj, con in ((train_obj, None), (train_obj, train_con)):
        candidate = nystrom_candidates_func(train_x, obj, con, bounds, pending)
        assert candidate.shape == (1, 4)
        assert ((candidate >= bounds[0] - 1e-9) & (candidate <= bounds[1] + 1e-9)).all()
    two = torch.cat([train_obj, -((train_x[:, :1] - 1) ** 2)], dim=-1)
    assert nystrom_candidates_func(train_x, two, None, bounds, None).shape == (1, 4)


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"n_startup_trials": -1}, InputDataError, "n_startup_trials"),
        ({"num_restarts": 0}, InputDataError, "num_restarts"),
        ({"num_restarts": 8, "raw_samples": 4}, InputDataError, "raw_samples"),
        ({"model": "nystrom"}, UnsupportedError, "model must be"),
        ({"model": dict}, UnsupportedError, "model must be"),
        (
            {"model": GradientSubsetGP, "model_options": {"subset": 3}},
            InputDataError,
            "subset",
        ),
        (
            {"model": lambda X, Y: None, "model_options": {"a": 1}},
            InputDataError,
            "factory",
        ),
        ({"independent_sampler": "random"}, UnsupportedError, "independent_sampler"),
        ({"acquisition": "qEI"}, InputDataError, "acquisition"),
        ({"warp_objective": "yes"}, InputDataError, "warp_objective"),
        # NumPy's casting error came later and did not name the argument.
        ({"seed": "x"}, InputDataError, "seed"),
        ({"seed": 1.5}, InputDataError, "seed"),
        ({"seed": True}, InputDataError, "seed"),
        ({"seed": -1}, InputDataError, "seed"),
        ({"seed": 2**32}, InputDataError, "seed"),
    ],
)
def test_bad_options_raise(options, error, message):
    with pytest.raises(error, match=message):
        SketchSampler(**options)


def test_integer_seeds_are_accepted():
    for seed in (None, 0, 2**32 - 1, np.int64(3)):
        sampler = SketchSampler(seed=seed)
        assert isinstance(sampler, SketchSampler)


def test_inconsistent_constraints_raise():
    def objective(trial):
        value = quadratic(trial)
        if trial.number % 2:
            trial.set_constraint("c", 0.0)
        return value

    study = optuna.create_study(sampler=SketchSampler(seed=0, n_startup_trials=3))
    with pytest.raises(InputDataError, match="same constraints"):
        study.optimize(objective, n_trials=5)


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


@pytest.mark.parametrize("acquisition", ["auto", "mc"])
def test_a_trial_chosen_alone_uses_analytic_log_ei_unless_asked(
    monkeypatch, acquisition
):
    seen = []
    original = sketch_optuna.optimize_acqf

    def spy(acq_function, **kwargs):
        seen.append(acq_function)
        return original(acq_function=acq_function, **kwargs)

    monkeypatch.setattr(sketch_optuna, "optimize_acqf", spy)
    sampler = SketchSampler(seed=0, n_startup_trials=5, acquisition=acquisition, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=7)
    expected = (
        sketch_optuna.LogExpectedImprovement
        if acquisition == "auto"
        else sketch_optuna.qLogNoisyExpectedImprovement
    )
    assert len(seen) == 2 and all(type(a) is expected for a in seen)
    if acquisition == "auto":
        # The incumbent is the best posterior mean at the observed points.
        model = seen[-1].model
        trials = sorted(study.trials[:-1], key=sketch_optuna._completion_order)
        X = torch.tensor(
            [[(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6] for t in trials],
            dtype=torch.float64,
        )
        best = model.posterior(X.unsqueeze(-2)).mean.max()
        assert torch.allclose(seen[-1].best_f, best)


def test_encodings_are_cached_per_trial_and_reset_with_the_search_space():
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=6)
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert set(sampler._encoded) == {t._trial_id for t in complete[:-1]}
    for t in complete[:-1]:
        # x and y in [-3, 3], scaled to the unit cube.
        expected = [(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6]
        assert sampler._encoded[t._trial_id] == pytest.approx(expected)

    def moved(trial):
        x = trial.suggest_float("x", -3.0, 4.0)
        return (x - 1.0) ** 2 + trial.suggest_float("y", -3.0, 3.0) ** 2

    study.optimize(moved, n_trials=3)
    # x's distribution changed: the search space is y alone, encoded anew.
    assert sampler._warm_space.keys() == {"y"}
    assert len(sampler._encoded) >= 6
    for t in study.trials[:-1]:
        if t._trial_id in sampler._encoded:
            row = sampler._encoded[t._trial_id]
            assert row == pytest.approx([(t.params["y"] + 3) / 6])


def test_nystrom_candidates_carries_its_models_in_botorch_sampler():
    from optuna_integration import BoTorchSampler

    candidates = NystromCandidates(refit_every=3)
    sampler = BoTorchSampler(candidates_func=candidates, n_startup_trials=5, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=10)
    # Built once at trial 6, then conditioned twice and refitted on schedule.
    counts = candidates._incremental["objective 0"].counts
    assert counts.builds == 1 and counts.refits >= 1 and counts.conditioned >= 2
    assert study.best_value < min(t.value for t in study.trials[:5])
    # New bounds are a new search space: the carried model is dropped.
    X = torch.rand(8, 2, dtype=torch.float64)
    candidate = candidates(
        X, -X.sum(-1, keepdim=True), None, torch.tensor([[0.0, 0.0], [2.0, 2.0]]), None
    )
    assert candidate.shape == (1, 2)
    assert candidates._incremental["objective 0"].counts.builds == 1
    assert candidates._incremental["objective 0"].model.train_X.shape[0] == 8
    with pytest.raises(InputDataError, match="acquisition"):
        NystromCandidates(acquisition="ei")
    with pytest.raises(InputDataError, match="warp_objective"):
        NystromCandidates(warp_objective=1)


def _new_trial(study):
    # A trial with no parameters yet, as Optuna's sampler test-suite makes one.
    return study._storage.get_trial(study._storage.create_new_trial(study._study_id))


def test_a_sampler_reused_for_another_study_fits_that_study(monkeypatch):
    # Each in-memory study numbers its trial ids from 0: encodings cached by
    # trial id gave the second study's values the first study's parameters.
    seen = []
    original = sketch_optuna._suggest

    def spy(**kwargs):
        seen.append(kwargs["train_X"].clone())
        return original(**kwargs)

    monkeypatch.setattr(sketch_optuna, "_suggest", spy)
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    first = optuna.create_study(sampler=sampler)
    first.optimize(quadratic, n_trials=5)
    second = optuna.create_study(sampler=sampler)
    second.optimize(quadratic, n_trials=6)
    assert [t._trial_id for t in second.trials] == list(range(6))
    assert len(seen) == 3
    for train_X, n in zip(seen[1:], (4, 5), strict=True):
        trials = sorted(second.trials[:n], key=sketch_optuna._completion_order)
        expected = [[(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6] for t in trials]
        assert torch.allclose(train_X, torch.tensor(expected, dtype=train_X.dtype))


def test_rounding_does_not_repeat_a_running_or_observed_configuration():
    # Rounding snapped the optimum back onto a completed trial, and the second
    # ask onto the first, still running, trial (with seeds 1 and 2 as well).
    space = {
        "n": IntDistribution(0, 3),
        "kind": CategoricalDistribution(["a", "b", "c"]),
    }
    sampler = SketchSampler(
        seed=0, n_startup_trials=4, warn_independent_sampling=False, **FAST
    )
    study = optuna.create_study(sampler=sampler)
    for _ in range(4):
        trial = study.ask(space)
        study.tell(trial, (trial.params["n"] - 2) ** 2 + (trial.params["kind"] != "b"))
    observed = [t.params for t in study.trials]
    first = study.ask(space)
    second = study.ask(space)  # the first is running
    assert len(model_based(study)) == 2
    assert first.params not in observed
    assert second.params not in observed + [first.params]


def test_a_fully_observed_grid_still_gets_a_suggestion():
    space = {"n": IntDistribution(0, 1), "kind": CategoricalDistribution(["a", "b"])}
    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=4, **FAST)
    )
    for n in (0, 1):
        for kind in ("a", "b"):
            study.enqueue_trial({"n": n, "kind": kind})
            trial = study.ask(space)
            study.tell(trial, n + (kind == "a"))
    trial = study.ask(space)
    assert len(model_based(study)) == 1
    assert trial.params["n"] in (0, 1) and trial.params["kind"] in ("a", "b")


_EVERY_DISTRIBUTION = {
    "x": FloatDistribution(-1.0, 1.0),
    "log_x": FloatDistribution(1e-7, 1.0, log=True),
    "step_x": FloatDistribution(-10.0, 10.0, step=0.5),
    "n": IntDistribution(3, 10),
    "log_n": IntDistribution(1, 100, log=True),
    "step_n": IntDistribution(3, 9, step=2),
    "choice": CategoricalDistribution([1, 10, 100]),
    "mixed": CategoricalDistribution(["a", None, 2.5]),
}


def _check_plain_and_contained(params):
    # Optuna's relative-sampler tests: no NumPy scalars, int for integers,
    # float for floats, each value inside its distribution.
    assert params.keys() == _EVERY_DISTRIBUTION.keys()
    for name, value in params.items():
        distribution = _EVERY_DISTRIBUTION[name]
        assert not isinstance(value, (np.floating, np.integer)), (name, value)
        if isinstance(distribution, FloatDistribution):
            assert type(value) is float, name
        elif isinstance(distribution, IntDistribution):
            assert type(value) is int, name
        else:
            # The choice itself, of its own type.
            assert any(value is choice for choice in distribution.choices), name
        assert distribution._contains(distribution.to_internal_repr(value)), name


def test_suggested_values_are_python_scalars_in_their_distributions():
    # A continuous parameter at its upper bound came back as numpy.float64
    # (this seed puts x there on its second suggestion).
    sampler = SketchSampler(
        seed=0, n_startup_trials=0, warn_independent_sampling=False, **FAST
    )
    study = optuna.create_study(sampler=sampler, direction="maximize")
    trial = study.ask(_EVERY_DISTRIBUTION)
    study.tell(trial, trial.params["x"])
    _check_plain_and_contained(trial.params)
    for _ in range(3):
        params = sampler.sample_relative(study, _new_trial(study), _EVERY_DISTRIBUTION)
        _check_plain_and_contained(params)


def test_candidates_functions_give_python_scalars_in_botorch_sampler(monkeypatch):
    from optuna_integration import BoTorchSampler

    # The candidates functions' own optimisation settings take seconds a call.
    original = sketch_optuna._suggest
    monkeypatch.setattr(
        sketch_optuna, "_suggest", lambda **kwargs: original(**{**kwargs, **FAST})
    )
    # NystromCandidates shares nystrom_candidates_func's body (``_candidates``).
    torch.manual_seed(0)
    sampler = BoTorchSampler(
        candidates_func=nystrom_candidates_func, n_startup_trials=0, seed=0
    )
    study = optuna.create_study(sampler=sampler, direction="maximize")
    for x, n in ((-1.0, 3), (0.0, 5), (0.5, 9)):
        # Added, not asked: an asked trial calls the candidates function.
        params = {"x": x, "log_x": 1e-3, "step_x": 0.5, "n": n, "log_n": n}
        params.update(step_n=n, choice=10, mixed="a")
        study.add_trial(
            optuna.trial.create_trial(
                params=params, distributions=_EVERY_DISTRIBUTION, value=x
            )
        )
    # Increasing in x: the candidate is at x's upper bound, which Optuna's
    # untransform returned as a numpy.float64.
    params = sampler.sample_relative(study, _new_trial(study), _EVERY_DISTRIBUTION)
    assert params["x"] == pytest.approx(1.0)
    _check_plain_and_contained(params)


def test_nystrom_candidates_func_checks_the_shape_of_bounds():
    train_x = torch.rand(6, 3, dtype=torch.float64)
    train_obj = -train_x.sum(-1, keepdim=True)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.float64)
    for candidates_func in (nystrom_candidates_func, NystromCandidates()):
        with pytest.raises(InputDataError, match=r"bounds of shape \(2, 2\).*\(6, 3\)"):
            candidates_func(train_x, train_obj, None, unit[:, :2], None)
        with pytest.raises(InputDataError, match=r"bounds of shape \(3,\)"):
            candidates_func(train_x, train_obj, None, unit[0], None)
        with pytest.raises(InputDataError, match=r"pending_x of shape \(1, 2\)"):
            candidates_func(train_x, train_obj, None, unit, train_x[:1, :2])


def test_a_factory_that_returns_no_model_is_named():
    def not_a_model(train_X, train_Y):
        return "a model"

    study = optuna.create_study(
        sampler=SketchSampler(model=not_a_model, seed=0, n_startup_trials=2)
    )
    with pytest.raises(InputDataError, match="not_a_model.*returned a str"):
        study.optimize(quadratic, n_trials=3)


def readme_objective(trial):
    # The README's Optuna example, verbatim.
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    depth = trial.suggest_int("depth", 2, 12)
    kind = trial.suggest_categorical("kind", ["gbdt", "dart"])
    return (depth - 6) ** 2 / 10 + abs(lr - 0.01) + (kind == "dart")


@pytest.mark.slow
def test_readme_example_gets_past_the_learning_rate_stall():
    # Issue 38: the best value stayed near 0.009 from trial 20 on, the trials
    # sitting at lr = 1e-4 to 1e-3 while the optimum is lr = 0.01. The bad
    # depths and kinds made the spread of the values, and the differences
    # between good learning rates (under 0.01) fell below the model's
    # inferred noise floor (1e-4 of the standardised variance).
    study = optuna.create_study(sampler=SketchSampler(seed=0))
    study.optimize(readme_objective, n_trials=50)
    assert study.best_value <= 1e-3
    assert study.best_params["depth"] == 6 and study.best_params["kind"] == "gbdt"
    assert 0.009 <= study.best_params["lr"] <= 0.011


def test_half_rank_warp_keeps_the_order_and_draws_in_a_dominating_bad_half():
    # To be maximised: a tight good half near 0 and a few far worse values.
    rng = np.random.default_rng(0)
    good = -0.01 + 1e-3 * rng.standard_normal(12)
    y = torch.tensor(np.r_[good, [-3.6, -1.6, -2.7, -0.09, -1.0]]).unsqueeze(-1)
    warp = sketch_optuna._HalfRankWarp(y)
    w = warp(y)
    median = float(y.median())
    assert torch.equal(w.squeeze(-1).argsort(), y.squeeze(-1).argsort())
    upper = y >= warp.median
    assert torch.equal(w[upper], y[upper])
    # The bad half within a few spreads of the upper half below the median,
    # never further from it than it was.
    assert float(w.min()) >= warp.median - 4 * warp.scale
    assert bool(((w - warp.median).abs() <= (y - warp.median).abs()).all())
    assert abs(warp.median - median) < 1e-3
    # Values it was not estimated on: in order, through the same fixed map.
    new = torch.linspace(-1e3, 1.0, 2001, dtype=torch.float64).unsqueeze(-1)
    warped_new = warp(new)
    assert bool((warped_new.diff(dim=0) >= 0).all())
    assert bool(torch.isfinite(warped_new).all())
    assert torch.equal(warp(torch.cat([y, new])), torch.cat([w, warped_new]))
    # Values whose spread the upper half already makes are modelled as they are.
    spread = torch.tensor(rng.standard_normal(40)).unsqueeze(-1)
    assert torch.equal(sketch_optuna._HalfRankWarp(spread)(spread), spread)
    constant = torch.ones(5, 1, dtype=torch.float64)
    assert torch.equal(sketch_optuna._HalfRankWarp(constant)(constant), constant)


def test_the_warping_changes_earlier_rows_only_when_the_model_refits(monkeypatch):
    # Re-estimating the warping changes the values of earlier trials, which a
    # carried NystromGP can only take by a refit: it is re-estimated at the
    # scheduled refits only, so the trials in between stay Woodbury steps.
    from botorch_sketch.bo import IncrementalGP

    calls = []
    original = IncrementalGP.__call__

    def spy(self, train_X, train_Y, train_Yvar=None):
        due = self.refit_due(len(train_X))
        model = original(self, train_X, train_Y, train_Yvar)
        calls.append((due, self.counts.last, self.counts.last_reason))
        return model

    monkeypatch.setattr(IncrementalGP, "__call__", spy)
    estimates = []
    original_warp = sketch_optuna._HalfRankWarp.__init__

    def count(self, Y):
        original_warp(self, Y)
        estimates.append(self.scale > 0)

    monkeypatch.setattr(sketch_optuna._HalfRankWarp, "__init__", count)
    sampler = SketchSampler(seed=0, refit_every=4, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(readme_objective, n_trials=34)
    assert any(estimates), "the warping never applied: the test checks nothing"
    assert len(estimates) < len(calls)
    assert sum(last == "conditioned" for _, last, _ in calls) >= len(calls) // 2
    for due, _, reason in calls:
        assert reason != "data changed" or due
    # Off, the objective is modelled as it is.
    plain = SketchSampler(seed=0, warp_objective=False, **FAST)
    estimates.clear()
    optuna.create_study(sampler=plain).optimize(readme_objective, n_trials=12)
    assert estimates == []
