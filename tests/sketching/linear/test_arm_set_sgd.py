#!/usr/bin/env python3
import pytest
import torch
from botorch.exceptions.errors import UnsupportedError

from botorch_sketch.sketching.linear.arm_set_sgd import ArmSetSGD
from botorch_sketch.sketching.linear.schedules import (
    Constant,
    HarmonicStep,
    InverseRidge,
    PowerRidge,
)
from botorch_sketch.sketching.linear.sgd import SGDLeastSquares
from botorch_sketch.sketching.linear.width import (
    REFRESH_PERIOD,
    WidthTracker,
    width_step,
)


def _arms(num_arms: int, dim: int, scale: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    arms = torch.randn(num_arms, dim, generator=g, dtype=torch.double)
    return scale * arms / arms.norm(dim=-1, keepdim=True)


def _pair(dim, step, ridge, seed):
    # Two solvers with equal generators: one for ArmSetSGD, one stepped in R^d.
    return [
        SGDLeastSquares(dim, step, ridge, generator=torch.Generator().manual_seed(seed))
        for _ in range(2)
    ]


@pytest.mark.parametrize(
    "step, ridge, scale, steps_per_update, folds",
    [
        (HarmonicStep(35.0), InverseRidge(1.0), 1.0, 1, False),
        (HarmonicStep(35.0), PowerRidge(0.6), 1.0, 3, False),
        # Arms of norm 2: the steps are scaled down by 1/4.
        (HarmonicStep(35.0), InverseRidge(1.0), 2.0, 2, False),
        # A ridge of 5 against steps near 0.3 makes every shrink negative: both
        # scale factors fold into their tensors at each step.
        (Constant(0.3), Constant(5.0), 1.0, 1, True),
    ],
)
@pytest.mark.parametrize("duplicate", [False, True])
def test_arm_set_sgd_takes_the_steps_of_the_solver_and_tracker_in_full_space(
    step, ridge, scale, steps_per_update, folds, duplicate
):
    d, K = 12, 5
    arms = _arms(K, d, scale, seed=0)
    if duplicate:
        # Arms that span fewer than K dimensions: a singular triangle.
        arms[3] = arms[1]
    solver, reference = _pair(d, step, ridge, seed=1)
    wstep = step if folds else width_step(d)
    state = ArmSetSGD(arms, solver, wstep, steps_per_update)
    tracker = WidthTracker(
        arms, wstep, ridge, initial_scale=reference.isotropic_scale()
    )
    g = torch.Generator().manual_seed(2)
    pulls = torch.randint(K, (REFRESH_PERIOD + 50,), generator=g).tolist()
    targets = torch.randn(len(pulls), generator=g, dtype=torch.double).tolist()
    for t, (k, y) in enumerate(zip(pulls, targets, strict=True), start=1):
        state.pull(k, y)
        i = reference.observe_shared(arms[k], y, float(arms[k] @ arms[k]))[0]
        tracker.step(reference.sample(i)[0], reference.n, reference.step_scale)
        for _ in range(steps_per_update - 1):
            i = reference._step()[0]
            tracker.step(reference.sample(i)[0], reference.n, reference.step_scale)
        if t in (1, 2, REFRESH_PERIOD // steps_per_update, len(pulls)):
            torch.testing.assert_close(
                state.theta, reference.theta, rtol=1e-9, atol=1e-12
            )
            torch.testing.assert_close(
                state.quadratic_forms(),
                tracker.quadratic_forms(),
                rtol=1e-9,
                atol=1e-12,
            )
            ranking = state.scaled_scores(0.5) * state.theta_scale
            expected = arms @ reference.theta + 0.5 * tracker.quadratic_forms().sqrt()
            torch.testing.assert_close(ranking, expected, rtol=1e-9, atol=1e-12)
    assert (state.theta_scale == 1.0 and state._b == 1.0) == folds


def test_arm_set_sgd_hands_back_a_solver_and_tracker_that_carry_on_alike():
    d, K = 9, 4
    arms = _arms(K, d, 1.0, seed=3)
    solver, reference = _pair(d, HarmonicStep(30.0), InverseRidge(1.0), seed=4)
    state = ArmSetSGD(arms, solver, width_step(d))
    tracker = WidthTracker(arms, width_step(d), reference.ridge)
    for k in [0, 1, 2, 3, 1, 1, 0, 2] * 10:
        state.pull(k, 0.1 * k)
        i = reference.observe_shared(arms[k], 0.1 * k, float(arms[k] @ arms[k]))[0]
        tracker.step(reference.sample(i)[0], reference.n, reference.step_scale)
    rows = arms.clone().unbind(0)
    full, full_tracker = state.in_full_space(rows)
    assert full is solver and full.n == 80 and full._num_copied == 0
    assert all(full.sample(i)[0] is rows[k] for i, k in enumerate(state.pulls))
    torch.testing.assert_close(full.theta, reference.theta, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(full_tracker.phi, tracker.phi, rtol=1e-9, atol=1e-12)
    # Outside the arms now: both go on with the same draws.
    x = torch.randn(d, generator=torch.Generator().manual_seed(5), dtype=arms.dtype)
    for solver_, tracker_ in ((full, full_tracker), (reference, tracker)):
        i = solver_.observe(x, 0.7)
        tracker_.step(solver_.sample(i)[0], solver_.n, solver_.step_scale)
    torch.testing.assert_close(full.theta, reference.theta, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(full_tracker.phi, tracker.phi, rtol=1e-9, atol=1e-12)


def test_arm_set_sgd_takes_over_only_an_empty_solver_without_averaging():
    arms = _arms(3, 5, 1.0, seed=6)
    used = SGDLeastSquares(5, HarmonicStep(10.0))
    used.observe(arms[0], 1.0)
    averaging = SGDLeastSquares(5, HarmonicStep(10.0), averaging=True)
    for solver in (used, averaging):
        with pytest.raises(UnsupportedError, match="no observations"):
            ArmSetSGD(arms, solver, width_step(5))
