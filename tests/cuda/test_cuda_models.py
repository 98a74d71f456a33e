"""The model tests of tests/models, rerun with their tensors on CUDA.

Every test function of ``tests/models/test_*.py`` that is not marked ``cpu_only``
is re-exported here as ``test_<module>__<test>`` (``test_nystrom_gp__fit...``),
together with the fixtures of its module. This module's ``tkwargs`` fixture
overrides the CPU one of ``tests/conftest.py``, so pytest collects every such
test a second time and runs it with ``device=cuda``. The model test modules
are loaded by file path under private names, so this does not depend on
``sys.path`` and does not disturb pytest's own import of them.

Without CUDA the whole module is skipped.
``tests/cuda/test_cuda_rerun_mechanics.py`` (which always runs) checks that the
tests collected here are exactly the device-parametrised tests of tests/models.
"""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from _pytest.fixtures import getfixturemarker

MODEL_TESTS = Path(__file__).resolve().parent.parent / "models"
CPU_ONLY = "cpu_only"

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="CUDA is not available: the model tests ran on the CPU in tests/models",
)


@pytest.fixture(scope="module")
def tkwargs():
    # Overrides tests/conftest.py's fixture for the tests re-exported below.
    return {"dtype": torch.double, "device": torch.device("cuda")}


def load_model_test_module(path: Path):
    """Import ``tests/models/<path>`` by file path under a private module name."""
    name = f"_cuda_rerun_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _marks(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, (list, tuple)) else [marks]


def rerun_name(module_stem: str, test_name: str) -> str:
    """``test_nystrom_gp``, ``test_fit`` -> ``test_nystrom_gp__fit``."""
    return f"{module_stem}__{test_name.removeprefix('test_')}"


def _export_model_tests(namespace: dict) -> None:
    fixture_sources: dict[str, str] = {"tkwargs": __name__}
    for path in sorted(MODEL_TESTS.glob("test_*.py")):
        module = load_model_test_module(path)
        module_marks = _marks(module)
        if any(mark.name == CPU_ONLY for mark in module_marks):
            continue
        for name, obj in vars(module).items():
            marker = getfixturemarker(obj)
            if marker is not None:
                fixture = marker.name or name
                if fixture_sources.setdefault(fixture, path.name) != path.name:
                    raise RuntimeError(
                        f"Fixture {fixture!r} of {path.name} clashes with one of "
                        f"{fixture_sources[fixture]}: rename one to rerun both."
                    )
                namespace[name] = obj
                continue
            if not (name.startswith("test") and callable(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # imported into that module, not one of its tests
            if any(mark.name == CPU_ONLY for mark in _marks(obj)):
                continue
            if module_marks:
                # This private copy of the function can carry its module's marks.
                obj.pytestmark = [*_marks(obj), *module_marks]
            namespace[rerun_name(path.stem, name)] = obj


_export_model_tests(globals())
