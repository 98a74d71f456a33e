from botorch_sketch.benchmarks import linear
from botorch_sketch.benchmarks.metrics import dtc_step_flops, machine_rates


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
