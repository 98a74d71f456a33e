"""Asynchronous large-batch Thompson sampling on a local Ray instance."""

import math
import os
import re
import signal
import sys
import time
import warnings
from functools import partial

import pytest
import torch
from botorch.exceptions.errors import InputDataError

from botorch_sketch.bo import FailedBatchWarning, LargeBatchOptimizer, default_surrogate

ray = pytest.importorskip("ray")

from botorch_sketch.integrations.ray_async import run_on_ray  # noqa: E402

BOUNDS = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 1.0]], dtype=torch.double)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The objectives below run on the workers, which cannot import this test
    # module: ship them by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray.shutdown()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _f(X):
    return -(X - 0.3).square().sum(-1)


def _killed_once(marker, X):
    # Kills its own worker the first time any worker sees a point (the marker
    # made atomically: two workers at once must not both die).
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return _f(X)
    os.kill(os.getpid(), signal.SIGKILL)
    return _f(X)


def _fails_on_the_left(X):
    if float(X[0, 0]) < 0.25:
        raise ValueError("simulator diverged")
    return math.nan if float(X[0, 1]) > 1.8 else _f(X)


def _optimizer():
    return LargeBatchOptimizer(
        BOUNDS, q=4, num_initial=4, num_candidates=64, num_local=4, seed=0,
        surrogate=default_surrogate(max_inducing=32),
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("max_retries", [1, 0])
def test_a_killed_worker_retries_or_fails_its_point(local_ray, tmp_path, max_retries):
    optimizer = _optimizer()
    marker = str(tmp_path / "killed")
    report = run_on_ray(
        optimizer, partial(_killed_once, marker), workers=2, evaluations=14,
        max_retries=max_retries, checkpoint=tmp_path / "run.pt", progress=False,
    )  # fmt: skip
    assert os.path.exists(marker) and report.workers_lost == 1
    # Every point asked was told exactly once; nothing pending, nothing lost.
    assert report.evaluations == 14 == optimizer.num_told
    assert optimizer.pending.shape[0] == 0
    assert len({tuple(x.tolist()) for x in optimizer.told_X}) == 14
    if max_retries:
        assert report.retried >= 1 and report.failed == 0
    else:
        assert report.retried == 0 and report.failed >= 1
    assert 0.0 < report.utilisation <= 1.0
    # Every evaluation that returned has its span, before the run's end.
    assert len(report.spans) == 14 - report.failed
    assert all(0 <= b <= report.wall_seconds for _, b in report.spans)
    assert 0.0 < report.last_dispatch <= report.wall_seconds
    assert 0.0 < report.steady_utilisation <= 1.0
    # The checkpoint holds the final state.
    resumed = LargeBatchOptimizer.load(
        tmp_path / "run.pt", BOUNDS, q=4, num_initial=4, num_candidates=64,
        num_local=4, seed=0, surrogate=default_surrogate(max_inducing=32),
    )  # fmt: skip
    assert torch.equal(resumed.told_X, optimizer.told_X)


@pytest.mark.slow
def test_failures_are_told_and_a_resumed_run_goes_on(local_ray, tmp_path):
    optimizer = _optimizer()
    path = tmp_path / "run.pt"
    first = run_on_ray(
        optimizer, _fails_on_the_left, workers=2, evaluations=10, checkpoint=path,
        checkpoint_every=1e9, progress=False,
    )  # fmt: skip
    assert first.evaluations == 10 and first.failed >= 1
    assert optimizer.num_failed == first.failed
    # Saved once, at the end (checkpoint_every), with every result.
    resumed = LargeBatchOptimizer.load(
        path, BOUNDS, q=4, num_initial=4, num_candidates=64, num_local=4, seed=0,
        surrogate=default_surrogate(max_inducing=32),
    )  # fmt: skip
    assert resumed.num_told == 10 and resumed.pending.shape[0] == 0
    second = run_on_ray(resumed, _fails_on_the_left, workers=2, evaluations=6,
                        progress=False)  # fmt: skip
    assert second.evaluations == 6 and resumed.num_told == 16
    assert len({tuple(x.tolist()) for x in resumed.told_X}) == 16


def test_bad_arguments_are_named():
    with pytest.raises(InputDataError, match="LargeBatchOptimizer"):
        run_on_ray(object(), _f)
    with pytest.raises(InputDataError, match="workers"):
        run_on_ray(_optimizer(), _f, workers=0)


def _ready(proposer, n):
    # Wait (at most a minute) until the proposer holds ``n`` ready points.
    for _ in range(600):
        if len(proposer.ready) >= n:
            return
        proposer.check()
        proposer.wait_for_points(timeout=0.1)
    raise AssertionError(f"{len(proposer.ready)} points ready, not {n}")


def test_the_proposer_asks_for_every_missing_point_in_one_ask():
    # Results that come back together are told together, and the points they
    # free are asked for in one ask, by the thread the driver dispatches from.
    from botorch_sketch.integrations.ray_async import _Proposer

    optimizer = _optimizer()
    sizes = []
    ask = optimizer.ask
    optimizer.ask = lambda n: (sizes.append(n), ask(n))[1]
    proposer = _Proposer(optimizer, evaluations=8, held=6, checkpoint=None)
    proposer.thread.start()
    try:
        _ready(proposer, 6)
        points = proposer.take(6)
        proposer.put([(x, float(_f(x[None]))) for x in points[:3]])
        _ready(proposer, 2)  # the budget's last two
        assert sizes == [6, 2] and optimizer.num_told == 3
        proposer.put([(x, float(_f(x[None]))) for x in points[3:]])
        proposer.put([(x, float(_f(x[None]))) for x in proposer.take(2)])
        proposer.finish()
    finally:
        proposer.stop()
    assert optimizer.num_told == 8 and optimizer.pending.shape[0] == 0


def _raises(X):
    raise ValueError("simulator not found")


def _two_values(X):
    return torch.zeros(2)


def _a_string(X):
    return "0.5"


def _nothing(X):
    return None


@pytest.mark.slow
@pytest.mark.parametrize(
    "objective, error",
    [
        (_raises, "ValueError: simulator not found"),
        (_two_values, "InputDataError: The objective returned 2 values"),
        (_a_string, "InputDataError: The objective returned str \\('0.5'\\)"),
        (_nothing, "InputDataError: The objective returned NoneType"),
    ],
    ids=["raises", "two-values", "string", "none"],
)
def test_an_objective_that_always_fails_stops_the_run_with_its_error(
    local_ray, objective, error
):
    # Every point was told as failed, with no warning and the error's text
    # lost, until the whole budget was spent.
    optimizer = _optimizer()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_on_ray(
            optimizer, objective, workers=2, evaluations=60, max_failed_batches=2,
            progress=False,
        )  # fmt: skip
    assert report.stopped_reason == "failed batches"
    assert 4 <= report.evaluations < 60 and report.failed == report.evaluations
    assert len(report.errors) == report.evaluations
    assert all(re.match(error, text) for text in report.errors)
    messages = [str(w.message) for w in caught if w.category is FailedBatchWarning]
    assert len(messages) == 2 and re.search(error, messages[-1])
    # Nothing pending for good: the points out at the stop come first next.
    assert optimizer.num_told == report.evaluations
    out = optimizer.pending
    if out.shape[0]:
        assert torch.equal(optimizer.ask(out.shape[0]), out)


@pytest.mark.slow
def test_workers_that_cannot_start_are_refused_with_the_cpus(local_ray):
    # 4 workers of one CPU each on a 2-CPU instance waited for good.
    with pytest.raises(InputDataError, match="ask for 4 CPUs .* has 2 CPUs"):
        run_on_ray(_optimizer(), _f, workers=4, start_timeout=2, progress=False)
    # The actors that started were let go: 2 workers start at once.
    report = run_on_ray(_optimizer(), _f, workers=2, evaluations=6, progress=False)
    assert report.evaluations == 6 and report.failed == 0


def _hangs_on_the_left(X):
    if float(X[0, 0]) < 0.3:
        time.sleep(3600)
    return _f(X)


@pytest.mark.slow
def test_an_evaluation_past_its_timeout_fails_and_the_run_goes_on(local_ray):
    # A hung objective hung the whole run.
    optimizer = _optimizer()
    report = run_on_ray(
        optimizer, _hangs_on_the_left, workers=2, evaluations=8, timeout=3,
        progress=False,
    )  # fmt: skip
    left = optimizer.told_X[:, 0] < 0.3
    assert report.evaluations == 8 == optimizer.num_told
    assert report.timed_out == int(left.sum()) >= 1
    assert report.failed == report.timed_out == optimizer.num_failed
    assert all("ran past timeout=3 s" in text for text in report.errors)
    assert bool(optimizer.told_Y[left].isnan().all())
    assert optimizer.pending.shape[0] == 0


def test_the_objectives_output_is_checked_by_name():
    from botorch_sketch.integrations.ray_async import _evaluate

    x = torch.zeros(3, dtype=torch.double)
    assert _evaluate(lambda X: torch.ones(1, 1), x)[0] == 1.0
    for output, match in (
        ("a", "returned str \\('a'\\)"),
        (None, "returned NoneType"),
        ([1.0, 2.0], "returned 2 values"),
    ):
        with pytest.raises(InputDataError, match=match):
            _evaluate(lambda X, output=output: output, x)
    for bad in ({"timeout": 0}, {"max_failed_batches": 0}, {"start_timeout": -1}):
        with pytest.raises(InputDataError, match=next(iter(bad))):
            run_on_ray(_optimizer(), _f, **bad)
