import pytest
import torch

from benchmarks import gssbo_cost


def test_cumulative_is_the_trapezoid_with_the_full_gp_up_to_the_switch():
    budget = gssbo_cost.Budget(["P"], [100, 200], 1, switch_at=100, num_initial=20)
    budget.evaluations = 300
    rows = [
        gssbo_cost.Row("P", "full", 100, [1.0]),
        gssbo_cost.Row("P", "full", 200, [3.0]),
        gssbo_cost.Row("P", "gssbo", 200, [1.0]),
    ]
    # Full: 1 s held from 20 to 100, then 1 -> 3 to 200, 3 held to 300.
    assert gssbo_cost.cumulative(budget, rows, "P", "full") == pytest.approx(
        80 * 1.0 + 100 * 2.0 + 100 * 3.0
    )
    # GSSBO: the full GP's up to the switch, then 1 -> 1, held.
    assert gssbo_cost.cumulative(budget, rows, "P", "gssbo") == pytest.approx(
        80 * 1.0 + 100 * 1.0 + 100 * 1.0
    )
    text = gssbo_cost.render(budget, rows, "test machine")
    assert "| P | 200 | 3.00 | 1.00 | 0.33 |" in text
    assert "| P | 580 | 280 | 0.48 |" in text


def test_the_data_hold_the_design_and_a_cluster_and_the_iteration_times():
    X, Y = gssbo_cost.data("Hartmann-6", 40, 10, seed=0)
    assert X.shape == (40, 6) and Y.shape == (40, 1)
    assert bool(((X >= 0) & (X <= 1)).all()) and bool(torch.isfinite(Y).all())
    again, _ = gssbo_cost.data("Hartmann-6", 40, 10, seed=0)
    assert torch.equal(X, again)
    budget = gssbo_cost.Budget(["Hartmann-6"], [40], 1, switch_at=30, num_initial=10)
    budget.maxiter, budget.raw_samples = 5, 16
    for loop in gssbo_cost.LOOPS:
        assert gssbo_cost.iteration_seconds(budget, loop, X, Y, seed=0) > 0
