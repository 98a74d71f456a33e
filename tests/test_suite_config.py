"""The suite's own settings: a short summary at the end of ``make test``.

With ``-ra`` pytest listed every skipped test after the run (137 lines, most of
them tests/cuda on a machine without a GPU), burying the failures above them.
"""

import configparser
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _report_chars() -> str:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    chars = ""
    for option in shlex.split(config["tool:pytest"]["addopts"]):
        if option.startswith("-r"):
            chars += option[2:]
    return chars


def test_the_summary_lists_failures_not_skips():
    chars = _report_chars()
    assert "f" in chars and "E" in chars, chars
    # "s" lists the skips; "a" and "A" include them.
    assert not set(chars) & set("saA"), chars


@pytest.mark.slow  # a pytest process: its plugins load in 3-8 s
def test_the_summary_stays_short(tmp_path):
    # A run with many skips ends without a line per skip, and still counts them.
    (tmp_path / "test_many.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('i', range(20))\n"
        "def test_skipped(i):\n    pytest.skip('no GPU')\n\n"
        "def test_failed():\n    assert False\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        + [f"-r{_report_chars()}", "test_many.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert "1 failed, 20 skipped" in lines[-1]
    assert not [line for line in lines if line.startswith("SKIPPED")]
    assert [line for line in lines if line.startswith("FAILED")]
