import math

from benchmarks import linear
from benchmarks.metrics import dtc_step_flops, machine_rates


def test_synthetic_rows_carry_a_floor_and_render_the_gap():
    rows = linear.synthetic(dim=20, steps=30)
    assert {r.policy for r in rows} == set(linear.policies(20, 1))
    assert all(r.floor_ms is not None and r.floor_ms > 0 for r in rows)
    text = linear.render(rows, "test machine")
    assert "floor ms/step | x floor" in text and "test machine" in text
    # Sixteen steps per observation cost more arithmetic than one.
    floor = {r.policy: r.floor_ms for r in rows}
    assert floor["SGDLinUCB 16 steps/obs"] > floor["SGDLinUCB"]


def test_machine_rates_are_measured_once_and_floors_scale_with_flops():
    rates = machine_rates()
    assert machine_rates() is rates
    assert min(rates.matvec, rates.matmul, rates.axpy) > 0
    assert rates.floor_ms(matvec_flops=2e6) == 2 * rates.floor_ms(matvec_flops=1e6)
    assert dtc_step_flops(1000, 50) > dtc_step_flops(1000, 10)


def test_ratios_over_seeds_are_of_the_totals_against_each_seeds_own_baseline():
    rows = [
        *linear.synthetic(dim=20, steps=30, seed=1),
        *linear.synthetic(dim=20, steps=30, seed=2),
    ]
    summaries = {s.row.policy: s for s in linear.over_seeds(rows)}
    assert set(summaries) == set(linear.policies(20, 1)) - {linear.BASELINE}

    def of(policy: str, seed: int) -> linear.Row:
        (row,) = [r for r in rows if r.policy == policy and r.seed == seed]
        return row

    base = [of(linear.BASELINE, s) for s in (1, 2)]
    for policy, summary in summaries.items():
        mine = [of(policy, s) for s in (1, 2)]
        assert summary.seeds == 2
        assert math.isclose(
            summary.speed,
            sum(b.seconds_per_step for b in base)
            / sum(r.seconds_per_step for r in mine),
        )
        assert math.isclose(
            summary.reward_ratio,
            sum(r.reward for r in mine) / sum(b.reward for b in base),
        )
        # Each seed's ratio is against the baseline of that seed, not another's.
        per_seed = [r.reward / b.reward for r, b in zip(mine, base, strict=True)]
        assert math.isclose(summary.lowest_reward_ratio, min(per_seed))
    text = linear.render(rows, "test machine")
    assert "lowest seed" in text and "| synthetic | 20 | 1 | 2 | SGDLinUCB |" in text
