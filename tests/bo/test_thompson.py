"""Thompson batches whose first paths are reserved to groups of candidates."""

import pytest
import torch
from botorch.exceptions.errors import InputDataError
from botorch.models import SingleTaskGP

from botorch_sketch.bo import thompson as thompson_module
from botorch_sketch.bo.thompson import thompson_batch

pytestmark = pytest.mark.cpu_only

UNIT = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)


def _model():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 3, generator=g, dtype=torch.double)
    Y = -(X - 0.3).square().sum(-1, keepdim=True)
    return SingleTaskGP(X, Y + 1e-3 * torch.randn(40, 1, generator=g).double())


def _candidates():
    # Group 0 near the peak at 0.3, group 1 in the far corner, group 2 between.
    g = torch.Generator().manual_seed(1)
    near = 0.3 + 0.05 * torch.rand(10, 3, generator=g, dtype=torch.double)
    far = 0.95 + 0.05 * torch.rand(10, 3, generator=g, dtype=torch.double)
    mid = 0.6 + 0.05 * torch.rand(10, 3, generator=g, dtype=torch.double)
    groups = torch.arange(3).repeat_interleave(10)
    return torch.cat([near, far, mid]), groups


@pytest.mark.parametrize("reserved", [0, 1, 4])
def test_reserved_paths_peak_in_their_own_group(reserved):
    candidates, groups = _candidates()
    torch.manual_seed(0)
    batch = thompson_batch(
        _model(), candidates, 15, UNIT, num_local=2,
        generator=torch.Generator().manual_seed(2),
        groups=groups, reserved=reserved,
    )  # fmt: skip
    chosen = groups[batch.argmax]
    head = 3 * reserved
    # The first 3 * reserved paths take the groups in turn.
    assert torch.equal(chosen[:head], torch.arange(head) % 3)
    # The others go where the model peaks: next to the optimum.
    assert bool((chosen[head:] == 0).all())
    assert batch.X.unique(dim=0).shape[0] == 15


def test_reserved_paths_need_valid_groups():
    candidates, groups = _candidates()
    model = _model()

    def batch(groups, reserved=1, q=6):
        return thompson_batch(
            model, candidates, q, UNIT, groups=groups, reserved=reserved
        )

    for bad in (None, groups[:-1], groups.double(), groups - 1):
        with pytest.raises(InputDataError, match="groups"):
            batch(bad)
    with pytest.raises(InputDataError, match="each with a candidate"):
        batch(torch.where(groups == 1, 2, groups))
    with pytest.raises(InputDataError, match="exceed q"):
        batch(groups, reserved=3)
    with pytest.raises(InputDataError, match="reserved"):
        batch(groups, reserved=-1)


def test_the_paths_take_the_number_of_features_asked_for(monkeypatch):
    seen = []
    original = thompson_module.draw_kernel_feature_paths

    def spy(*args, **kwargs):
        paths = original(*args, **kwargs)
        seen.append(paths.weight.shape[-1])
        return paths

    monkeypatch.setattr(thompson_module, "draw_kernel_feature_paths", spy)
    candidates, _ = _candidates()
    for num_features in (64, 1024):
        thompson_batch(_model(), candidates, 4, UNIT, num_features=num_features)
    assert seen == [64, 1024]
    for bad in (0, -3, 2.5):
        with pytest.raises(InputDataError, match="num_features"):
            thompson_batch(_model(), candidates, 4, UNIT, num_features=bad)


def _sine_data(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.double)
    return X, torch.sin(5 * X).sum(-1, keepdim=True)


def _spy_on_the_fitting_subset(monkeypatch):
    # The rows of every hyperparameter subset the surrogate fits on.
    from botorch_sketch.bo import incremental_gp

    seen = []
    original = incremental_gp.fitting_subset

    def spy(model, model_class, rows=None):
        seen.append(rows.clone())
        return original(model, model_class, rows=rows)

    monkeypatch.setattr(incremental_gp, "fitting_subset", spy)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("subset", [None, 250])
def test_the_default_surrogate_fits_on_its_subset_of_rows(monkeypatch, subset):
    from botorch_sketch.bo.thompson import default_surrogate

    X, Y = _sine_data(600, 3, seed=0)
    seen = _spy_on_the_fitting_subset(monkeypatch)
    surrogate = (
        default_surrogate(max_inducing=32)
        if subset is None
        else default_surrogate(max_inducing=32, hyperparameter_subset=subset)
    )
    model = surrogate(X, Y)
    # 400 rows by default (200 until the search was measured with both).
    sizes = [rows.unique().numel() for rows in seen]
    assert sizes == [400 if subset is None else subset]
    assert model.inducing_index.numel() <= 32
    assert model.train_X.shape[0] == 600


def test_the_default_surrogate_spreads_its_subset_as_asked(monkeypatch):
    from botorch_sketch.bo.thompson import default_surrogate
    from botorch_sketch.sketching.rules import NeighbourhoodSubset
    from botorch_sketch.sketching.rules.rule import Candidates

    assert default_surrogate().subset_rule.spread == 0.0
    X, Y = _sine_data(300, 2, seed=1)
    seen = _spy_on_the_fitting_subset(monkeypatch)
    surrogate = default_surrogate(
        max_inducing=16, hyperparameter_subset=60, subset_spread=1.0
    )
    model = surrogate(X, Y)
    # The rows the fit saw are the farthest-point rule's on the same inputs.
    candidates = Candidates(
        X=model.transformed_train_X.detach(), scores=model.train_targets.detach()
    )
    expected = NeighbourhoodSubset(spread=1.0).select(
        candidates, 60, forced=torch.arange(280, 300)
    )
    assert len(seen) == 1 and torch.equal(seen[0], expected)
    with pytest.raises(InputDataError, match="spread"):
        default_surrogate(subset_spread="wide")
