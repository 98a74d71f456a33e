import math

from benchmarks.surrogate_cma import cpu


def test_the_ratios_are_cell_by_cell_geometric_means():
    times = {
        ("gp", 10, 1): 2.0,
        ("gp", 10, 2): 4.0,
        ("lq", 10, 1): 1.0,
        ("lq", 10, 2): 4.0,
        ("lq-cma-es", 10, 1): 1.0,
        ("lq-cma-es", 10, 2): 1.0,
    }
    text = cpu.render(times)
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in text.splitlines()
        if line.startswith("| ") and "| 10 |" in line
    }
    assert rows[cpu.NAMES["gp"]] == ["10", "3.00", "-", "2"]
    assert rows[cpu.NAMES["lq-cma-es"]][2] == f"{math.sqrt(8):.2f}"
    assert rows[cpu.NAMES["lq"]][2] == f"{math.sqrt(2):.2f}"
    # The page names the command that regenerates it, with the cells it ran.
    assert "cpu --dims 10 --functions 1 2`" in text


def test_every_method_times_every_cell_in_turn_after_a_warm_up(monkeypatch):
    calls = []

    def fake_run_cell(method, function, dim, instance, q, budget, seed):
        calls.append((method, function, dim, budget))
        return {"cpu": [0.001 * budget * (2 if method == "gp" else 1)]}

    monkeypatch.setattr(cpu, "run_cell", fake_run_cell)
    times = cpu.time_cells([10], [1, 2], budget=100)
    assert [c[3] for c in calls[:3]] == [50, 50, 50]  # the warm-up, not counted
    assert [c[0] for c in calls[3:6]] == ["gp", "lq", "lq-cma-es"]
    assert [c[0] for c in calls[6:9]] == ["lq", "lq-cma-es", "gp"]  # rotated
    assert times[("gp", 10, 2)] == 2.0 and times[("lq", 10, 1)] == 1.0
