import dataclasses
import pickle

import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError  # noqa: E402
from optuna_helpers import FAST, new_trial, quadratic  # noqa: E402

from botorch_sketch import GradientSubsetGP  # noqa: E402
from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna import sampler as sampler_module  # noqa: E402
from botorch_sketch.integrations.optuna import state as state_module  # noqa: E402
from botorch_sketch.integrations.optuna.trials import _completion_order  # noqa: E402


def test_warm_start_carries_the_model(monkeypatch):
    # NystromGP is carried by IncrementalGP: built once, then refitted from the
    # previous hyperparameters (refit_every=1) or conditioned (refit_every=3).
    for refit_every, refits, conditioned in ((1, 2, 0), (3, 0, 2)):
        sampler = SketchSampler(
            seed=0, n_startup_trials=5, refit_every=refit_every, **FAST
        )
        study = optuna.create_study(sampler=sampler)
        study.optimize(quadratic, n_trials=8)
        counts = sampler._carried.incremental["objective 0"].counts
        assert (counts.builds, counts.refits, counts.conditioned) == (
            1,
            refits,
            conditioned,
        )
    # Other classes get the previous hyperparameters loaded before the fit.
    starts = []
    original = state_module.fit_gpytorch_mll

    def spy(mll, **kwargs):
        starts.append(mll.model.covar_module.lengthscale.detach().clone())
        return original(mll, **kwargs)

    monkeypatch.setattr(state_module, "fit_gpytorch_mll", spy)
    sampler = SketchSampler(model=GradientSubsetGP, seed=0, n_startup_trials=5, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=7)
    assert len(starts) == 2 and not torch.equal(starts[0], starts[1])
    assert sampler._carried.warm_states["objective 0"][
        "covar_module.raw_lengthscale"
    ].dtype == (torch.float64)
    # A sampler pickles (Optuna's way to save its state) and keeps working.
    restored = pickle.loads(pickle.dumps(sampler))
    study.sampler = restored
    study.optimize(quadratic, n_trials=1)


def test_encodings_are_cached_per_trial_and_reset_with_the_search_space():
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=6)
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert set(sampler._carried.encoded) == {t.number for t in complete[:-1]}
    for t in complete[:-1]:
        # x and y in [-3, 3], scaled to the unit cube.
        expected = [(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6]
        assert sampler._carried.encoded[t.number] == pytest.approx(expected)

    def moved(trial):
        x = trial.suggest_float("x", -3.0, 4.0)
        return (x - 1.0) ** 2 + trial.suggest_float("y", -3.0, 3.0) ** 2

    study.optimize(moved, n_trials=3)
    # x's distribution changed: the search space is y alone, encoded anew.
    assert sampler._carried.warm_space.keys() == {"y"}
    assert len(sampler._carried.encoded) >= 6
    for t in study.trials[:-1]:
        if t.number in sampler._carried.encoded:
            row = sampler._carried.encoded[t.number]
            assert row == pytest.approx([(t.params["y"] + 3) / 6])


def test_a_sampler_reused_for_another_study_fits_that_study(monkeypatch):
    # Each in-memory study numbers its trials (and trial ids) from 0:
    # encodings cached by trial id gave the second study's values the first
    # study's parameters (they are cached by trial number, within one study).
    seen = []
    original = sampler_module._suggest

    def spy(**kwargs):
        seen.append(kwargs["train_X"].clone())
        return original(**kwargs)

    monkeypatch.setattr(sampler_module, "_suggest", spy)
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    first = optuna.create_study(sampler=sampler)
    first.optimize(quadratic, n_trials=5)
    second = optuna.create_study(sampler=sampler)
    second.optimize(quadratic, n_trials=6)
    assert [t._trial_id for t in second.trials] == list(range(6))
    assert len(seen) == 3
    for train_X, n in zip(seen[1:], (4, 5), strict=True):
        trials = sorted(second.trials[:n], key=_completion_order)
        expected = [[(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6] for t in trials]
        assert torch.allclose(train_X, torch.tensor(expected, dtype=train_X.dtype))


def test_a_factory_that_returns_no_model_is_named():
    def not_a_model(train_X, train_Y):
        return "a model"

    study = optuna.create_study(
        sampler=SketchSampler(model=not_a_model, seed=0, n_startup_trials=2)
    )
    with pytest.raises(InputDataError, match="not_a_model.*returned a str"):
        study.optimize(quadratic, n_trials=3)


def test_a_sampler_pickled_before_the_package_split_resumes():
    # Before botorch_sketch.integrations.optuna became a package, the sampler
    # kept its options and what it carries as attributes of its own.
    sampler = SketchSampler(seed=0, n_startup_trials=4, refit_every=3, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=6)
    options, carried = sampler._options, sampler._carried
    flat = {
        "_model": options.model,
        "_model_options": options.model_options,
        "_rng": sampler._rng,
        "_independent_sampler": sampler._independent_sampler,
        "_intersection_search_space": sampler._intersection_search_space,
        "_n_startup_trials": options.n_startup_trials,
        "_num_restarts": options.num_restarts,
        "_raw_samples": options.raw_samples,
        "_mc_samples": options.mc_samples,
        "_max_baseline": options.max_baseline,
        "_warm_start": options.warm_start,
        "_refit_every": options.refit_every,
        "_analytic": options.analytic,
        "_warn_independent_sampling": options.warn_independent_sampling,
        "_warm_space": carried.warm_space,
        "_warm_states": carried.warm_states,
        "_incremental": carried.incremental,
        "_encoded": {study.trials[n]._trial_id: x for n, x in carried.encoded.items()},
        "_study_key": None,
        # The oldest pickles have neither of these (nor _encoded, _study_key).
        "_warps": carried.warps,
        "_warp_objective": options.warp_objective,
    }
    old = SketchSampler.__new__(SketchSampler)
    old.__setstate__(pickle.loads(pickle.dumps(flat)))
    new = pickle.loads(pickle.dumps(sampler))
    assert old._options == dataclasses.replace(new._options, seed=None)
    assert old._carried.incremental.keys() == {"objective 0"}
    assert old._carried.encoded == {} and old._carried.study_key is None
    # Both resume from the same carried model and generator state.
    trial = new_trial(study)
    space = sampler.infer_relative_search_space(study, trial)
    assert old.sample_relative(study, trial, space) == new.sample_relative(
        study, trial, space
    )
    study.sampler = old
    study.optimize(quadratic, n_trials=1)
