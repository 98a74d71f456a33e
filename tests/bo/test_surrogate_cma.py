import math
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError

from botorch_sketch.bo import SurrogateCMAES, run_large_batch
from botorch_sketch.bo.checkpoint import CheckpointError

pytestmark = pytest.mark.cpu_only  # cma's draws are NumPy arrays


def _box(d, low=0.0, high=1.0):
    return torch.tensor([[low] * d, [high] * d], dtype=torch.double)


def _bowl(X):
    # A rotated ellipsoid (maximised) with its top at 0.3 in every coordinate.
    d = X.shape[-1]
    Q = torch.linalg.qr(
        torch.randn(d, d, generator=torch.Generator().manual_seed(9), dtype=X.dtype)
    ).Q
    scales = torch.logspace(0, 3, d, dtype=X.dtype)
    return -(((X - 0.3) @ Q) ** 2 * scales).sum(-1)


def _spy(es, told):
    # Record each (points, values) CMA-ES is told.
    tell = es.tell

    def recorded(X, F):
        told.append(
            (
                torch.as_tensor(X, dtype=torch.double),
                torch.as_tensor(F, dtype=torch.double),
            )
        )
        tell(X, F)

    es.tell = recorded


def _run(optimizer, f, evaluations):
    told = 0
    while told < evaluations:
        X = optimizer.ask()
        optimizer.tell(X, f(X))
        told += X.shape[0]
    return optimizer


@pytest.mark.parametrize("residual", [True, False])
def test_sequential_use_reaches_the_top_of_a_rotated_ellipsoid(residual):
    optimizer = _run(
        SurrogateCMAES(_box(4), q=1, residual=residual, seed=0), _bowl, 400
    )
    x, value = optimizer.best()
    assert value > -1e-6
    assert torch.allclose(x, torch.full((4,), 0.3, dtype=torch.double), atol=1e-3)
    # Most populations were mostly the model's: fewer evaluations than draws.
    assert sum(optimizer.evaluated_share) / len(optimizer.evaluated_share) < 0.6


def test_cma_es_is_told_true_values_where_evaluated_and_model_values_elsewhere():
    optimizer = SurrogateCMAES(_box(3), q=1, seed=1)
    told = []
    _spy(optimizer.es, told)
    checked, partial = 0, 0
    while checked < 8:
        X = optimizer.ask()
        g, es = optimizer._generation, optimizer.es
        optimizer.tell(X, _bowl(X))
        if optimizer._generation is None:  # the population was told to CMA-ES
            values = told[-1][1] * optimizer._scale
            evaluated = g["state"] == 2
            assert torch.allclose(values[evaluated], -_bowl(g["X"][evaluated]))
            assert torch.allclose(values[~evaluated], g["mean"][~evaluated])
            checked += 1
            partial += int(bool((~evaluated).any()))
            if optimizer.es is not es:  # a restart
                _spy(optimizer.es, told)
    assert partial > 0  # some populations were partly the model's


@pytest.mark.parametrize("q", [1, 2, 7, 100, 1000])
def test_every_q_runs_through_ask_and_tell_and_resumes_from_a_checkpoint(q, tmp_path):
    d = 3
    optimizer = SurrogateCMAES(_box(d, -2.0, 3.0), q=q, seed=3)
    for _ in range(3):
        X = optimizer.ask()
        assert 1 <= X.shape[0] <= q
        assert bool(((X >= -2.0) & (X <= 3.0)).all())
        optimizer.tell(X, _bowl(X))
    X = optimizer.ask()
    half = max(1, X.shape[0] // 2)
    optimizer.tell(X[:half], _bowl(X[:half]))  # the rest stays pending
    optimizer.save(tmp_path / "run.pt")
    resumed = SurrogateCMAES.load(tmp_path / "run.pt")
    assert resumed.pending == optimizer.pending == X.shape[0] - half
    assert torch.equal(resumed.train_X, optimizer.train_X)
    for opt in (optimizer, resumed):
        if X.shape[0] > half:
            opt.tell(X[half:], _bowl(X[half:]))
    for _ in range(2):
        A, B = optimizer.ask(), resumed.ask()
        assert torch.equal(A, B)
        optimizer.tell(A, _bowl(A))
        resumed.tell(B, _bowl(B))
    assert optimizer.best()[1] == resumed.best()[1]


def test_a_preselected_batch_is_the_draws_of_best_model_mean():
    q, oversample = 20, 3
    optimizer = SurrogateCMAES(_box(4), q=q, oversample=oversample, seed=5)
    told, pools = [], []
    draw = optimizer._draw

    def drawn(number, kept, share, coordinates):
        X = draw(number, kept, share, coordinates)
        sparse = min(round(share * number), number - kept)
        pools.append((torch.as_tensor(X, dtype=torch.double).clamp(0, 1), sparse))
        return X

    optimizer._draw = drawn
    _spy(optimizer.es, told)
    preselected = 0
    for step in range(12):
        es, before = optimizer.es, len(pools)
        X = optimizer.ask()
        g, sigma = optimizer._generation, float(optimizer.es.sigma)
        if len(pools) > before:  # this batch was pre-selected
            assert step > 0  # never the first: there is no model yet
            pool, sparse = pools[-1]
            size = optimizer.popsize  # q, doubled at each restart
            assert pool.shape[0] == oversample * size and sparse == size
            # The population: the q draws of lowest predicted (minimised) value.
            best = pool[g["predict"](pool).argsort()[:size]]
            assert torch.equal(best, g["X"])
            assert X.shape[0] == q
            preselected += 1
        optimizer.tell(X, _bowl(X))
        if optimizer.es is not es:  # a restart
            _spy(optimizer.es, told)
        elif optimizer._generation is None:
            assert torch.allclose(told[-1][0], g["X"])  # the evaluated population
            if g["preselected"]:  # its steps lean: the step size may not grow
                assert optimizer.es.sigma <= sigma
    assert preselected > 0
    assert optimizer.train_X.shape[0] == 12 * q
    # One is plain CMA-ES: no pool is ever drawn.
    plain = SurrogateCMAES(_box(4), q=q, oversample=1, seed=5)
    plain._draw = drawn
    before = len(pools)
    _run(plain, _bowl, 6 * q)
    assert len(pools) == before


@pytest.mark.parametrize(
    "options, message",
    [
        ({"oversample": 0}, "oversample"),
        ({"sparse_share": 1.5}, "sparse_share"),
        ({"sparse_coordinates": 0}, "sparse_coordinates"),
    ],
)
def test_bad_preselection_settings_are_refused_by_name(options, message):
    with pytest.raises(InputDataError, match=message):
        SurrogateCMAES(_box(4), q=20, **options)


def test_float32_copies_of_asked_points_are_matched():
    optimizer = SurrogateCMAES(_box(3, -5.0, 5.0), q=4, seed=0)
    X = optimizer.ask()
    optimizer.tell(X.float(), _bowl(X))
    assert optimizer.pending == 0
    assert optimizer.train_X.shape[0] == 4


def test_unasked_or_repeated_points_are_refused():
    optimizer = SurrogateCMAES(_box(3), q=4, seed=0)
    X = optimizer.ask()
    with pytest.raises(InputDataError, match="not asked"):
        optimizer.tell(X + 0.1, _bowl(X))
    with pytest.raises(InputDataError, match="twice"):
        optimizer.tell(torch.cat([X[:1], X[:1]]), _bowl(X[:2]))
    optimizer.tell(X[:1], _bowl(X[:1]))
    with pytest.raises(InputDataError, match="not asked"):
        optimizer.tell(X[:1], _bowl(X[:1]))
    with pytest.raises(InputDataError, match="numbers"):
        optimizer.tell(X[1:2], ["a"])


def test_asking_past_the_outstanding_increment_is_refused():
    optimizer = SurrogateCMAES(_box(3), q=1, seed=0)
    optimizer.ask()
    target = optimizer._generation["target"]  # lq-CMA-ES's first increment
    assert target > 1
    for _ in range(target - 1):
        optimizer.ask()
    with pytest.raises(UnsupportedError, match="not told"):
        optimizer.ask()
    assert optimizer.pending == target


def test_failed_points_are_not_modelled_and_rank_last():
    optimizer = SurrogateCMAES(_box(3), q=5, seed=0)
    X = optimizer.ask()
    y = _bowl(X)
    y[0] = math.nan
    optimizer.tell(X, y)
    assert optimizer.train_X.shape[0] == X.shape[0] - 1
    assert torch.isfinite(optimizer.train_Y).all()


def test_huge_populations_are_refused_with_their_size():
    with pytest.raises(InputDataError, match="million"):
        SurrogateCMAES(_box(10), q=10**8)


def test_a_tampered_checkpoint_is_refused(tmp_path):
    optimizer = SurrogateCMAES(_box(3), q=2, seed=0)
    X = optimizer.ask()
    optimizer.tell(X, _bowl(X))
    optimizer.save(tmp_path / "run.pt")
    from botorch_sketch.bo.checkpoint import load_checkpoint, save_checkpoint

    state = load_checkpoint(tmp_path / "run.pt")
    state["log"][1][1][0] = state["log"][1][1][0] + 0.25  # a point never asked
    save_checkpoint(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="does not replay"):
        SurrogateCMAES.load(tmp_path / "bad.pt")


def test_the_streams_are_the_optimizers_own():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    a = _run(SurrogateCMAES(_box(3), q=3, seed=5), _bowl, 30)
    assert torch.equal(torch.get_rng_state(), before)
    b = _run(SurrogateCMAES(_box(3), q=3, seed=5), _bowl, 30)
    assert torch.equal(a.train_X, b.train_X)


def test_run_large_batch_runs_the_surrogate_strategy_from_q_1():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = run_large_batch(
            _bowl,
            _box(3),
            evaluations=60,
            q=1,
            strategy="surrogate-cma",
            progress=False,
        )
    assert len(trace.values) == 60 - 1  # the first point is the design
    assert float(trace.best_value[-1]) > -0.1
    with pytest.raises(InputDataError, match="surrogate does not apply"):
        run_large_batch(
            _bowl,
            _box(3),
            evaluations=10,
            q=1,
            strategy="surrogate-cma",
            surrogate=lambda X, Y: None,
            progress=False,
        )
    with pytest.raises(UnsupportedError, match="surrogate-cma"):
        run_large_batch(_bowl, _box(3), evaluations=10, q=1, progress=False)


def test_the_regression_stays_diagonal_past_max_quadratic_terms():
    f = _bowl
    wide = _run(SurrogateCMAES(_box(4), q=1, seed=0, max_quadratic_terms=10), f, 120)
    full = _run(SurrogateCMAES(_box(4), q=1, seed=0), f, 120)
    assert "full" in full.trend.types
    assert "full" not in wide.trend.types and "quadratic" in wide.trend.types


def _wavy(X):
    # A bowl with ripples the quadratic cannot follow (maximised).
    return _bowl(X) - 0.3 * torch.cos(12 * X).sum(-1)


@pytest.mark.parametrize("f", [_bowl, _wavy])
def test_each_population_predicts_with_the_model_that_ranks_the_recent_points_better(
    f,
):
    from scipy.stats import kendalltau

    from botorch_sketch.bo.whitened_gp import WhitenedResidualGP

    optimizer = SurrogateCMAES(_box(4), q=1, seed=2)
    choices = optimizer.model_choices
    checked, kept, seen, uses_gp = 0, 0, None, None
    skipped = compared = 0
    while checked < 30:
        refits = len(choices)
        X = optimizer.ask()
        g = optimizer._generation
        if g is not seen:
            seen, uses_gp = g, None
            if len(choices) > refits:
                # A new population's first fit chose between the GP and the
                # regression on the data so far.
                n = optimizer.train_X.shape[0]
                k = min(n, max(15, 2 * optimizer.popsize))
                Xr, Fr = optimizer.train_X[n - k :], -optimizer.train_Y[n - k :, 0]
                tau_trend = kendalltau(g["trend"](Xr), Fr).statistic
                tau_trend = -1.0 if math.isnan(tau_trend) else tau_trend
                uses_gp = choices[-1]
                if "metric" not in g:
                    # No GP was even built: the regression ranks well enough
                    # to be trusted alone.
                    assert not uses_gp
                    assert tau_trend >= optimizer.tau_threshold - 1e-12
                    skipped += 1
                else:
                    assert tau_trend < optimizer.tau_threshold + 1e-12
                    mean, root = g["metric"]
                    gp = WhitenedResidualGP(
                        g["trend"],
                        optimizer.train_X,
                        -optimizer.train_Y.squeeze(-1),
                        mean,
                        root,
                        local_size=optimizer.local_size,
                        hyperparameters=g["hyperparameters"],
                    )
                    loo = gp.loo_means(Xr, torch.arange(n - k, n))
                    tau_gp = kendalltau(loo, Fr).statistic
                    tau_gp = -1.0 if math.isnan(tau_gp) else tau_gp
                    assert uses_gp == (tau_gp > tau_trend + 1e-12) or (
                        abs(tau_gp - tau_trend) < 1e-12
                    )
                    compared += 1
                expected = gp.predict(g["X"])[0] if uses_gp else g["trend"](g["X"])
                assert torch.allclose(g["predict"](g["X"]), expected)
                checked += 1
        refits = len(choices)
        optimizer.tell(X, f(X))
        if optimizer._generation is seen and len(choices) > refits:
            if uses_gp is None:  # the population's first fit with data
                uses_gp = choices[-1]
            else:  # a later increment keeps the population's choice
                assert choices[-1] == uses_gp
                kept += 1
    assert kept > 0
    assert compared > 0
    if f is _bowl:  # an exact quadratic: the regression is chosen once it fits
        assert skipped > 0
        assert not all(optimizer.model_choices[-10:])


def test_select_false_predicts_with_the_gp_throughout():
    optimizer = _run(SurrogateCMAES(_box(3), q=1, select=False, seed=0), _bowl, 80)
    assert optimizer.model_choices and all(optimizer.model_choices)
    regression = _run(SurrogateCMAES(_box(3), q=1, residual=False, seed=0), _bowl, 40)
    assert regression.model_choices == []


def test_checkpoints_without_the_choice_resume_with_the_gp_throughout(tmp_path):
    from botorch_sketch.bo.checkpoint import load_checkpoint, save_checkpoint

    optimizer = _run(SurrogateCMAES(_box(3), q=2, select=False, seed=4), _bowl, 40)
    optimizer.save(tmp_path / "run.pt")
    state = load_checkpoint(tmp_path / "run.pt")
    del state["config"]["select"]  # written before the option existed
    save_checkpoint(state, tmp_path / "old.pt")
    resumed = SurrogateCMAES.load(tmp_path / "old.pt")
    assert resumed.select is False
    assert torch.equal(resumed.ask(), optimizer.ask())


@pytest.mark.parametrize("factor, evaluations", [(1e8, 300), (1e-12, 150)])
def test_the_objectives_units_do_not_stop_the_run_early(factor, evaluations):
    # CMA-ES's tolerances are absolute (1e-11). Told in units of the first
    # population's spread, large values stopped it short of the optimum's
    # precision and restarted it; told as they are, tiny ones would stop it
    # at once.
    def scaled(X):
        return factor * _bowl(X)

    optimizer = _run(SurrogateCMAES(_box(3), q=1, seed=0), scaled, evaluations)
    assert optimizer.restarts == 0
    assert optimizer.best()[1] / factor > -1e-6
