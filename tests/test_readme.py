"""The README's Python blocks run as they are printed.

Every ```` ```python ```` block of ``README.md`` is a whole program unless its
first line starts with :data:`FRAGMENT` (then it says what it leaves out, and is
only checked for syntax). A whole block must define every name it uses (checked
by ruff, fast) and runs in a fresh interpreter in an empty folder (slow: the
Optuna block alone runs 300 trials). The blocks that need an extra are skipped
where it is not installed.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The first line of a block that is not a whole program.
FRAGMENT = "# Fragment"
#: The line after which a block shows, as comments, what it prints.
PRINTS = "# prints:"
#: Seconds a block may run (one thread, on a machine other jobs share).
TIMEOUT = 900
#: Blocks that take longer, by section: 10^5 evaluations took 280 s of wall
#: clock (146 CPU s) at a load average of 5 on 2 cores.
TIMEOUTS = {"Large budgets": 1800}


@dataclass
class Block:
    """A ```` ```python ```` block of the README."""

    section: str  #: the ``##`` heading above it
    line: int  #: the line of its first statement (1-based)
    code: str
    #: The output the README shows for it (its comments after ``# prints:``).
    expected: str | None = None

    @property
    def whole(self) -> bool:
        return not self.code.startswith(FRAGMENT)

    @property
    def id(self) -> str:
        words = re.sub(r"[^A-Za-z0-9]+", "-", self.section).strip("-").lower()
        return f"{words}-line{self.line}"

    def modules(self) -> set[str]:
        """The top-level modules the block imports."""
        names = set()
        for node in ast.walk(ast.parse(self.code)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
        return names


def readme_blocks(text: str) -> list[Block]:
    """The Python blocks of a Markdown text, with their sections and outputs."""
    blocks, section, code, start = [], "", None, 0
    for number, line in enumerate(text.splitlines(), start=1):
        if code is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.strip() == "```python":
                code, start = [], number + 1
        elif line.strip() == "```":
            blocks.append(Block(section, start, "\n".join(code) + "\n", _shown(code)))
            code = None
        else:
            code.append(line)
    return blocks


def _shown(code: list[str]) -> str | None:
    # What a block says it prints: the comment lines after its "# prints:".
    if PRINTS not in code:
        return None
    shown = code[code.index(PRINTS) + 1 :]
    assert all(line.startswith("# ") for line in shown), shown
    return "\n".join(line[2:] for line in shown)


def _shape(output: str) -> list[str]:
    # The lines of an output with every number masked: what a run must print
    # the same, whatever its timings and last digits.
    number = r"-?\d+(\.\d+)?(e[+-]?\d+)?"
    return [re.sub(number, "#", line.strip()) for line in output.strip().splitlines()]


BLOCKS = readme_blocks(README.read_text())
WHOLE = [b for b in BLOCKS if b.whole]


def test_the_blocks_are_found():
    found = readme_blocks(
        "## A\n\n```python\nx = 1\n```\n\n## B: c\n```bash\nls\n```\n"
        "```python\n# Fragment: y is yours\nprint(y)\n```\n"
    )
    assert [(b.section, b.line, b.whole) for b in found] == [
        ("A", 4, True),
        ("B: c", 12, False),
    ]
    shown = readme_blocks("## A\n```python\nprint(1)\n# prints:\n# 1\n```\n")
    assert shown[0].expected == "1"
    assert len(WHOLE) >= 6, [b.id for b in BLOCKS]
    # Every whole block shows what it prints.
    assert [b.id for b in WHOLE if b.expected is None] == []


def test_the_readme_is_one_page_of_what_is_true_now():
    text = README.read_text()
    assert len(text.splitlines()) <= 225
    # No history: rounds of work, earlier runs, commit hashes.
    history = re.compile(
        r"\b(rounds?|last time|previously|this time|used to)\b|\b[0-9a-f]{7,40}\b",
        re.IGNORECASE,
    )
    assert [m.group(0) for m in history.finditer(text)] == []


def test_a_block_that_needs_an_extra_says_which():
    # A block importing an extra's module sits in a section that names the
    # pip install of that extra.
    extras = {"ax": "ax", "optuna": "optuna", "ray": "ray"}
    text = README.read_text()
    for block in WHOLE:
        for module in block.modules() & extras.keys():
            start = text.index(f"## {block.section}")
            section = text[start : text.index("```python", start)]
            assert f'pip install -e ".[{extras[module]}]"' in section, block.id


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_every_block_parses(block):
    ast.parse(block.code)


@pytest.mark.parametrize("block", WHOLE, ids=[b.id for b in WHOLE])
def test_a_whole_block_defines_what_it_uses(block):
    # F821: undefined name. ruff reads the block from stdin.
    pytest.importorskip("ruff", reason="ruff (the test extra) finds undefined names")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821"]
        + ["--output-format", "concise", "--stdin-filename", "block.py", "-"],
        input=block.code,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (
        f"README.md line {block.line} ({block.section}) uses names it does not "
        f"define; make it whole or start it with '{FRAGMENT}: ...':\n{done.stdout}"
    )


@pytest.mark.slow
@pytest.mark.cpu_only
@pytest.mark.parametrize("block", WHOLE, ids=[b.id for b in WHOLE])
def test_a_whole_block_runs(block, tmp_path):
    missing = sorted(m for m in block.modules() if importlib.util.find_spec(m) is None)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (an extra)")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        # The package from this checkout, whatever the folder the block runs in.
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])
        ),
    }
    timeout = next(
        (s for name, s in TIMEOUTS.items() if block.section.startswith(name)), TIMEOUT
    )
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"README.md line {block.line} ({block.section}) failed:\n{done.stderr[-4000:]}"
    )
    # No flood of warnings a user cannot act on: GPyTorch's "negative" variance
    # (raised to its floor by our posterior first) warned 120 times in the
    # Optuna block.
    assert "Negative variance values detected" not in done.stderr
    # Nor L-BFGS-B's line-search stops in the Optuna block's acquisition (23
    # OptimizationWarnings "... message ABNORMAL"; the package optimises it),
    # nor the default inducing rule's cap in the Ray block ("qbar scaled by
    # 0.697 for this draw", 3). Ax's own acquisition optimiser (the Ax block)
    # is Ax's to quieten.
    if block.section.startswith("Optuna"):
        assert "ABNORMAL" not in done.stderr
    assert "InducingSetCapWarning" not in done.stderr
    # It prints what the README shows, up to numbers (timings, last digits).
    assert _shape(done.stdout) == _shape(block.expected), done.stdout
