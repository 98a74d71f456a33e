#!/usr/bin/env python3
r"""The trust regions' success rules: means, observations, or the smaller."""

import math

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.models.deterministic import GenericDeterministicModel

from botorch_sketch.bo import LargeBatchOptimizer, TrustRegions
from botorch_sketch.bo.checkpoint import CheckpointError
from botorch_sketch.bo.thompson import default_surrogate

pytestmark = pytest.mark.cpu_only

# A model whose posterior mean is the sum of the inputs: larger up the diagonal.
MODEL = GenericDeterministicModel(lambda X: X.sum(-1, keepdim=True))


def _regions(success):
    regions = TrustRegions(
        2, 4, num_regions=1, generator=torch.Generator(), success=success
    )
    X = torch.tensor([[0.5, 0.5], [0.1, 0.1]], dtype=torch.double)
    regions.start(MODEL, X, 16)
    assert torch.equal(regions.centres[0], X[0])  # the larger mean
    regions.centre_values[0] = 0.0  # the centre's observation
    return regions


def _read(success, y):
    # One new point whose mean (1.4) beats the centre's (1.0), observed at y.
    regions = _regions(success)
    new_X = torch.tensor([[0.7, 0.7]], dtype=torch.double)
    owner = torch.zeros(1, dtype=torch.long)
    regions.update(MODEL, new_X, owner, 16, new_Y=torch.tensor([y]).double())
    state = regions.states[0]
    moved = torch.equal(regions.centres[0], new_X[0])
    # One failure halves the length here (TuRBO's tolerance is 1 for q >= d).
    return state.success_counter, state.length, moved, regions


@pytest.mark.parametrize(
    ("success", "y", "improved"),
    [
        ("mean", -10.0, True),  # means only: the bad observation is not read
        ("observation", -10.0, False),
        ("pessimistic", -10.0, False),
        ("observation", 5.0, True),
        ("pessimistic", 5.0, True),  # both the mean and the observation beat
    ],
)
def test_a_batch_succeeds_by_the_rule_score(success, y, improved):
    successes, length, moved, regions = _read(success, y)
    assert (successes, length) == ((1, 0.8) if improved else (0, 0.4))
    assert moved == improved
    if improved and success != "mean":
        assert regions.centre_values[0] == y


def test_pessimistic_needs_the_mean_too():
    # The observation beats the centre's, the mean does not: only the
    # observation rule counts a success.
    for success, improved in (("observation", True), ("pessimistic", False)):
        regions = _regions(success)
        regions.centre_values[0] = 2.0  # the centre's score: min(1.0, 2.0)
        new_X = torch.tensor([[0.2, 0.2]], dtype=torch.double)  # mean 0.4 < 1.0
        owner = torch.zeros(1, dtype=torch.long)
        regions.update(MODEL, new_X, owner, 16, new_Y=torch.tensor([5.0]).double())
        assert regions.states[0].success_counter == int(improved)


def test_an_unobserved_centre_is_read_by_its_mean():
    regions = _regions("observation")
    regions.centre_values[0] = math.inf  # e.g. a restart at a global peak
    new_X = torch.tensor([[0.7, 0.7]], dtype=torch.double)
    owner = torch.zeros(1, dtype=torch.long)
    # 0.9 < the centre's mean 1.0: a failure, although any finite value
    # beats an infinite one.
    regions.update(MODEL, new_X, owner, 16, new_Y=torch.tensor([0.9]).double())
    assert regions.states[0].length == 0.4


def test_bad_rules_and_missing_observations_are_refused():
    with pytest.raises(InputDataError, match="success must be one of"):
        TrustRegions(2, 4, success="best")
    with pytest.raises(InputDataError, match="success must be one of"):
        LargeBatchOptimizer(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), success="obs")
    regions = _regions("observation")
    new_X = torch.tensor([[0.7, 0.7]], dtype=torch.double)
    with pytest.raises(InputDataError, match="needs new_Y"):
        regions.update(MODEL, new_X, torch.zeros(1, dtype=torch.long), 16)


def _f(X):
    return -(X - 0.3).square().sum(-1)


def test_the_optimizer_reads_observations_and_checkpoints_the_rule(tmp_path):
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    options = dict(q=4, num_initial=6, num_candidates=64, num_local=4, seed=1)
    optimizer = LargeBatchOptimizer(
        bounds,
        surrogate=default_surrogate(max_inducing=16),
        success="observation",
        **options,
    )
    for _ in range(4):
        X = optimizer.ask(4)
        optimizer.tell(X, _f(X))
    optimizer.ask(4)  # the regions read the last batch
    regions = optimizer.regions
    # The centre's value is the observation told at the centre (or unknown).
    centre = regions.centres[0]
    told = ((optimizer.train_X - centre).abs().sum(-1) == 0).nonzero()
    if math.isfinite(regions.centre_values[0]):
        assert told.numel() == 1
        assert regions.centre_values[0] == pytest.approx(
            float(optimizer.train_Y[told[0, 0]])
        )
    path = tmp_path / "run.pt"
    optimizer.save(path)
    resumed = LargeBatchOptimizer.load(
        path,
        bounds,
        surrogate=default_surrogate(max_inducing=16),
        success="observation",
        **options,
    )
    assert resumed.regions.success == "observation"
    assert resumed.regions.centre_values == regions.centre_values
    with pytest.raises(CheckpointError, match="success"):
        LargeBatchOptimizer.load(
            path, bounds, surrogate=default_surrogate(max_inducing=16), **options
        )
