import pytest

from benchmarks import fantasies


@pytest.mark.slow
def test_both_routes_agree_and_render_ratios(monkeypatch):
    monkeypatch.setattr(fantasies, "BUDGETS", {"tiny": [(400, 24, 3, 4)]})
    rows = fantasies.run("tiny")
    assert [r.route for r in rows] == ["woodbury", "refactorise"]
    # The same posterior by both routes (the reference has no error by itself).
    # Rounding differs (so the comparison is not of one tensor with itself).
    assert 0.0 < rows[0].max_error < 1e-8 and rows[1].max_error == 0.0
    text = fantasies.render(rows, "a machine")
    assert "| 400 | 24 | 3 | 4 |" in text and "a machine" in text
