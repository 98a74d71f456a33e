import pytest

from benchmarks import contextual
from benchmarks.__main__ import main


@pytest.mark.slow
def test_contextual_benchmark_runs_and_reports_ratios(monkeypatch, tmp_path):
    pytest.importorskip("sklearn")
    tiny = [
        contextual.Case("bump", "bump", 30, 0, contextual.ALL),
        contextual.Case("long", "chessboard", 40, 0, ("ek-ucb",), noise_var=1.0),
        contextual.Case("digits", "digits", 20, 0, ("ek-ucb", contextual.EXACT)),
    ]
    monkeypatch.setitem(contextual.BUDGETS, "small", tiny)
    rows, traces = contextual.run("small")
    assert len(rows) == len(contextual.ALL) + 1 + 2
    text = contextual.render(rows, "test machine")
    assert "test machine" in text
    # Ratios for the three sketched methods on bump and EK-UCB on digits.
    ratios = text.split("Over seeds")[0]
    ratio_rows = [line for line in ratios.splitlines() if line.startswith("| bump |")]
    assert len(ratio_rows) == 3 and not any("kernel-ucb" in r for r in ratio_rows)
    assert any(line.startswith("| digits | ek-ucb | 1 |") for line in text.splitlines())
    flat = text.split("Time per step of EK-UCB")[1].split("Absolute")[0]
    assert flat.count("| ek-ucb") == 0 and flat.count("| long | chessboard |") == 1
    paths = contextual.plot(traces, str(tmp_path / "c"))
    assert len(paths) == 3
    # The command line entry point writes the report.
    assert main(["contextual", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "contextual-small.md").read_text().count("| ek-ucb |") >= 2
