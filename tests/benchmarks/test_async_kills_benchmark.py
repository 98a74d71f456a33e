"""The kill-and-resume harness: its audit catches losses and repeats; a run passes."""

import warnings
from pathlib import Path

import pytest
import torch
from botorch.test_functions import Hartmann

from benchmarks import async_kills
from botorch_sketch.bo import LargeBatchOptimizer
from botorch_sketch.bo.checkpoint import load_checkpoint, save_checkpoint


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _logged_run(directory: Path, n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    # An uninterrupted run of n points, logged as the drivers log it.
    f = Hartmann(dim=6, negate=True)
    optimizer = LargeBatchOptimizer(f.bounds, q=n, num_initial=n, seed=0)
    log = directory / async_kills.LOG
    X = optimizer.ask(n)
    Y = f(X)
    optimizer.tell(X, Y)
    optimizer.save(directory / async_kills.CHECKPOINT)
    async_kills._append(log, ["start 1 0"])
    async_kills._append(log, [f"ask {async_kills.key(x)}" for x in X])
    evals = [
        f"eval {async_kills.key(x)} {float(y)!r}" for x, y in zip(X, Y, strict=True)
    ]
    async_kills._append(log, evals)
    async_kills._append(log, [f"told {async_kills.key(x)}" for x in X])
    async_kills._append(log, [f"saved {n}"])
    return X, Y


def _audit(directory: Path, n: int = 6, after_kills=None) -> async_kills.KillRun:
    out = async_kills.KillRun(async_kills.Part("sync", n, 0, q=n))
    async_kills.audit(out, directory, after_kills or {})
    return out


def test_the_audit_passes_a_clean_run(tmp_path):
    _logged_run(tmp_path)
    out = _audit(tmp_path)
    assert out.ok and out.final == 6 == out.evaluations
    assert out.missing == out.duplicates == out.lost == out.wrong_values == 0


def test_the_audit_catches_a_lost_told_point(tmp_path):
    _logged_run(tmp_path)
    # A point told (and evaluated) in the log that the final data lacks.
    stray = async_kills.key(torch.full((6,), 0.5, dtype=torch.double))
    async_kills._append(tmp_path / async_kills.LOG, [f"eval {stray} 0.0"])
    async_kills._append(tmp_path / async_kills.LOG, [f"told {stray}"])
    out = _audit(tmp_path)
    assert out.missing == 1 and not out.ok


def test_the_audit_catches_a_repeat_and_a_wrong_value(tmp_path):
    _logged_run(tmp_path)
    path = tmp_path / async_kills.CHECKPOINT
    state = load_checkpoint(path)
    state["told_X"] = torch.cat([state["told_X"], state["told_X"][:1]])
    state["told_Y"] = torch.cat([state["told_Y"], state["told_Y"][:1] + 1.0])
    save_checkpoint(state, path)
    out = _audit(tmp_path, n=7)
    assert out.duplicates == 1 and out.wrong_values == 1 and not out.ok


def test_the_audit_catches_a_point_told_again_after_a_save(tmp_path):
    X, _ = _logged_run(tmp_path)
    # A second process tells a point the checkpoint at the first one's kill held.
    async_kills._append(tmp_path / async_kills.LOG, ["start 2 6"])
    async_kills._append(tmp_path / async_kills.LOG, [f"told {async_kills.key(X[0])}"])
    out = _audit(tmp_path, after_kills={0: {async_kills.key(x) for x in X}})
    assert out.saved_twice == 1 and not out.ok


@pytest.mark.slow
def test_a_run_killed_three_times_keeps_every_told_point_once(tmp_path):
    part = async_kills.Part("sync", 300, 3, q=50)
    out = async_kills.run(part, seed=0, directory=tmp_path)
    assert len(out.kills) == 3
    assert out.final == 300 and out.duplicates == 0 and out.missing == 0
    assert out.unreadable == 0 and out.wrong_values == 0 and out.saved_twice == 0
    # What a kill lost was evaluated again, no more: the points pending in the
    # checkpoint are asked again first.
    assert out.evaluations == 300 + out.lost and out.reproposed == out.lost
    assert out.ok
    text = async_kills.render("small", [out])
    assert "| sync (q = 50) | 0 | 300 of 300 | 3 (" in text


@pytest.mark.slow
def test_run_on_ray_killed_twice_keeps_every_told_point_once(tmp_path):
    pytest.importorskip("ray")
    part = async_kills.Part("ray", 60, 2, q=4)
    out = async_kills.run(part, seed=1, directory=tmp_path)
    assert len(out.kills) == 2
    assert out.final == 60 and out.duplicates == 0 and out.missing == 0
    assert out.unreadable == 0 and out.wrong_values == 0 and out.saved_twice == 0
    assert out.evaluations == 60 + out.lost and out.reproposed == out.lost
    assert out.ok
