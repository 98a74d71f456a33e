"""Execute every tutorial notebook on its smoke-test budget.

Each ``tutorials/<name>/<name>.ipynb`` is run top to bottom in a fresh kernel
with ``SMOKE_TEST=1`` in the environment; a cell that raises fails the test.
Notebooks added later are picked up automatically.
"""

import os
import sys
from pathlib import Path

import pytest

nbclient = pytest.importorskip(
    "nbclient", reason="executing the tutorials needs nbclient (the 'test' extra)"
)
nbformat = pytest.importorskip(
    "nbformat", reason="executing the tutorials needs nbformat (the 'test' extra)"
)
kernelspec = pytest.importorskip(
    "ipykernel.kernelspec",
    reason="executing the tutorials needs ipykernel (the 'test' extra)",
)
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*/*.ipynb"))
#: Seconds a single cell may run on the smoke-test budget.
CELL_TIMEOUT = 120


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory) -> list[str]:
    """A ``python3`` kernelspec that runs this interpreter (``sys.executable``).

    A ``python3`` kernelspec installed elsewhere (user or system) could point at
    another Python without the package; this one cannot.
    """
    root = tmp_path_factory.mktemp("kernels")
    kernelspec.write_kernel_spec(path=root / "python3")
    return [str(root)]


def test_tutorials_are_found():
    assert NOTEBOOKS, f"no notebooks under {TUTORIALS}"
    for path in NOTEBOOKS:
        assert path.stem == path.parent.name, f"{path} should be <name>/<name>.ipynb"


#: Largest committed notebook, outputs included (bytes).
MAX_NOTEBOOK_BYTES = 500_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_tutorials_are_committed_with_small_outputs(path: Path):
    # A reader on a code host sees the committed outputs: every code cell ran,
    # the figures are PNG, and the file stays small.
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path} is too large"
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert all(c.execution_count is not None for c in code), f"{path} not executed"
    images = [
        kind
        for c in code
        for out in c.outputs
        for kind in out.get("data", {})
        if kind.startswith("image/")
    ]
    assert images and set(images) == {"image/png"}, f"{path}: figures {images}"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_tutorial_runs(path: Path, kernel_dirs, monkeypatch):
    monkeypatch.setenv("SMOKE_TEST", "1")
    # One thread: on a busy machine, multi-threaded BLAS in small problems can
    # spin-wait for cores and run many times slower.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # The kernel imports the package from this checkout.
    paths = [str(TUTORIALS.parent), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    nb = nbformat.read(path, as_version=4)
    km = KernelManager(
        kernel_name="python3",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=kernel_dirs),
    )
    assert km.kernel_spec.argv[0] == sys.executable
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
