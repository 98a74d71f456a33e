"""The ``botorch-sketch`` command starts without importing the heavy libraries.

``botorch-sketch --help`` took 5 s on an idle machine (20 s on a busy one), all
of it importing torch, BoTorch and Ax through the package's ``__init__`` and the
tune command's modules. Each start-up check runs in a fresh interpreter: this
process has imported torch already.
"""

import subprocess
import sys

import pytest

import botorch_sketch
from botorch_sketch import cli

#: Top-level modules that take seconds to import.
HEAVY = ("torch", "botorch", "gpytorch", "linear_operator", "ax", "optuna", "sklearn")


def _imported_after(code: str) -> list[str]:
    # The heavy modules that a fresh interpreter holds after running ``code``.
    probe = (
        f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return out.split()


@pytest.mark.cpu_only
@pytest.mark.parametrize(
    "code",
    [
        "import botorch_sketch",
        "import botorch_sketch.cli",
        "from botorch_sketch import cli; cli.build_parser(['--help'])",
        # The tune command's options and help text need none of them either.
        "from botorch_sketch import cli; cli.build_parser(['tune', '--help'])",
        "import botorch_sketch.tune",
    ],
)
def test_the_help_path_imports_no_heavy_library(code):
    assert _imported_after(code) == []


@pytest.mark.cpu_only
def test_the_help_answers_in_a_fresh_process():
    # The console script's own path: `python -m botorch_sketch.cli --help`.
    done = subprocess.run(
        [sys.executable, "-m", "botorch_sketch.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "tune a scikit-learn estimator" in done.stdout
    assert "botorch-sketch COMMAND --help" in done.stdout


def test_a_command_line_naming_tune_gets_its_options():
    _, subparsers = cli.build_parser(["tune", "--trials", "5"])
    options = {a.dest for a in subparsers["tune"]._actions}
    assert {"trials", "checkpoint", "resume"} <= options
    # Without the command the subparser is a stub (its module is not imported).
    _, subparsers = cli.build_parser(["--help"])
    assert {a.dest for a in subparsers["tune"]._actions} == {"help"}


def test_an_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["tumne"])
    assert e.value.code == 2
    assert "invalid choice: 'tumne'" in capsys.readouterr().err


def test_the_package_names_resolve_on_first_use():
    from botorch_sketch.models import NystromGP

    assert sorted(botorch_sketch._EXPORTS) == sorted(botorch_sketch.__all__)
    for name in botorch_sketch.__all__:
        assert getattr(botorch_sketch, name) is not None
        assert name in dir(botorch_sketch)
    assert botorch_sketch.NystromGP is NystromGP
    with pytest.raises(AttributeError, match="no attribute 'NotAName'"):
        botorch_sketch.NotAName  # noqa: B018
