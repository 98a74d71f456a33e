import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError  # noqa: E402
from optuna_helpers import (  # noqa: E402
    EVERY_DISTRIBUTION,
    FAST,
    check_plain_and_contained,
    new_trial,
    quadratic,
    readme_objective,
)

from botorch_sketch.integrations.optuna import (  # noqa: E402
    NystromCandidates,
    nystrom_candidates_func,
)
from botorch_sketch.integrations.optuna import candidates as candidates_module  # noqa: E402
from botorch_sketch.integrations.optuna.candidates import _grid_rounding  # noqa: E402


@pytest.mark.slow
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


def test_candidates_functions_give_python_scalars_in_botorch_sampler(monkeypatch):
    from optuna_integration import BoTorchSampler

    # The candidates functions' own optimisation settings take seconds a call.
    original = candidates_module._suggest
    monkeypatch.setattr(
        candidates_module, "_suggest", lambda **kwargs: original(**{**kwargs, **FAST})
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
                params=params, distributions=EVERY_DISTRIBUTION, value=x
            )
        )
    # Increasing in x: the candidate is at x's upper bound, which Optuna's
    # untransform returned as a numpy.float64.
    params = sampler.sample_relative(study, new_trial(study), EVERY_DISTRIBUTION)
    assert params["x"] == pytest.approx(1.0)
    check_plain_and_contained(params)


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


@pytest.mark.slow
def test_nystrom_candidates_do_not_repeat_a_trial_on_the_readme_example(monkeypatch):
    # The acquisition was maximised over the relaxation of ``depth`` and the
    # one-hot ``kind``: its optimum (depth 6.2, kind (1, 0.7), lr = 1e-4) was
    # no observed point, but Optuna rounded it onto the best trial, proposed
    # again from trial 12 to 49 on seed 0 (best 0.0099 after 50 trials).
    from optuna_integration import BoTorchSampler

    original = candidates_module._suggest
    monkeypatch.setattr(
        candidates_module, "_suggest", lambda **kwargs: original(**{**kwargs, **FAST})
    )
    sampler = BoTorchSampler(candidates_func=NystromCandidates(), seed=0)
    study = optuna.create_study(sampler=sampler)
    threads = torch.get_num_threads()
    # One thread: two on a shared machine took five times as long.
    torch.set_num_threads(1)
    try:
        study.optimize(readme_objective, n_trials=50)
    finally:
        torch.set_num_threads(threads)
    configurations = {tuple(t.params.values()) for t in study.trials}
    assert len(configurations) == 50
    assert study.best_value <= 1e-3
    assert study.best_params["depth"] == 6 and study.best_params["kind"] == "gbdt"


def test_grid_rounding_recognises_botorch_samplers_encoding():
    from optuna._transform import _SearchSpaceTransform
    from optuna.distributions import CategoricalDistribution, IntDistribution

    # The encoding BoTorchSampler passes to a candidates function.
    space = {
        **EVERY_DISTRIBUTION,
        "depth": IntDistribution(2, 12),
        "kind": CategoricalDistribution(["gbdt", "dart"]),
        "fine": IntDistribution(0, 10**6),
    }
    transform = _SearchSpaceTransform(space)
    bounds = torch.from_numpy(transform.bounds).T
    rng = torch.Generator().manual_seed(0)

    def unit_to_params(U):
        return transform.untransform((bounds[0] + U * (bounds[1] - bounds[0])).numpy())

    # Observed configurations: Optuna's rounding of random relaxed points.
    relaxed = torch.rand(12, bounds.shape[-1], dtype=torch.float64, generator=rng)
    X = torch.stack(
        [torch.from_numpy(transform.transform(unit_to_params(u))) for u in relaxed]
    )
    round_to_grid = _grid_rounding(X, bounds)
    observed = (X - bounds[0]) / (bounds[1] - bounds[0])
    assert torch.allclose(round_to_grid(observed), observed, atol=1e-9)
    U = torch.rand(64, 1, bounds.shape[-1], dtype=torch.float64, generator=rng)
    rounded = round_to_grid(U)
    assert rounded.shape == U.shape
    assert torch.equal(round_to_grid(rounded), rounded)
    continuous = {"x", "log_x", "fine"}
    for u, r in zip(U.squeeze(-2), rounded.squeeze(-2), strict=True):
        before, after = unit_to_params(u), unit_to_params(r)
        # Every discrete parameter as Optuna would have rounded it; each
        # continuous one (and the 10**6-point grid) left as it was.
        assert {k: v for k, v in before.items() if k not in continuous} == {
            k: v for k, v in after.items() if k not in continuous
        }
        for column in (0, 1, -1):
            assert r[column] == u[column]
    # Random floats (as the functions' direct callers pass) have no grid.
    train_x = torch.rand(10, 3, dtype=torch.float64, generator=rng)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.float64)
    assert _grid_rounding(train_x, unit) is None
    assert _grid_rounding(train_x * 20.0 - 1.0, unit * 20.0 - 1.0) is None
