"""``python -m benchmarks --help``: what each budget runs, how long.

It listed the names and budgets only: a newcomer could not tell a one-minute
run from a day's, nor what a small budget can show.
"""

import re

import pytest

from benchmarks import catalogue
from benchmarks.__main__ import BENCHMARKS, BOTH, EXTRA, main

#: A rough time: "about 60 s", "1-3 min", "2 h", "hours", "a day".
TIME = re.compile(r"\d+ ?(s|min|h)\b|\b(hours|days|a day)\b")


def _budgets(name: str) -> list[str]:
    return [*BOTH, *EXTRA.get(name, [])]


def test_every_benchmark_and_budget_is_described():
    assert sorted(catalogue.CATALOGUE) == sorted(BENCHMARKS)
    for name in BENCHMARKS:
        what, budgets = catalogue.CATALOGUE[name]
        assert what
        # Every budget the command takes, and none it does not.
        assert sorted(budgets) == sorted(_budgets(name)), name
        for budget, entry in budgets.items():
            assert entry.what, (name, budget)
            assert TIME.search(entry.time), (name, budget, entry.time)


def test_every_benchmark_has_a_question_for_the_menu():
    import importlib.util

    assert sorted(catalogue.QUESTIONS) == sorted(BENCHMARKS)
    assert all(q.endswith("?") for q in catalogue.QUESTIONS.values())
    for module, question in catalogue.OWN_COMMANDS.items():
        assert question.endswith("?")
        # Each runs as python -m benchmarks.MODULE.
        spec = importlib.util.find_spec(f"benchmarks.{module}")
        assert spec is not None, module
        assert spec.submodule_search_locations is None or importlib.util.find_spec(
            f"benchmarks.{module}.__main__"
        ), module


@pytest.fixture(scope="module")
def help_text():
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    return out.getvalue()


def test_the_help_lists_each_budget_with_its_time(help_text):
    flat = " ".join(help_text.split())
    for name in BENCHMARKS:
        what, budgets = catalogue.CATALOGUE[name]
        assert " ".join(what.split()) in flat, name
        for budget, entry in budgets.items():
            line = f"{budget} {entry.what}: {entry.time}"
            assert " ".join(line.split()) in flat, (name, budget)
    assert max(len(line) for line in help_text.splitlines()[10:]) <= 88


def test_the_help_says_what_a_small_budget_can_show(help_text):
    flat = " ".join(help_text.split())
    assert "not its result" in flat and "headline-small" in flat
    assert " ".join(catalogue.SMALL_BUDGETS_SHOW.split()) in flat
