import math
import warnings

import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.acquisition.acquisition import AcquisitionFunction  # noqa: E402
from botorch.acquisition.analytic import LogExpectedImprovement  # noqa: E402
from botorch.acquisition.logei import qLogNoisyExpectedImprovement  # noqa: E402
from botorch.models.deterministic import GenericDeterministicModel  # noqa: E402
from optuna.distributions import CategoricalDistribution, IntDistribution  # noqa: E402
from optuna_helpers import FAST, model_based, quadratic  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna import acquisition as acquisition_module  # noqa: E402
from botorch_sketch.integrations.optuna.trials import _completion_order  # noqa: E402


@pytest.mark.parametrize("acquisition", ["auto", "mc"])
def test_a_trial_chosen_alone_uses_analytic_log_ei_unless_asked(
    acqf_calls, acquisition
):
    sampler = SketchSampler(seed=0, n_startup_trials=5, acquisition=acquisition, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=7)
    seen = [acq for acq, _ in acqf_calls]
    expected = (
        LogExpectedImprovement
        if acquisition == "auto"
        else qLogNoisyExpectedImprovement
    )
    assert len(seen) == 2 and all(type(a) is expected for a in seen)
    if acquisition == "auto":
        # The incumbent is the best posterior mean at the observed points.
        model = seen[-1].model
        trials = sorted(study.trials[:-1], key=_completion_order)
        X = torch.tensor(
            [[(t.params["x"] + 3) / 6, (t.params["y"] + 3) / 6] for t in trials],
            dtype=torch.float64,
        )
        best = model.posterior(X.unsqueeze(-2)).mean.max()
        assert torch.allclose(seen[-1].best_f, best)


def test_rounding_does_not_repeat_a_running_or_observed_configuration():
    # Rounding snapped the optimum back onto a completed trial, and the second
    # ask onto the first, still running, trial (with seeds 1 and 2 as well).
    space = {
        "n": IntDistribution(0, 3),
        "kind": CategoricalDistribution(["a", "b", "c"]),
    }
    sampler = SketchSampler(
        seed=0, n_startup_trials=4, warn_independent_sampling=False, **FAST
    )
    study = optuna.create_study(sampler=sampler)
    for _ in range(4):
        trial = study.ask(space)
        study.tell(trial, (trial.params["n"] - 2) ** 2 + (trial.params["kind"] != "b"))
    observed = [t.params for t in study.trials]
    first = study.ask(space)
    second = study.ask(space)  # the first is running
    assert len(model_based(study)) == 2
    assert first.params not in observed
    assert second.params not in observed + [first.params]


def test_a_fully_observed_grid_still_gets_a_suggestion():
    space = {"n": IntDistribution(0, 1), "kind": CategoricalDistribution(["a", "b"])}
    study = optuna.create_study(
        sampler=SketchSampler(seed=0, n_startup_trials=4, **FAST)
    )
    for n in (0, 1):
        for kind in ("a", "b"):
            study.enqueue_trial({"n": n, "kind": kind})
            trial = study.ask(space)
            study.tell(trial, n + (kind == "a"))
    trial = study.ask(space)
    assert len(model_based(study)) == 1
    assert trial.params["n"] in (0, 1) and trial.params["kind"] in ("a", "b")


class _Profile(AcquisitionFunction):
    r"""A known acquisition of ``batch x 1 x D`` points, by a callable."""

    def __init__(self, value) -> None:
        super().__init__(GenericDeterministicModel(lambda X: X[..., :1]))
        self.value = value

    def forward(self, X):
        return self.value(X.squeeze(-2))


def _grid(n_values):
    # An integer of ``n_values`` values, encoded as Optuna's grid: (i + 0.5) / n.
    return (torch.arange(n_values, dtype=torch.float64) + 0.5) / n_values


def test_discrete_search_leaves_a_local_peak_of_an_integer_and_repolishes():
    # Column 1 is an integer of 8 values with a local peak at i = 1 and the
    # best at i = 6; the best continuous column 0 moves with it (0.2, then 0.8).
    grid = _grid(8)

    def value(X):
        n = X[..., 1]
        peaks = torch.exp(-(((n - grid[1]) / 0.08) ** 2)) + 2 * torch.exp(
            -(((n - grid[6]) / 0.08) ** 2)
        )
        centre = 0.2 + 0.6 * torch.sigmoid((n - 0.5) * 20)
        return peaks - (X[..., 0] - centre) ** 2

    def round_to_grid(X):
        X = X.clone()
        X[..., 1] = grid[(X[..., 1] * 8 - 0.5).round().clamp(0, 7).long()]
        return X

    acqf = _Profile(value)
    start = torch.tensor([[0.2, grid[1].item()]], dtype=torch.float64)
    discrete = [(torch.tensor([1]), grid.unsqueeze(-1))]
    candidates, values = acquisition_module._discrete_search(
        acqf, start, acqf(start.unsqueeze(-2)), discrete, round_to_grid
    )
    assert candidates[0, 1] == grid[6]
    # The continuous column's best for i = 6: the centre there.
    centre = 0.2 + 0.6 * torch.sigmoid((grid[6] - 0.5) * 20)
    assert candidates[0, 0] == pytest.approx(centre.item(), abs=1e-4)
    assert values[0] == pytest.approx(2.0, abs=1e-4)
    # Without it, rounding keeps the local peak: the search is what moves it.
    assert value(start)[0] < 1.01


def test_discrete_search_picks_a_categorical_block_as_a_whole():
    # Columns 1-3 are one categorical parameter's one-hot block; the best is
    # the third choice, whatever column 0.
    def value(X):
        return X[..., 1:] @ torch.tensor([0.0, 1.0, 3.0], dtype=X.dtype) - X[..., 0]

    acqf = _Profile(value)
    start = torch.tensor(
        [[0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 1.0, 0.0]], dtype=torch.float64
    )
    one_hot = torch.eye(3, dtype=torch.float64)
    candidates, values = acquisition_module._discrete_search(
        acqf,
        start,
        acqf(start.unsqueeze(-2)),
        [(torch.tensor([1, 2, 3]), one_hot)],
        None,
    )
    assert candidates[:, 1:].tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    # Column 0 re-optimised to its bound once the block moved.
    assert candidates[:, 0].tolist() == [0.0, 0.0]
    assert values.tolist() == [3.0, 3.0]


def test_the_given_starts_reach_a_peak_the_raw_samples_miss():
    # A peak of width 0.01 in 4 dimensions, flat (in its gradient) elsewhere:
    # 16 raw samples do not find it; a start near it does.
    peak = torch.full((4,), 0.37, dtype=torch.float64)

    def value(X):
        return torch.exp(-((X - peak) ** 2).sum(-1) / (2 * 0.01**2))

    acqf = _Profile(value)
    train_X = torch.zeros(1, 4, dtype=torch.float64)
    torch.manual_seed(0)
    missed = acquisition_module._maximise(acqf, train_X, None, 2, 16, None)
    found = acquisition_module._maximise(
        acqf, train_X, None, 2, 16, None, starts=(peak + 0.01).unsqueeze(0)
    )
    assert (missed - peak).abs().max() > 0.1
    assert torch.allclose(found.squeeze(0), peak, atol=1e-4)
    assert math.isclose(value(found).item(), 1.0, abs_tol=1e-6)


def test_the_maximisation_stops_at_a_projected_gradient_of_1e_2(
    monkeypatch, acqf_calls
):
    # Under the option name the path BoTorch takes reads: ``pgtol`` for its
    # batched L-BFGS-B; ``gtol`` for scipy's ``minimize``, where it does not
    # take that path (a SciPy it has not tested) and ``pgtol`` is unknown.
    assert acquisition_module._stopping_options() == {"pgtol": 1e-2}
    monkeypatch.setattr(
        acquisition_module,
        "get_reasons_against_fast_path",
        lambda **kwargs: ["a SciPy BoTorch has not tested"],
    )
    assert acquisition_module._stopping_options() == {"gtol": 1e-2}
    sampler = SketchSampler(seed=0, n_startup_trials=5, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=6)
    seen = [kwargs["options"] for _, kwargs in acqf_calls]
    assert len(seen) == 1
    assert seen[0]["gtol"] == 1e-2 and "pgtol" not in seen[0]


def _wrong_gradient(X):
    # A smooth bowl whose gradient (that of ``X.sum(-1)``) points the wrong
    # way: L-BFGS-B's line search finds no decrease along it and stops with
    # "ABNORMAL", as it does where an acquisition is flat to rounding.
    if X.requires_grad:  # inside the optimiser, not the raw samples
        warnings.warn("a warning of the acquisition's own", UserWarning, stacklevel=1)
    value = -(X - 0.3).square().sum(-1)
    return value.detach() + X.sum(-1) - X.sum(-1).detach()


def test_line_search_stops_of_the_maximisation_do_not_reach_the_user():
    # 23 OptimizationWarnings "... message ABNORMAL" (and optimize_acqf's
    # RuntimeWarnings of its retry) in the README's Optuna example.
    acqf = _Profile(_wrong_gradient)
    train_X = torch.zeros(1, 2, dtype=torch.float64)
    discrete = [(torch.tensor([1]), _grid(4).unsqueeze(-1))]
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X = acquisition_module._maximise(acqf, train_X, None, 2, 8, None, discrete)
    assert X.shape == (1, 2) and bool(((X >= 0) & (X <= 1)).all())
    shown = [(w.category, str(w.message)) for w in caught]
    assert not [s for s in shown if "ABNORMAL" in s[1] or "Optimization" in s[1]]
    # Other warnings raised while it optimises are passed on.
    assert (UserWarning, "a warning of the acquisition's own") in shown
