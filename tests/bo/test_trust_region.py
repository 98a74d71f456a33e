import math

import pytest
import torch
from botorch.acquisition import qLogExpectedImprovement
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models import ModelListGP, SingleTaskGP, SingleTaskVariationalGP
from botorch.models.transforms import Normalize
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import toy_data

from botorch_sketch import FixedSelector, GradientSubsetGP, NystromGP, RandomSubset
from botorch_sketch.bo.trust_region import (
    TurboState,
    generate_batch,
    lengthscale_weights,
    perturbed_candidates,
    restart_state,
    trust_region_bounds,
    update_state,
)

FAST = {"num_restarts": 2, "raw_samples": 32}


def _y(*values):
    return torch.tensor(values, dtype=torch.double).unsqueeze(-1)


def _data(n=20, d=3, seed=0):
    return toy_data(n, d, lambda X: -((X - 0.3) ** 2).sum(-1, keepdim=True), seed=seed)


def _gp(X, Y, lengthscale=None, **kw):
    model = SingleTaskGP(X, Y, **kw)
    if lengthscale is not None:
        model.covar_module.lengthscale = lengthscale
    return model.eval()


# ------------------------------------------------------------------ state


def test_defaults_follow_turbo():
    state = TurboState(dim=10, batch_size=4)
    assert state.length == 0.8 and state.length_min == 0.5**7
    assert state.length_max == 1.6 and state.success_tolerance == 3
    assert state.failure_tolerance == math.ceil(max(4 / 4, 10 / 4)) == 3
    assert TurboState(dim=2, batch_size=1).failure_tolerance == 4
    assert state.best_value == -math.inf and not state.restart_triggered


def test_expands_after_success_tolerance_successes():
    state = TurboState(dim=2, batch_size=1, best_value=0.0)
    for step, y in enumerate([1.0, 2.0]):
        state = update_state(state, _y(y))
        assert state.success_counter == step + 1 and state.length == 0.8
    state = update_state(state, _y(0.5, 3.0))  # the batch's best counts
    assert state.length == 1.6 and state.success_counter == 0
    assert state.best_value == 3.0
    # Capped at length_max.
    for y in [4.0, 5.0, 6.0]:
        state = update_state(state, _y(y))
    assert state.length == 1.6


def test_shrinks_after_failure_tolerance_failures_and_restarts():
    state = TurboState(dim=2, batch_size=2, best_value=1.0)  # tolerance 2
    lengths = []
    for _ in range(14):
        state = update_state(state, _y(1.0, 0.5))  # no improvement
        lengths.append(state.length)
    assert state.failure_tolerance == 2
    assert lengths[:4] == [0.8, 0.4, 0.4, 0.2]
    assert state.failure_counter == 0 and state.best_value == 1.0
    # 0.8 / 2^7 < 0.5^7: the seventh halving (14th failure) triggers a restart.
    assert state.length == 0.8 / 2**7 and state.restart_triggered
    assert not any(s < 0.5**7 for s in lengths[:-1])


def test_counters_reset_when_the_streak_breaks():
    state = TurboState(dim=2, batch_size=1, best_value=0.0)  # failure tolerance 4
    state = update_state(state, _y(1.0))
    state = update_state(state, _y(2.0))
    state = update_state(state, _y(2.0))  # not better than 2 + 2e-3: failure
    assert (state.success_counter, state.failure_counter) == (0, 1)
    for _ in range(2):
        state = update_state(state, _y(-1.0))
    state = update_state(state, _y(2.01))  # success ends three failures
    assert (state.success_counter, state.failure_counter) == (1, 0)
    assert state.length == 0.8


def test_improvement_threshold_is_relative():
    state = TurboState(dim=2, batch_size=1, best_value=-100.0)
    assert update_state(state, _y(-99.95)).failure_counter == 1  # < 0.1 better
    assert update_state(state, _y(-99.85)).success_counter == 1
    # From -inf, the first finite batch improves.
    assert update_state(TurboState(2, 1), _y(-5.0)).success_counter == 1


def test_update_does_not_mutate_and_restart_gives_a_fresh_state():
    state = TurboState(dim=3, batch_size=2, length=0.5, failure_tolerance=7)
    new = update_state(state, _y(1.0))
    assert state.success_counter == 0 and new.success_counter == 1
    done = TurboState(
        dim=3, batch_size=2, length=0.001, length_min=0.01, restart_triggered=True
    )
    fresh = restart_state(done, best_value=2.0)
    assert fresh.length == 0.8 and not fresh.restart_triggered
    assert (fresh.success_counter, fresh.failure_counter) == (0, 0)
    assert fresh.length_min == 0.01 and fresh.best_value == 2.0
    assert restart_state(state).failure_tolerance == 7
    assert restart_state(TurboState(3, 2, length=0.4, length_max=0.5)).length == 0.5


def test_bad_state_and_observations():
    with pytest.raises(InputDataError, match="length must lie"):
        TurboState(dim=2, batch_size=1, length=-0.1)
    with pytest.raises(InputDataError, match="length_min"):
        TurboState(dim=2, batch_size=1, length_min=-1.0)
    with pytest.raises(InputDataError, match="length_min"):
        TurboState(dim=2, batch_size=1, length_min=2.0)
    with pytest.raises(InputDataError, match="dim must be an integer of at least 1"):
        TurboState(dim=0, batch_size=1)
    # Counts are compared with ``==``: a tolerance of 1.5 was never reached and
    # the region stopped growing, silently; a float dim set a tolerance.
    for kwargs, name in (
        ({"success_tolerance": 1.5}, "success_tolerance"),
        ({"failure_tolerance": 2.5}, "failure_tolerance"),
        ({"dim": 2.0}, "dim"),
        ({"batch_size": True}, "batch_size"),
        ({"failure_counter": -1}, "failure_counter"),
    ):
        with pytest.raises(InputDataError, match=f"{name} must be an integer"):
            TurboState(**{"dim": 2, "batch_size": 1, **kwargs})
    with pytest.raises(InputDataError, match="tolerance"):
        TurboState(dim=2, batch_size=1, success_tolerance=0)
    state = TurboState(dim=2, batch_size=1)
    with pytest.raises(InputDataError, match="NaN"):
        update_state(state, _y(float("nan")))
    with pytest.raises(InputDataError, match="q x 1"):
        update_state(state, torch.ones(2, 2))
    with pytest.raises(InputDataError, match="q x 1"):
        update_state(state, torch.ones(0, 1))


# ----------------------------------------------------------------- bounds


def test_bounds_centred_with_volume_and_aspect_from_lengthscales():
    X, Y = _data()
    lengthscale = torch.tensor([[0.1, 0.4, 1.6]], dtype=torch.double)
    model = _gp(X, Y, lengthscale)
    state = TurboState(dim=3, batch_size=1, length=0.2)
    center = torch.full((3,), 0.5, dtype=torch.double)
    bounds = trust_region_bounds(state, model, center)
    side = bounds[1] - bounds[0]
    torch.testing.assert_close(bounds.mean(0), center)
    torch.testing.assert_close(side.prod(), torch.tensor(0.2**3, dtype=torch.double))
    torch.testing.assert_close(side / side[0], lengthscale[0] / 0.1)
    # Weights: lengthscales over their geometric mean.
    torch.testing.assert_close(lengthscale_weights(model, 3), lengthscale[0] / 0.4)


def test_bounds_are_clipped_to_the_unit_cube():
    X, Y = _data()
    model = _gp(X, Y, torch.tensor([[0.1, 0.4, 1.6]], dtype=torch.double))
    state = TurboState(dim=3, batch_size=1, length=1.6)
    bounds = trust_region_bounds(state, model, torch.tensor([0.0, 0.95, 0.5]))
    assert bool((bounds >= 0).all() and (bounds <= 1).all())
    assert bounds[0, 0] == 0 and bounds[1, 1] == 1
    assert bool((bounds[0] <= torch.tensor([0.0, 0.95, 0.5]).double()).all())


def test_weights_look_through_wrappers_and_fall_back_to_uniform():
    X, Y = _data()
    ard = ScaleKernel(MaternKernel(ard_num_dims=3))
    ard.base_kernel.lengthscale = torch.tensor([[0.2, 0.2, 0.8]])
    wrapped = _gp(X, Y, covar_module=ard)
    expected = torch.tensor([0.2, 0.2, 0.8]) / 0.8 ** (1 / 3) / 0.2 ** (2 / 3)
    torch.testing.assert_close(
        lengthscale_weights(wrapped, 3), expected.double(), rtol=1e-5, atol=1e-6
    )
    ones = torch.ones(3, dtype=torch.double)
    isotropic = _gp(X, Y, covar_module=RBFKernel())
    assert torch.equal(lengthscale_weights(isotropic, 3), ones)
    summed = _gp(X, Y, covar_module=RBFKernel(ard_num_dims=3) + RBFKernel())
    assert torch.equal(lengthscale_weights(summed, 3), ones)
    listed = ModelListGP(_gp(X, Y), _gp(X, Y))
    assert torch.equal(lengthscale_weights(listed, 3), ones)
    variational = SingleTaskVariationalGP(X, Y, inducing_points=8)
    variational.model.covar_module.lengthscale = torch.tensor([[0.1, 0.2, 0.4]])
    torch.testing.assert_close(
        lengthscale_weights(variational, 3),
        torch.tensor([0.5, 1.0, 2.0], dtype=torch.double),
    )


def test_weights_are_in_the_raw_input_space():
    X, Y = _data()
    X = X * torch.tensor([1.0, 1.0, 0.5], dtype=torch.double)  # third side half
    model = SingleTaskGP(X, Y, input_transform=Normalize(3))
    model.covar_module.lengthscale = torch.ones(1, 3)
    weights = lengthscale_weights(model.eval(), 3)
    ranges = X.amax(0) - X.amin(0)
    torch.testing.assert_close(weights, ranges / ranges.log().mean().exp())


def test_bad_centre():
    X, Y = _data()
    state = TurboState(dim=3, batch_size=1)
    with pytest.raises(InputDataError, match="state's dim"):
        trust_region_bounds(state, _gp(X, Y), torch.rand(4))
    with pytest.raises(InputDataError, match="unit cube"):
        trust_region_bounds(state, _gp(X, Y), torch.tensor([0.5, 0.5, 1.5]))


# ----------------------------------------------------------------- batches


def _fitted(model):
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


def _models(X, Y):
    n = X.shape[0]
    yield "exact", _fitted(SingleTaskGP(X, Y))
    yield "nystrom", _fitted(NystromGP(X, Y, inducing=FixedSelector(torch.arange(n))))


def _inside(batch, bounds):
    return bool(((batch >= bounds[0] - 1e-12) & (batch <= bounds[1] + 1e-12)).all())


@pytest.mark.parametrize("acquisition", ["qlognei", "ts"])
def test_generate_batch_inside_the_region(acquisition, monkeypatch):
    from botorch_sketch.bo import trust_region

    paths = []
    real = trust_region.draw_matheron_paths

    def spy(model, sample_shape):
        paths.append(sample_shape)
        return real(model, sample_shape=sample_shape)

    monkeypatch.setattr(trust_region, "draw_matheron_paths", spy)
    X, Y = _data(n=16)
    state = TurboState(dim=3, batch_size=3, length=0.4)
    for name, model in _models(X, Y):
        torch.manual_seed(0)
        batch = generate_batch(
            state, model, X, Y, acquisition=acquisition, num_candidates=256, **FAST
        )
        bounds = trust_region_bounds(state, model, X[Y.argmax()])
        assert batch.shape == (3, 3), name
        assert _inside(batch, bounds), name
        if acquisition == "ts":  # distinct candidates, one path each
            assert batch.unique(dim=0).shape[0] == 3
            assert paths.pop() == torch.Size([3])


def test_generate_batch_with_subset_and_given_acquisition():
    X, Y = _data(n=30)
    subset = GradientSubsetGP(X, Y, subset_size=12, subset_rule=RandomSubset())
    state = TurboState(dim=3, batch_size=2, length=0.3)
    for model in (_fitted(subset), _fitted(SingleTaskGP(X, Y))):
        acqf = qLogExpectedImprovement(model, best_f=Y.max())
        batch = generate_batch(state, model, X, Y, acquisition=acqf, **FAST)
        assert batch.shape == (2, 3)
        assert _inside(batch, trust_region_bounds(state, model, X[Y.argmax()]))


@pytest.mark.parametrize("acquisition", ["qlogei", "ts"])
def test_generate_batch_with_a_variational_gp(acquisition):
    X, Y = _data(n=30)
    model = SingleTaskVariationalGP(X, Y, inducing_points=8).eval()
    # A batched posterior first: GPyTorch caches a factor of that batch shape.
    model.posterior(torch.rand(5, 2, 3, dtype=torch.double))
    state = TurboState(dim=3, batch_size=4, length=0.3)
    torch.manual_seed(0)
    batch = generate_batch(
        state, model, X, Y, acquisition=acquisition, num_candidates=200, **FAST
    )
    assert batch.shape == (4, 3)
    assert _inside(batch, trust_region_bounds(state, model, X[Y.argmax()]))


def test_thompson_sampling_falls_back_to_joint_samples(monkeypatch):
    from botorch_sketch.bo import trust_region

    def unsupported(*args, **kwargs):
        raise NotImplementedError

    monkeypatch.setattr(trust_region, "draw_matheron_paths", unsupported)
    X, Y = _data(n=12)
    state = TurboState(dim=3, batch_size=4, length=0.2)
    model = _gp(X, Y)
    torch.manual_seed(0)
    batch = generate_batch(state, model, X, Y, acquisition="ts", num_candidates=200)
    assert batch.shape == (4, 3)
    assert _inside(batch, trust_region_bounds(state, model, X[Y.argmax()]))


def test_perturbed_candidates_keep_most_coordinates_in_high_dimension():
    d = 100
    center = torch.full((d,), 0.5, dtype=torch.double)
    bounds = torch.stack([center - 0.1, center + 0.1])
    candidates = perturbed_candidates(center, bounds, 500, seed=1)
    moved = candidates != center
    assert moved.any(-1).all()  # every candidate moves somewhere
    assert abs(moved.double().mean().item() - 0.2) < 0.02  # p = 20 / d
    assert torch.equal(candidates, perturbed_candidates(center, bounds, 500, seed=1))


def test_generate_batch_bad_input():
    X, Y = _data()
    state = TurboState(dim=3, batch_size=1)
    model = _gp(X, Y)
    with pytest.raises(InputDataError, match="Unknown acquisition"):
        generate_batch(state, model, X, Y, acquisition="pi")
    with pytest.raises(InputDataError, match="state's dim"):
        generate_batch(TurboState(dim=2, batch_size=1), model, X, Y)
    with pytest.raises(InputDataError, match="n x 1"):
        generate_batch(state, model, X, Y[:-1])
    with pytest.raises(InputDataError, match="batch_size"):
        generate_batch(state, model, X, Y, batch_size=0)
    two_outputs = SingleTaskGP(X, torch.cat([Y, Y], -1))
    with pytest.raises(UnsupportedError, match="single-output"):
        generate_batch(state, two_outputs, X, Y)


def test_best_value_plus_infinity_is_refused():
    # Nothing beats +inf: every batch would be a failure and the region only
    # shrink. -inf is the documented "no value yet".
    with pytest.raises(InputDataError, match="best_value"):
        TurboState(dim=2, batch_size=1, best_value=math.inf)
    with pytest.raises(InputDataError, match="best_value"):
        restart_state(TurboState(dim=2, batch_size=1), best_value=math.inf)
    state = update_state(TurboState(dim=2, batch_size=1), _y(1.0))
    assert state.success_counter == 1 and state.best_value == 1.0


def test_thompson_sampling_needs_a_candidate_per_point(monkeypatch):
    # MaxPosteriorSampling without replacement picks batch_size distinct
    # candidates: fewer failed inside BoTorch ("selected index k out of range").
    X, Y = _data()
    state = TurboState(dim=3, batch_size=2)
    model = _gp(X, Y)
    with pytest.raises(InputDataError, match="num_candidates"):
        generate_batch(state, model, X, Y, acquisition="ts", num_candidates=1)
    batch = generate_batch(
        state, model, X, Y, acquisition="ts", num_candidates=2, seed=0
    )
    assert batch.shape == (2, 3)
    # The default candidate set grows with a batch larger than it.
    from botorch_sketch.bo import trust_region

    sizes = []

    def thompson(model, candidates, q):
        sizes.append(candidates.shape[0])
        return candidates[:q]

    monkeypatch.setattr(trust_region, "_thompson_batch", thompson)
    state = TurboState(dim=1, batch_size=2100)
    X1 = X[:, :1]
    large = generate_batch(state, _gp(X1, Y), X1, Y, acquisition="ts", seed=0)
    assert large.shape == (2100, 1) and sizes == [2100]
