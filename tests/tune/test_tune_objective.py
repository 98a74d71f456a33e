import contextlib
import json
import math
import os
import sqlite3
import sys
import time

import pytest
import torch

pytest.importorskip("ax")
pytest.importorskip("optuna")

import optuna  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from botorch_sketch import cli  # noqa: E402
from botorch_sketch.tune import ax_backend as tune_ax  # noqa: E402
from botorch_sketch.tune import ax_client as tune_ax_client  # noqa: E402
from botorch_sketch.tune import checkpoint as tune_checkpoint  # noqa: E402
from botorch_sketch.tune import config as tune_config  # noqa: E402
from botorch_sketch.tune import evaluation as tune_evaluation  # noqa: E402
from botorch_sketch.tune import lock as tune_lock  # noqa: E402
from botorch_sketch.tune.space import Choice, parse_space  # noqa: E402
from botorch_sketch.tune.study import STUDY  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAST = ["--num-restarts", "2", "--raw-samples", "32", "--quiet", "--workers", "0"]
SPACE = {
    "x": {"type": "float", "low": 0.0, "high": 1.0},
    "n": {"type": "int", "low": 1, "high": 10, "log": True},
    "kind": {"type": "categorical", "choices": ["a", "b"]},
}


@pytest.fixture(autouse=True)
def objectives_importable(monkeypatch):
    # As a user's module on PYTHONPATH (spawned workers inherit sys.path).
    monkeypatch.syspath_prepend(HERE)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def tune(*argv):
    return cli.main(["tune", *argv])


def quadratic(params):
    import toy_objectives

    return toy_objectives.quadratic(params)


@pytest.fixture(scope="module")
def space_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.json"
    path.write_text(json.dumps(SPACE))
    return str(path)


def _record(path):
    return tune_checkpoint.read_record(str(path))[1]


def _study(path):
    storage = f"sqlite:///{os.path.abspath(path)}"
    return optuna.load_study(study_name=STUDY, storage=storage)


def _check_trials(record, n):
    done = [t for t in record["trials"].values() if "score" in t]
    assert len(done) == n
    for t in done:
        params = t["parameters"]
        assert params["kind"] in ("a", "b") and 1 <= params["n"] <= 10
        assert t["score"] == pytest.approx(quadratic(params))
    return done


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ax", "optuna"])
def test_own_objective_runs_end_to_end(backend, space_file, tmp_path, capsys):
    path = tmp_path / ("run.db" if backend == "optuna" else "run.json")
    argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
    argv += ["--backend", backend, "--trials", "5", "--initial", "4"]
    assert tune(*argv, "--checkpoint", str(path), *FAST) == 0
    out = capsys.readouterr().out
    record = _record(path)
    assert record["config"]["objective"] == "toy_objectives:quadratic"
    assert record["config"]["objectives"] == {"value": "min"}
    done = _check_trials(record, 5)
    best = min(done, key=lambda t: t["score"])
    assert f"best parameters: {best['parameters']}" in out
    assert path.with_suffix(".png").stat().st_size > 10_000
    if backend == "optuna":
        study = _study(path)
        assert study.direction == optuna.study.StudyDirection.MINIMIZE
        assert study.best_value == pytest.approx(best["score"])
    else:
        assert "toy_objectives:quadratic" in out


@pytest.mark.slow
def test_optuna_resume_fails_interrupted_trials_and_keeps_the_rest(
    space_file, tmp_path, capsys
):
    path = tmp_path / "run.db"
    argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
    argv += ["--backend", "optuna", "--initial", "3", "--checkpoint", str(path)]
    assert tune(*argv, "--trials", "4", *FAST) == 0
    before = {i: t for i, t in _record(path)["trials"].items() if "score" in t}
    # A trial running when the run was killed.
    running = _study(path).ask()
    assert running.number == 4
    # Without --resume the file is refused; a different problem too.
    assert tune(*argv, "--trials", "6", *FAST) == 2
    assert "exists; pass --resume" in capsys.readouterr().err
    other = ["--objective", "toy_objectives:nan_above", "--resume"]
    assert tune("--checkpoint", str(path), *other, *FAST) == 2
    assert "made with objective = 'toy_objectives:quadratic'" in (
        capsys.readouterr().err
    )
    resume = ["--checkpoint", str(path), "--resume", "--trials", "5"]
    assert tune(*resume, "--objective", "toy_objectives:quadratic", *FAST) == 0
    record = _record(path)
    _check_trials(record, 5)
    assert record["trials"]["4"]["failed"] == "interrupted"
    for index, trial in before.items():
        assert record["trials"][index] == trial
    states = [t.state for t in _study(path).trials]
    assert states.count(TrialState.COMPLETE) == 5
    assert states[4] == TrialState.FAIL


@pytest.mark.slow
def test_several_objectives_on_both_backends(space_file, tmp_path, capsys):
    argv = ["--objective", "toy_objectives:two", "--space", space_file]
    argv += ["--objectives", "loss=min", "size=max", "--trials", "5"]
    db = tmp_path / "two.db"
    # The random and Sobol trials only: the models' own tests cover qLogNEHVI.
    optuna_argv = ["--initial", "5", "--backend", "optuna", "--checkpoint", str(db)]
    assert tune(*argv, *optuna_argv, *FAST) == 0
    out = capsys.readouterr().out
    assert "Pareto-optimal trials" in out
    study = _study(db)
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    record = _record(db)
    for t in (t for t in record["trials"].values() if "score" in t):
        assert t["values"]["size"] == t["parameters"]["n"]
        assert t["score"] == t["values"]["loss"]
    # Ax: the Sobol trials only (Ax's multi-objective model fits are slow).
    js = tmp_path / "two.json"
    assert tune(*argv, "--initial", "5", "--checkpoint", str(js), *FAST) == 0
    client, _ = tune_ax_client.load_checkpoint(str(js))
    objective = client._experiment.optimization_config.objective
    assert objective.is_multi_objective
    assert sorted(objective.metric_names) == ["loss", "size"]


def test_nan_fails_the_trial_and_the_run_goes_on(space_file, tmp_path):
    path = tmp_path / "nan.db"
    argv = ["--objective", "toy_objectives:nan_above", "--space", space_file]
    argv += ["--backend", "optuna", "--trials", "8", "--initial", "8"]
    assert tune(*argv, "--checkpoint", str(path), *FAST) == 0
    record = _record(path)
    failed = [t for t in record["trials"].values() if "failed" in t]
    assert failed and all("returned {'value': nan}" in t["failed"] for t in failed)
    states = [t.state for t in _study(path).trials]
    assert states.count(TrialState.COMPLETE) == 8
    assert states.count(TrialState.FAIL) == len(failed)


def test_a_space_ax_refuses_exits_with_its_reason(tmp_path, capsys):
    # Ax's own limit (a range narrower than 1.5e-5) was a traceback.
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_space(x={"type": "float", "low": 0, "high": 1e-300})))
    argv = ["--objective", "toy_objectives:quadratic", "--space", str(path)]
    assert tune(*argv, "--checkpoint", str(tmp_path / "x.json"), *FAST) == 2
    err = capsys.readouterr().err
    assert "Ax refuses the search space: Parameter x's range" in err


def test_an_exhausted_discrete_space_exits_with_a_reason(tmp_path, capsys):
    # Three points and four trials: Ax's SearchSpaceExhausted was a traceback.
    path = tmp_path / "space.json"
    path.write_text(json.dumps({"n": {"type": "int", "low": 1, "high": 3}}))
    argv = ["--objective", "toy_objectives:size", "--space", str(path)]
    argv += ["--trials", "4", "--initial", "3"]
    assert tune(*argv, "--checkpoint", str(tmp_path / "x.json"), *FAST) == 2
    assert "the search space may be too small" in capsys.readouterr().err


@pytest.mark.slow
def test_an_infinite_value_fails_the_trial_and_an_ax_run_goes_on(space_file, tmp_path):
    # Ax recorded an infinite value as complete and could not fit a model to
    # it: every later suggestion, and every resume, raised DataRequiredError.
    path = tmp_path / "inf.json"
    argv = ["--objective", "toy_objectives:inf_above", "--space", space_file]
    argv += ["--backend", "ax", "--trials", "6", "--initial", "4"]
    assert tune(*argv, "--checkpoint", str(path), *FAST) == 0
    record = _record(path)
    failed = [t for t in record["trials"].values() if "failed" in t]
    assert failed and all("inf}" in t["failed"] for t in failed)
    done = [t for t in record["trials"].values() if "score" in t]
    assert len(done) == 6 and all(math.isfinite(t["score"]) for t in done)
    assert (
        tune(*argv, "--trials", "7", "--checkpoint", str(path), "--resume", *FAST) == 0
    )


@pytest.mark.parametrize("backend", ["ax", "optuna"])
def test_second_run_on_a_locked_checkpoint_refuses(
    backend, space_file, tmp_path, capsys
):
    path = tmp_path / "locked"
    argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
    with tune_lock.checkpoint_lock(str(path)):
        start = time.monotonic()
        code = tune(*argv, "--backend", backend, "--checkpoint", str(path), *FAST)
        assert code == 2 and time.monotonic() - start < 5
    assert f"{path} is in use by another tune run (process {os.getpid()})" in (
        capsys.readouterr().err
    )
    assert not path.exists()


def _space(**entries):
    return {**SPACE, **entries}


@pytest.mark.parametrize(
    "space, message",
    [
        ("{", "is not valid JSON"),
        ([1, 2], "must be a JSON object mapping parameter names"),
        ({}, "the space has no parameter"),
        (_space(x=[0, 1]), "parameter 'x' must be an object"),
        (_space(x={"type": "real"}), "parameter 'x': 'type' must be one of"),
        (_space(x={"type": "float", "low": 0}), "parameter 'x' (float) lacks 'high'"),
        (
            _space(x={"type": "float", "low": 0, "high": 1, "step": 0.1}),
            "parameter 'x' (float) has an unknown field 'step'",
        ),
        (
            _space(x={"type": "float", "low": 2, "high": 1}),
            "parameter 'x': the lower bound 2 must be below the upper bound 1",
        ),
        (
            _space(x={"type": "float", "low": 0, "high": 1, "log": True}),
            "parameter 'x': a log-scale range needs a positive lower bound",
        ),
        (
            _space(x={"type": "float", "low": "0", "high": 1}),
            "parameter 'x': 'low' must be a finite number",
        ),
        (
            _space(n={"type": "int", "low": 1.5, "high": 10}),
            "parameter 'n': an integer range needs integer bounds",
        ),
        (
            _space(kind={"type": "categorical", "choices": ["a"]}),
            "parameter 'kind': 'choices' must be a list of at least two",
        ),
        (
            _space(kind={"type": "categorical", "choices": ["a", "a"]}),
            "parameter 'kind': 'choices' repeats a value",
        ),
        (
            _space(kind={"type": "categorical", "choices": [1, 1.0]}),
            "parameter 'kind': 'choices' repeats a value",
        ),
        (
            _space(x={"type": "float", "low": -1e308, "high": 1e308}),
            "parameter 'x': the range [-1e+308, 1e+308] is too wide to sample",
        ),
        (
            _space(n={"type": "int", "low": 0, "high": 1e300}),
            "parameter 'n': integer bounds must lie within +-2^53",
        ),
        # JSON keeps the last of two entries of one name: the first was lost.
        (
            '{"x": {"type": "float", "low": 0, "high": 1}, '
            '"x": {"type": "float", "low": 0, "high": 100}}',
            "parameter 'x' is named twice",
        ),
        (
            '{"x": {"type": "float", "low": 0, "high": 1, "high": 100}}',
            "parameter 'x' gives 'high' twice",
        ),
    ],
)
def test_bad_space_files_are_named(space, message, tmp_path, capsys):
    path = tmp_path / "space.json"
    path.write_text(space if isinstance(space, str) else json.dumps(space))
    ckpt = tmp_path / "x.json"
    argv = ["--objective", "toy_objectives:quadratic", "--space", str(path)]
    assert tune(*argv, "--checkpoint", str(ckpt), *FAST) == 2
    err = capsys.readouterr().err
    assert f"--space {path}" in err and message in err
    assert not ckpt.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--objective", "toy_objectives"], "must be MODULE:FUNCTION"),
        (["--objective", "no_such_module_x:f"], "no module named 'no_such_module_x'"),
        (["--objective", "toy_objectives:missing"], "has no 'missing'"),
        (["--objective", "toy_objectives:NOT_CALLABLE"], "is not callable (got 3)"),
        (["--objective", "broken_objective:f"], "importing broken_objective failed"),
        (["--objective", "toy_objectives:text"], "returned 'high' for 'value'"),
        (["--objective", "toy_objectives:two"], "without 'value'; name its values"),
        (
            [
                "--objective",
                "toy_objectives:quadratic",
                "--objectives",
                "a=max",
                "b=min",
            ],
            "returned a float, not a dict of the 2 objectives",
        ),
        (["--objectives", "loss"], "NAME=min or NAME=max"),
        (["--objectives", "a=min", "a=max"], "names 'a' twice"),
        (["--dataset", "iris"], "--dataset is an option of the built-in problems"),
        (["--backend", "optuna", "--acquisition", "qlogei"], "an Ax setting"),
    ],
)
def test_bad_objectives_exit_2_with_a_message(
    argv, message, space_file, tmp_path, capsys, monkeypatch
):
    (tmp_path / "broken_objective.py").write_text("raise RuntimeError('no GPU')\n")
    # The current directory is searched, as ``python -m`` does.
    monkeypatch.chdir(tmp_path)
    if "--objective" not in argv:
        argv = ["--objective", "toy_objectives:quadratic", *argv]
    if "--backend" not in argv:
        argv = [*argv, "--backend", "optuna"]  # no model fit before trial 3
    ckpt = ["--checkpoint", str(tmp_path / "x.db")]
    argv += ["--space", space_file, "--initial", "2", "--trials", "2", *ckpt]
    assert tune(*argv, *FAST) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--objective", "toy_objectives:quadratic"], "--objective needs --space"),
        (["--objectives", "loss=min"], "--objectives goes with --objective"),
    ],
)
def test_options_of_the_other_kind_of_problem(argv, message, tmp_path, capsys):
    assert tune(*argv, "--checkpoint", str(tmp_path / "x.json"), *FAST) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_compare_plots_ax_and_optuna_runs(space_file, tmp_path, capsys):
    paths = []
    for backend, suffix in (("ax", ".json"), ("optuna", ".db")):
        path = str(tmp_path / f"r{suffix}")
        argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
        argv += ["--backend", backend, "--trials", "3", "--initial", "3"]
        assert tune(*argv, "--checkpoint", path, *FAST) == 0
        paths.append(path)
    capsys.readouterr()
    assert tune("--compare", *paths, "--plot", str(tmp_path / "c.png")) == 0
    out = capsys.readouterr().out
    assert "| nystrom (toy_objectives:quadratic) | 3 |" in out
    assert "| optuna:nystrom (toy_objectives:quadratic) | 3 |" in out


def test_space_round_trips_through_the_checkpoint_format():
    params = parse_space(SPACE)
    assert params[2] == Choice("kind", ("a", "b"))
    from botorch_sketch.tune.space import to_dict

    assert parse_space([to_dict(p) for p in params]) == params
    assert math.isclose(params[1].high, 10) and params[1].log


@pytest.mark.slow
def test_optuna_overwrite_and_foreign_sqlite_files(space_file, tmp_path, capsys):
    import sqlite3

    path = tmp_path / "run.db"
    argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
    argv += ["--backend", "optuna", "--initial", "3", "--checkpoint", str(path)]
    assert tune(*argv, "--trials", "3", *FAST) == 0
    assert tune(*argv, "--trials", "2", "--overwrite", *FAST) == 0
    assert len(_study(path).trials) == 2
    # Someone else's SQLite file is named, and left as it was.
    foreign = tmp_path / "foreign.sqlite"
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        db.execute("CREATE TABLE t (x)")
    assert tune("--checkpoint", str(foreign), "--resume", *FAST) == 2
    assert "is an SQLite file but not an Optuna storage" in capsys.readouterr().err
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master")]
    assert tables == ["t"]


def test_resume_runs_only_the_objective_the_command_names(
    space_file, tmp_path, capsys, monkeypatch
):
    # A checkpoint is data: one from elsewhere naming ``os:system`` was imported
    # and called with each trial's parameters on --resume.
    path = tmp_path / "run.json"
    argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
    argv += ["--initial", "4", "--checkpoint", str(path)]
    assert tune(*argv, "--trials", "2", *FAST) == 0
    snapshot = json.loads(path.read_text())
    snapshot["botorch_sketch_tune"]["config"]["objective"] = "os:system"
    path.write_text(json.dumps(snapshot))
    content = path.read_bytes()
    calls = []
    monkeypatch.setattr(os, "system", lambda *args: calls.append(args) or 0.5)
    capsys.readouterr()
    resume = ["--checkpoint", str(path), "--resume", "--trials", "3", *FAST]
    assert tune(*resume) == 2
    err = capsys.readouterr().err
    assert "names the objective 'os:system'" in err and "--objective" in err
    # Naming another function is refused as before; naming it runs it.
    assert tune(*resume, "--objective", "toy_objectives:quadratic") == 2
    assert "made with objective = 'os:system'" in capsys.readouterr().err
    assert not calls and path.read_bytes() == content
    assert tune(*resume, "--objective", "os:system") == 0
    assert len(calls) == 1


@pytest.mark.slow  # each dead worker's successor imports torch (a few seconds)
def test_a_worker_that_dies_fails_its_trial_and_the_run_goes_on(space_file, tmp_path):
    # os._exit (as a segfault or the OOM killer) broke the process pool: a
    # BrokenProcessPool traceback on either backend (the pool is theirs alike),
    # and the trial running beside the dead one failed with it.
    path = tmp_path / "run.json"
    argv = ["--objective", "toy_objectives:exit_above", "--space", space_file]
    argv += ["--trials", "6", "--initial", "6", "--checkpoint", str(path)]
    fast = FAST[:-2]  # without "--workers", "0"
    assert tune(*argv, *fast, "--workers", "2") == 0
    record = _record(path)
    assert len([t for t in record["trials"].values() if "score" in t]) == 6
    died = [t for t in record["trials"].values() if "failed" in t]
    assert died, "no trial reached x > 0.7"
    for trial in record["trials"].values():
        x = trial["parameters"]["x"]
        if x > 0.7:
            assert "WorkerDied" in trial["failed"] and "exit code 1" in trial["failed"]
        else:
            assert trial["score"] == pytest.approx((x - 0.3) ** 2)
    # Every trial is in the checkpoint, none left RUNNING.
    statuses = tune_ax.trial_statuses(tune_ax_client.load_checkpoint(str(path))[0])
    assert list(statuses.values()).count("FAILED") == len(died)
    assert len(statuses) == len(record["trials"])


@pytest.mark.slow
def test_ax_finishes_where_half_the_space_returns_nan(space_file, tmp_path):
    # Ax suggested the failed point again and again (a failed trial is no
    # data and no pending point) until the run stopped after 21 failures.
    path = tmp_path / "nan.json"
    argv = ["--objective", "toy_objectives:nan_half", "--space", space_file]
    argv += ["--trials", "8", "--initial", "3", "--checkpoint", str(path)]
    assert tune(*argv, *FAST) == 0
    record = _record(path)
    done = [t for t in record["trials"].values() if "score" in t]
    assert len(done) == 8 and all(t["parameters"]["x"] <= 0.5 for t in done)
    evaluated = [
        tuple(sorted(t["parameters"].items()))
        for t in record["trials"].values()
        if "score" in t or not t["failed"].startswith("not evaluated")
    ]
    assert len(set(evaluated)) == len(evaluated)  # no point evaluated twice
    # A repeat is ABANDONED (pending to Ax, so not proposed a third time).
    statuses = tune_ax.trial_statuses(tune_ax_client.load_checkpoint(str(path))[0])
    for index, trial in record["trials"].items():
        if trial.get("failed", "").startswith("not evaluated"):
            assert statuses[int(index)] == "ABANDONED"


class _RepeatingClient:
    # An Ax client whose model proposes one point for ever.
    def __init__(self, point):
        self.point, self.trials, self.abandoned = point, 1, []

    def get_next_trials(self, max_trials):
        self.trials += max_trials
        return {self.trials - 1 - i: dict(self.point) for i in range(max_trials)}

    def mark_trial_abandoned(self, index):
        self.abandoned.append(index)

    def attach_trial(self, parameters):
        self.trials += 1
        return self.trials - 1


def test_ax_repeating_a_failed_point_gets_a_random_one():
    config = tune_config.TuneConfig(
        objective="toy_objectives:quadratic", space=list(_named_space())
    )
    run = object.__new__(tune_ax.AxRun)
    point = {"x": 0.9, "n": 3, "kind": "a"}
    run.config, run.client = config, _RepeatingClient(point)
    run.record = {"trials": {"0": {"parameters": point, "failed": "ValueError"}}}
    suggested = run.suggest(2, others_running=False)
    # Asked 1 + REPEAT_TRIES times; every repeat abandoned, never evaluated.
    assert len(run.client.abandoned) == 2 * (1 + tune_ax.REPEAT_TRIES)
    assert len(suggested) == 2
    for parameters in suggested.values():
        assert parameters != point and 0 <= parameters["x"] <= 1
        assert isinstance(parameters["n"], int) and 1 <= parameters["n"] <= 10
        assert parameters["kind"] in ("a", "b")
    for index in run.client.abandoned:
        assert run.record["trials"][str(index)]["failed"].startswith(
            "not evaluated: the point of failed trial 0"
        )
    # An interrupted trial's point may run again.
    run.record["trials"]["0"]["failed"] = "interrupted"
    assert list(run.suggest(1, others_running=False).values()) == [point]


def _named_space():
    return ({"name": name, **entry} for name, entry in SPACE.items())


@pytest.fixture(scope="module")
def sobol_runs(tmp_path_factory, space_file):
    # A run of three Sobol trials on each backend (no model: quick to make).
    folder = tmp_path_factory.mktemp("sobol")
    sys.path.insert(0, HERE)
    try:
        runs = {}
        for backend, name in (("ax", "run.json"), ("optuna", "run.db")):
            path = folder / name
            argv = ["--objective", "toy_objectives:quadratic", "--space", space_file]
            argv += ["--backend", backend, "--initial", "3", "--trials", "3"]
            assert tune(*argv, "--checkpoint", str(path), *FAST) == 0
            runs[backend] = path
    finally:
        sys.path.remove(HERE)
    return runs


def _edit_ax(path, change):
    snapshot = json.loads(path.read_text())
    change(snapshot[tune_checkpoint.KEY])
    path.write_text(json.dumps(snapshot))


def _widen_x(config):
    # The space as both the settings' fields hold it, x's range ten times wider.
    for field in ("space", "params"):
        for entry in config[field]:
            if entry["name"] == "x":
                entry["high"] = 10.0


def _edit_score(path, backend):
    if backend == "ax":
        _edit_ax(path, lambda r: r["trials"]["0"].update(score=-1.0))
        return
    trial = _study(path).trials[0]
    _set_trial_record(
        path, trial, dict(trial.user_attrs[tune_checkpoint.KEY], score=-1.0)
    )


def _set_trial_record(path, trial, entry):
    # Optuna updates no finished trial: edited in the file, as a user could.
    # (Optuna's table of trial user attributes.)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "UPDATE trial_user_attributes SET value_json = ? "
            "WHERE trial_id = ? AND key = ?",
            (json.dumps(entry), trial._trial_id, tune_checkpoint.KEY),
        )


def _edit_space(path, backend):
    if backend == "ax":
        _edit_ax(path, lambda r: _widen_x(r["config"]))
        return
    study = _study(path)
    settings = study.user_attrs[tune_checkpoint.KEY]
    _widen_x(settings["config"])
    study.set_user_attr(tune_checkpoint.KEY, settings)


def _edit_parameters(path, backend):
    if backend == "ax":
        _edit_ax(path, lambda r: r["trials"]["1"]["parameters"].update(kind="c"))
        return
    trial = _study(path).trials[1]
    entry = dict(trial.user_attrs[tune_checkpoint.KEY])
    entry["parameters"] = {**entry["parameters"], "kind": "c"}
    _set_trial_record(path, trial, entry)


@pytest.mark.parametrize("backend", ["ax", "optuna"])
@pytest.mark.parametrize(
    "edit, message",
    [
        (_edit_score, "trial 0: its score is -1.0 in the run's record but"),
        (_edit_space, "parameter 'x' is"),
        (_edit_parameters, "trial 1: its parameter 'kind' is 'c' in the run's record"),
    ],
    ids=["score", "space", "parameters"],
)
def test_an_edited_checkpoint_is_refused_on_resume(
    backend, edit, message, sobol_runs, tmp_path, capsys, monkeypatch
):
    # Accepted, the run went on with a record that disagreed with the
    # backend's own (a score no trial had; a space Ax or the study never had).
    path = tmp_path / sobol_runs[backend].name
    path.write_bytes(sobol_runs[backend].read_bytes())
    edit(path, backend)
    content = path.read_bytes()

    def evaluate(*args, **kwargs):
        raise AssertionError("a trial was evaluated")

    monkeypatch.setattr(tune_evaluation, "evaluate", evaluate)
    argv = ["--objective", "toy_objectives:quadratic", "--checkpoint", str(path)]
    assert tune(*argv, "--resume", "--trials", "4", *FAST) == 2
    err = capsys.readouterr().err
    assert f"checkpoint {path}" in err and message in err, err
    assert "edited" in err
    assert path.read_bytes() == content
