import math

import pytest

optuna = pytest.importorskip("optuna")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from optuna_helpers import FAST  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.acquisition import (  # noqa: E402
    _reference_point,
)

_REF = (2.0, 2.0)


def hypervolume_2d(points, ref):
    # The area dominated by n x 2 points (minimised) up to ref.
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    points = points[(points < np.asarray(ref)).all(axis=1)]
    area, floor = 0.0, ref[1]
    for f1, f2 in points[np.lexsort((points[:, 1], points[:, 0]))]:
        if f2 < floor:
            area += (ref[0] - f1) * (floor - f2)
            floor = f2
    return float(area)


def test_the_hypervolume_helper():
    # Two points against (4, 3): 1 x 2 + 1 x 1 (the second's own strip).
    assert hypervolume_2d(np.array([[3.0, 1.0], [2.0, 2.0]]), (4, 3)) == 3.0
    # Dominated points and points beyond the reference add nothing.
    points = np.array([[3.0, 1.0], [2.0, 2.0], [3.5, 2.5], [5.0, 0.0]])
    assert hypervolume_2d(points, (4, 3)) == 3.0


def _run(sampler, n_trials):
    values = []

    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 1e-3, 1.0, log=True)
        k = trial.suggest_int("k", 0, 5)
        # Pareto set: y at its lower bound, k = 0, x anywhere.
        f = (x + y + 0.1 * k, (1.0 - x) ** 2 + y + 0.1 * k)
        values.append(f)
        return f

    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    study.optimize(objective, n_trials=n_trials)
    return study, hypervolume_2d(np.array(values), _REF)


@pytest.mark.slow
def test_two_objectives_beat_random_sampling_in_hypervolume():
    ours, ours_hv = _run(SketchSampler(seed=3, n_startup_trials=6, **FAST), 20)
    _, random_hv = _run(optuna.samplers.RandomSampler(seed=3), 20)
    # The front reaches 2.0 * 2.0 - (area above it) ~ 3.0; random trials
    # rarely have y near 1e-3 and k = 0.
    assert ours_hv > random_hv + 0.1, (ours_hv, random_hv)
    for t in ours.trials:
        assert 0.0 <= t.params["x"] <= 1.0
        assert 1e-3 <= t.params["y"] <= 1.0
        assert t.params["k"] in range(6) and isinstance(t.params["k"], int)


def test_reference_point_is_gpsampler_s():
    # GPSampler: the worst standardised value of each objective, 10% worse.
    Y = torch.tensor([[0.0, 4.0], [1.0, 2.0], [2.0, 0.0]], dtype=torch.float64)
    ref = _reference_point(Y)
    mean, std = Y.mean(0), Y.std(0, correction=0)
    worst = (Y.min(0).values - mean) / std
    assert torch.allclose(ref, mean + std * 1.1 * worst)
    assert (ref < Y.min(0).values).all()
    # Infeasible trials do not set it, but are in the standardisation.
    feasible = torch.tensor([False, True, True])
    ref = _reference_point(Y, feasible)
    assert torch.allclose(ref, mean + std * 1.1 * ((Y[1:].min(0).values - mean) / std))
    assert math.isfinite(ref.sum().item())


def _study(sampler, objectives):
    def objective(trial):
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(2)]
        return tuple(x[i] ** 2 + 0.1 * x[1 - i] for i in range(objectives))

    study = optuna.create_study(directions=["minimize"] * objectives, sampler=sampler)
    study.optimize(objective, n_trials=6)
    return sampler._carried


def _noise_floor(model):
    return model.likelihood.noise_covar.raw_noise_constraint.lower_bound.item()


@pytest.mark.slow
def test_objectives_of_several_infer_noise_below_botorch_s_floor():
    # On BraninCurrin (noise-free; Branin spans 0.4 to 300) BoTorch's floor
    # (1e-4 of the standardised variance) left Branin's model a standard
    # deviation of 1% of that spread at the trials, and the hypervolume
    # search stayed at the end of the front where Branin is smallest.
    from botorch.models.utils.gpytorch_modules import MIN_INFERRED_NOISE_LEVEL

    carried = _study(SketchSampler(seed=0, n_startup_trials=4, **FAST), 2)
    X = torch.rand(30, 2, generator=torch.Generator().manual_seed(0))
    X = X.to(torch.float64)
    # Smooth and noise-free: the fitted noise goes to the floor.
    Y = torch.stack([X[:, 0] + X[:, 1] ** 2, (1 - X[:, 0]) ** 2 + X[:, 1]], -1)
    for i in range(2):
        model = carried.fit(X, Y[:, i : i + 1], f"objective {i}")
        assert _noise_floor(model) < MIN_INFERRED_NOISE_LEVEL
        assert model.likelihood.noise.item() < MIN_INFERRED_NOISE_LEVEL
    # One objective keeps BoTorch's floor (its warping handles wide values).
    carried = _study(SketchSampler(seed=0, n_startup_trials=4, **FAST), 1)
    model = carried.fit(X, Y[:, :1], "objective 0")
    assert _noise_floor(model) == pytest.approx(MIN_INFERRED_NOISE_LEVEL)
