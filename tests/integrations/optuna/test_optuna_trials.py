import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

from botorch.exceptions.errors import InputDataError  # noqa: E402
from botorch.exceptions.warnings import InputDataWarning  # noqa: E402
from optuna_helpers import FAST, model_based, quadratic  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.trials import (  # noqa: E402
    _RELATIVE_PARAMS_KEY,
)

REPO = Path(__file__).resolve().parents[3]


def test_n_jobs_passes_running_trials_as_pending(pending_log):
    def objective(trial):
        value = quadratic(trial)
        time.sleep(0.2)  # keep the other thread's trial running
        return value

    study = optuna.create_study(
        sampler=SketchSampler(seed=4, n_startup_trials=4, **FAST)
    )
    study.optimize(objective, n_trials=12, n_jobs=2)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 12
    assert any(call["pending"] for call in pending_log)
    params = [tuple(t.params.values()) for t in study.trials]
    assert len(set(params)) == len(params)


_WORKER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import optuna
    import botorch_sketch.integrations.optuna as sketch_optuna
    import botorch_sketch.integrations.optuna.sampler as sampler_module

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pending = []
    original = sampler_module._suggest

    def spy(**kwargs):
        pending.append(0 if kwargs["pending_X"] is None else len(kwargs["pending_X"]))
        return original(**kwargs)

    sampler_module._suggest = spy

    seed = int(sys.argv[2])

    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        y = trial.suggest_float("y", -3.0, 3.0)
        # Longer than a suggestion, so that each process suggests while the
        # other's trial runs; of unequal lengths, so that the two processes
        # cannot fall into step and suggest at the same moments.
        time.sleep(1.0 + 0.7 * seed)
        return (x - 1.0) ** 2 + (y + 0.5) ** 2

    # Both processes start once both have imported everything, so that
    # one slow import cannot leave the other to run its trials alone.
    ready = Path(sys.argv[3])
    (ready / f"ready-{seed}").touch()
    deadline = time.monotonic() + 120.0
    while len(list(ready.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)

    study = optuna.load_study(
        study_name="shared",
        storage=sys.argv[1],
        sampler=sketch_optuna.SketchSampler(seed=seed, n_startup_trials=4),
    )
    study.optimize(objective, n_trials=7)
    print("PENDING", sum(p > 0 for p in pending))
    """
)


@pytest.mark.slow
@pytest.mark.cpu_only
def test_rdb_storage_shared_by_two_processes(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="shared", storage=storage)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), storage, str(seed), str(tmp_path)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (0, 1)
    ]
    outputs = []
    try:
        for worker in workers:
            out, err = worker.communicate(timeout=240)
            assert worker.returncode == 0, err[-2000:]
            outputs.append(out)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    study = optuna.load_study(study_name="shared", storage=storage)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 14
    assert model_based(study)
    # Each process saw the other's running trial as a pending point.
    seen = [int(out.split("PENDING")[-1]) for out in outputs]
    assert sum(seen) > 0, outputs


def test_inconsistent_constraints_raise():
    def objective(trial):
        value = quadratic(trial)
        if trial.number % 2:
            trial.set_constraint("c", 0.0)
        return value

    study = optuna.create_study(sampler=SketchSampler(seed=0, n_startup_trials=3))
    with pytest.raises(InputDataError, match="same constraints"):
        study.optimize(objective, n_trials=5)


def test_failed_trials_found_in_the_space_are_not_checked_again(monkeypatch):
    # A finished trial's parameters never change: a failed trial the sampler
    # has encoded (found in today's search space) is not checked again at
    # every suggestion (13 ms a suggestion at 375 failed trials of 18
    # parameters); one it has not is, and one outside the space stays out.
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState

    from botorch_sketch.integrations.optuna import trials as trials_module

    space = {"x": FloatDistribution(0.0, 1.0)}
    made = [
        optuna.trial.create_trial(
            params={"x": x},
            distributions=space,
            state=state,
            value=1.0 if state == TrialState.COMPLETE else None,
        )
        for x, state in [
            (0.1, TrialState.FAIL),
            (0.5, TrialState.COMPLETE),
            (0.9, TrialState.FAIL),
        ]
    ]
    wide = {"x": FloatDistribution(0.0, 2.0)}
    made.append(
        optuna.trial.create_trial(
            params={"x": 1.5}, distributions=wide, state=TrialState.FAIL
        )
    )
    for number, trial in enumerate(made):
        trial.number = number
    checked = []
    original = trials_module._contains

    def spy(search_space, params):
        checked.append(params["x"])
        return original(search_space, params)

    monkeypatch.setattr(trials_module, "_contains", spy)
    found = trials_module._failed_trials(made, space)
    assert [t.number for t in found] == [0, 2]
    assert checked == [0.1, 0.9, 1.5]
    checked.clear()
    found = trials_module._failed_trials(made, space, known={0: None, 1: None})
    assert [t.number for t in found] == [0, 2]
    assert checked == [0.9, 1.5]


def test_the_sampler_checks_each_failed_trial_once(monkeypatch):
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState

    from botorch_sketch.integrations.optuna import trials as trials_module

    space = {"x": FloatDistribution(-3.0, 3.0), "y": FloatDistribution(-3.0, 3.0)}
    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=4, **FAST)
    )
    made = []
    for i in range(12):
        params = {"x": -3.0 + 0.5 * i, "y": 2.5 - 0.4 * i}
        if i % 3 == 0:
            made.append(
                optuna.trial.create_trial(
                    params=params, distributions=space, state=TrialState.FAIL
                )
            )
        else:
            value = (params["x"] - 1.0) ** 2 + (params["y"] + 0.5) ** 2
            made.append(
                optuna.trial.create_trial(
                    params=params, distributions=space, value=value
                )
            )
    study.add_trials(made)
    checked = []
    original = trials_module._contains

    def spy(search_space, params):
        checked.append(dict(params))
        return original(search_space, params)

    monkeypatch.setattr(trials_module, "_contains", spy)
    counts = []
    for fail in (False, True, False):
        trial = study.ask(space)
        assert model_based(study)[-1].number == trial.number
        if fail:
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, quadratic(trial))
        counts.append(len(checked))
        checked.clear()
    # The four failed trials at the first suggestion, none at the second, the
    # one new failure at the third.
    assert counts == [4, 0, 1]


@pytest.mark.parametrize("garbage", ["{not json", "[1, 2]", 3])
def test_a_running_trials_garbage_shared_parameters_do_not_stop_the_study(garbage):
    storage = optuna.storages.InMemoryStorage()
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    study = optuna.create_study(storage=storage, sampler=sampler)
    study.optimize(quadratic, n_trials=5)
    running = study.ask()  # stays running
    storage.set_trial_system_attr(
        running._trial_id, f"{_RELATIVE_PARAMS_KEY}:0", garbage
    )
    # Every suggestion raised (JSONDecodeError, AttributeError) while it ran.
    with pytest.warns(InputDataWarning, match="Running trial 5's shared param"):
        study.optimize(quadratic, n_trials=2)
    states = [t.state for t in study.trials]
    assert states.count(optuna.trial.TrialState.COMPLETE) == 7
