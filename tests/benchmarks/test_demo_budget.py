"""``make demo``'s own work: small enough for a minute, large enough to show.

To n = 2000 the demo took 152 s of one core at a load of 3.5 (7 minutes at a
load of 7-9), most of it the exact GP's last iterations: to n = 1500 it took
71 s, and the exact GP's iterations still grew 10x from n = 250 while
IncrementalGP's stayed flat.
"""

from benchmarks import demo


def test_the_small_budget_stops_at_1500():
    budget = demo.BUDGETS["small"]
    assert budget.evaluations <= 1500
    # The rows span the growth: from a few batches to the last n.
    assert budget.checkpoints[-1] == budget.evaluations
    assert budget.checkpoints[-1] >= 6 * budget.checkpoints[0]
    assert demo.BUDGETS["large"].evaluations > budget.evaluations
