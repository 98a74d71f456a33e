import warnings

import pytest
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.test_functions import Hartmann

from botorch_sketch.bo import GSSBO, GSSBOSurrogate, run_gssbo
from botorch_sketch.models import GradientSubsetGP, NystromGP

FAST_FIT = {"optimizer_kwargs": {"options": {"maxiter": 10}}}
FAST = {"num_restarts": 2, "raw_samples": 16, "progress": False}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _f(X):
    return -((X - 0.3) ** 2).sum(-1, keepdim=True) + 0.1 * torch.sin(9 * X).sum(
        -1, keepdim=True
    )


def _data(n, d=2, seed=0):
    X = torch.rand(n, d, generator=torch.Generator().manual_seed(seed)).double()
    return X, _f(X)


def _surrogate(**kwargs):
    options = {
        "num_initial": 5,
        "num_neighbours": 3,
        "fit_kwargs": FAST_FIT,
        "clock": lambda: 0.0,
    }
    options.update(kwargs)
    return GSSBOSurrogate(**options)


def test_count_switch_happens_at_the_trigger_and_not_before():
    X, Y = _data(20)
    surrogate = _surrogate(switch_at=14)
    for n in range(8, 15):
        model = surrogate(X[:n], Y[:n])
        assert not model.is_subset
        assert model.train_inputs[0].shape[0] == n
        assert not surrogate.switched and surrogate.switched_at is None
    model = surrogate(X[:15], Y[:15])
    assert model.is_subset and model.subset_indices.numel() == 14
    assert surrogate.switched_at == 15
    model = surrogate(X[:18], Y[:18])
    assert model.subset_indices.numel() == 14  # M stays frozen
    assert surrogate.switched_at == 15


@pytest.mark.parametrize("slow", [3.9, 4.1])
def test_time_switch_fires_above_z_times_the_warmup_mean(slow):
    X, Y = _data(20)
    surrogate = _surrogate(time_factor=4.0, warmup=3)
    for n in range(8, 11):  # the warm-up: 1 s each
        surrogate(X[:n], Y[:n])
        surrogate.add_seconds(1.0)
    surrogate(X[:11], Y[:11])
    surrogate.add_seconds(slow)
    model = surrogate(X[:12], Y[:12])
    if slow < 4.0:
        assert not surrogate.switched and not model.is_subset
    else:
        # M is fixed to the observations of the slow iteration's model.
        assert surrogate.size == 11 and surrogate.switched_at == 12
        assert model.is_subset and model.subset_indices.numel() == 11


def test_forced_members_are_always_in_the_subset():
    X, Y = _data(40, d=3)
    surrogate = _surrogate(num_initial=6, switch_at=20, num_neighbours=4)
    surrogate(X[:20], Y[:20])
    for n in range(22, 41, 2):  # batches of two
        # The subset is chosen at the previous fit's (warm) lengthscales.
        lengthscale = surrogate.model.covar_module.lengthscale.detach().clone()
        model = surrogate(X[:n], Y[:n])
        index = set(model.subset_indices.tolist())
        assert len(index) == 20
        assert set(range(6)) <= index  # the initial design
        assert {n - 2, n - 1} <= index  # the newest batch
        best = int(Y[:n].argmax())
        assert best in index
        # The neighbours at the hyperparameters the subset was chosen with.
        forced = model.selection_forced.tolist()
        assert set(forced) <= index
        distance = ((X[:n] - X[best]) / lengthscale).norm(dim=-1)
        distance[best] = float("inf")
        neighbours = distance.argsort()[:4].tolist()
        expected = [0, 1, 2, 3, 4, 5, n - 2, n - 1, best, *neighbours]
        assert forced == list(dict.fromkeys(expected))


def test_by_default_the_neighbours_fill_every_free_place_but_one():
    X, Y = _data(30, d=3)
    surrogate = _surrogate(num_initial=6, switch_at=20, num_neighbours=None)
    surrogate(X[:20], Y[:20])
    # 20 places: 6 of the design, 2 newest, the best; of the 11 left, 10 are
    # the best's nearest neighbours and 1 is the rule's.
    assert surrogate.neighbours_for(20, 2) == 10
    assert surrogate.neighbours_for(20, 1) == 11
    lengthscale = surrogate.model.covar_module.lengthscale.detach().clone()
    model = surrogate(X[:22], Y[:22])
    best = int(Y[:22].argmax())
    distance = ((X[:22] - X[best]) / lengthscale).norm(dim=-1)
    distance[best] = float("inf")
    neighbours = distance.argsort()[:10].tolist()
    expected = [0, 1, 2, 3, 4, 5, 20, 21, best, *neighbours]
    assert model.selection_forced.tolist() == list(dict.fromkeys(expected))
    assert GSSBOSurrogate(num_initial=5).num_neighbours is None
    with pytest.raises(InputDataError, match="switch_at"):
        GSSBOSurrogate(num_initial=18, switch_at=20)  # no free place left


def test_neighbours_are_nearest_in_the_kernel_geometry():
    X, Y = _data(30, d=2)
    model = GradientSubsetGP(X, Y, subset_size=12, num_neighbours=3)
    # A long lengthscale in the second input: only the first one counts.
    model.covar_module.lengthscale = torch.tensor([[0.1, 100.0]])
    best = int(Y.argmax())
    gap = (X[:, 0] - X[best, 0]).abs()
    gap[best] = float("inf")
    expected = gap.argsort()[:3]
    assert model.neighbour_indices().tolist() == expected.tolist()


def test_a_count_switched_run_is_reproducible_and_leaves_torch_alone():
    problem = Hartmann(dim=3, negate=True)
    options = {
        "num_initial": 5,
        "switch_at": 12,
        "num_neighbours": 2,
        "surrogate_kwargs": {"fit_kwargs": FAST_FIT},
        "seed": 3,
        **FAST,
    }
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = run_gssbo(problem, problem.bounds, evaluations=16, **options)
    assert torch.equal(torch.get_rng_state(), state)
    second = run_gssbo(problem, problem.bounds, evaluations=16, **options)
    assert first.switched_at == 13
    assert torch.equal(torch.cat(first.X), torch.cat(second.X))
    assert first.values == second.values
    assert first.subset_size[-1] == 12


@pytest.mark.parametrize("acquisition", ["ucb", "logei", "qlognei"])
@pytest.mark.parametrize("q", [1, 4])
def test_the_loop_runs_with_each_acquisition_and_batch_size(acquisition, q):
    problem = Hartmann(dim=3, negate=True)
    trace = run_gssbo(
        problem,
        problem.bounds,
        evaluations=13 + 2 * q,
        num_initial=5,
        q=q,
        acquisition=acquisition,
        switch_at=13,
        num_neighbours=1,
        surrogate_kwargs={"fit_kwargs": FAST_FIT},
        **FAST,
    )
    assert len(trace.values) == trace.num_iterations * q
    assert trace.switched_at is not None
    assert trace.subset_size[-1] == 13
    assert all(trace.incumbent_in_subset)
    assert all(x.shape == (q, 3) for x in trace.X)
    lower, upper = problem.bounds
    X = torch.cat(trace.X)
    assert bool(((X >= lower) & (X <= upper)).all())


def test_ask_tell_and_a_custom_acquisition_factory():
    bounds = torch.tensor([[-1.0, 0.0], [1.0, 2.0]], dtype=torch.double)
    seen = []

    def factory(model, X, Y, q):
        seen.append((X.shape[0], Y.shape[0], q))
        return UpperConfidenceBound(model, beta=4.0)

    opt = GSSBO(
        bounds,
        num_initial=4,
        acquisition=factory,
        switch_at=9,
        num_neighbours=1,
        num_restarts=2,
        raw_samples=16,
        surrogate_kwargs={"fit_kwargs": FAST_FIT},
    )
    X = opt.ask()
    assert X.shape == (4, 2)
    with pytest.raises(UnsupportedError, match="tell"):
        opt.ask()
    opt.tell(X, _f(X))
    for _ in range(7):
        X = opt.ask()
        opt.tell(X, _f(X).squeeze(-1))
    # The factory gets all observations, the subset's model notwithstanding.
    assert seen[-1] == (10, 10, 1)
    assert opt.surrogate.model.is_subset
    x, y = opt.best
    assert x.shape == (2,) and y == float(opt.train_Y.max())


def test_dtc_posterior_after_the_switch():
    X, Y = _data(20)
    surrogate = _surrogate(switch_at=12, posterior="dtc")
    assert isinstance(surrogate(X[:12], Y[:12]), GradientSubsetGP)
    model = surrogate(X[:14], Y[:14])
    assert isinstance(model, NystromGP)
    assert model.train_inputs[0].shape[0] == 14  # every observation
    assert model.posterior(X[:3]).mean.shape == (3, 1)


def test_search_bounds_are_the_cube_until_the_switch_then_around_the_incumbent():
    X, Y = _data(20, d=3)
    surrogate = _surrogate(switch_at=14)
    surrogate(X[:14], Y[:14])
    cube = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    assert torch.equal(surrogate.search_bounds(X[:14], Y[:14]), cube)
    surrogate(X[:15], Y[:15])
    box = surrogate.search_bounds(X[:15], Y[:15], length=0.4)
    best = X[int(Y[:15].argmax())]
    assert bool(((box[0] <= best) & (best <= box[1])).all())
    assert bool(((box >= 0) & (box <= 1)).all())
    assert bool((box[1] - box[0] < 1).all())
    assert torch.equal(surrogate.search_bounds(X[:15], Y[:15], length=None), cube)


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"bounds": torch.zeros(3, 2)}, "bounds", InputDataError),
        ({"bounds": torch.tensor([0.0, 1.0])}, "bounds", InputDataError),
        ({"bounds": torch.tensor([[1.0, 0.0], [0.0, 1.0]])}, "bounds", InputDataError),
        ({"q": 0}, "q", InputDataError),
        ({"subset_size": 9}, "subset_size", InputDataError),
        ({"switch_at": 8}, "switch_at", InputDataError),
        ({"acquisition": "ei"}, "acquisition", InputDataError),
        ({"subset_rule": "kmeans"}, "subset_rule", InputDataError),
        ({"posterior": "sparse"}, "posterior", InputDataError),
        ({"time_factor": 1.0}, "time_factor", InputDataError),
        ({"region_length": 0.0}, "region_length", InputDataError),
    ],
)
def test_bad_input_names_the_argument(kwargs, name, error):
    options = {
        "bounds": torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double),
        "num_initial": 5,
        "q": 2,
        "num_neighbours": 2,
        "switch_at": 20,
    }
    options.update(kwargs)
    with pytest.raises(error, match=name):
        GSSBO(**options)


def test_tell_refuses_other_points_and_tell_without_ask():
    opt = GSSBO(torch.tensor([[0.0], [1.0]], dtype=torch.double), num_initial=3)
    with pytest.raises(UnsupportedError, match="ask"):
        opt.tell(torch.zeros(3, 1), torch.zeros(3))
    X = opt.ask()
    with pytest.raises(InputDataError, match="Y"):
        opt.tell(X, torch.zeros(2))
    with pytest.raises(InputDataError, match="X"):
        opt.tell(X + 0.5, torch.zeros(3))


def test_optuna_sketch_sampler_takes_the_surrogate_as_its_model_factory():
    optuna = pytest.importorskip("optuna")
    from botorch_sketch.integrations.optuna import SketchSampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    surrogate = GSSBOSurrogate(
        num_initial=6, switch_at=10, num_neighbours=1, fit_kwargs=FAST_FIT
    )
    sampler = SketchSampler(
        model=surrogate, seed=0, n_startup_trials=6, num_restarts=2, raw_samples=16
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(
        lambda t: (
            (t.suggest_float("x", -2, 2) - 0.3) ** 2
            + (t.suggest_float("y", -2, 2) + 0.5) ** 2
        ),
        n_trials=12,
    )
    assert surrogate.switched_at == 11
    assert surrogate.model.subset_indices.numel() == 10
