import contextlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time

import pytest
import torch

pytest.importorskip("ax")
pytest.importorskip("sklearn")

from ax.api.client import Client  # noqa: E402

import botorch_sketch  # noqa: E402
import botorch_sketch.integrations.ax  # noqa: E402, F401 (lets Ax decode NystromGP)
from botorch_sketch import cli  # noqa: E402
from botorch_sketch.integrations.ax_carried import CarriedNystromGP  # noqa: E402
from botorch_sketch.tune import ax_client as tune_ax_client  # noqa: E402
from botorch_sketch.tune import checkpoint as tune_checkpoint  # noqa: E402
from botorch_sketch.tune import cli as tune_cli  # noqa: E402
from botorch_sketch.tune import config as tune_config  # noqa: E402
from botorch_sketch.tune import errors as tune_errors  # noqa: E402
from botorch_sketch.tune import evaluation as tune_evaluation  # noqa: E402
from botorch_sketch.tune import lock as tune_lock  # noqa: E402
from botorch_sketch.tune.problems import Param, evaluate, search_space  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(botorch_sketch.__file__)))
FAST = ["--num-restarts", "2", "--raw-samples", "64", "--quiet"]
PROBLEM = ["--dataset", "iris", "--estimator", "logreg", "--initial", "4"]


@pytest.fixture(autouse=True)
def keep_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def tune(*argv):
    return cli.main(["tune", *argv])


def completed_trials(path):
    # Trial index -> (parameters, score) of the COMPLETED trials, read by Ax.
    client = Client.load_from_json_file(str(path))
    df = client._experiment.lookup_data().df
    scores = dict(zip(df["trial_index"], df["mean"], strict=True))
    return {
        index: (trial.arm.parameters, scores[index])
        for index, trial in client._experiment.trials.items()
        if trial.status.name == "COMPLETED"
    }, client


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("short") / "run.json"
    code = tune(
        *PROBLEM, "--trials", "12", "--workers", "0", "--checkpoint", str(path), *FAST
    )
    return code, path


@pytest.mark.slow
def test_short_run_completes_with_the_right_count(short_run):
    code, path = short_run
    assert code == 0
    trials, client = completed_trials(path)
    assert len(trials) == 12 == len(client._experiment.trials)
    # The model is ours, the scores are the objective's.
    node = client._generation_strategy._nodes[-1]
    spec = node.generator_specs[0].generator_kwargs["surrogate_spec"]
    model_class = spec.model_configs[0].botorch_model_class
    assert model_class is CarriedNystromGP  # a NystromGP carried across trials
    assert issubclass(model_class, botorch_sketch.NystromGP)
    params, score = trials[7]
    assert score == pytest.approx(evaluate("iris", "logreg", params, 3, 0)[0])
    record = json.loads(path.read_text())["botorch_sketch_tune"]
    assert sorted(t["completed"] for t in record["trials"].values()) == list(
        range(1, 13)
    )
    assert all(t["suggest_seconds"] > 0 for t in record["trials"].values())
    assert path.with_suffix(".png").stat().st_size > 10_000


def test_compare_plots_two_runs(short_run, tmp_path, capsys):
    _, path = short_run
    other = tmp_path / "default.json"
    argv = [*PROBLEM, "--model", "default", "--trials", "6", "--workers", "0"]
    assert tune(*argv, "--checkpoint", str(other), *FAST) == 0
    capsys.readouterr()
    out = tmp_path / "cmp.png"
    assert tune("--compare", str(path), str(other), "--plot", str(out)) == 0
    text = capsys.readouterr().out
    assert "| nystrom (logreg/iris) | 12 |" in text
    assert "| default (logreg/iris) | 6 |" in text
    assert out.stat().st_size > 10_000


def _group_alive(group):
    # Whether any process of the process group lives (POSIX: signal 0 checks).
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_members(group):
    # The command lines of the group's processes, where /proc says (Linux).
    members = []
    for pid in filter(
        str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else []
    ):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    members.append(f.read().replace(b"\0", b" ").decode()[:120])
        except (OSError, IndexError, ValueError):
            continue
    return members


@pytest.mark.slow
def test_killed_run_resumes_without_losing_or_repeating_trials(tmp_path, capsys):
    path = tmp_path / "killed.json"
    total, kill_at = 16, random.randint(3, 9)
    argv = [*PROBLEM, "--trials", str(total), "--workers", "2", *FAST]
    env = {**os.environ, "PYTHONPATH": ROOT}
    # A session of its own: the run, its workers and multiprocessing's resource
    # tracker form one process group, which the test can watch and clean up.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "botorch_sketch.tune",
            *argv,
            "--checkpoint",
            str(path),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        done = 0
        while done < kill_at:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
            if path.exists():
                record = json.loads(path.read_text())["botorch_sketch_tune"]
                done = sum("score" in t for t in record["trials"].values())
        # A second run on the same checkpoint refuses while the first holds it.
        for flag in ("--resume", "--overwrite"):
            assert tune(*argv, "--checkpoint", str(path), flag) == 2
            err = capsys.readouterr().err
            assert f"{path} is in use by another tune run (process {proc.pid})" in err
        if os.path.isdir("/proc"):  # the run's workers are there to be orphaned
            assert len(_group_members(proc.pid)) >= 3, _group_members(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # Its workers and the resource tracker see their parent die and exit.
        orphans_deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < orphans_deadline:
            time.sleep(0.1)
        assert not _group_alive(proc.pid), _group_members(proc.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    before, client = completed_trials(path)
    assert len(before) >= kill_at, f"killed at {kill_at}"
    running = [
        i for i, t in client._experiment.trials.items() if not t.status.is_terminal
    ]

    # Without --resume the checkpoint is left alone.
    content = path.read_bytes()
    assert tune(*argv, "--checkpoint", str(path)) == 2
    assert path.read_bytes() == content

    assert tune("--checkpoint", str(path), "--resume", "--workers", "0", *FAST) == 0
    after, client = completed_trials(path)
    assert len(after) == total, f"killed at {kill_at}"
    for index, value in before.items():
        assert after[index] == value
    # Nothing was run twice: the resumed run added only the missing trials to
    # the interrupted ones, and its Sobol stream went on rather than restarting
    # (the model may rightly propose a bound twice, the quasi-random points not).
    assert len(client._experiment.trials) == total + len(running)
    sobol = [
        tuple(sorted(trial.arm.parameters.items()))
        for trial in client._experiment.trials.values()
        if trial.generator_runs[0]._generator_key == "Sobol"
    ]
    assert len(sobol) >= 4 and len(set(sobol)) == len(sobol)
    for index in running:
        trial = client._experiment.trials[index]
        assert trial.status.name == "FAILED" and trial.status_reason == "interrupted"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--estimator", "xgboost"], "invalid choice: 'xgboost'"),
        (["--dataset", "mnist"], "invalid choice: 'mnist'"),
        (["--bounds", "C=1"], "NAME=LOW:HIGH"),
        (["--bounds", "C=10:1"], "lower bound 10 must be below the upper bound 1"),
        (["--bounds", "C=-1:10"], "log-scale range needs a positive lower bound"),
        (["--bounds", "gamma=1:2"], "has no parameter 'gamma'"),
        (["--trials", "0"], "must be at least 1"),
        (["--trials", "100001"], "must be at most 100000"),
        (["--seed", "-1"], "must be at least 0"),
        (["--folds", "1001"], "must be at most 1000"),
        (["--resume", "--overwrite"], "not allowed with argument"),
        (["--resume"], "--resume needs --checkpoint"),
        (["--model", "default", "--acquisition", "bkb"], "bkb needs --model nystrom"),
        (["--model", "subset", "--subset-size", "5"], "--subset-size (5) must exceed"),
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, tmp_path, capsys):
    ckpt = ["--checkpoint", str(tmp_path / "x.json")] if "--resume" not in argv else []
    try:
        code = tune(*PROBLEM, *argv, *ckpt)
    except SystemExit as e:  # argparse
        code = e.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_bad_checkpoints_exit_2_and_are_left_alone(short_run, tmp_path, capsys):
    _, good = short_run
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(good.read_text()[:1000])
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"experiment": {}}')
    cases = [
        (["--checkpoint", str(tmp_path / "none.json"), "--resume"], "no checkpoint"),
        (["--checkpoint", str(corrupt), "--resume"], "corrupt or truncated"),
        (["--checkpoint", str(foreign), "--resume"], "not a botorch-sketch tune"),
        (
            ["--checkpoint", str(good), "--resume", "--estimator", "svm"],
            "made with estimator = 'logreg', not 'svm'",
        ),
        (["--checkpoint", str(good), "--dataset", "iris"], "exists; pass --resume"),
        (["--compare", str(corrupt)], "corrupt or truncated"),
    ]
    saved = {p: p.read_bytes() for p in (good, corrupt, foreign)}
    for argv, message in cases:
        assert tune(*argv) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert {p: p.read_bytes() for p in saved} == saved
    assert not (tmp_path / "none.json").exists()


def test_checkpoint_write_is_atomic(short_run, tmp_path, monkeypatch):
    _, good = short_run
    client, record = tune_ax_client.load_checkpoint(str(good))
    path = tmp_path / "ck.json"
    tune_checkpoint.save_checkpoint(str(path), client, record)
    content = path.read_bytes()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tune_checkpoint.json, "dump", fail)
    with pytest.raises(OSError, match="disk full"):
        tune_checkpoint.save_checkpoint(str(path), client, record)
    assert path.read_bytes() == content
    assert os.listdir(tmp_path) == ["ck.json"]


@pytest.mark.parametrize(
    "acquisition, expected",
    [
        ("auto", None),
        ("qlogei", "qLogExpectedImprovement"),
        ("bkb", "qBKBUpperConfidenceBound"),
    ],
)
def test_acquisition_setting_names_the_botorch_class(acquisition, expected):
    config = tune_config.TuneConfig(acquisition=acquisition)
    gs = tune_ax_client.generation_strategy(config)
    kwargs = gs._nodes[-1].generator_specs[0].generator_kwargs
    acqf = kwargs.get("botorch_acqf_class")
    assert (acqf and acqf.__name__) == expected


@pytest.mark.parametrize(
    "model, expected",
    [("nystrom", "CarriedNystromGP"), ("subset", "GradientSubsetGP")],
)
def test_model_setting_names_our_class(model, expected):
    config = tune_config.TuneConfig(model=model, initial=7, subset_size=30)
    gs = tune_ax_client.generation_strategy(config)
    kwargs = gs._nodes[-1].generator_specs[0].generator_kwargs
    (model_config,) = kwargs["surrogate_spec"].model_configs
    assert model_config.botorch_model_class.__name__ == expected
    if model == "subset":
        assert model_config.model_options == {"subset_size": 30, "num_initial": 7}
    else:
        # A key of this strategy's own: two runs in one process do not share.
        other = tune_ax_client.generation_strategy(config)
        other_kwargs = other._nodes[-1].generator_specs[0].generator_kwargs
        (other_config,) = other_kwargs["surrogate_spec"].model_configs
        assert model_config.model_options["carry"]
        assert model_config.model_options != other_config.model_options


def test_search_spaces_validate_their_bounds():
    assert [p.name for p in search_space("svm")] == ["C", "gamma"]
    (c,) = search_space("logreg", {"C": (0.1, 10.0)})
    assert (c.low, c.high, c.log) == (0.1, 10.0, True)
    with pytest.raises(ValueError, match="integer range needs integer bounds"):
        Param("k", 1.5, 4, kind="int")
    with pytest.raises(ValueError, match="finite"):
        Param("x", 0.0, float("inf"))
    with pytest.raises(ValueError, match="unknown estimator"):
        search_space("xgboost")


@pytest.mark.slow
def test_ray_cluster_runs_the_trials(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        path = tmp_path / "ray.json"
        argv = [*PROBLEM, "--trials", "8", "--ray", "auto", "--checkpoint", str(path)]
        assert tune(*argv, *FAST) == 0
        trials, _ = completed_trials(path)
        assert len(trials) == 8
    finally:
        ray.shutdown()


def test_quiet_ax_restores_the_callers_filters_and_log_level():
    import warnings

    from ax.utils.common.logger import ROOT_STREAM_HANDLER

    before_filters, before_level = list(warnings.filters), ROOT_STREAM_HANDLER.level
    with tune_ax_client.quiet_ax():
        assert ROOT_STREAM_HANDLER.level >= 40 and warnings.filters[0][0] == "ignore"
    assert warnings.filters == before_filters
    assert ROOT_STREAM_HANDLER.level == before_level


@pytest.mark.parametrize(
    "main, argv",
    [(cli.main, ["tune", "--help"]), (tune_cli.main, ["--help"])],
)
def test_help_is_plain_text(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "through Ax with NystromGP or Ax's" in text
    assert "or through Optuna with SketchSampler." in text
    assert "botorch-sketch tune --checkpoint tune-svm-digits-nystrom.json" in text
    assert "Exit status: 0 on success, 2 on bad input" in text
    for markup in ("`", ":class:", "::", "~botorch_sketch"):
        assert markup not in text


@pytest.fixture
def no_evaluation(monkeypatch):
    # With --workers 0 trials run in this process: a refused run evaluates none.
    def evaluate(*args, **kwargs):
        raise AssertionError("a trial was evaluated")

    monkeypatch.setattr(tune_evaluation, "evaluate", evaluate)


def _edit_record(change):
    # A checkpoint's text -> the text with ``change`` applied to its record.
    def edit(text):
        snapshot = json.loads(text)
        change(snapshot["botorch_sketch_tune"])
        return json.dumps(snapshot)

    return edit


def _edit_config(**fields):
    return _edit_record(lambda record: record["config"].update(fields))


def _edit_trial(**fields):
    return _edit_record(lambda r: next(iter(r["trials"].values())).update(fields))


def _edit_text(old, new):
    return lambda text: text.replace(old, new, 1)


@pytest.mark.parametrize(
    "edit, message",
    [
        (_edit_config(folds="abc"), "'folds' must be an integer from 2 to 1000"),
        (_edit_config(bounds="C=1:2"), "'bounds' must map parameter names"),
        (_edit_config(bounds={"C": [1, "x"]}), "'bounds' must map parameter names"),
        (_edit_config(trials=10**30), "an integer of about 30 digits"),
        (_edit_config(trials=12.0), "'trials' must be an integer"),
        (_edit_config(seed=True), "'seed' must be an integer"),
        (_edit_config(model=["nystrom"]), "'model' must be one of"),
        (_edit_config(raw_samples=-5), "'raw_samples' must be an integer"),
        (_edit_config(params="C"), "'params' must be a list"),
        (_edit_config(params=[{"name": "C"}]), "'params' must be a list"),
        (_edit_record(lambda r: r["config"].pop("folds")), "lacks 'folds'"),
        (_edit_record(lambda r: r.update(trials=[])), "trials must be an object"),
        (
            _edit_record(lambda r: r["trials"].update(x={})),
            "a trial index must be a non-negative integer",
        ),
        (_edit_trial(score="0.9"), "'score' must be a number"),
        (_edit_trial(completed=0), "'completed' must be an integer from 1"),
        (_edit_trial(suggest_seconds=-1), "'suggest_seconds' must be a non-negative"),
        (_edit_trial(parameters="C=1"), "'parameters' must map names to numbers"),
        (_edit_trial(failed=1), "'failed' must be a text"),
        (
            _edit_text('"folds": 3', '"folds": 1' + "0" * 4999),
            "corrupt or truncated (not valid JSON: Exceeds the limit",
        ),
        (
            _edit_text('"seed": 0', '"seed": ' + "[" * 100_000 + "]" * 100_000),
            "corrupt or truncated (not valid JSON: maximum recursion depth",
        ),
    ],
)
def test_damaged_checkpoint_fields_exit_2_before_any_trial(
    edit, message, short_run, tmp_path, capsys, no_evaluation
):
    _, good = short_run
    path = tmp_path / "damaged.json"
    path.write_text(edit(good.read_text()))
    content = path.read_bytes()
    # Without --trials the stored count is the goal (10**30 ran without end).
    resume = ["--checkpoint", str(path), "--resume", "--workers", "0", *FAST]
    for argv in (resume, ["--compare", str(path), "--plot", str(tmp_path / "c.png")]):
        assert tune(*argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and str(path) in err, err
        assert len(err) < 1000  # the message, no traceback, no 5000-digit echo
    assert path.read_bytes() == content


def test_settings_of_the_wrong_type_are_named():
    for settings, message in [
        ({"folds": "abc"}, "--folds must be an integer from 2 to 1000, got 'abc'"),
        ({"trials": 10**30}, "--trials must be an integer from 1 to 100000"),
        ({"dataset": None}, "--dataset must be one of"),
        ({"bounds": {"C": (1, float("nan"))}}, "--bounds must map"),
    ]:
        with pytest.raises(tune_errors.TuneError, match=re.escape(message)):
            tune_config.TuneConfig(**settings).validate()


def _copy(source, path, mode=None):
    path.write_bytes(source.read_bytes())
    if mode is not None:
        path.chmod(mode)
    return path


def test_read_only_checkpoint_is_refused_before_any_trial(
    short_run, tmp_path, capsys, no_evaluation
):
    # Replacing it by rename would quietly leave it writable (and changed).
    path = _copy(short_run[1], tmp_path / "ro.json", mode=0o444)
    content = path.read_bytes()
    for flag in (["--resume", "--trials", "14"], ["--overwrite", *PROBLEM]):
        argv = ["--checkpoint", str(path), *flag, "--workers", "0", *FAST]
        assert tune(*argv) == 2, flag
        assert f"checkpoint {path} is read-only" in capsys.readouterr().err, flag
    assert path.read_bytes() == content
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_directory_in_place_of_checkpoint_exits_2(tmp_path, capsys, no_evaluation):
    path = tmp_path / "dir.json"
    path.mkdir()
    for flag in (["--resume"], ["--overwrite", *PROBLEM], PROBLEM):
        assert tune("--checkpoint", str(path), *flag, "--workers", "0", *FAST) == 2
        assert "is not a regular file" in capsys.readouterr().err, flag
    assert path.is_dir() and not any(path.iterdir())


@pytest.mark.parametrize("how", ["chmod", "mkstemp"])
def test_unwritable_directory_is_refused_before_any_trial(
    how, short_run, tmp_path, capsys, monkeypatch, no_evaluation
):
    folder = tmp_path / "folder"
    folder.mkdir()
    path = _copy(short_run[1], folder / "ck.json")
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root may write in a read-only directory")
        folder.chmod(0o555)
    else:  # what a read-only directory does to save_checkpoint, even for root

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tune_checkpoint.tempfile, "mkstemp", refuse)
    try:
        argv = ["--checkpoint", str(path), "--resume", "--trials", "13"]
        assert tune(*argv, "--workers", "0", *FAST) == 2
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    assert f"cannot write checkpoint {path}" in err or "cannot create the lock" in err
    assert sorted(os.listdir(folder)) == ["ck.json"]


def test_second_run_on_a_locked_checkpoint_refuses_at_once(
    short_run, tmp_path, capsys, no_evaluation
):
    path = _copy(short_run[1], tmp_path / "ck.json")
    content = path.read_bytes()
    fresh = tmp_path / "fresh.json"
    with tune_lock.checkpoint_lock(str(path)), tune_lock.checkpoint_lock(str(fresh)):
        for argv in (
            ["--checkpoint", str(path), "--resume", "--trials", "13"],
            ["--checkpoint", str(path), "--overwrite", *PROBLEM],
            ["--checkpoint", str(fresh), *PROBLEM],
        ):
            start = time.monotonic()
            assert tune(*argv, "--workers", "0", *FAST) == 2
            assert time.monotonic() - start < 5
            err = capsys.readouterr().err
            assert f"is in use by another tune run (process {os.getpid()})" in err
            assert argv[1] in err
    assert path.read_bytes() == content and not fresh.exists()
    # Released: no lock file is left, and the next run may take the lock.
    assert sorted(os.listdir(tmp_path)) == ["ck.json"]
    with tune_lock.checkpoint_lock(str(path)):
        pass


def test_stale_temporary_files_are_removed_under_the_lock(short_run, tmp_path):
    path = _copy(short_run[1], tmp_path / "ck.json")
    stale = [tmp_path / ".ck.json.ab_12xyz.tmp", tmp_path / ".ck.json.00000000.tmp"]
    others = [
        tmp_path / ".ck.json.x.abcdefgh.tmp",  # checkpoint ck.json.x's
        tmp_path / ".other.json.abcdefgh.tmp",
        tmp_path / ".ck.json.abc.tmp",  # not a name mkstemp gives
    ]
    for p in stale + others:
        p.write_text("{")
    with tune_lock.checkpoint_lock(str(path)):
        removed = tune_checkpoint.remove_stale_temporaries(str(path))
    assert sorted(removed) == sorted(map(str, stale))
    for p in stale:
        p.write_text("{")
    assert tune("--checkpoint", str(path), "--resume", "--workers", "0", *FAST) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["ck.json", "ck.png", *(p.name for p in others)]
    )


def test_replaced_checkpoint_keeps_its_mode(short_run, tmp_path):
    client, record = tune_ax_client.load_checkpoint(str(short_run[1]))
    path = _copy(short_run[1], tmp_path / "private.json", mode=0o600)
    tune_checkpoint.save_checkpoint(str(path), client, record)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_locked_checkpoint_is_refused_through_a_link(
    short_run, tmp_path, capsys, no_evaluation
):
    # A resume through another name of the live run's file ran beside it,
    # failed its running trials and killed it (UpdateFinishedTrialError).
    path = _copy(short_run[1], tmp_path / "ck.json")
    content = path.read_bytes()
    symlink = tmp_path / "sym.json"
    symlink.symlink_to(path)
    (tmp_path / "elsewhere").mkdir()
    hard = tmp_path / "elsewhere" / "hard.json"
    os.link(path, hard)
    resume = ["--resume", "--trials", "13", "--workers", "0", *FAST]
    for held, other in [(path, symlink), (path, hard), (symlink, path), (hard, path)]:
        with tune_lock.checkpoint_lock(str(held)):
            assert tune("--checkpoint", str(other), *resume) == 2, (held, other)
            err = capsys.readouterr().err
            assert f"checkpoint {other}" in err and "is in use by another" in err
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == ["ck.json", "elsewhere", "sym.json"]


def test_the_lock_follows_the_file_a_save_puts_in_place(short_run, tmp_path):
    # A save replaces the file: the new one is locked before it appears, so a
    # hard link made to it during the run is refused too.
    client, record = tune_ax_client.load_checkpoint(str(short_run[1]))
    path = tmp_path / "ck.json"
    with tune_lock.checkpoint_lock(str(path)) as lock:
        tune_checkpoint.save_checkpoint(str(path), client, record, lock=lock)
        os.link(path, tmp_path / "hard.json")
        with pytest.raises(tune_errors.TuneError, match="is in use by another"):
            with tune_lock.checkpoint_lock(str(tmp_path / "hard.json")):
                pass
    with tune_lock.checkpoint_lock(str(tmp_path / "hard.json")):
        pass


def test_a_hard_link_made_before_a_save_stays_locked(short_run, tmp_path):
    # A hard link to the live run's file kept the old file once a save had
    # replaced it: unlocked, a second run could resume it beside the first.
    client, record = tune_ax_client.load_checkpoint(str(short_run[1]))
    path = _copy(short_run[1], tmp_path / "ck.json")
    (tmp_path / "elsewhere").mkdir()
    hard = tmp_path / "elsewhere" / "hard.json"
    with tune_lock.checkpoint_lock(str(path)) as lock:
        os.link(path, hard)
        for _ in range(2):
            tune_checkpoint.save_checkpoint(str(path), client, record, lock=lock)
            assert not os.path.samefile(path, hard)
            with pytest.raises(tune_errors.TuneError, match="is in use by another"):
                with tune_lock.checkpoint_lock(str(hard)):
                    pass
    # Released with the run: the old file is a copy of its own now.
    with tune_lock.checkpoint_lock(str(hard)):
        pass


def test_a_symlinked_checkpoint_is_written_through(short_run, tmp_path):
    # The save replaced the link with a file and left the target stale.
    store = tmp_path / "store"
    store.mkdir()
    target = _copy(short_run[1], store / "ck.json")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    client, record = tune_ax_client.load_checkpoint(str(link))
    record["note"] = "saved through the link"
    tune_checkpoint.save_checkpoint(str(link), client, record)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["botorch_sketch_tune"]["note"]
    # A run through the link: a new one (Sobol trials only) in the target.
    argv = [*PROBLEM, "--trials", "2", "--workers", "0", *FAST]
    assert tune(*argv, "--checkpoint", str(link), "--overwrite") == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert len(completed_trials(target)[0]) == 2
    assert sorted(os.listdir(store)) == ["ck.json"]  # no temporary file left
