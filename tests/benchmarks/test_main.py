from botorch_sketch.benchmarks import __main__ as bench


def test_all_benchmarks_write_one_report(monkeypatch, tmp_path):
    calls = []

    def fake(name):
        def runner(budget, stem):
            calls.append((name, budget))
            path = stem + ".png"
            open(path, "w").close()
            return f"| table of {name} |", [path]

        return runner

    monkeypatch.setattr(
        bench,
        "BENCHMARKS",
        {name: (title, fake(name)) for name, (title, _) in bench.BENCHMARKS.items()},
    )
    assert bench.main(["--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(bench.BENCHMARKS)
    report = (tmp_path / "BENCHMARKS.md").read_text()
    for name in bench.BENCHMARKS:
        assert f"| table of {name} |" in report
        assert f"![{name}]({name}-small.png)" in report
        assert (tmp_path / f"{name}-small.md").exists()


def test_one_benchmark_writes_no_combined_report(monkeypatch, tmp_path):
    monkeypatch.setattr(
        bench, "BENCHMARKS", {"x": ("X", lambda budget, stem: ("| t |", []))}
    )
    assert bench.main(["x", "--budget", "large", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "x-large.md").exists()
    assert not (tmp_path / "BENCHMARKS.md").exists()


def test_collect_gathers_separate_runs_without_running(monkeypatch, tmp_path):
    def boom(budget, stem):
        raise AssertionError("--collect must not run a benchmark")

    monkeypatch.setattr(
        bench, "BENCHMARKS", {"a": ("A title", boom), "b": ("B title", boom)}
    )
    runs = tmp_path / "docs"
    runs.mkdir()
    (runs / "a-large.md").write_text(
        "# a benchmark (large budget)\n\n| a table |\n\n![own](a-large-one.png)\n"
    )
    (runs / "a-large-one.png").write_bytes(b"")
    (runs / "a-small.png").write_bytes(b"")  # another budget: not linked
    out = tmp_path / "BENCHMARKS.md"
    argv = ["--collect", str(runs), "--budget", "large", "--to", str(out)]
    assert bench.main(argv) == 0
    report = out.read_text()
    assert "## A title (`a`)" in report and "| a table |" in report
    assert "![a](docs/a-large-one.png)" in report
    assert "![own]" not in report  # a link relative to the run's folder
    assert "a-small.png" not in report
    assert "# a benchmark" not in report  # the run's own heading is dropped
    assert "Not run: `b`." in report
