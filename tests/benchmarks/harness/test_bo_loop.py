import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.models import SingleTaskGP
from botorch.test_functions import Branin, Hartmann

from benchmarks.harness import ModelSpec, plot_bo_traces, run_bo
from botorch_sketch import NystromGP
from botorch_sketch.bo import GSSBOSurrogate

FAST = {"num_restarts": 2, "raw_samples": 32, "progress": False}


def test_trace_bookkeeping_and_repeatability():
    f = Branin(negate=True)
    a = run_bo(f, ModelSpec("exact"), iterations=4, num_initial=5, seed=1, **FAST)
    b = run_bo(f, ModelSpec("exact"), iterations=4, num_initial=5, seed=1, **FAST)
    assert a.num_iterations == 4 and len(a.values) == 4
    assert torch.equal(torch.cat(a.X), torch.cat(b.X))
    regret = a.simple_regret
    assert (regret >= -1e-9).all() and (regret.diff() <= 1e-12).all()
    assert torch.allclose(
        a.cumulative_regret,
        (a.optimal_value - torch.tensor(a.values, dtype=torch.double)).cumsum(0),
    )
    assert a.train_size == [5, 6, 7, 8]
    assert (a.cumulative_time.diff() > 0).all()


@pytest.mark.parametrize("acquisition", ["ucb", "logei", "qlognei"])
def test_acquisitions_with_batches(acquisition):
    f = Branin(negate=True)
    spec = ModelSpec("exact")
    trace = run_bo(
        f, spec, iterations=2, num_initial=4, q=2, acquisition=acquisition, **FAST
    )
    assert len(trace.values) == 4 and trace.train_size == [4, 6]
    assert trace.simple_regret.shape == (2,)


@pytest.mark.slow
def test_a_subset_surrogate_switches_at_m_and_stays_there():
    f = Hartmann(dim=3, negate=True)
    spec = ModelSpec(
        "gss",
        surrogate=lambda: GSSBOSurrogate(
            num_initial=6,
            switch_at=10,
            subset_rule="random",
            num_best=0,
            num_neighbours=0,
            num_newest=2,
        ),
    )
    trace = run_bo(f, spec, iterations=6, num_initial=6, q=2, **FAST)
    # 6, 8, 10 observations are fitted whole; from 12 on, 10 of them.
    assert trace.train_size == [6, 8, 10, 10, 10, 10]


def test_runs_project_models():
    f = Hartmann(dim=3, negate=True)
    spec = ModelSpec("nystrom", NystromGP)
    trace = run_bo(f, spec, iterations=2, num_initial=8, **FAST)
    assert trace.num_iterations == 2


def test_bad_arguments_and_plot(tmp_path):
    f = Branin(negate=True)
    with pytest.raises(InputDataError, match="acquisition"):
        run_bo(f, ModelSpec("x"), iterations=1, num_initial=3, acquisition="pi", **FAST)
    with pytest.raises(InputDataError, match="num_initial"):
        run_bo(f, ModelSpec("x"), iterations=1, num_initial=0, **FAST)
    # Float counts failed inside torch's Sobol engine or ``zeros``; True ran.
    for kwargs, name in (
        ({"q": 2.0}, "q"),
        ({"num_initial": 2.5}, "num_initial"),
        ({"iterations": 2.0}, "iterations"),
        ({"iterations": True}, "iterations"),
        ({"seed": 1.5}, "seed"),
    ):
        with pytest.raises(InputDataError, match=f"{name} must be an integer"):
            run_bo(f, ModelSpec("x"), **{"iterations": 1, "num_initial": 3, **kwargs})
    trace = run_bo(f, ModelSpec("x"), iterations=2, num_initial=3, **FAST)
    path = tmp_path / "bo.png"
    plot_bo_traces({"x": [trace, trace]}, str(path), title="Branin")
    assert path.stat().st_size > 1000


def test_warm_start_loads_the_previous_hyperparameters(monkeypatch):
    from benchmarks.harness import loop

    seen = []
    real = loop.fit_gpytorch_mll

    def recording(mll, **kwargs):
        seen.append(mll.model.covar_module.lengthscale.detach().clone())
        out = real(mll, **kwargs)
        seen.append(mll.model.covar_module.lengthscale.detach().clone())
        return out

    monkeypatch.setattr(loop, "fit_gpytorch_mll", recording)
    f = Branin(negate=True)
    run_bo(f, ModelSpec("x"), iterations=3, num_initial=5, warm_start=True, **FAST)
    # Each fit starts where the previous one ended.
    assert torch.equal(seen[2], seen[1]) and torch.equal(seen[4], seen[3])
    seen.clear()
    run_bo(f, ModelSpec("x"), iterations=2, num_initial=5, **FAST)
    assert not torch.equal(seen[2], seen[1])


def test_a_failed_fit_is_recorded_and_the_run_goes_on(monkeypatch):
    from botorch.exceptions.errors import ModelFittingError
    from botorch.exceptions.warnings import OptimizationWarning

    from benchmarks.harness import loop

    calls = []
    real = loop.fit_gpytorch_mll

    def failing_second(mll, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise ModelFittingError("All attempts to fit the model have failed.")
        return real(mll, **kwargs)

    monkeypatch.setattr(loop, "fit_gpytorch_mll", failing_second)
    f = Branin(negate=True)
    with pytest.warns(OptimizationWarning, match="Fitting failed"):
        trace = run_bo(f, ModelSpec("x"), iterations=3, num_initial=5, **FAST)
    assert trace.num_iterations == 3 and trace.fit_failures == [1]


def test_time_cap_stops_the_run_and_says_so():
    problem = Hartmann(dim=6, negate=True)
    trace = run_bo(
        problem,
        ModelSpec("exact"),
        iterations=5,
        num_initial=8,
        acquisition="ucb",
        num_restarts=1,
        raw_samples=16,
        progress=False,
        time_cap=0.0,
    )
    assert trace.num_iterations == 1 and trace.stopped_at_cap


def test_a_stateful_surrogate_is_called_with_all_data_and_not_refitted():
    calls = []

    def make():
        def surrogate(X, Y):
            calls.append(X.shape[0])
            model = SingleTaskGP(X, Y)
            model.eval()
            return model

        return surrogate

    trace = run_bo(
        Hartmann(dim=6, negate=True),
        ModelSpec("stateful", surrogate=make),
        iterations=3,
        num_initial=8,
        acquisition="ts",
        q=2,
        num_restarts=1,
        raw_samples=16,
        progress=False,
    )
    assert calls == [8, 10, 12]
    assert trace.num_iterations == 3 and len(trace.values) == 6
