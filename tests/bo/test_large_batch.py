import math
import warnings

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.models import SingleTaskGP
from botorch.test_functions import Hartmann

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.bo.large_batch import (
    candidate_set,
    posterior_incumbents,
    run_large_batch,
    thompson_batch,
)
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExactRegimeWarning)
        yield


def _data(n=60, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    Y = -((X - 0.3) ** 2).sum(-1, keepdim=True)
    return X, Y + 0.01 * torch.randn(n, 1, generator=g, dtype=torch.double)


def test_a_batch_is_distinct_even_when_every_path_shares_an_argmax():
    X, Y = _data()
    model = IncrementalGP()(X, Y)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    # Three candidates for 20 paths: at most 3 distinct argmaxes.
    candidates = torch.rand(3, 3, generator=torch.Generator().manual_seed(1)).double()
    torch.manual_seed(0)
    batch = thompson_batch(
        model, candidates, 20, unit, generator=torch.Generator().manual_seed(2)
    )
    assert batch.distinct_argmaxes <= 3
    assert batch.X.shape == (20, 3)
    assert batch.X.unique(dim=0).shape[0] == 20
    assert bool(((batch.X >= 0) & (batch.X <= 1)).all())


def test_filled_points_are_near_their_paths_argmax():
    # The filled points are perturbations (sd 0.02 of the box) of an argmax.
    X, Y = _data()
    model = SingleTaskGP(X, Y)
    unit = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    candidates = torch.rand(5, 3, generator=torch.Generator().manual_seed(1)).double()
    torch.manual_seed(0)
    batch = thompson_batch(model, candidates, 30, unit, local_scale=0.02)
    distance = torch.cdist(batch.X, candidates).min(-1).values
    assert float(distance.max()) < 0.2


def test_candidates_lie_in_the_region_and_half_are_near_the_incumbents():
    X, Y = _data()
    model = IncrementalGP()(X, Y)
    incumbents = posterior_incumbents(model, X, 5)
    means = model.posterior(X.unsqueeze(-2)).mean.reshape(-1)
    assert torch.equal(incumbents, X[means.topk(5).indices])
    region = torch.tensor([[0.1] * 3, [0.6] * 3], dtype=torch.double)
    C = candidate_set(
        incumbents, region, 101, scale=0.01, generator=torch.Generator().manual_seed(0)
    )
    assert C.shape == (101, 3)
    assert bool(((C >= region[0]) & (C <= region[1])).all())
    near = torch.cdist(C, incumbents.clamp(0.1, 0.6)).min(-1).values < 0.05
    assert int(near.sum()) >= 50


def test_the_loop_reaches_its_budget_with_distinct_batches_and_a_capped_set():
    problem = Hartmann(dim=6, noise_std=0.1, negate=True)
    state = torch.get_rng_state()
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=130,
        q=30,
        num_initial=40,
        surrogate=IncrementalGP(
            refit_every=2, max_inducing=25, grow_between_refits=False
        ),
        num_candidates=256,
        seed=3,
        progress=False,
    )
    # The caller's random stream is left alone.
    assert torch.equal(torch.get_rng_state(), state)
    # 40 + 30 + 30 + 30 = 130: three batches, all distinct, the set capped.
    assert trace.num_batches == 3
    assert trace.evaluations.tolist() == [70.0, 100.0, 130.0]
    assert trace.distinct_points == [30, 30, 30]
    assert max(trace.inducing_size) <= 25
    assert all(1 <= k <= 30 for k in trace.distinct_argmaxes)
    regret = trace.simple_regret
    assert bool((regret[1:] <= regret[:-1]).all()) and float(regret[-1]) >= 0
    assert math.isclose(trace.optimal_value, 3.32237, rel_tol=1e-4)
    assert len(trace.cumulative_seconds) == 3
    # Determinism under a seed.
    again, other = (
        run_large_batch(
            problem,
            problem.bounds,
            evaluations=70,
            q=30,
            num_initial=40,
            surrogate=IncrementalGP(max_inducing=25),
            num_candidates=256,
            seed=3,
            progress=False,
        )
        for _ in range(2)
    )
    assert torch.equal(again.X[0], other.X[0])


def test_the_trust_region_variant_and_the_last_batch_cut_to_fit():
    problem = Hartmann(dim=6, negate=True)
    trace = run_large_batch(
        problem,
        problem.bounds,
        evaluations=75,
        q=20,
        num_initial=20,
        num_candidates=200,
        trust_region=True,
        progress=False,
    )
    assert [len(x) for x in trace.X] == [20, 20, 15]
    assert trace.evaluations[-1] == 75


def test_bad_input_is_named():
    problem = Hartmann(dim=6, negate=True)
    with pytest.raises(InputDataError, match="bounds"):
        run_large_batch(problem, problem.bounds.flip(0), evaluations=10, q=5)
    with pytest.raises(InputDataError, match="num_initial"):
        run_large_batch(problem, problem.bounds, evaluations=10, q=20)
    with pytest.raises(InputDataError, match="q"):
        run_large_batch(problem, problem.bounds, evaluations=10, q=2.5)
    with pytest.raises(InputDataError, match="NaN"):
        run_large_batch(
            lambda x: torch.full((x.shape[0],), math.nan), problem.bounds, 10, q=5
        )
