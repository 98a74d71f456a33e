import pytest
import torch
from botorch.exceptions.errors import InputDataError
from helpers import rbf_kernel

from botorch_sketch.sketching import (
    Candidates,
    FixedSelector,
    UniformSelector,
    distinct_rows,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _pool(X, k, noise, counts=None):
    return Candidates(X=X, kernel=k, noise=noise, counts=counts)


def test_uniform_and_fixed_rules(tkwargs):
    k = rbf_kernel(0.1, outputscale=1.0, frozen=False)
    X = torch.rand(30, 2, **tkwargs)
    noise = torch.full((30,), 0.1, **tkwargs)
    a = UniformSelector(8, generator=_gen(3)).select(_pool(X, k, noise))
    b = UniformSelector(8, generator=_gen(3)).select(_pool(X, k, noise))
    assert torch.equal(a, b) and a.unique().numel() == 8
    assert UniformSelector(100).select(_pool(X, k, noise)).numel() == 30
    # The given order is kept: rules list their picks most important first.
    fixed = FixedSelector(torch.tensor([3, 1])).select(_pool(X, k, noise))
    assert fixed.tolist() == [3, 1]
    with pytest.raises(InputDataError, match=r"\[0, 30\).*\[30\]"):
        FixedSelector(torch.tensor([30])).select(_pool(X, k, noise))


@pytest.mark.parametrize(
    "indices, match",
    [
        (torch.tensor([0.5, 1.7]), "integer tensor"),
        (torch.tensor([True, False]), "integer tensor"),
        (torch.tensor([[0, 1]]), "1-d"),
        ([], "at least one index"),
        (torch.tensor([2, -1]), r"non-negative.*\[-1\]"),
        (torch.tensor([3, 1, 3]), r"distinct.*\[3\]"),
    ],
)
def test_fixed_selector_rejects_bad_indices(indices, match):
    with pytest.raises(InputDataError, match=match):
        FixedSelector(indices)


def test_fixed_selector_training_rows_keep_one_row_per_input(tkwargs):
    X = torch.tensor([[0.0], [1.0], [0.0], [2.0]], **tkwargs)
    assert FixedSelector([3, 2, 0, 1]).training_rows(X).tolist() == [3, 2, 1]
    with pytest.raises(InputDataError, match="FixedSelector"):
        FixedSelector([4]).training_rows(X)


def test_distinct_rows(tkwargs):
    X = torch.tensor([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [3.0, 3.0]], **tkwargs)
    first, inverse, counts = distinct_rows(X)
    assert torch.equal(X[first][inverse], X)
    assert sorted(first.tolist()) == [0, 1, 3]
    assert counts.sum() == 4 and counts.max() == 2


def test_uniform_selector_rejects_bad_configuration():
    with pytest.raises(InputDataError, match="num_inducing"):
        UniformSelector(num_inducing=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: UniformSelector(2.5), "num_inducing must be an"),
    ],
)
def test_settings_that_passed_comparisons_are_named(make, match):
    # NaN failed every comparison and passed; True capped a set at one point
    # and 2.5 at three; float sizes failed in a slice or ``new_empty``.
    with pytest.raises(InputDataError, match=match):
        make()
