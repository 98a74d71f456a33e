"""The committed outputs of the tutorials agree with their text.

A tutorial's committed outputs may show the package behind its baseline (a
slower fit, a worse regret). Where they do, the notebook's first Markdown cell
must say so with the numbers the outputs show, so that a reader learns it
before reading the outputs. The outputs must also be current: an object printed
in them shows every field its class has today.
"""

import dataclasses
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="reading notebooks needs nbformat")

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"

#: (notebook, what is compared, pattern of the package's number, pattern of the
#: baseline's number); a larger number is worse for the package.
COMPARISONS = [
    (
        "nystrom_gp_swap",
        "fit seconds",
        r"NystromGP:\s+([\d.]+) s",
        r"SingleTaskGP:\s+([\d.]+) s",
    ),
    (
        "nystrom_gp_swap",
        "seconds per BO iteration",
        r"NystromGP ([\d.]+)",
        r"per iteration: SingleTaskGP ([\d.]+)",
    ),
    (
        "incremental_bo",
        "simple regret",
        r"IncrementalGP\)\s+simple regret ([\d.]+)",
        r"SingleTaskGP \(refit[^)]*\)\s+simple regret ([\d.]+)",
    ),
    (
        "incremental_bo",
        "seconds in all",
        r"IncrementalGP\)\s+simple regret [\d.]+, ([\d.]+) s",
        r"SingleTaskGP \(refit[^)]*\)\s+simple regret [\d.]+, ([\d.]+) s",
    ),
    (
        "ekucb_contextual",
        "cumulative regret",
        r"ek-ucb: regret\s+([\d.]+)",
        r"kernel-ucb: regret\s+([\d.]+)",
    ),
    (
        "ekucb_contextual",
        "policy seconds",
        r"ek-ucb: regret\s+[\d.]+,\s+([\d.]+) s",
        r"kernel-ucb: regret\s+[\d.]+,\s+([\d.]+) s",
    ),
    (
        "bkb_finite_arms",
        "cumulative regret",
        r"bkb-adaptive: regret\s+([\d.]+)",
        r"gp-ucb: regret\s+([\d.]+)",
    ),
    (
        "bkb_finite_arms",
        "policy seconds",
        r"bkb-adaptive: regret\s+[\d.]+,\s+([\d.]+) s",
        r"gp-ucb: regret\s+[\d.]+,\s+([\d.]+) s",
    ),
    (
        "ax",
        "best value (minimised)",
        r"NystromGP\s+best ([\d.]+)",
        r"Ax default \(SingleTaskGP\)\s+best ([\d.]+)",
    ),
    (
        "gssbo",
        "BO loop seconds",
        r"GSSBO\s+\d+ evaluations, best [-\d.]+, .*, ([\d.]+) CPU s",
        r"SingleTaskGP\s+\d+ evaluations, best [-\d.]+, .*, ([\d.]+) CPU s",
    ),
]

#: Words of a lab notebook, not of a tutorial.
HISTORY = re.compile(
    r"\b(last|this|since|previous|earlier) round\b|\bpreviously\b|\blast time\b"
    r"|\bbotorch_sketch\.benchmarks\b|\bwas \S+ before\b",
    re.IGNORECASE,
)


def _cells(name: str):
    return nbformat.read(TUTORIALS / name / f"{name}.ipynb", as_version=4).cells


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def _output(cells, pattern: str) -> str:
    for cell in cells:
        if cell.cell_type == "code" and (found := re.search(pattern, _text(cell))):
            return found[1]
    raise AssertionError(f"no output matches {pattern!r}")


@pytest.mark.parametrize(
    "name, what, ours, theirs",
    COMPARISONS,
    ids=[f"{c[0]}-{c[1].replace(' ', '-')}" for c in COMPARISONS],
)
def test_a_committed_loss_is_stated_first(name, what, ours, theirs):
    cells = _cells(name)
    package, baseline = _output(cells, ours), _output(cells, theirs)
    if float(package) > float(baseline):
        first = next(c for c in cells if c.cell_type == "markdown").source
        assert package in first and baseline in first, (
            f"{name}: the outputs show {what} {package} against {baseline}; "
            "the first Markdown cell must say so, with both numbers"
        )


NOTEBOOKS = sorted(p.parent.name for p in TUTORIALS.glob("*/*.ipynb"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_history_in_the_text(name):
    for cell in _cells(name):
        if cell.cell_type == "markdown" or cell.cell_type == "code":
            found = HISTORY.search(cell.source)
            assert found is None, f"{name}: {found[0]!r} in {cell.source[:80]!r}"


def test_printed_update_counts_are_current():
    from botorch_sketch.bo import UpdateCounts

    fields = [f.name for f in dataclasses.fields(UpdateCounts)]
    for name in NOTEBOOKS:
        for cell in _cells(name):
            for printed in re.findall(r"UpdateCounts\(([^)]*)\)", _text(cell)):
                names = re.findall(r"(\w+)=", printed)
                assert names == fields, f"{name}: stale UpdateCounts output {printed}"
