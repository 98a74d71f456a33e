import math

import pytest

pytest.importorskip("ax")

from benchmarks import ax_baseline  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize(
    "strategy",
    ["carried+default", "carried", "carried+marginal", "carried+marginal+cap"],
)
def test_a_short_run_reports_cold_and_warm_seconds_in_bounds(strategy):
    result = ax_baseline.run(strategy, n=24, trials=3, seed=1, max_inducing=8)
    assert result["in_bounds"]
    assert result["cold"] > 0 and len(result["warm_all"]) == 2
    assert math.isclose(result["warm"], sum(result["warm_all"]) / 2)
    assert math.isfinite(result["best_new"])
    # Regret against Hartmann-6's minimum; no checkpoint within three trials.
    assert result["regret"] == pytest.approx(result["best_new"] - ax_baseline.OPTIMUM)
    assert result["regret"] >= 0 and result["best_at"] == {}
    assert ax_baseline.OPTIMUM <= result["best_attached"] < 0


def test_the_command_refuses_an_unknown_strategy():
    with pytest.raises(SystemExit):
        ax_baseline.main(["--n", "10", "--strategies", "nope"])


@pytest.mark.slow
def test_strategies_take_turns_on_a_problem_of_ten_inputs():
    # Ackley-10 on its own box: each strategy its own client, all of them
    # proposing in bounds, with the regret against Ackley's minimum (0).
    results = ax_baseline.run_in_turns(
        [("carried+default", 384), ("carried+marginal+cap", 8)],
        n=24,
        trials=2,
        seed=0,
        problem_name="ackley10",
    )
    assert list(results) == ["carried+default", "carried+marginal+cap8"]
    for result in results.values():
        assert result["in_bounds"] and len(result["warm_all"]) == 1
        assert result["regret"] == pytest.approx(result["best_new"])
        assert result["best_attached"] > 0


def test_the_command_refuses_an_unknown_problem():
    with pytest.raises(SystemExit):
        ax_baseline.main(["--n", "10", "--problem", "nope"])
