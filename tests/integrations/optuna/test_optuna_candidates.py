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


def _observed():
    train_x = torch.rand(6, 2, dtype=torch.float64)
    unit = torch.tensor([[0.0] * 2, [1.0] * 2], dtype=torch.float64)
    return train_x, -train_x.sum(-1, keepdim=True), unit


def test_candidates_functions_refuse_a_1d_objective_by_name():
    train_x, train_obj, unit = _observed()
    for candidates_func in (nystrom_candidates_func, NystromCandidates()):
        # An IndexError ("too many indices for tensor of dimension 1") before.
        with pytest.raises(InputDataError, match=r"train_obj of shape \(6,\)"):
            candidates_func(train_x, train_obj.squeeze(-1), None, unit, None)
        with pytest.raises(InputDataError, match=r"train_con of shape \(6,\)"):
            candidates_func(train_x, train_obj, train_obj.squeeze(-1), unit, None)


def test_candidates_functions_refuse_reversed_bounds():
    train_x, train_obj, unit = _observed()
    for candidates_func in (nystrom_candidates_func, NystromCandidates()):
        # [[5e-324, 5e-324]] before.
        with pytest.raises(InputDataError, match="bounds must be lower.*column 0"):
            candidates_func(train_x, train_obj, None, unit.flip(0), None)


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

    from botorch_sketch.integrations.optuna.encoding import _Encoding

    # The encoding BoTorchSampler passes to a candidates function: the
    # parameters sorted by name.
    space = {
        **EVERY_DISTRIBUTION,
        "depth": IntDistribution(2, 12),
        "kind": CategoricalDistribution(["gbdt", "dart"]),
        "fine": IntDistribution(0, 10**6),
    }
    space = dict(sorted(space.items()))
    transform = _SearchSpaceTransform(space)
    bounds = torch.from_numpy(transform.bounds).T
    columns = dict(zip(space, _Encoding(space).columns, strict=True))
    rng = torch.Generator().manual_seed(0)

    def unit_to_params(U):
        return transform.untransform((bounds[0] + U * (bounds[1] - bounds[0])).numpy())

    # Observed configurations: Optuna's rounding of random relaxed points.
    relaxed = torch.rand(12, bounds.shape[-1], dtype=torch.float64, generator=rng)
    X = torch.stack(
        [torch.from_numpy(transform.transform(unit_to_params(u))) for u in relaxed]
    )
    U = torch.rand(64, 1, bounds.shape[-1], dtype=torch.float64, generator=rng)
    # Without the search space, the steps of 0.5 and 2 are not in the bounds:
    # left continuous (Optuna rounds them), never inferred from the values.
    for given, continuous in (
        (None, {"x", "log_x", "step_x", "step_n"}),
        (space, {"x", "log_x"}),
    ):
        round_to_grid = _grid_rounding(X, bounds, given)
        observed = (X - bounds[0]) / (bounds[1] - bounds[0])
        assert torch.allclose(round_to_grid(observed), observed, atol=1e-9)
        rounded = round_to_grid(U)
        assert rounded.shape == U.shape
        assert torch.equal(round_to_grid(rounded), rounded)
        for u, r in zip(U.squeeze(-2), rounded.squeeze(-2), strict=True):
            before, after = unit_to_params(u), unit_to_params(r)
            # Every discrete parameter as Optuna would have rounded it (the
            # 10**6 integers too); each continuous one left as it was.
            assert {k: v for k, v in before.items() if k not in continuous} == {
                k: v for k, v in after.items() if k not in continuous
            }
            for name in continuous:
                assert torch.equal(r[columns[name]], u[columns[name]])
    # Random floats (as the functions' direct callers pass) have no grid.
    train_x = torch.rand(10, 3, dtype=torch.float64, generator=rng)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.float64)
    assert _grid_rounding(train_x, unit) is None
    assert _grid_rounding(train_x * 20.0 - 1.0, unit * 20.0 - 1.0) is None


def test_grid_rounding_infers_no_step_from_the_observed_values():
    # A continuous parameter warm-started at 0.25 and 0.75 was only ever
    # proposed at those two values (a 2-point grid inferred from them), and an
    # integer range 0..49 warm-started at 2, 7, 12 only on multiples of 5 plus 2.
    X = torch.tensor([[0.25, 2.0], [0.75, 7.0], [0.25, 12.0]], dtype=torch.float64)
    bounds = torch.tensor([[0.0, -0.5], [1.0, 49.5]], dtype=torch.float64)
    round_to_grid = _grid_rounding(X, bounds)
    # Integer values in bounds widened by half a step: an integer (step 1).
    U = torch.tensor([[0.5, (49.0 + 0.5) / 50.0], [0.1, (30.2 + 0.5) / 50.0]])
    rounded = round_to_grid(U.to(X))
    assert torch.equal(rounded[:, 0], U[:, 0].to(X))
    assert (bounds[0, 1] + rounded[:, 1] * 50.0).tolist() == pytest.approx([49, 30])
    # Nothing else discrete: no rounding at all.
    assert _grid_rounding(X[:, :1], bounds[:, :1]) is None
    # A continuous (0, 1) column observed at 1 only is no one-choice category.
    assert _grid_rounding(torch.ones(3, 1, dtype=torch.float64), bounds[:, :1]) is None


def test_grid_rounding_follows_the_search_space():
    from optuna.distributions import FloatDistribution, IntDistribution

    from botorch_sketch.integrations.optuna.encoding import _Encoding

    space = {
        "x": FloatDistribution(0.0, 1.0),
        "n": IntDistribution(0, 50, step=5),
        "s": FloatDistribution(0.0, 1.0, step=0.25),
        "fixed": IntDistribution(3, 3),
    }
    # BoTorchSampler's order: sorted by name, single values left out.
    ordered = {name: space[name] for name in ("n", "s", "x")}
    bounds = torch.as_tensor(_Encoding(ordered)._bounds.T)
    # Observed at 0 and 10, 0.25 and 0.75: no coarser grid taken from them.
    X = torch.tensor([[0.0, 0.25, 0.25], [10.0, 0.75, 0.75]], dtype=torch.float64)
    round_to_grid = _grid_rounding(X, bounds, space)
    U = torch.rand(
        256, 1, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    values = bounds[0] + round_to_grid(U) * (bounds[1] - bounds[0])
    n, s, x = values[..., 0], values[..., 1], values[..., 2]
    assert torch.allclose(n, (n / 5).round() * 5) and set(
        n.round().view(-1).tolist()
    ) > {
        45.0,
        50.0,
    }
    assert torch.allclose(s, (s * 4).round() / 4) and set(s.view(-1).tolist()) >= {
        0.0,
        0.5,
        1.0,
    }
    assert torch.equal(x, bounds[0, 2] + U[..., 2] * (bounds[1, 2] - bounds[0, 2]))
    # A space that is not the study's is refused, naming what differs.
    with pytest.raises(InputDataError, match="'s'.*bounds"):
        _grid_rounding(X, bounds, {**space, "s": FloatDistribution(0.0, 2.0, step=0.5)})
    with pytest.raises(InputDataError, match="2 columns"):
        _grid_rounding(X, bounds, {"n": space["n"], "x": space["x"]})
    with pytest.raises(InputDataError, match="search_space must map"):
        NystromCandidates(search_space={"x": (0.0, 1.0)})


def test_grid_rounding_cost_is_linear_in_the_trials():
    import time

    # At n = 20000 the inferred grids compared 4096 x n values a column
    # (26 s and 2.8 GB): now O(n D).
    n = 20000
    rng = torch.Generator().manual_seed(0)
    depth = torch.randint(2, 13, (n, 1), generator=rng).to(torch.float64)
    # Distinct values, each at the centre of a cell of a fine grid.
    fine = (torch.randperm(2**20, generator=rng)[:n, None] + 0.5) / 2**20
    X = torch.cat([depth, fine], dim=-1)
    bounds = torch.tensor([[1.5, 0.0], [12.5, 1.0]], dtype=torch.float64)
    start = time.perf_counter()
    round_to_grid = _grid_rounding(X, bounds)
    assert time.perf_counter() - start < 1.0
    U = torch.tensor([[0.49, 0.123456]], dtype=torch.float64)
    assert round_to_grid(U)[0, 1] == U[0, 1]


def test_nystrom_candidates_propose_between_warm_starts(monkeypatch):
    from functools import partial

    from optuna.distributions import FloatDistribution, IntDistribution
    from optuna_integration import BoTorchSampler

    original = candidates_module._suggest
    monkeypatch.setattr(
        candidates_module, "_suggest", lambda **kwargs: original(**{**kwargs, **FAST})
    )
    distributions = {
        "x": FloatDistribution(0.0, 1.0),
        "n": IntDistribution(0, 50, step=5),
    }
    for candidates_func in (
        NystromCandidates(),
        NystromCandidates(search_space=distributions),
        partial(nystrom_candidates_func, search_space=distributions),
    ):
        torch.manual_seed(0)
        sampler = BoTorchSampler(candidates_func=candidates_func, n_startup_trials=0)
        study = optuna.create_study(sampler=sampler)
        for x, n in ((0.25, 10), (0.75, 20), (0.25, 20), (0.75, 10)):
            study.add_trial(
                optuna.trial.create_trial(
                    params={"x": x, "n": n},
                    distributions=distributions,
                    value=(x - 0.5) ** 2 + (n - 15) ** 2 / 100,
                )
            )
        params = sampler.sample_relative(study, new_trial(study), distributions)
        assert params["x"] not in (0.25, 0.75)
        assert params["n"] % 5 == 0


@pytest.mark.slow
@pytest.mark.parametrize("carried", [False, True])
@pytest.mark.parametrize(
    "n_objectives, constrained",
    [(1, False), (2, False), (4, False), (1, True), (2, True), (3, True)],
)
def test_candidates_functions_in_optuna_integrations_own_cases(
    carried, n_objectives, constrained
):
    # optuna-integration's test_botorch_specify_candidates_func(_constrained),
    # with ours in its list: 2 random trials then 2 from the model, every
    # trial complete and the constraints function called for each.
    from optuna_integration import BoTorchSampler

    calls = []

    def constraints_func(trial):
        calls.append(trial.number)
        return (sum(trial.params[f"x{i}"] for i in range(n_objectives)) - 0.5,)

    sampler = BoTorchSampler(
        candidates_func=NystromCandidates() if carried else nystrom_candidates_func,
        constraints_func=constraints_func if constrained else None,
        n_startup_trials=2,
    )
    study = optuna.create_study(directions=["minimize"] * n_objectives, sampler=sampler)
    study.optimize(
        lambda t: [t.suggest_float(f"x{i}", 0, 1) for i in range(n_objectives)],
        n_trials=4,
    )
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 4
    assert calls == ([0, 1, 2, 3] if constrained else [])


@pytest.mark.parametrize("carried", [False, True])
def test_candidates_functions_in_threads_leave_gpytorch_settings_alone(carried):
    # BoTorchSampler with n_jobs=2 calls the candidates function from two
    # threads. GPyTorch's lazily_evaluate_kernels context is a class-level
    # flag: interleaved across threads it was left off for the whole process
    # (a later Ax test then took other numbers), NystromCandidates' carried
    # models were updated by two calls at once, and BoTorch's L-BFGS-B, which
    # limits BLAS to one thread in a threadpoolctl context, left it at one.
    import gpytorch
    from optuna_integration import BoTorchSampler
    from threadpoolctl import threadpool_info

    blas = [i["num_threads"] for i in threadpool_info()]
    assert gpytorch.settings.lazily_evaluate_kernels.is_default()
    sampler = BoTorchSampler(
        candidates_func=NystromCandidates() if carried else nystrom_candidates_func,
        n_startup_trials=1,
        seed=0,
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=12, n_jobs=2)
    assert len(study.trials) == 12
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    assert gpytorch.settings.lazily_evaluate_kernels.is_default()
    assert [i["num_threads"] for i in threadpool_info()] == blas
