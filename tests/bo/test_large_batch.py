import math
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models import SingleTaskGP
from botorch.test_functions import Hartmann

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.bo.large_batch import (
    candidate_set,
    posterior_incumbents,
    run_large_batch,
    thompson_batch,
)
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        yield


def _data(n=60, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    Y = -((X - 0.3) ** 2).sum(-1, keepdim=True)
    return X, Y + 0.01 * torch.randn(n, 1, generator=g, dtype=torch.double)


def test_a_batch_is_distinct_even_when_every_path_shares_an_argmax():
    X, Y = _data()
    model = IncrementalGP()(X, Y)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    # Three candidates for 20 paths: at most 3 distinct argmaxes.
    candidates = torch.rand(3, 3, generator=torch.Generator().manual_seed(1)).double()
    torch.manual_seed(0)
    batch = thompson_batch(
        model, candidates, 20, unit, generator=torch.Generator().manual_seed(2)
    )
    assert batch.distinct_argmaxes <= 3
    assert batch.X.shape == (20, 3)
    assert batch.X.unique(dim=0).shape[0] == 20
    assert bool(((batch.X >= 0) & (batch.X <= 1)).all())


def test_filled_points_are_near_their_paths_argmax():
    # The filled points are perturbations (sd 0.02 of the box) of an argmax.
    X, Y = _data()
    model = SingleTaskGP(X, Y)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    candidates = torch.rand(5, 3, generator=torch.Generator().manual_seed(1)).double()
    torch.manual_seed(0)
    batch = thompson_batch(model, candidates, 30, unit, local_scale=0.02)
    distance = torch.cdist(batch.X, candidates).min(-1).values
    assert float(distance.max()) < 0.2


def test_candidates_lie_in_the_region_and_half_are_near_the_incumbents():
    X, Y = _data()
    model = IncrementalGP()(X, Y)
    incumbents = posterior_incumbents(model, X, 5)
    means = model.posterior(X.unsqueeze(-2)).mean.reshape(-1)
    assert torch.equal(incumbents, X[means.topk(5).indices])
    region = torch.tensor([[0.1] * 3, [0.6] * 3], dtype=torch.double)
    C = candidate_set(
        incumbents, region, 101, scale=0.01, generator=torch.Generator().manual_seed(0)
    )
    assert C.shape == (101, 3)
    assert bool(((C >= region[0]) & (C <= region[1])).all())
    near = torch.cdist(C, incumbents.clamp(0.1, 0.6)).min(-1).values < 0.05
    assert int(near.sum()) >= 50


def test_the_loop_reaches_its_budget_with_distinct_batches_and_a_capped_set():
    problem = Hartmann(dim=6, noise_std=0.1, negate=True)
    state = torch.get_rng_state()
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=130,
        q=30,
        num_initial=40,
        surrogate=IncrementalGP(
            refit_every=2, max_inducing=25, grow_between_refits=False
        ),
        num_candidates=256,
        seed=3,
        progress=False,
        strategy="regions",
    )
    # The caller's random stream is left alone.
    assert torch.equal(torch.get_rng_state(), state)
    # 40 + 30 + 30 + 30 = 130: three batches, all distinct, the set capped.
    assert trace.num_batches == 3
    assert trace.evaluations.tolist() == [70.0, 100.0, 130.0]
    assert trace.distinct_points == [30, 30, 30]
    assert max(trace.inducing_size) <= 25
    assert all(1 <= k <= 30 for k in trace.distinct_argmaxes)
    regret = trace.simple_regret
    assert bool((regret[1:] <= regret[:-1]).all()) and float(regret[-1]) >= 0
    assert math.isclose(trace.optimal_value, 3.32237, rel_tol=1e-4)
    assert len(trace.cumulative_seconds) == 3
    # Determinism under a seed.
    again, other = (
        run_large_batch(
            problem,
            problem.bounds,
            evaluations=70,
            q=30,
            num_initial=40,
            surrogate=IncrementalGP(max_inducing=25),
            num_candidates=256,
            seed=3,
            progress=False,
            strategy="regions",
        )
        for _ in range(2)
    )
    assert torch.equal(again.X[0], other.X[0])


def test_the_trust_region_variant_and_the_last_batch_cut_to_fit():
    problem = Hartmann(dim=6, negate=True)
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=75,
        q=20,
        num_initial=20,
        num_candidates=200,
        trust_region=True,
        progress=False,
        strategy="regions",
    )
    assert [len(x) for x in trace.X] == [20, 20, 15]
    assert trace.evaluations[-1] == 75


def test_bad_input_is_named():
    problem = Hartmann(dim=6, negate=True)
    with pytest.raises(InputDataError, match="bounds"):
        run_large_batch(problem, problem.bounds.flip(0), evaluations=10, q=5)
    with pytest.raises(InputDataError, match="num_initial"):
        run_large_batch(problem, problem.bounds, evaluations=10, q=20)
    with pytest.raises(InputDataError, match="q"):
        run_large_batch(problem, problem.bounds, evaluations=10, q=2.5)
    with pytest.raises(InputDataError, match="NaN"):
        run_large_batch(
            lambda x: torch.full((x.shape[0],), math.nan), problem.bounds, 10, q=5
        )


# ---------------------------------------------------------------- issue 44


def test_path_values_equal_the_paths_at_shared_points():
    from botorch.sampling.pathwise import draw_matheron_paths

    from botorch_sketch.bo.sampling import path_values

    X, Y = _data(n=80)
    C = torch.rand(300, 3, generator=torch.Generator().manual_seed(4)).double()
    for model in (IncrementalGP(max_inducing=30)(X, Y), SingleTaskGP(X, Y)):
        torch.manual_seed(0)
        paths = draw_matheron_paths(model, sample_shape=torch.Size([7]))
        with torch.no_grad():
            expected = paths(C).squeeze(-1)
            values = path_values(paths, C)
        assert values.shape == (7, 300)
        assert torch.allclose(values, expected, atol=1e-9, rtol=1e-9)


def test_posterior_means_fold_no_covariance_after_a_woodbury_step():
    # The trust regions read means after every step: the carried model's
    # covariance (an eigendecomposition) is not folded for them, and the means
    # are those of the full posterior.
    from botorch_sketch.bo.sampling import posterior_means

    X, Y = _data(n=80)
    surrogate = IncrementalGP(max_inducing=30, grow_between_refits=False)
    surrogate(X[:60], Y[:60])
    model = surrogate(X, Y)
    assert surrogate.counts.last == "conditioned"
    means = posterior_means(model, X[:5])
    assert model.nystrom_state.readout._root is None
    with torch.no_grad():
        expected = model.posterior(X[:5].unsqueeze(-2)).mean.reshape(-1)
    assert torch.equal(means, expected)


def test_own_path_values_equal_the_paths_at_each_paths_own_points():
    from botorch.sampling.pathwise import draw_matheron_paths

    from botorch_sketch.bo.sampling import own_path_values

    X, Y = _data(n=80)
    L = torch.rand(7, 5, 3, generator=torch.Generator().manual_seed(4)).double()
    for model in (IncrementalGP(max_inducing=30)(X, Y), SingleTaskGP(X, Y)):
        torch.manual_seed(0)
        paths = draw_matheron_paths(model, sample_shape=torch.Size([7]))
        with torch.no_grad():
            expected = paths(L).squeeze(-1)
            values = own_path_values(paths, L)
            # Each row is its own path's: not the first path's at every row.
            first = paths(L[:1].expand(7, 5, 3)).squeeze(-1)
        assert values.shape == (7, 5)
        assert torch.allclose(values, expected, atol=1e-9, rtol=1e-9)
        assert not torch.allclose(values[1:], first[1:])


def test_gaussian_weights_draw_the_paths_botorchs_sobol_weights_draw():
    # Same random features (same global seed), weights from either source:
    # the paths' means and spreads agree up to Monte Carlo error.
    import functools

    from botorch.sampling.pathwise import (
        draw_kernel_feature_paths,
        draw_matheron_paths,
    )

    from botorch_sketch.bo.sampling import path_values
    from botorch_sketch.bo.thompson import _gaussian

    X, Y = _data(n=80)
    model = IncrementalGP(max_inducing=30)(X, Y)
    P = torch.tensor([[0.3, 0.3, 0.3], [0.9, 0.1, 0.5], [0.0, 1.0, 1.0]]).double()
    gaussian = functools.partial(
        draw_kernel_feature_paths,
        weight_generator=_gaussian(torch.Generator().manual_seed(0)),
    )
    values = {}
    for name, extra in (("sobol", {}), ("gaussian", {"prior_sampler": gaussian})):
        torch.manual_seed(0)
        paths = draw_matheron_paths(model, sample_shape=torch.Size([4000]), **extra)
        with torch.no_grad():
            values[name] = path_values(paths, P)  # 4000 x 3
    sd = values["sobol"].std(0)
    assert torch.allclose(values["gaussian"].std(0), sd, rtol=0.06)
    assert torch.allclose(
        values["gaussian"].mean(0),
        values["sobol"].mean(0),
        atol=float(4 * sd.max() / 60),
    )
    assert not torch.equal(values["gaussian"], values["sobol"])


def test_trust_region_candidates_stay_in_the_region_and_move_few_coordinates():
    from torch.quasirandom import SobolEngine

    from botorch_sketch.bo.trust_region import perturbed_candidates

    d = 60
    centre = torch.full((d,), 0.5, dtype=torch.double)
    region = torch.stack([centre - 0.1, centre + 0.1])
    engine = SobolEngine(d, scramble=True, seed=0)
    C = perturbed_candidates(centre, region, 4000, seed=1, engine=engine)
    assert bool(((C >= region[0]) & (C <= region[1])).all())
    moved = (C != centre).double().mean()
    # Each coordinate moves with probability min(1, 20 / d) = 1/3.
    assert abs(float(moved) - 20 / d) < 0.02
    assert bool((C != centre).any(-1).all())
    # The engine's sequence goes on: the next draw differs.
    again = perturbed_candidates(centre, region, 4000, seed=1, engine=engine)
    assert not torch.equal(C, again)


def test_restarts_keep_every_observation():
    # A region that collapses at once (length_min above the initial length
    # is refused, so a tiny failure tolerance is forced by a flat objective):
    # every evaluated finite point stays in the model's data.
    problem = Hartmann(dim=6, negate=True)
    seen = []

    class Recording(IncrementalGP):
        def __call__(self, X, Y, Yvar=None):
            seen.append(X.shape[0])
            return super().__call__(X, Y, Yvar)

    def flat(x):
        return torch.zeros(x.shape[0], dtype=torch.double) + 1e-3 * x[:, 0]

    trace = run_large_batch(
        flat,
        problem.bounds,
        evaluations=20 * 12,
        q=20,
        surrogate=Recording(max_inducing=30, refit_every=5),
        num_candidates=200,
        num_regions=1,
        progress=False,
        strategy="regions",
    )
    assert trace.restarts[-1] >= 1
    # The model is called with every observation so far, restarts included.
    assert seen == [20 * (i + 1) for i in range(11)]
    # A restart starts a new region of TuRBO's initial length at once.
    first = trace.restarts.index(1)
    assert trace.region_length[first] == 0.8
    assert trace.region_length[first - 1] < 0.8


@pytest.mark.parametrize("strategy", ["regions", "cma"])
def test_each_strategy_reports_its_cost_breakdown(strategy):
    problem = Hartmann(dim=6, noise_std=0.1, negate=True)
    extra = {"num_candidates": 300} if strategy == "regions" else {}
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=400,
        q=50,
        progress=False,
        strategy=strategy,
        **extra,
    )
    assert trace.num_batches == 7
    assert trace.refitted[0]  # the first build
    assert len(trace.refit_seconds) == len(trace.incumbent_seconds) == 7
    pairs = zip(trace.refit_seconds, trace.model_seconds, strict=True)
    assert all(r <= m for r, m in pairs)
    seconds = trace.iteration_seconds
    parts = (
        torch.tensor(trace.model_seconds)
        + torch.tensor(trace.incumbent_seconds)
        + torch.tensor(trace.batch_seconds)
    )
    assert torch.allclose(seconds, parts.double())
    assert "evaluations" in trace.summary() and "refits" in trace.summary()
    assert trace.distinct_points == [50] * 7


# ------------------------------------------------- issue 46, the large-batch loop


@pytest.fixture(params=["regions", "cma"])
def strategy(request):
    # The loop's checks hold whichever way it proposes.
    return request.param


def _tiny(objective=None, strategy="regions", **kwargs):
    problem = Hartmann(dim=6, negate=True)
    options = dict(evaluations=30, q=10, progress=False, strategy=strategy)
    if strategy == "regions":
        options["num_candidates"] = 64
    options.update(kwargs)
    surrogate = options.pop("surrogate", IncrementalGP(max_inducing=15))
    return run_large_batch(
        problem if objective is None else objective,
        problem.bounds,
        surrogate=surrogate,
        **options,
    )


def test_a_nan_first_in_a_batch_does_not_poison_the_best_value(strategy):
    calls = []

    def objective(x):
        calls.append(x.shape[0])
        y = -((x - 0.5) ** 2).sum(-1)
        if len(calls) > 1:
            y[0] = math.nan
            y[1] = math.inf  # a failure too, never the best
        return y

    trace = _tiny(objective, strategy)
    assert bool(torch.isfinite(trace.best_value).all())
    assert float(trace.best_value[-1]) < 0
    assert trace.failed == [2, 2]
    assert math.isnan(trace.values[10]) and math.isnan(trace.values[11])


def test_failed_points_count_as_evaluations(strategy):
    def objective(x):
        y = -((x - 0.5) ** 2).sum(-1)
        y[::3] = math.nan
        return y

    seen = []
    trace = _tiny(objective, strategy, evaluations=35, q=10, num_initial=10)
    seen.append(sum(len(x) for x in trace.X) + 10)
    assert seen == [35]
    assert trace.evaluations.tolist() == [20.0, 30.0, 35.0]


def test_a_run_whose_batches_all_fail_warns_then_stops(strategy):
    from botorch_sketch.bo.large_batch import FailedBatchWarning

    calls = []

    def objective(x):
        calls.append(x.shape[0])
        y = -((x - 0.5) ** 2).sum(-1)
        return y if len(calls) == 1 else torch.full_like(y, math.nan)

    with pytest.warns(FailedBatchWarning, match="Every point of batch"):
        trace = _tiny(objective, strategy, evaluations=200, max_failed_batches=2)
    assert trace.num_batches == 2
    assert trace.stopped_reason == "failed batches"
    assert sum(calls) == 30


def test_bounds_and_regions_are_checked():
    problem = Hartmann(dim=6, negate=True)
    infinite = problem.bounds.clone()
    infinite[1, 0] = math.inf
    with pytest.raises(InputDataError, match="finite"):
        run_large_batch(problem, infinite, evaluations=10, q=5)
    X, Y = _data()
    model = IncrementalGP()(X, Y)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    candidates = torch.rand(10, 3, dtype=torch.double)
    with pytest.raises(InputDataError, match="lower <= upper"):
        thompson_batch(model, candidates, 4, unit.flip(0))
    with pytest.raises(InputDataError, match="local_scale"):
        thompson_batch(model, candidates, 4, unit, local_scale=math.nan)
    with pytest.raises(InputDataError, match="non-empty"):
        thompson_batch(model, candidates[:0], 4, unit)
    with pytest.raises(InputDataError, match="incumbents"):
        candidate_set(X[:0], unit, 10)
    with pytest.raises(InputDataError, match="scale"):
        candidate_set(X[:2], unit, 10, scale=math.nan)
    with pytest.raises(InputDataError, match="lower <= upper"):
        candidate_set(X[:2], unit.flip(0), 10)


def test_a_batch_at_a_corner_is_distinct():
    # Every path's argmax is the corner; perturbations reflected, not clipped.
    X, Y = _data()
    model = SingleTaskGP(X, -((X - 1.0) ** 2).sum(-1, keepdim=True))
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    corner = torch.ones(1, 3, dtype=torch.double)
    torch.manual_seed(0)
    batch = thompson_batch(model, corner, 100, unit)
    assert batch.X.unique(dim=0).shape[0] == 100
    assert bool(((batch.X >= 0) & (batch.X <= 1)).all())


def test_an_exception_in_the_objective_keeps_the_trace(strategy):
    calls = []

    def objective(x):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("simulator crashed")
        return -((x - 0.5) ** 2).sum(-1)

    with pytest.raises(RuntimeError, match="simulator crashed") as info:
        _tiny(objective, strategy, evaluations=100)
    assert info.value.trace.num_batches == 1

    def interrupted(x):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return -((x - 0.5) ** 2).sum(-1)

    with pytest.warns(Warning, match="Interrupted"):
        trace = _tiny(interrupted, strategy, evaluations=100)
    assert trace.stopped_reason == "interrupted"
    assert trace.num_batches == 1


def test_a_minimisation_problem_is_named():
    from botorch.exceptions.warnings import InputDataWarning

    problem = Hartmann(dim=6)  # negate=False: BoTorch minimises it
    with pytest.warns(InputDataWarning, match="negate=True"):
        trace = run_large_batch(
            problem,
            problem.bounds,
            evaluations=20,
            q=10,
            surrogate=IncrementalGP(max_inducing=15),
            progress=False,
        )
    assert math.isnan(trace.optimal_value)
    assert bool(torch.isnan(trace.simple_regret).all())


def test_a_problem_botorch_maximises_is_not_warned_about():
    # Cosine8 is maximised as built (BoTorch's is_minimization_problem is
    # False); negated, it is minimised, and the warning names that.
    from botorch.exceptions.warnings import InputDataWarning
    from botorch.test_functions import Cosine8

    settings = dict(
        evaluations=20, q=10, progress=False,
        surrogate=IncrementalGP(max_inducing=15),
    )  # fmt: skip
    problem = Cosine8()
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputDataWarning)
        trace = run_large_batch(problem, problem.bounds, **settings)
    assert trace.optimal_value == pytest.approx(0.8)
    assert bool((trace.simple_regret >= 0).all())
    negated = Cosine8(negate=True)
    with pytest.warns(InputDataWarning, match="negate=False"):
        trace = run_large_batch(negated, negated.bounds, **settings)
    assert math.isnan(trace.optimal_value)


def test_problem_without_a_known_optimum_runs():
    # BoTorch's Michalewicz knows its optimum in 2, 5 and 10 dimensions only;
    # elsewhere optimal_value raises NotImplementedError.
    from botorch.test_functions import Michalewicz

    problem = Michalewicz(dim=3, negate=True)
    with pytest.raises(NotImplementedError):
        _ = problem.optimal_value
    trace = run_large_batch(
        problem, problem.bounds, evaluations=20, q=10, progress=False,
        surrogate=IncrementalGP(max_inducing=15),
    )  # fmt: skip
    assert math.isnan(trace.optimal_value)
    assert trace.evaluations[-1] == 20
    assert math.isfinite(trace.best_value[-1])


@pytest.mark.parametrize(
    "output",
    [
        lambda x: (-((x - 0.5) ** 2).sum(-1)).numpy(),
        lambda x: (-((x - 0.5) ** 2).sum(-1)).tolist(),
    ],
)
def test_arrays_and_lists_are_observations(output, strategy):
    trace = _tiny(output, strategy, evaluations=20)
    assert trace.num_batches == 1


@pytest.mark.parametrize(
    "output, match",
    [
        (lambda x: 1.0, r"shape \(\) for 10 points"),
        (lambda x: torch.zeros(x.shape[0], 2), r"shape \(10, 2\)"),
        (lambda x: "bad", "str"),
    ],
)
def test_wrong_objective_outputs_are_named(output, match, strategy):
    with pytest.raises(InputDataError, match=match):
        _tiny(output, strategy)


def test_counts_and_surrogates_are_checked_before_any_evaluation():
    calls = []

    def objective(x):
        calls.append(1)
        return -((x - 0.5) ** 2).sum(-1)

    for kwargs, match in [
        ({"num_local": 0}, "num_local"),
        ({"num_candidates": -1}, "num_candidates"),
        ({"num_incumbents": 0}, "num_incumbents"),
        ({"max_failed_batches": 0}, "max_failed_batches"),
        ({"trust_region": "yes"}, "trust_region"),
        ({"surrogate": 3}, "surrogate"),
        ({"strategy": "turbo"}, "strategy"),
    ]:
        with pytest.raises(InputDataError, match=match):
            _tiny(objective, **kwargs)
    # The regions' arguments are refused by name with the default strategy.
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    for kwargs in [
        {"num_candidates": 64},
        {"num_regions": 3},
        {"trust_region": False},
        {"num_features": 256},
    ]:
        with pytest.raises(InputDataError, match=f"{next(iter(kwargs))}.*regions"):
            run_large_batch(
                objective,
                unit,
                20,
                q=10,
                **kwargs,
            )
    with pytest.raises(InputDataError, match="num_initial"):
        _tiny(objective, "cma", num_initial=5)
    # One point per batch, or one input: no CMA-ES population; said so.
    with pytest.raises(UnsupportedError, match="q >= 2.*strategy='regions'"):
        run_large_batch(objective, unit, 20, q=1)
    with pytest.raises(UnsupportedError, match="d >= 2.*strategy='regions'"):
        run_large_batch(objective, unit[:, :1], 20, q=5)
    assert calls == []
    for strategy in ("regions", "cma"):
        with pytest.raises(InputDataError, match="not a BoTorch Model"):
            _tiny(objective, strategy, surrogate=lambda X, Y: None)


def test_nearly_constant_observations_are_warned(strategy):
    from botorch.exceptions.warnings import InputDataWarning

    with pytest.warns(InputDataWarning, match="nearly"):
        _tiny(lambda x: 1.0 + 1e-12 * x[:, 0], strategy, evaluations=20)


def test_collapsed_regions_restart_at_the_best_centre_or_away():
    from botorch_sketch.bo import TrustRegions

    X, Y = _data(n=80)
    model = SingleTaskGP(X, Y)
    regions = TrustRegions(
        3, 10, num_regions=2, generator=torch.Generator(), success="mean"
    )
    regions.start(model, X, 256)
    assert len(regions.centres) == 2
    # Both regions one failure from collapse; the next batch fails for both.
    for k in range(2):
        regions.states[k] = regions.states[k].__class__(
            dim=3, batch_size=10, length=0.005, failure_counter=0
        )
    before = [c.clone() for c in regions.centres]
    means = model.posterior(torch.stack(before).unsqueeze(-2)).mean.reshape(-1)
    worse = before[0].expand(4, 3) * 0 + X[Y.argmin()]  # the worst point
    owner = torch.tensor([0, 0, 1, 1])
    regions.update(model, worse, owner, 256, tolerance=10.0)
    assert regions.restarts == 2
    assert regions.lengths == [0.8, 0.8]
    # The first re-expands at the better of the two centres.
    assert torch.equal(regions.centres[0], before[int(means.argmax())])
    # The second moved out of the box around where it collapsed.
    assert regions.collapsed and torch.equal(regions.collapsed[-1], before[1])
    assert not torch.equal(regions.centres[1], before[1])


def test_plot_large_batch_refuses_a_label_without_runs():
    from botorch_sketch.bo import plot_large_batch

    # "min() arg is an empty sequence" before.
    with pytest.raises(InputDataError, match=r"traces\['TS'\] must be a non-empty"):
        plot_large_batch({"TS": []})
    with pytest.raises(InputDataError, match="traces must be a dict"):
        plot_large_batch([[]])
