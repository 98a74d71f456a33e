from benchmarks import throughput


def test_throughput_reports_a_fraction_of_matmul(monkeypatch):
    monkeypatch.setitem(throughput.BUDGETS, "tiny", [(2000, 64)])
    rows = throughput.run("tiny")
    assert len(rows) == 1 and rows[0].m == 64
    assert rows[0].gflops > 0 and rows[0].matmul_gflops > 0
    text = throughput.render(rows, "test machine")
    fraction = rows[0].gflops / rows[0].matmul_gflops
    assert f"| 2000 | 64 | {fraction:.2f} |" in text
