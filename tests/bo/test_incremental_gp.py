import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch import NystromGP
from botorch_sketch.bo import IncrementalGP
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


def _f(X):
    return torch.sin(5 * X).sum(-1, keepdim=True)


def _stream(n0=40, steps=6, q=5, d=3, seed=0):
    # An initial design, then batches clustered like a BO loop's.
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n0, d, generator=g, dtype=torch.double)
    batches = []
    for _ in range(steps):
        centre = torch.rand(1, d, generator=g, dtype=torch.double)
        batches.append(
            (centre + 0.1 * torch.randn(q, d, generator=g, dtype=torch.double)).clamp(
                0, 1
            )
        )
    noise = 0.05 * torch.randn(n0 + steps * q, 1, generator=g, dtype=torch.double)
    return X, batches, noise


def _rebuilt(model):
    # The same data, inducing inputs, hyperparameters and transform statistics.
    fixed = model.train_X[model.inducing_index]
    rebuilt = NystromGP(model.train_X, model.train_Y, inducing=fixed)
    rebuilt.load_state_dict(model.state_dict())
    return rebuilt


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        yield


def test_posterior_between_refits_equals_a_rebuilt_model():
    X, batches, noise = _stream()
    surrogate = IncrementalGP(
        refit_every=100,
        drift_tolerance=None,
        generator=torch.Generator().manual_seed(1),
    )
    Y = _f(X) + noise[: len(X)]
    surrogate(X, Y)
    Xt = torch.rand(7, 3, generator=torch.Generator().manual_seed(2)).double()
    for batch in batches:
        X = torch.cat([X, batch])
        Y = _f(X) + noise[: len(X)]
        model = surrogate(X, Y)
        assert surrogate.counts.last == "conditioned"
        reference = _rebuilt(model)
        post, ref = model.posterior(Xt), reference.posterior(Xt)
        torch.testing.assert_close(post.mean, ref.mean, rtol=1e-8, atol=1e-8)
        torch.testing.assert_close(
            post.covariance_matrix, ref.covariance_matrix, rtol=1e-8, atol=1e-8
        )
    assert surrogate.counts.builds == 1 and surrogate.counts.refits == 0
    assert model.train_X.shape[0] == X.shape[0]


def test_new_points_join_with_their_leverage_probability():
    X, batches, noise = _stream(steps=1, q=30)
    Y = _f(X) + noise[: len(X)]
    # qbar huge: every new point's probability is 1; tiny: (almost) 0.
    for qbar, joins in [(1e9, True), (1e-12, False)]:
        surrogate = IncrementalGP(refit_every=100, drift_tolerance=None, qbar=qbar)
        first = surrogate(X, Y)
        m0 = first.inducing_index.numel()
        X2 = torch.cat([X, batches[0]])
        model = surrogate(X2, _f(X2) + noise[: len(X2)])
        assert surrogate.counts.last == "conditioned"
        grown = model.inducing_index.numel() - m0
        assert (grown == 30) if joins else (grown == 0)
        if joins:
            assert set(range(len(X), len(X2))) <= set(model.inducing_index.tolist())


def test_scheduled_refits_also_wait_for_the_data_to_grow():
    X, batches, noise = _stream(steps=7)
    surrogate = IncrementalGP(
        refit_every=1, refit_growth=0.3, drift_tolerance=None, qbar=1e-12
    )
    surrogate(X, _f(X) + noise[: len(X)])
    refits = []
    for batch in batches:
        X = torch.cat([X, batch])
        surrogate(X, _f(X) + noise[: len(X)])
        if surrogate.counts.last == "refit":
            refits.append(len(X))
    # 40 points fitted: the next refit at >= 52 points (55), then at >= 71.5 (75).
    assert refits == [55, 75]
    with pytest.raises(InputDataError, match="refit_growth"):
        IncrementalGP(refit_growth=-0.1)


def test_refits_on_schedule_growth_and_changed_data():
    X, batches, noise = _stream(steps=4)
    surrogate = IncrementalGP(refit_every=3, drift_tolerance=None, qbar=1e-12)
    Y = _f(X) + noise[: len(X)]
    surrogate(X, Y)
    actions = []
    for batch in batches:
        X = torch.cat([X, batch])
        Y = _f(X) + noise[: len(X)]
        surrogate(X, Y)
        actions.append((surrogate.counts.last, surrogate.counts.last_reason))
    assert actions[:3] == [
        ("conditioned", ""),
        ("conditioned", ""),
        ("refit", "schedule"),
    ]
    # The same data again: nothing to do, the same model.
    model = surrogate.model
    assert surrogate(X, Y) is model and surrogate.counts.last == "unchanged"
    # Changed history: rebuilt and refitted.
    surrogate(X.flip(0), Y.flip(0))
    assert surrogate.counts.last_reason == "data changed"
    # Fewer rows than the previous inducing set numbered (as when a study's
    # completed trials are read back in another order, or some are dropped):
    # the set is chosen afresh, not indexed out of range.
    few = X.shape[0] // 4
    model = surrogate(X[-few:], Y[-few:])
    assert surrogate.counts.last_reason == "data changed"
    assert int(model.inducing_index.max()) < few
    # Growth: every new point joins, so the set doubles and is redrawn.
    grow = IncrementalGP(refit_every=100, drift_tolerance=None, qbar=1e9)
    X0, Y0 = X[:10], Y[:10]
    grow(X0, Y0)
    grow(X[:40], Y[:40])
    assert grow.counts.last_reason == "growth"


def test_refit_warm_starts_from_the_previous_hyperparameters():
    X, batches, noise = _stream(steps=1)
    Y = _f(X) + noise[: len(X)]
    surrogate = IncrementalGP(
        refit_every=1, fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 1}}}
    )
    first = surrogate(X, Y)
    lengthscale = first.covar_module.lengthscale.detach().clone()
    X2 = torch.cat([X, batches[0]])
    second = surrogate(X2, _f(X2) + noise[: len(X2)])
    assert surrogate.counts.last == "refit"
    # One optimiser step from the previous values stays near them; a cold start
    # would begin at the prior's mode instead.
    cold = NystromGP(X2, _f(X2) + noise[: len(X2)])
    near = (second.covar_module.lengthscale - lengthscale).abs().max()
    far = (cold.covar_module.lengthscale - lengthscale).abs().max()
    assert near < 0.5 * far


def test_drift_triggers_a_refit():
    X, batches, noise = _stream(steps=1, q=20)
    Y = _f(X) + noise[: len(X)]
    surrogate = IncrementalGP(refit_every=100, drift_tolerance=0.05)
    surrogate(X, Y)
    # New observations far off the fitted function: the likelihood drops.
    X2 = torch.cat([X, batches[0]])
    Y2 = torch.cat([Y, 50 + _f(batches[0])])
    surrogate(X2, Y2)
    assert surrogate.counts.last == "refit"
    assert surrogate.counts.last_reason == "drift"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"refit_every": 0},
        {"refit_every": 2.5},
        {"redraw_growth": 1.0},
        {"drift_tolerance": -1.0},
        {"drift_tolerance": float("nan")},
        {"qbar": 0.0},
    ],
)
def test_bad_options_raise(kwargs):
    with pytest.raises(InputDataError):
        IncrementalGP(**kwargs)


def test_the_cap_holds_as_the_data_grow_and_steps_match_a_rebuilt_model():
    # Every coin would come up (qbar huge); the cap keeps the set at 12, and
    # with growth only at refits the set is fixed between them.
    X, batches, noise = _stream(n0=30, steps=5, q=8)
    capped = IncrementalGP(
        refit_every=100, drift_tolerance=None, qbar=1e9, max_inducing=12
    )
    Y = _f(X) + noise[: len(X)]
    sizes = [capped(X, Y).inducing_index.numel()]
    for batch in batches:
        X = torch.cat([X, batch])
        Y = _f(X) + noise[: len(X)]
        sizes.append(capped(X, Y).inducing_index.numel())
    assert max(sizes) <= 12 and sizes[-1] == 12
    frozen = IncrementalGP(
        refit_every=100,
        drift_tolerance=None,
        max_inducing=12,
        grow_between_refits=False,
    )
    X, batches, noise = _stream(n0=30, steps=3, q=8)
    Y = _f(X) + noise[: len(X)]
    first = frozen(X, Y).inducing_index.clone()
    Xt = torch.rand(5, 3, generator=torch.Generator().manual_seed(3)).double()
    for batch in batches:
        X = torch.cat([X, batch])
        Y = _f(X) + noise[: len(X)]
        model = frozen(X, Y)
        assert frozen.counts.last == "conditioned"
        assert torch.equal(model.inducing_index, first)
        reference = _rebuilt(model)
        torch.testing.assert_close(
            model.posterior(Xt).mean, reference.posterior(Xt).mean, rtol=0, atol=1e-8
        )
        torch.testing.assert_close(
            model.posterior(Xt).variance,
            reference.posterior(Xt).variance,
            rtol=0,
            atol=1e-8,
        )


def test_the_cap_also_holds_where_the_model_would_be_exact():
    # 40 points, cap 10: the exact regime (every input inducing) is off.
    X, _, noise = _stream(n0=40, steps=0)
    model = IncrementalGP(max_inducing=10)(X, _f(X) + noise[: len(X)])
    assert model.inducing_index.numel() <= 10 and not model.is_exact


def test_data_corrected_in_place_rebuild_the_model():
    # The model keeps its own copy: correcting the caller's Y in place is a
    # change of data, not "unchanged" with a stale posterior.
    X, _, noise = _stream(steps=0)
    Y = _f(X) + noise[: len(X)]
    surrogate = IncrementalGP(refit_every=100, drift_tolerance=None)
    surrogate(X, Y)
    Y[:10] += 3.0
    model = surrogate(X, Y)
    assert surrogate.counts.last == "refit"
    assert surrogate.counts.last_reason == "data changed"
    torch.testing.assert_close(model.train_Y, Y)


def test_refit_due_foretells_the_scheduled_refits(monkeypatch):
    # SketchSampler re-estimates its warping of the objective only at calls
    # that refit anyway: refit_due must say which calls those are.
    X, batches, noise = _stream(steps=6)
    surrogate = IncrementalGP(
        refit_every=2, refit_growth=0.1, drift_tolerance=None, qbar=1e-12
    )
    assert surrogate.refit_due(len(X))
    surrogate(X, _f(X) + noise[: len(X)])
    assert not surrogate.refit_due(len(X))
    dues = []
    for batch in batches:
        X = torch.cat([X, batch])
        due = surrogate.refit_due(len(X))
        surrogate(X, _f(X) + noise[: len(X)])
        assert due == (surrogate.counts.last == "refit")
        dues.append(due)
    assert any(dues) and not all(dues)
    # New values at the same inputs (a re-estimated warping): a refit that
    # keeps the inducing rows, which still number the same inputs; reordered
    # inputs do not.
    same_rows = []
    original = IncrementalGP._warm_start

    def spy(model, previous, same, **kwargs):
        same_rows.append(same)
        return original(model, previous, same, **kwargs)

    monkeypatch.setattr(IncrementalGP, "_warm_start", staticmethod(spy))
    surrogate(X, 2 * _f(X) + noise[: len(X)])
    surrogate(X.flip(0), _f(X.flip(0)))
    assert surrogate.counts.last_reason == "data changed"
    assert same_rows == [True, False]


def test_bad_shapes_are_named_before_anything_is_built():
    from botorch.exceptions.errors import BotorchTensorDimensionError, UnsupportedError

    X, _, noise = _stream(steps=0)
    Y = _f(X)
    with pytest.raises(UnsupportedError, match="single output"):
        IncrementalGP()(X, torch.cat([Y, Y], -1))
    surrogate = IncrementalGP()
    surrogate(X[:30], Y[:30])
    with pytest.raises(BotorchTensorDimensionError, match="40 rows but train_Y has 35"):
        surrogate(X, Y[:35])
    with pytest.raises(InputDataError, match="max_inducing"):
        IncrementalGP(max_inducing=2.5)
    with pytest.raises(InputDataError, match="fixed inducing"):
        IncrementalGP(max_inducing=5, model_kwargs={"inducing": X[:5]})


def test_a_kernel_in_model_kwargs_is_copied_for_each_model():
    from gpytorch.kernels import MaternKernel

    template = MaternKernel(nu=2.5, ard_num_dims=3).double()
    initial = template.lengthscale.detach().clone()
    X, batches, noise = _stream(steps=1)
    Y = _f(X) + noise[: len(X)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        first = IncrementalGP(refit_every=1, model_kwargs={"covar_module": template})
        second = IncrementalGP(refit_every=1, model_kwargs={"covar_module": template})
        a = first(X, Y)
        b = second(X, -Y)
    assert isinstance(a.covar_module, MaternKernel)
    assert a.covar_module is not template and b.covar_module is not a.covar_module
    # Each fitted its own hyperparameters; the template kept its own.
    assert not torch.allclose(a.covar_module.lengthscale, initial)
    assert torch.equal(template.lengthscale.detach(), initial)


def _surprise_surrogate(**kwargs):
    return IncrementalGP(
        refit_every=1000,
        drift_tolerance=None,
        surprise_tolerance=4.0,
        surprise_growth=0.0,
        generator=torch.Generator().manual_seed(0),
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_refit_comes_when_new_data_disagree_and_not_otherwise(seed):
    # Draws of the same function and noise agree with the fitted
    # hyperparameters: conditioned, never refitted. The same inputs with ten
    # times the noise, or with the noise gone, disagree: refitted. The new
    # inputs lie next to old ones, where the noise dominates the predictive
    # variance, so that a noise-free batch is visibly too good.
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(200, 3, generator=g, dtype=torch.double)
    noise = 0.05 * torch.randn(200, 1, generator=g, dtype=torch.double)
    step = 0.01 * torch.randn(100, 3, generator=g, dtype=torch.double)
    new_X = (X[:100] + step).clamp(0, 1)
    new_noise = 0.05 * torch.randn(100, 1, generator=g, dtype=torch.double)
    agree = _surprise_surrogate()
    agree(X, _f(X) + noise)
    all_X = torch.cat([X, new_X])
    agree(all_X, torch.cat([_f(X) + noise, _f(new_X) + new_noise]))
    assert agree.counts.last == "conditioned"
    assert abs(agree.counts.last_surprise) < 4.0
    for factor in (10.0, 0.0):
        disagree = _surprise_surrogate()
        disagree(X, _f(X) + noise)
        disagree(all_X, torch.cat([_f(X) + noise, _f(new_X) + factor * new_noise]))
        assert disagree.counts.last == "refit"
        assert disagree.counts.last_reason == "surprise"
        assert abs(disagree.counts.last_surprise) > 4.0


@pytest.mark.slow
def test_surprise_waits_for_the_data_to_grow():
    X = torch.rand(100, 3, generator=torch.Generator().manual_seed(0)).double()
    new_X = torch.rand(5, 3, generator=torch.Generator().manual_seed(1)).double()
    surrogate = _surprise_surrogate()
    surrogate.surprise_growth = 0.1
    surrogate(X, _f(X))
    surrogate(torch.cat([X, new_X]), torch.cat([_f(X), _f(new_X) + 100.0]))
    # 5% more data: not tested, conditioned.
    assert surrogate.counts.last == "conditioned"
    assert surrogate.counts.last_surprise != surrogate.counts.last_surprise  # NaN


@pytest.mark.slow
def test_hyperparameters_fitted_on_a_bounded_subset(monkeypatch):
    from botorch_sketch.bo import incremental_gp

    g = torch.Generator().manual_seed(0)
    X = torch.rand(400, 3, generator=g, dtype=torch.double)
    Y = _f(X) + 0.05 * torch.randn(400, 1, generator=g, dtype=torch.double)
    sizes = []
    original = incremental_gp.fitting_subset

    def spy(model, model_class, rows=None):
        sizes.append((model.train_X.shape[0], rows.numel(), rows.unique().numel()))
        # The newest third is always in the fit.
        assert set(range(400 - 40, 400)) <= set(rows.tolist())
        return original(model, model_class, rows=rows)

    monkeypatch.setattr(incremental_gp, "fitting_subset", spy)
    surrogate = IncrementalGP(
        hyperparameter_subset=120,
        max_inducing=50,
        fit_kwargs={"optimizer_kwargs": {"options": {"maxiter": 20}}},
    )
    model = surrogate(X, Y)
    assert sizes == [(400, 120, 120)]
    assert model.inducing_index.numel() <= 50
    # The model's posterior uses all 400 observations.
    assert model.train_X.shape[0] == 400
    # With fewer rows than the subset the model fits as NystromGP does.
    small = IncrementalGP(hyperparameter_subset=500)
    small(X, Y)
    assert len(sizes) == 1


def test_nearly_constant_outcomes_are_warned_at_the_first_build_only():
    from botorch.exceptions.warnings import InputDataWarning

    X, _, _ = _stream()
    flat = 3.0 + 1e-12 * torch.randn(X.shape[0], 1, dtype=torch.double)
    carried = IncrementalGP(refit_every=2)
    with pytest.warns(InputDataWarning, match=r"train_Y is \(nearly\) constant"):
        carried(X[:20], flat[:20])
    # Its refits rebuild the model on the same data and more: not again.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (25, 30, 35, 40):
            carried(X[:n], flat[:n])
    assert carried.counts.refits >= 1
    assert not [w for w in caught if "constant" in str(w.message)]


def test_surprise_refuses_a_chunk_size_that_is_no_count():
    # 0 failed in Tensor.split, naming no argument of ours.
    X, _, noise = _stream()
    Y = _f(X) + noise[: X.shape[0]]
    carried = IncrementalGP()
    carried(X[:30], Y[:30])
    with pytest.raises(InputDataError, match="chunk_size must be an integer"):
        carried.surprise(X[30:], Y[30:], chunk_size=0)


def test_grow_between_refits_must_be_a_bool():
    with pytest.raises(InputDataError, match="grow_between_refits"):
        IncrementalGP(grow_between_refits="no")
    with pytest.raises(InputDataError, match="surprise_tolerance"):
        IncrementalGP(surprise_tolerance=float("nan"))


@pytest.mark.slow
def test_a_cap_the_caller_set_is_not_warned_at_every_refit():
    from botorch_sketch.sketching.rules import InducingSetCapWarning

    g = torch.Generator().manual_seed(0)
    X = torch.rand(300, 3, generator=g, dtype=torch.double)
    Y = _f(X) + 0.01 * torch.randn(300, 1, generator=g, dtype=torch.double)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = IncrementalGP(max_inducing=10)(X, Y)
    assert model.inducing_index.numel() <= 10
    assert not [w for w in caught if issubclass(w.category, InducingSetCapWarning)]
    # Without a cap of the caller's, the rule's own cap still warns.
    from botorch_sketch.sketching.rules import RidgeLeverageSampler

    with pytest.warns(InducingSetCapWarning):
        IncrementalGP(model_kwargs={"inducing": RidgeLeverageSampler(max_size=10)})(
            X, Y
        )


def test_the_exact_regime_of_a_small_start_is_not_warned():
    # A carried model starts with every input inducing and grows out of it:
    # the large-batch loop's first build used to warn about that regime.
    from botorch.test_functions import Hartmann

    from botorch_sketch.bo import run_large_batch

    problem = Hartmann(dim=6, negate=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_large_batch(
            problem, problem.bounds, evaluations=200, q=100, seed=0, progress=False
        )
    assert not [w for w in caught if issubclass(w.category, ExactRegimeWarning)]


@pytest.mark.parametrize("grow", [False, True])
def test_a_saved_state_restores_the_same_model_and_schedule(tmp_path, grow):
    # Saved between refits (after Woodbury steps), loaded from a data-only file
    # into a new IncrementalGP, both then take the same calls: same models.
    torch.manual_seed(0)
    X = torch.rand(400, 4, dtype=torch.double)
    Y = X.sin().sum(-1, keepdim=True) + 0.1 * torch.randn(400, 1, dtype=torch.double)

    def surrogate():
        return IncrementalGP(
            refit_every=1, refit_growth=1.0, drift_tolerance=None, max_inducing=48,
            grow_between_refits=grow, hyperparameter_subset=100,
        )  # fmt: skip

    saved = surrogate()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (20, 30, 60, 150, 170, 190):
            torch.manual_seed(n)
            saved(X[:n], Y[:n])
        assert saved.counts.last == "conditioned"
        torch.save(saved.state_dict(), tmp_path / "gp.pt")
        loaded = surrogate()
        loaded.load_state_dict(
            torch.load(tmp_path / "gp.pt", weights_only=True), X[:190], Y[:190]
        )
        T = torch.rand(30, 4, dtype=torch.double)
        for n in (None, 200, 320, 330):
            if n is not None:
                torch.manual_seed(n)
                saved(X[:n], Y[:n])
                torch.manual_seed(n)
                loaded(X[:n], Y[:n])
                assert loaded.counts.last == saved.counts.last
            with torch.no_grad():
                a, b = saved.model.posterior(T), loaded.model.posterior(T)
            assert torch.equal(a.mean, b.mean) and torch.equal(a.variance, b.variance)
            assert torch.equal(saved.model.inducing_index, loaded.model.inducing_index)
    with pytest.raises(InputDataError, match="trained on 330 rows"):
        surrogate().load_state_dict(saved.state_dict(), X[:10], Y[:10])
    with pytest.raises(InputDataError, match="Not an IncrementalGP state"):
        surrogate().load_state_dict({"steps": []}, X, Y)
