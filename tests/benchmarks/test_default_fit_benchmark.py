import warnings

import pytest
import torch

from benchmarks import default_fit
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


@pytest.mark.slow
def test_every_method_on_every_case_with_ratios_to_the_exact_gp(monkeypatch):
    tiny = default_fit.Budget(sizes=(60,), seeds=(0, 1), num_test=40, threads=(1,))
    monkeypatch.setitem(default_fit.BUDGETS, "tiny", tiny)
    threads = torch.get_num_threads()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        rows = default_fit.run("tiny")
    assert torch.get_num_threads() == threads  # restored
    assert len(rows) == 2 * len(default_fit.METHODS)
    assert [r.method for r in rows[:3]] == list(default_fit.METHODS)
    exact = [r for r in rows if r.method == "SingleTaskGP"]
    assert all(r.m is None for r in exact)
    assert all(r.m is not None and r.m > 0 for r in rows if r not in exact)
    assert all(r.seconds > 0 and r.n == 60 for r in rows)
    text = default_fit.render(rows, "test machine")
    exact_line = next(x for x in text.splitlines() if "| SingleTaskGP |" in x)
    assert "| 1.0x | +0.000 |" in exact_line
    assert text.count("n = 60, NystromGP") == 2  # medians of both sketches
    assert "test machine" in text
