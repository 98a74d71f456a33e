import pytest

from benchmarks import __main__ as bench
from benchmarks import catalogue


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
    assert bench.main(["all", "--out", str(tmp_path)]) == 0
    assert [c[0] for c in calls] == list(bench.BENCHMARKS)
    report = (tmp_path / "BENCHMARKS.md").read_text()
    for name in bench.BENCHMARKS:
        assert f"| table of {name} |" in report
        assert f"![{name}]({name}-small.png)" in report
        assert (tmp_path / f"{name}-small.md").exists()


def test_a_bare_command_prints_the_menu_and_runs_nothing(monkeypatch, capsys, tmp_path):
    def boom(budget, stem):
        raise AssertionError("the menu must not run a benchmark")

    monkeypatch.setattr(
        bench,
        "BENCHMARKS",
        {name: (title, boom) for name, (title, _) in bench.BENCHMARKS.items()},
    )
    out = tmp_path / "out"
    assert bench.main(["--out", str(out)]) == 0
    assert not out.exists()
    lines = capsys.readouterr().out.splitlines()
    for name, question in catalogue.QUESTIONS.items():
        (line,) = [x for x in lines if x.split()[:1] == [name]]
        assert line.endswith(question), line
    for module in catalogue.OWN_COMMANDS:
        assert [x for x in lines if x.split()[:1] == [f"benchmarks.{module}"]]
    assert max(len(line) for line in lines) <= 88


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


def test_collect_adds_a_cuda_report_beside_the_cpu_one(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "BENCHMARKS", {"a": ("A title", None)})
    runs = tmp_path / "docs"
    runs.mkdir()
    (runs / "a-large.md").write_text("# a (large)\n\n| cpu table |\n")
    (runs / "a-large-cuda.md").write_text("# a (large-cuda)\n\n| gpu table |\n")
    (runs / "a-large-one.png").write_bytes(b"")
    (runs / "a-large-cuda-one.png").write_bytes(b"")
    out = tmp_path / "BENCHMARKS.md"
    bench.main(["--collect", str(runs), "--budget", "large", "--to", str(out)])
    cpu, gpu = out.read_text().split("## A title, on CUDA (`a`)")
    assert "## A title (`a`)" in cpu and "| cpu table |" in cpu
    assert "a-large-one.png" in cpu and "a-large-cuda" not in cpu
    assert "| gpu table |" in gpu and "a-large-cuda-one.png" in gpu
    assert "a-large-one.png" not in gpu and "Not run" not in gpu


def _device_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_device_errors_name_the_problem(monkeypatch, capsys, tmp_path):
    out = ["--out", str(tmp_path)]
    assert "not a torch device" in _device_error(capsys, ["scale", "--device", "gpu"])
    assert "only cpu and cuda" in _device_error(capsys, ["scale", "--device", "meta"])
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: False)
    err = _device_error(capsys, ["scale", "--device", "cuda", *out])
    assert "sees no CUDA device" in err
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    err = _device_error(capsys, ["bandits", "--device", "cuda", *out])
    assert "applies to scale and throughput only" in err
    err = _device_error(capsys, ["--device", "cuda", *out])  # all benchmarks
    assert "applies to scale and throughput only" in err
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_a_cuda_run_reaches_the_runner_and_writes_its_own_report(monkeypatch, tmp_path):
    seen = []

    def runner(budget, stem, device=bench.CPU):
        seen.append(device)
        return f"| on {device} |", []

    monkeypatch.setattr(bench, "BENCHMARKS", {"scale": ("Scale", runner)})
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    argv = ["scale", "--budget", "large", "--out", str(tmp_path)]
    assert bench.main([*argv, "--device", "cuda"]) == 0
    assert bench.main(argv) == 0
    assert seen == [bench.torch.device("cuda"), bench.CPU]
    assert "| on cuda |" in (tmp_path / "scale-large-cuda.md").read_text()
    assert "| on cpu |" in (tmp_path / "scale-large.md").read_text()
