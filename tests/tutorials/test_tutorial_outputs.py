"""The committed outputs of the tutorials do not contradict their text unexplained.

The notebooks are committed with the outputs of the smoke-test budget, which is
too small to show what two of them teach and shows the opposite: ``NystromGP``
fitting slower than ``SingleTaskGP`` (at n = 64 it is the exact GP plus the
choice of its inducing set), and ``IncrementalGP`` with a worse regret than the
exact GP (one seed, 16 evaluations). Where the committed outputs show that, a
Markdown cell after them must say why.
"""

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="reading notebooks needs nbformat")

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"
#: The heading of the explanation.
WHY = "**Why the outputs"


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def _explained_after(cells, index: int) -> bool:
    # A Markdown cell saying why, before the next code cell with outputs.
    for cell in cells[index + 1 :]:
        if cell.cell_type == "markdown" and WHY in cell.source:
            return True
        if cell.cell_type == "code" and cell.get("outputs"):
            return False
    return False


def _first(cells, pattern: str) -> tuple[int, re.Match]:
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and (found := re.search(pattern, _text(cell))):
            return i, found
    raise AssertionError(f"no output matches {pattern!r}")


def test_a_slower_nystrom_fit_is_explained():
    cells = nbformat.read(
        TUTORIALS / "nystrom_gp_swap" / "nystrom_gp_swap.ipynb", as_version=4
    ).cells
    i, exact = _first(cells, r"SingleTaskGP:\s+([\d.]+) s")
    j, sketch = _first(cells, r"NystromGP:\s+([\d.]+) s")
    if float(sketch[1]) > float(exact[1]):
        assert _explained_after(cells, max(i, j)), "NystromGP slower, unexplained"


def test_a_worse_incremental_regret_is_explained():
    cells = nbformat.read(
        TUTORIALS / "incremental_bo" / "incremental_bo.ipynb", as_version=4
    ).cells
    i, exact = _first(cells, r"SingleTaskGP \(refit[^)]*\)\s+simple regret ([\d.]+)")
    j, carried = _first(cells, r"IncrementalGP\)\s+simple regret ([\d.]+)")
    if float(carried[1]) > float(exact[1]):
        assert _explained_after(cells, max(i, j)), "IncrementalGP behind, unexplained"
