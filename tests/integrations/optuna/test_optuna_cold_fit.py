import math

import numpy as np
import pytest
import torch

optuna = pytest.importorskip("optuna")

from optuna_helpers import FAST  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna import state as state_module  # noqa: E402
from botorch_sketch.integrations.optuna.acquisition import FAILURES  # noqa: E402
from botorch_sketch.integrations.optuna.options import (  # noqa: E402
    _LARGE_FIT_MAXITER,
)
from botorch_sketch.integrations.optuna.state import _POLISH_MAXITER  # noqa: E402

NAME = "objective 0"


def _study(sampler, n, seed=0):
    # n - 1 random trials of a 5-parameter mixed space, a fifth of them FAIL.
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.trial import TrialState

    space = {
        "x": FloatDistribution(0.0, 1.0),
        "y": FloatDistribution(1e-3, 1.0, log=True),
        "k": IntDistribution(0, 100, step=4),
        "c": CategoricalDistribution(["a", "b", "c", "d"]),
        "z": FloatDistribution(0.0, 1.0),
    }
    rng = np.random.default_rng(seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    trials = []
    for _ in range(n - 1):
        p = {
            "x": float(rng.uniform()),
            "y": float(10 ** rng.uniform(-3, 0)),
            "k": int(4 * rng.integers(26)),
            "c": "abcd"[int(rng.integers(4))],
            "z": float(rng.uniform()),
        }
        if p["x"] + p["z"] > 1.6:
            trials.append(
                optuna.trial.create_trial(
                    params=p, distributions=space, state=TrialState.FAIL
                )
            )
            continue
        value = -((p["x"] - 0.3) ** 2) - (math.log10(p["y"]) + 1) ** 2 / 4
        value += 0.2 * "abcd".index(p["c"]) * p["z"] - ((p["k"] - 40) / 100) ** 2
        trials.append(
            optuna.trial.create_trial(params=p, distributions=space, value=value)
        )
    study.add_trials(trials)
    return study, space


@pytest.mark.slow
def test_a_cold_fit_on_a_subset_runs_from_the_priors_on_the_whole_subset(monkeypatch):
    # From the priors on a subset of 120 trials: one fit on the 120, up to
    # _LARGE_FIT_MAXITER iterations. It once fitted on 60 of them first, then
    # polished on the 120 in at most _POLISH_MAXITER iterations, and the
    # polish stalled where the irrelevant inputs' lengthscales were short.
    fits = []
    original = state_module.fit_gpytorch_mll_scipy

    def spy(mll, *args, **kwargs):
        result = original(mll, *args, **kwargs)
        options = kwargs.get("options") or {}
        fits.append((mll.model.train_X.shape[0], options.get("maxiter"), result))
        return result

    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", spy)
    sampler = SketchSampler(
        seed=0, fit_subset_size=120, failed_trials="ignore", refit_every=50, **FAST
    )
    study, space = _study(sampler, 200)
    n_complete = len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)))
    assert n_complete > 120
    torch.manual_seed(0)
    study.ask(space)
    assert sampler._carried.incremental[NAME].counts.builds == 1
    # One fit on the 120 from the priors, then its restarts (if it stopped by
    # itself) on the same rows, within the cap in all.
    assert fits[0][:2] == (120, _LARGE_FIT_MAXITER)
    done = 0
    for rows, maxiter, result in fits:
        assert (rows, maxiter) == (120, _LARGE_FIT_MAXITER - done)
        done += result.step
    assert done <= _LARGE_FIT_MAXITER
    assert len(fits) <= 1 + state_module._MAX_RESTARTS
    model = sampler._carried.incremental[NAME].model
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.slow
def test_every_fit_keeps_a_correction_pair_per_hyperparameter(monkeypatch):
    # L-BFGS-B's memory (scipy's maxcor, default 10) is at least
    # _MIN_CORRECTIONS and at least the number of hyperparameters fitted: with
    # one lengthscale per encoded column, 10 pairs left the cold fit at its
    # iteration cap on 21-47 columns.
    seen = []
    original = state_module.fit_gpytorch_mll_scipy

    def spy(mll, *args, **kwargs):
        count = sum(p.numel() for p in mll.parameters() if p.requires_grad)
        seen.append((count, (kwargs.get("options") or {}).get("maxcor")))
        return original(mll, *args, **kwargs)

    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", spy)
    sampler = SketchSampler(seed=0, fit_subset_size=120, refit_every=1, **FAST)
    study, space = _study(sampler, 200)
    torch.manual_seed(0)
    for _ in range(2):
        trial = study.ask(space)
        study.tell(trial, 0.0)
    assert len(seen) >= 3  # the objective's and the failures' models, a refit
    for count, maxcor in seen:
        assert maxcor == max(state_module._MIN_CORRECTIONS, count)
    # The objective's model has a lengthscale per parameter (x, y, k, c, z),
    # the failures' model one per column (x, y, k, four one-hot, z).
    assert max(count for count, _ in seen) > 8


@pytest.mark.slow
def test_a_warm_refit_on_a_subset_only_polishes(monkeypatch):
    # A scheduled refit starts from the previous fit's values: at most
    # _POLISH_MAXITER iterations on the subset, no coarse stage.
    sampler = SketchSampler(
        seed=0, fit_subset_size=120, failed_trials="ignore", refit_every=1, **FAST
    )
    study, space = _study(sampler, 200)
    torch.manual_seed(0)
    trial = study.ask(space)
    study.tell(trial, 0.0)
    fits = []
    original = state_module.fit_gpytorch_mll_scipy

    def spy(mll, *args, **kwargs):
        options = kwargs.get("options") or {}
        fits.append((mll.model.train_X.shape[0], options.get("maxiter")))
        return original(mll, *args, **kwargs)

    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", spy)
    study.ask(space)
    assert sampler._carried.incremental[NAME].counts.last == "refit"
    assert fits == [(120, _POLISH_MAXITER)]


def test_the_failures_model_does_not_refit_on_drift():
    # Its values are +-1/2 labels: a failure where it expected a completed
    # trial is no sign of stale hyperparameters. The objective's model keeps
    # IncrementalGP's drift check.
    sampler = SketchSampler(seed=0, n_startup_trials=5, **FAST)
    study, space = _study(sampler, 60, seed=1)
    torch.manual_seed(0)
    study.ask(space)
    carried = sampler._carried.incremental
    assert FAILURES in carried
    assert carried[FAILURES].drift_tolerance is None
    assert carried[NAME].drift_tolerance is not None


@pytest.mark.slow
def test_after_a_suggestion_likely_to_fail_the_constrained_acquisition_goes_first(
    monkeypatch,
):
    # Where LogEI's choice was likely to fail, the next suggestions maximise
    # LogConstrainedEI directly (one maximisation, not two) and LogEI's choice
    # is checked again every _RECHECK_EVERY-th suggestion.
    from botorch_sketch.integrations.optuna import acquisition

    maximised = []
    original = acquisition._maximise

    def spy(acqf, *args, **kwargs):
        maximised.append(type(acqf).__name__)
        return original(acqf, *args, **kwargs)

    monkeypatch.setattr(acquisition, "_maximise", spy)
    # Every suggestion's LogEI choice is taken to be likely to fail.
    monkeypatch.setattr(acquisition, "_likely_to_fail", lambda model, X: True)
    monkeypatch.setattr(acquisition, "_RECHECK_EVERY", 3)
    sampler = SketchSampler(seed=0, n_startup_trials=5, **FAST)
    study, space = _study(sampler, 40, seed=1)
    torch.manual_seed(0)
    for _ in range(4):
        trial = study.ask(space)
        study.tell(trial, 0.0)
    ei, cei = "LogExpectedImprovement", "LogConstrainedExpectedImprovement"
    assert maximised == [ei, cei, cei, cei, ei, cei]
    assert sampler._carried.memo[acquisition._LIKELY_TO_FAIL] == 4
    # Once LogEI's choice is safe again, it goes first again.
    monkeypatch.setattr(acquisition, "_likely_to_fail", lambda model, X: False)
    maximised.clear()
    for _ in range(3):
        trial = study.ask(space)
        study.tell(trial, 0.0)
    assert maximised == [cei, cei, ei]
    assert sampler._carried.memo[acquisition._LIKELY_TO_FAIL] == 0


class _Scripted:
    r"""``fit_gpytorch_mll_scipy`` returning scripted results, recording maxiter."""

    def __init__(self, results):
        self.results = list(results)
        self.maxiters = []

    def __call__(self, mll, *args, **kwargs):
        self.maxiters.append(kwargs["options"].get("maxiter"))
        return self.results.pop(0)


def _result(step, fval, stopped=False):
    from botorch.optim.core import OptimizationResult, OptimizationStatus

    status = OptimizationStatus.STOPPED if stopped else OptimizationStatus.SUCCESS
    return OptimizationResult(step=step, fval=fval, status=status)


class _Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(3))


@pytest.mark.parametrize(
    "script, maxiters, final",
    [
        # Stopped by itself after 11 iterations at 1.314: restarted, it gains
        # (to 0.220), and again, where it stops at once: converged.
        ([(11, 1.314), (94, 0.220), (1, 0.2199)], [150, 139, 45], 0.2199),
        # Converged the first time: one restart of one iteration confirms it.
        ([(87, -0.2514), (1, -0.2514)], [150, 63], -0.2514),
        # At its cap (stopped, not converged): no restart.
        ([(150, 1.6, True)], [150], 1.6),
        # Every restart gains: at most _MAX_RESTARTS of them, within the cap.
        ([(10, 4.0), (10, 3.0), (10, 2.0), (10, 1.0)], [150, 140, 130, 120], 1.0),
    ],
)
def test_a_cold_fit_that_stops_by_itself_is_restarted(
    monkeypatch, script, maxiters, final
):
    # With the loose ftol one poor line search ends a fit: on the categories
    # task of suggest --budget mixed-unseen the cold fit stopped after 11
    # iterations at a loss of 1.314 per trial, where 94 more reached 0.220.
    assert state_module._MAX_RESTARTS == 3
    scripted = _Scripted(_result(*row) for row in script)
    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", scripted)
    optimizer = state_module._Optimizer(None, NAME)
    optimizer.maxiter = _LARGE_FIT_MAXITER
    assert optimizer(_Module()).fval == final
    assert scripted.maxiters == maxiters
    assert not scripted.results
    # A refit polishes once (at most _POLISH_MAXITER), never restarted.
    scripted = _Scripted([_result(3, 0.9), _result(1, 0.5)])
    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", scripted)
    assert optimizer(_Module()).fval == 0.9
    assert scripted.maxiters == [_POLISH_MAXITER]


def test_a_cold_fit_without_a_cap_is_restarted_without_one(monkeypatch):
    # Below the fitting subset's size there is no iteration cap: the restart
    # has none either.
    scripted = _Scripted([_result(5, 2.0), _result(40, 1.0), _result(1, 1.0)])
    monkeypatch.setattr(state_module, "fit_gpytorch_mll_scipy", scripted)
    optimizer = state_module._Optimizer(None, NAME)
    assert optimizer(_Module()).fval == 1.0
    assert scripted.maxiters == [None, None, None]
