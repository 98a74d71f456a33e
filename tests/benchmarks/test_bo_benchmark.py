import math
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError

from benchmarks import bo
from benchmarks.__main__ import main


@pytest.fixture
def tiny(monkeypatch):
    # One or two iterations of every method, with a cheap optimiser.
    budget = bo.Budget(
        ["Hartmann-6"],
        evaluations=14,
        seeds=[0],
        methods=bo.ALL,
        q=2,
        num_initial=10,
        subset_size=13,
        num_restarts=1,
        raw_samples=16,
    )
    monkeypatch.setitem(bo.BUDGETS, "tiny", budget)
    return "tiny"


@pytest.mark.slow
def test_every_method_runs_a_short_loop_and_the_report_has_ratios(tiny, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = bo.run(tiny, progress=False)
    assert [r.method for r in rows] == bo.ALL
    for row in rows:
        assert row.evaluations == 14
        trace = row.traces[0]
        assert trace.num_iterations == 2
        assert torch.isfinite(trace.simple_regret).all()
        assert (trace.simple_regret >= 0).all()
    text = bo.render(rows, "test machine", tiny)
    for method in bo.ALL[1:]:
        assert f"| Hartmann-6 | {method} |" in text
    paths = bo.plot(rows, str(tmp_path / "bo"), tiny)
    assert len(paths) == 1 and (tmp_path / "bo-Hartmann-6.png").stat().st_size > 0


@pytest.mark.slow
def test_the_same_design_and_seed_give_the_same_run(tiny):
    spec = bo._spec(bo.INCREMENTAL, bo.BUDGETS[tiny], seed=0)
    runs = [
        bo.run_bo(
            bo.PROBLEMS["Hartmann-6"](),
            spec,
            iterations=1,
            num_initial=10,
            acquisition="qlognei",
            q=2,
            seed=0,
            num_restarts=1,
            raw_samples=16,
            progress=False,
        )
        for _ in range(2)
    ]
    assert runs[0].values == runs[1].values


def test_other_budgets_only_for_bo():
    with pytest.raises(SystemExit):
        main(["inference", "--budget", "medium"])


def test_unknown_method_is_named():
    with pytest.raises(KeyError, match="Unknown method"):
        bo._spec("NoSuchGP", bo.BUDGETS["small"], seed=0)


def test_the_real_task_is_a_deterministic_accuracy_in_log_units():
    pytest.importorskip("sklearn")
    problem = bo.PROBLEMS["SVM-breast-cancer"]()
    assert problem.dim == 2 and problem.optimal_value == 1.0
    # log10 units: C in [1e-3, 1e3], gamma in [1e-5, 1].
    torch.testing.assert_close(
        problem.bounds, torch.tensor([[-3.0, -5.0], [3.0, 0.0]], dtype=torch.double)
    )
    X = torch.tensor([[0.0, -2.0], [-3.0, 0.0]], dtype=torch.double)
    assert problem.parameters(X[0]) == {"C": 1.0, "gamma": 0.01}
    values = problem(X)
    assert ((values > 0) & (values <= 1)).all()
    assert values[0] > 0.9 > values[1]  # a sensible SVM beats a degenerate one
    torch.testing.assert_close(problem(X, noise=False), values)
    assert len(problem._memo) == 2


def test_the_real_task_rounds_integer_parameters():
    problem = bo.CrossValidatedAccuracy("digits", "knn")
    params = problem.parameters(torch.tensor([math.log10(7.4), 2.0]))
    assert params == {"n_neighbors": 7, "minkowski_p": 2.0}


def test_the_real_task_names_unknown_estimators():
    with pytest.raises(InputDataError, match="Unknown dataset"):
        bo.CrossValidatedAccuracy("breast_cancer", "no-such-estimator")


def test_a_short_loop_runs_on_the_real_task(tiny):
    pytest.importorskip("sklearn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = bo.run_bo(
            bo.PROBLEMS["SVM-breast-cancer"](),
            bo._spec(bo.SKETCH, bo.BUDGETS[tiny], seed=0),
            iterations=2,
            num_initial=6,
            q=2,
            seed=0,
            num_restarts=1,
            raw_samples=16,
            progress=False,
        )
    assert trace.num_iterations == 2
    assert ((trace.simple_regret >= 0) & (trace.simple_regret < 1)).all()
