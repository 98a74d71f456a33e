import json
import math
import pickle

import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError  # noqa: E402
from botorch.exceptions.warnings import InputDataWarning  # noqa: E402
from optuna_helpers import FAST, quadratic  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna import state as state_module  # noqa: E402
from botorch_sketch.integrations.optuna.options import (  # noqa: E402
    _SHORT_FIT_MAXITER,
)
from botorch_sketch.sketching.rules import RidgeLeverageSampler  # noqa: E402

NAME = "objective 0"
NOISE = "likelihood.noise_covar.raw_noise"


def _parameters(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def test_a_resumed_study_starts_from_the_stored_hyperparameters(monkeypatch):
    storage = optuna.storages.InMemoryStorage()
    first = SketchSampler(seed=0, n_startup_trials=5, refit_every=3, **FAST)
    study = optuna.create_study(storage=storage, sampler=first)
    study.optimize(quadratic, n_trials=9)
    carried = first._carried.incremental[NAME]
    assert carried.counts.builds == 1 and carried.counts.refits >= 1
    # What the study holds is the last fit (conditioning keeps it).
    stored = first._carried.stored_hyperparameters(NAME)
    fitted = _parameters(carried.model)
    assert sorted(stored) == sorted(fitted)
    for key, value in fitted.items():
        assert torch.equal(torch.tensor(stored[key], dtype=value.dtype), value)

    starts = []
    original = state_module.fit_gpytorch_mll_scipy

    def spy(mll, *args, **kwargs):
        options = kwargs.get("options") or {}
        starts.append((_parameters(mll.model), options.get("maxiter")))
        return original(mll, *args, **kwargs)

    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", spy)
    # A new worker (or a resumed run) on the same storage.
    second = SketchSampler(seed=1, n_startup_trials=5, refit_every=3, **FAST)
    resumed = optuna.load_study(
        study_name=study.study_name, storage=storage, sampler=second
    )
    resumed.optimize(quadratic, n_trials=1)
    # One short fit, started at the stored values: not from the priors.
    assert len(starts) == 1
    start, maxiter = starts[0]
    assert maxiter == _SHORT_FIT_MAXITER
    for key, value in fitted.items():
        assert torch.equal(start[key], value)
    assert second._carried.incremental[NAME].counts.builds == 1
    # Later refits are BoTorch's own (the stored values start one fit only).
    resumed.optimize(quadratic, n_trials=3)
    assert len(starts) > 1 and all(m is None for _, m in starts[1:])
    # The sampler pickles with its optimizer.
    pickle.loads(pickle.dumps(second))


def test_stored_hyperparameters_belong_to_their_search_space(monkeypatch):
    storage = optuna.storages.InMemoryStorage()
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    study = optuna.create_study(storage=storage, sampler=sampler)
    study.optimize(quadratic, n_trials=5)
    assert sampler._carried.stored_hyperparameters(NAME) is not None

    calls = []
    original = state_module._load_hyperparameters
    monkeypatch.setattr(
        state_module,
        "_load_hyperparameters",
        lambda *a: calls.append(1) or original(*a),
    )
    fresh = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    other_study = optuna.create_study(storage=storage, sampler=fresh)
    other_study.optimize(quadratic, n_trials=5)
    # Another study of the same storage holds none of its own.
    assert calls == []
    # The same study's hyperparameters, read for another search space: none.
    space = dict(sampler._carried.warm_space)
    reader = SketchSampler(seed=0)._carried
    reader.use(study, space)
    assert reader.stored_hyperparameters(NAME) is not None
    reader.use(study, {**space, "z": optuna.distributions.FloatDistribution(0, 1)})
    assert reader.stored_hyperparameters(NAME) is None
    reader.use(study, dict(reversed(space.items())))
    assert reader.stored_hyperparameters(NAME) is None
    # No storage entry is left half-read: a shorter text ends at an empty chunk.
    key = f"{state_module._HYPERPARAMETERS_KEY}:{NAME}"
    attrs = storage.get_study_system_attrs(study._study_id)
    assert attrs[f"{key}:0"] and attrs[f"{key}:1"] == ""


def test_the_caps_reach_incremental_gp():
    sampler = SketchSampler(seed=0, n_startup_trials=3, max_inducing=7, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=4)
    carried = sampler._carried.incremental[NAME]
    assert carried.max_inducing == 7
    assert carried.model_kwargs["fit_subset_size"] == 500
    assert carried.model_kwargs["inducing"].max_size == 7
    options = SketchSampler(
        max_inducing=None,
        fit_subset_size=None,
        model_options={"inducing": RidgeLeverageSampler()},
    )._options.incremental_kwargs(2)
    assert (
        "max_inducing" not in options
        and "fit_subset_size" not in (options["model_kwargs"])
    )
    fixed = SketchSampler(model_options={"inducing": torch.rand(3, 2)})._options
    assert "max_inducing" not in fixed.incremental_kwargs(2)
    for bad in ({"max_inducing": 0}, {"fit_subset_size": 1}, {"max_inducing": 2.5}):
        with pytest.raises(InputDataError, match=next(iter(bad))):
            SketchSampler(**bad)


def _rewrite_stored(storage, study, name, edit):
    # Replace the study's stored hyperparameters of ``name`` by ``edit(stored)``
    # (the JSON text as the sampler writes it, in one chunk).
    key = f"{state_module._HYPERPARAMETERS_KEY}:{name}"
    attrs = storage.get_study_system_attrs(study._study_id)
    chunks = []
    while chunk := attrs.get(f"{key}:{len(chunks)}"):
        chunks.append(chunk)
    text = edit(json.loads("".join(chunks)))
    text = text if isinstance(text, str) else json.dumps(text)
    storage.set_study_system_attr(study._study_id, f"{key}:0", text)
    storage.set_study_system_attr(study._study_id, f"{key}:1", "")


def _study_with_stored_hyperparameters():
    storage = optuna.storages.InMemoryStorage()
    first = SketchSampler(seed=0, n_startup_trials=5, **FAST)
    study = optuna.create_study(storage=storage, sampler=first)
    study.optimize(quadratic, n_trials=6)
    return storage, study


def _resume(storage, study):
    sampler = SketchSampler(seed=1, n_startup_trials=5, **FAST)
    resumed = optuna.load_study(
        study_name=study.study_name, storage=storage, sampler=sampler
    )
    return sampler, resumed


LENGTHSCALE = "covar_module.base_kernel.raw_lengthscale"


@pytest.mark.parametrize(
    "key, value, match",
    [
        # Loaded, carried and written back: the search degraded to random.
        (NOISE, [1e300], f"{NAME}.*{NOISE}.*implausibly large"),
        # Finite, but a lengthscale of 1000 on the unit cube is not under its prior.
        (LENGTHSCALE, [[1e3, 1e3]], "lengthscale.*implausible under its prior"),
        # JSON writes them as NaN and -Infinity.
        (NOISE, [math.nan], "not finite"),
        (NOISE, [-math.inf], "not finite"),
        # Outside the noise prior's support: its log_prob raised a ValueError at
        # every suggestion (the docstring promised a warning).
        (NOISE, [-1e5], f"{NAME}.*noise.*outside the support of its prior"),
    ],
    ids=["noise-1e300", "lengthscale-1e3", "nan", "-inf", "noise--1e5"],
)
def test_implausible_stored_hyperparameters_are_ignored_with_a_warning(
    key, value, match
):
    storage, study = _study_with_stored_hyperparameters()
    _rewrite_stored(
        storage,
        study,
        NAME,
        lambda s: {**s, "parameters": {**s["parameters"], key: value}},
    )
    sampler, resumed = _resume(storage, study)
    with pytest.warns(InputDataWarning, match=match):
        resumed.optimize(quadratic, n_trials=1)
    model = sampler._carried.incremental[NAME].model
    assert float(model.likelihood.noise.max()) < 1.0
    assert float(model.covar_module.base_kernel.lengthscale.max()) < 100.0
    # The new fit replaced them in the study.
    stored = sampler._carried.stored_hyperparameters(NAME)
    assert torch.equal(
        torch.tensor(stored[key], dtype=torch.float64),
        dict(model.named_parameters())[key].detach(),
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: [s],
        lambda s: {**s, "parameters": [1.0, 2.0]},
        lambda s: {**s, "parameters": {**s["parameters"], NOISE: "abc"}},
        lambda s: {**s, "parameters": {**s["parameters"], NOISE: [[1.0, 2.0], [3.0]]}},
        lambda s: {**s, "parameters": {**s["parameters"], NOISE: [0.1, 0.2, 0.3]}},
        lambda s: {**s, "parameters": {**s["parameters"], NOISE: None}},
        lambda s: '{"space": [',
        lambda s: '{"space": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ],
    ids=[
        "list",
        "parameters-list",
        "string",
        "ragged",
        "shape",
        "null",
        "truncated",
        "nested",
    ],
)
def test_wrong_shaped_stored_hyperparameters_do_not_stop_the_study(edit):
    storage, study = _study_with_stored_hyperparameters()
    _rewrite_stored(storage, study, NAME, edit)
    sampler, resumed = _resume(storage, study)
    # Every later suggestion raised: the study was stuck.
    with pytest.warns(InputDataWarning, match=f"stored hyperparameters.*{NAME}"):
        resumed.optimize(quadratic, n_trials=2)
    assert len(resumed.trials) == 8
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in resumed.trials)
    # What the study holds now is the new fit's.
    assert isinstance(sampler._carried.stored_hyperparameters(NAME), dict)
