import math

import pytest
import torch
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.objective import (
    GenericMCObjective,
    LinearMCObjective,
    ScalarizedPosteriorTransform,
)
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.utils.datasets import SupervisedDataset
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DiagLinearOperator

from botorch_sketch.acquisition import (
    marginal_baseline,
    marginal_baseline_index,
    qLogNEIMarginalBaseline,
)
from botorch_sketch.models import NystromGP

DTYPE = torch.double


class MarginalModel(Model):
    # Known marginals: the posterior mean at x is x[0], its std x[1]; points are
    # independent. It counts the largest batch of points it was asked about.
    num_outputs = 1

    def __init__(self):
        super().__init__()
        self.largest_batch = 0

    def posterior(self, X, output_indices=None, posterior_transform=None, **kwargs):
        self.largest_batch = max(self.largest_batch, X[..., 0].numel())
        mean, std = X[..., 0], X[..., 1]
        mean = mean.masked_fill(mean == 99.0, math.nan)  # a broken posterior
        posterior = GPyTorchPosterior(
            MultivariateNormal(mean, DiagLinearOperator(std**2))
        )
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior


def points(mu, sigma):
    return torch.tensor([mu, sigma], dtype=DTYPE).T.contiguous()


def test_keeps_exactly_the_points_whose_upper_bound_reaches_the_best_lower_bound():
    # Lower bounds (k = 2): -0.2, 0.8, 0.0, 2.8, 2.0; the best is 2.8.
    # Upper bounds: 0.2, 1.2, 4.0, 3.2, 3.0 -> rows 2, 3 and 4 reach it.
    X = points([0.0, 1.0, 2.0, 3.0, 2.5], [0.1, 0.1, 1.0, 0.1, 0.25])
    model = MarginalModel()
    assert marginal_baseline_index(model, X, k=2.0).tolist() == [2, 3, 4]
    assert torch.equal(marginal_baseline(model, X, k=2.0), X[[2, 3, 4]])
    # Narrower bounds keep fewer; k = 0 keeps the best mean alone.
    assert marginal_baseline_index(model, X, k=1.0).tolist() == [2, 3]
    assert marginal_baseline_index(model, X, k=0.0).tolist() == [3]
    # Wide bounds keep everything.
    assert marginal_baseline_index(model, X, k=100.0).tolist() == [0, 1, 2, 3, 4]


def test_the_cap_keeps_the_best_mean_then_the_largest_upper_bounds():
    X = points([0.0, 1.0, 2.0, 3.0, 2.5], [0.1, 0.1, 1.0, 0.1, 0.25])
    model = MarginalModel()
    # Row 2 has the largest upper bound (4.0), row 3 the best mean.
    assert marginal_baseline_index(model, X, k=2.0, max_size=2).tolist() == [2, 3]
    assert marginal_baseline_index(model, X, k=2.0, max_size=1).tolist() == [3]
    assert marginal_baseline_index(model, X, k=100.0, max_size=3).tolist() == [2, 3, 4]


def test_a_posterior_transform_gives_the_objective():
    # Minimising: weight -1 turns the best mean into the smallest x[0].
    X = points([0.0, 1.0, 2.0, 3.0], [0.1, 0.1, 0.1, 0.1])
    transform = ScalarizedPosteriorTransform(weights=torch.tensor([-1.0], dtype=DTYPE))
    index = marginal_baseline_index(MarginalModel(), X, posterior_transform=transform)
    assert index.tolist() == [0]


def test_marginals_are_computed_in_chunks_with_the_same_result():
    g = torch.Generator().manual_seed(0)
    X = points(
        torch.randn(300, generator=g).tolist(), torch.rand(300, generator=g).tolist()
    )
    model = MarginalModel()
    whole = marginal_baseline_index(model, X, chunk_size=1000)
    assert model.largest_batch == 300
    model = MarginalModel()
    assert torch.equal(marginal_baseline_index(model, X, chunk_size=32), whole)
    assert model.largest_batch == 32


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k, max_size", [(0.0, 64), (2.0, 64), (3.0, 3), (5.0, 1)])
def test_the_best_posterior_mean_is_always_kept(seed, k, max_size):
    g = torch.Generator().manual_seed(seed)
    X = points(
        torch.randn(200, generator=g).tolist(),
        (2 * torch.rand(200, generator=g)).tolist(),
    )
    index = marginal_baseline_index(MarginalModel(), X, k=k, max_size=max_size)
    assert 1 <= index.numel() <= max_size
    assert int(X[:, 0].argmax()) in index.tolist()
    assert torch.equal(index, index.sort().values)


def test_the_best_posterior_mean_of_a_nystrom_gp_is_kept():
    g = torch.Generator().manual_seed(1)
    X = torch.rand(400, 3, generator=g, dtype=DTYPE)
    Y = torch.sin(6 * X).sum(-1, keepdim=True) + 0.1 * torch.randn(
        400, 1, generator=g, dtype=DTYPE
    )
    model = NystromGP(X, Y)
    model.eval()
    index = marginal_baseline_index(model, X, k=2.0, max_size=16, chunk_size=64)
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
    assert int(mean.argmax()) in index.tolist()
    assert 1 <= index.numel() <= 16


@pytest.mark.parametrize(
    "X, kwargs, error, match",
    [
        (torch.zeros(0, 2, dtype=DTYPE), {}, InputDataError, "X is empty"),
        (
            torch.tensor([[0.0, 1.0], [math.nan, 1.0]], dtype=DTYPE),
            {},
            InputDataError,
            "NaN",
        ),
        (
            torch.tensor([[0.0, 1.0], [math.inf, 1.0]], dtype=DTYPE),
            {},
            InputDataError,
            "NaN",
        ),
        (torch.zeros(2, 3, 2, dtype=DTYPE), {}, UnsupportedError, "n x d"),
        (torch.zeros(3, 2, dtype=DTYPE), {"k": -1.0}, InputDataError, "k must be"),
        (torch.zeros(3, 2, dtype=DTYPE), {"k": math.nan}, InputDataError, "k must be"),
        (torch.zeros(3, 2, dtype=DTYPE), {"max_size": 0}, InputDataError, "max_size"),
        (torch.zeros(3, 2, dtype=DTYPE), {"max_size": 2.5}, InputDataError, "max_size"),
        (
            torch.zeros(3, 2, dtype=DTYPE),
            {"chunk_size": 0},
            InputDataError,
            "chunk_size",
        ),
    ],
)
def test_bad_input_is_named(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        marginal_baseline_index(MarginalModel(), X, **kwargs)


def test_a_non_finite_posterior_is_named():
    X = points([0.0, 99.0], [0.1, 0.1])
    with pytest.raises(InputDataError, match="not finite"):
        marginal_baseline_index(MarginalModel(), X)


def _gp(n=60, m=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=DTYPE)
    Y = torch.cat([torch.sin(5 * X[:, :1] + i) for i in range(m)], -1)
    return SingleTaskGP(X, Y + 0.05 * torch.randn(n, m, generator=g, dtype=DTYPE)), X


def test_the_acquisition_function_uses_the_marginal_baseline():
    model, X = _gp()
    acqf = qLogNEIMarginalBaseline(model, X, baseline_k=1.5, baseline_max_size=8)
    assert acqf.marginal_baseline
    expected = marginal_baseline(model, X, k=1.5, max_size=8)
    assert torch.equal(acqf.X_baseline, expected)
    value = acqf(torch.rand(4, 1, 2, dtype=DTYPE))
    assert value.shape == (4,) and torch.isfinite(value).all()
    # Without pruning it is BoTorch's class on the whole baseline.
    whole = qLogNEIMarginalBaseline(model, X, prune_baseline=False)
    assert not whole.marginal_baseline and whole.X_baseline.shape[0] == 60


def test_a_linear_objective_is_scalarized():
    model, X = _gp(m=2)
    weights = torch.tensor([1.0, -0.5], dtype=DTYPE)
    acqf = qLogNEIMarginalBaseline(model, X, objective=LinearMCObjective(weights))
    transform = ScalarizedPosteriorTransform(weights=weights)
    assert acqf.marginal_baseline
    expected = marginal_baseline(model, X, posterior_transform=transform)
    assert torch.equal(acqf.X_baseline, expected)


def test_constraints_or_a_non_linear_objective_fall_back_to_botorch(monkeypatch):
    model, X = _gp(m=2)
    objective = GenericMCObjective(lambda Y, X=None: Y[..., 0])
    constraint = [lambda Y: Y[..., 1]]
    for kwargs in (
        {"objective": objective},
        {"objective": objective, "constraints": constraint},
    ):
        torch.manual_seed(0)
        ours = qLogNEIMarginalBaseline(model, X, **kwargs)
        torch.manual_seed(0)
        botorch = qLogNoisyExpectedImprovement(model, X, **kwargs)
        assert not ours.marginal_baseline
        assert torch.equal(ours.X_baseline, botorch.X_baseline)


def test_the_input_constructor_passes_the_options_and_leaves_qlognei_alone():
    model, X = _gp()
    data = SupervisedDataset(
        X,
        model.train_targets.unsqueeze(-1),
        feature_names=["a", "b"],
        outcome_names=["y"],
    )
    constructor = get_acqf_input_constructor(qLogNEIMarginalBaseline)
    inputs = constructor(
        model=model,
        training_data=data,
        baseline_k=3.0,
        baseline_max_size=4,
        bounds=None,
    )
    assert inputs["baseline_k"] == 3.0 and inputs["baseline_max_size"] == 4
    acqf = qLogNEIMarginalBaseline(**inputs)
    assert acqf.X_baseline.shape[0] <= 4
    # BoTorch's own qLogNEI keeps its constructor and its options.
    plain = get_acqf_input_constructor(qLogNoisyExpectedImprovement)
    assert "baseline_k" not in plain(model=model, training_data=data)
    with pytest.raises(TypeError, match="baseline_k"):
        plain(model=model, training_data=data, baseline_k=2.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"baseline_k": -1.0}, "k must be"),
        ({"baseline_max_size": 0}, "max_size"),
    ],
)
def test_bad_options_are_named(kwargs, match):
    model, X = _gp()
    with pytest.raises(InputDataError, match=match):
        qLogNEIMarginalBaseline(model, X, **kwargs)
