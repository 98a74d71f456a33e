"""The CUDA rerun of the model tests leaves no device-parametrised test out.

Runs on every machine (unlike tests/cuda/test_cuda_models.py, skipped without
CUDA): pytest collects tests/models and the CUDA module in a subprocess, and
the two collections are compared item by item, parametrisations included.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUDA_MODULE = "tests/cuda/test_cuda_models.py"

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    import pytest

    class Record:
        def __init__(self):
            self.items = []

        def pytest_collection_finish(self, session):
            for item in session.items:
                defs = item._fixtureinfo.name2fixturedefs.get("tkwargs", ())
                self.items.append({
                    "dir": item.path.parent.name,
                    "nodeid": item.nodeid,
                    # Where the test function is defined, and which case it is:
                    # the same for a model test and its rerun.
                    "source": Path(item.function.__code__.co_filename).name,
                    "function": item.function.__name__,
                    "case": getattr(getattr(item, "callspec", None), "id", None),
                    "tkwargs": "tkwargs" in item.fixturenames,
                    "tkwargs_from": (
                        Path(defs[-1].func.__code__.co_filename).name
                        if defs else None
                    ),
                    "cpu_only": item.get_closest_marker("cpu_only") is not None,
                })

    record = Record()
    code = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[2:]],
        plugins=[record],
    )
    Path(sys.argv[1]).write_text(json.dumps({"code": int(code), "items": record.items}))
    """
)


def _collect(tmp_path, *paths):
    out = tmp_path / "items.json"
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0, run.stdout + run.stderr
    return result["items"]


def _key(item):
    return item["source"], item["function"], item["case"]


@pytest.mark.slow
def test_cuda_module_reruns_exactly_the_device_parametrised_model_tests(tmp_path):
    items = _collect(tmp_path, "tests/models", CUDA_MODULE)
    models = [i for i in items if i["dir"] == "models"]
    rerun = [i for i in items if i["dir"] == "cuda"]
    assert models and rerun

    # A model test must build its tensors from ``tkwargs`` (directly or through
    # a fixture), or be marked cpu_only; otherwise its CUDA rerun would
    # silently run on the CPU.
    unparametrised = [
        i["nodeid"] for i in models if not i["tkwargs"] and not i["cpu_only"]
    ]
    assert not unparametrised, (
        "these model tests neither take the tkwargs fixture nor are marked "
        f"cpu_only: {unparametrised}"
    )

    expected = {_key(i) for i in models if i["tkwargs"] and not i["cpu_only"]}
    actual = {_key(i) for i in rerun}
    assert len(actual) == len(rerun)  # each case rerun once
    assert actual == expected, (
        f"not rerun on CUDA: {sorted(expected - actual)}; "
        f"rerun but not device-parametrised tests of tests/models: "
        f"{sorted(actual - expected)}"
    )
    # ... and every rerun takes its device from the CUDA module's fixture.
    assert {i["tkwargs_from"] for i in rerun} == {Path(CUDA_MODULE).name}
    assert {i["tkwargs_from"] for i in models} <= {"conftest.py", None}
