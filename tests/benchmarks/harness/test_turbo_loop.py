import dataclasses
import math

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.models import SingleTaskGP
from botorch.test_functions import Branin, Hartmann

from benchmarks.harness import BOTrace, ModelSpec, plot_bo_traces, run_bo
from benchmarks.harness.turbo_loop import TurboTrace, run_turbo
from botorch_sketch import NystromGP

FAST = {"num_restarts": 2, "raw_samples": 32, "progress": False}


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [ModelSpec("exact"), ModelSpec("nystrom", NystromGP)],
    ids=["exact", "nystrom"],
)
def test_hartmann_short_run(spec):
    f = Hartmann(dim=6, negate=True, noise_std=0.1)
    trace = run_turbo(f, spec, iterations=3, batch_size=2, seed=0, **FAST)
    assert isinstance(trace, TurboTrace) and isinstance(trace, BOTrace)
    assert trace.num_iterations == 3 and len(trace.values) == 6
    assert trace.problem == "Hartmann-6" and trace.name == spec.name
    # Default design: 2d points, then the region grows by a batch per iteration.
    assert trace.train_size == [12, 14, 16]
    assert trace.restarts == [] and trace.lengths[0] == 0.8
    regret = trace.simple_regret
    assert (regret >= -1e-9).all() and (regret.diff() <= 1e-12).all()
    # Points lie in the unit cube, in the region around the incumbent.
    X = torch.cat(trace.X)
    assert X.shape == (6, 6) and bool(((X >= 0) & (X <= 1)).all())


def test_same_initial_design_as_run_bo_and_repeatable():
    f = Branin(negate=True)
    a = run_turbo(f, ModelSpec("x"), iterations=2, num_initial=5, seed=3, **FAST)
    b = run_turbo(f, ModelSpec("x"), iterations=2, num_initial=5, seed=3, **FAST)
    assert torch.equal(torch.cat(a.X), torch.cat(b.X))
    bo = run_bo(f, ModelSpec("x"), iterations=1, num_initial=5, seed=3, **FAST)
    assert a.initial_best == bo.initial_best


def _halve_every_batch(monkeypatch):
    # A scripted region: every batch fails and halves the length, so with
    # length_min = 0.3 each region runs exactly two model iterations.
    from benchmarks.harness import turbo_loop

    def halve(state, Y_next):
        length = state.length / 2
        return dataclasses.replace(
            state, length=length, restart_triggered=length < state.length_min
        )

    monkeypatch.setattr(turbo_loop, "update_state", halve)
    return {"length_min": 0.3}


def test_restarts_evaluate_a_fresh_design_and_discard_the_region(monkeypatch):
    state_kwargs = _halve_every_batch(monkeypatch)
    trace = run_turbo(
        Branin(negate=True),
        SingleTaskGP,
        iterations=9,
        num_initial=3,
        batch_size=2,
        acquisition="ts",
        num_candidates=100,
        state_kwargs=state_kwargs,
        **FAST,
    )
    assert trace.name == "turbo" and len(trace.values) == 18
    assert trace.restarts == [2, 6]
    # The design is 3 points rounded up to 2 batches; no model is fitted there.
    assert trace.train_size == [3, 5, 0, 0, 4, 6, 0, 0, 4]
    assert trace.lengths[:2] == [0.8, 0.4] and trace.lengths[4:6] == [0.8, 0.4]
    assert all(math.isnan(v) for v in trace.lengths[2:4] + trace.lengths[6:8])
    assert trace.fit_time[2] == 0.0 and trace.acquisition_time[3] == 0.0
    assert trace.simple_regret.shape == (9,)
    # Design points are new Sobol points in the unit cube.
    design = torch.cat(trace.X[2:4])
    assert design.unique(dim=0).shape[0] == 4
    assert bool(((design >= 0) & (design <= 1)).all())


def test_warm_start_within_a_region_only(monkeypatch):
    from benchmarks.harness import turbo_loop

    state_kwargs = _halve_every_batch(monkeypatch)
    previous = []
    real = turbo_loop.fit_model

    def recording(model, prev, fit_kwargs):
        previous.append(prev)
        return real(model, prev, fit_kwargs)

    monkeypatch.setattr(turbo_loop, "fit_model", recording)
    f = Branin(negate=True)
    options = {"num_initial": 3, "state_kwargs": state_kwargs, **FAST}
    trace = run_turbo(f, ModelSpec("x"), iterations=7, **options)
    # Iterations 0, 1 | design 2-4 | 5, 6: the first fit of a region is cold.
    assert trace.restarts == [2]
    assert len(previous) == 4
    assert previous[0] is None and previous[2] is None
    assert previous[1] is not None and previous[3] is not None
    previous.clear()
    run_turbo(f, ModelSpec("x"), iterations=2, warm_start=False, **options)
    assert previous == [None, None]


def test_bad_arguments_and_plot(tmp_path):
    f = Branin(negate=True)
    with pytest.raises(InputDataError, match="batch_size"):
        run_turbo(f, ModelSpec("x"), iterations=1, batch_size=0, **FAST)
    with pytest.raises(InputDataError, match="num_initial"):
        run_turbo(f, ModelSpec("x"), iterations=1, num_initial=0, **FAST)
    for kwargs, name in (
        ({"batch_size": 1.5}, "batch_size"),
        ({"num_candidates": -1}, "num_candidates"),
        ({"raw_samples": 0}, "raw_samples"),
    ):
        with pytest.raises(InputDataError, match=f"{name} must be an integer"):
            run_turbo(f, ModelSpec("x"), **{"iterations": 1, **FAST, **kwargs})
    with pytest.raises(InputDataError, match="Unknown acquisition"):
        run_turbo(f, ModelSpec("x"), iterations=1, acquisition="pi", **FAST)
    trace = run_turbo(f, ModelSpec("x"), iterations=2, **FAST)
    path = tmp_path / "turbo.png"
    plot_bo_traces({"turbo": [trace, trace]}, str(path))
    assert path.stat().st_size > 1000
