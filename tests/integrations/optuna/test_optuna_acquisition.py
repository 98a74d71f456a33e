import pytest
import torch

optuna = pytest.importorskip("optuna")

from botorch.acquisition.analytic import LogExpectedImprovement  # noqa: E402
from botorch.acquisition.logei import qLogNoisyExpectedImprovement  # noqa: E402
from optuna.distributions import CategoricalDistribution, IntDistribution  # noqa: E402
from optuna_helpers import FAST, model_based, quadratic  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna import acquisition as acquisition_module  # noqa: E402
from botorch_sketch.integrations.optuna.trials import _completion_order  # noqa: E402


@pytest.mark.parametrize("acquisition", ["auto", "mc"])
def test_a_trial_chosen_alone_uses_analytic_log_ei_unless_asked(
    monkeypatch, acquisition
):
    seen = []
    original = acquisition_module.optimize_acqf

    def spy(acq_function, **kwargs):
        seen.append(acq_function)
        return original(acq_function=acq_function, **kwargs)

    monkeypatch.setattr(acquisition_module, "optimize_acqf", spy)
    sampler = SketchSampler(seed=0, n_startup_trials=5, acquisition=acquisition, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=7)
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
