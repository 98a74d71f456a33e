import math

import pytest

pytest.importorskip("ax")

from botorch_sketch.benchmarks import ax_baseline  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["carried", "carried+marginal"])
def test_a_short_run_reports_cold_and_warm_seconds_in_bounds(strategy):
    result = ax_baseline.run(strategy, n=24, trials=3, seed=1)
    assert result["in_bounds"]
    assert result["cold"] > 0 and len(result["warm_all"]) == 2
    assert math.isclose(result["warm"], sum(result["warm_all"]) / 2)
    assert math.isfinite(result["best_new"])


def test_the_command_refuses_an_unknown_strategy():
    with pytest.raises(SystemExit):
        ax_baseline.main(["--n", "10", "--strategies", "nope"])
