"""NystromGP's checks of its inputs: bad data, options and test points are named."""

import pytest
import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize
from helpers import toy_data

from botorch_sketch import (
    FixedSelector,
    NystromGP,
)
from botorch_sketch.models import MultiOutputNystromGP


def _data(n=40, d=3, seed=0, noise_sd=0.1, dtype=torch.double, device=None):
    # Not the unit cube, and not centred.
    def f(X):
        return 5 + torch.sin(2 * X).sum(-1, keepdim=True)

    return toy_data(n, d, f, noise_sd, seed, 2.0, 5.0, dtype=dtype, device=device)


def _all_points(n):
    return FixedSelector(torch.arange(n))


def _row(i, like):
    return torch.tensor([i], device=like.device)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (
            lambda X, Y: (X.clone().index_fill_(0, _row(3, X), float("nan")), Y),
            InputDataError,
            "train_X contains NaN",
        ),
        (
            lambda X, Y: (X, Y.clone().index_fill_(0, _row(3, Y), float("inf"))),
            InputDataError,
            "train_Y contains infinite",
        ),
        (lambda X, Y: (X[:5], Y[:6]), BotorchTensorDimensionError, "rows"),
        (lambda X, Y: (X[:0], Y[:0]), InputDataError, "at least one"),
        (lambda X, Y: (X, Y.squeeze(-1)), BotorchTensorDimensionError, "n x 1"),
        (
            # One batch dimension builds a BatchedNystromGP; two are refused.
            lambda X, Y: (X.expand(2, 3, -1, -1), Y.expand(2, 3, -1, -1)),
            UnsupportedError,
            "one batch dimension",
        ),
    ],
)
def test_bad_training_data_gets_a_clear_error(make, error, match, tkwargs):
    X, Y = make(*_data(**tkwargs))
    with pytest.raises(error, match=match):
        NystromGP(X, Y)


def test_negative_noise_and_bad_inducing_are_rejected(tkwargs):
    X, Y = _data(**tkwargs)
    with pytest.raises(InputDataError, match="negative"):
        NystromGP(X, Y, train_Yvar=torch.full_like(Y, -0.1))
    with pytest.raises(InputDataError, match="Inducing inputs"):
        NystromGP(X, Y, inducing=torch.rand(5, 2, **tkwargs))
    with pytest.raises(InputDataError, match="inducing must be"):
        NystromGP(X, Y, inducing=7)


def test_an_outcome_transform_that_makes_nan_is_named(tkwargs):
    # Log of Y <= 0: the raw data passed the checks and every posterior was
    # NaN (SingleTaskGP refuses it at construction).
    from botorch.models.transforms.outcome import Log

    X, Y = _data(**tkwargs)
    with pytest.raises(InputDataError, match="outcome transform Log made NaN"):
        NystromGP(X, Y - Y.max(), outcome_transform=Log())
    model = NystromGP(X, Y - Y.min() + 0.1, outcome_transform=Log())
    assert bool(torch.isfinite(model.posterior(X[:3]).mean).all())


def test_bad_test_inputs_get_a_clear_error(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y, input_transform=Normalize(3))
    with pytest.raises(BotorchTensorDimensionError, match="trained on 3"):
        model.posterior(torch.rand(4, 2, **tkwargs))
    with pytest.raises(InputDataError, match="NaN"):
        model.posterior(torch.full((4, 3), float("nan"), **tkwargs))
    with pytest.raises(InputDataError, match="NaN"):
        model.condition_on_observations(
            X[:1], torch.full((1, 1), float("nan"), **tkwargs)
        )


@pytest.mark.parametrize("size", [-5, 0, 2.5, True, "10"])
def test_fit_subset_size_must_be_a_positive_int(size, tkwargs):
    X, Y = _data(**tkwargs)
    with pytest.raises(InputDataError, match="fit_subset_size"):
        NystromGP(X, Y, fit_subset_size=size)
    model = NystromGP(X, Y)
    model.fit_subset_size = size  # the attribute is documented as a setting too
    with pytest.raises(InputDataError, match="fit_subset_size"):
        model.select_inducing_points()


def test_batched_covar_module_is_unsupported(tkwargs):
    from gpytorch.kernels import RBFKernel, ScaleKernel

    X, Y = _data(**tkwargs)
    batch = torch.Size([2])
    for kernel in (
        ScaleKernel(RBFKernel(batch_shape=batch), batch_shape=batch),
        ScaleKernel(RBFKernel(batch_shape=batch)),
    ):
        with pytest.raises(UnsupportedError, match="batch dimensions"):
            NystromGP(X, Y, covar_module=kernel.to(**tkwargs))


def test_empty_inducing_set_is_rejected(tkwargs):
    X, Y = _data(**tkwargs)
    with pytest.raises(InputDataError, match="at least one point"):
        NystromGP(X, Y, inducing=torch.zeros(0, 3, **tkwargs))
    with pytest.raises(InputDataError, match="at least one index"):
        NystromGP(X, Y, inducing=FixedSelector([]))


def test_negative_observation_noise_is_rejected(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y)
    Xt = 2 + 3 * torch.rand(4, 3, **tkwargs)
    for bad, match in ((-0.1, "negative"), (float("nan"), "NaN")):
        with pytest.raises(InputDataError, match=match):
            model.posterior(Xt, observation_noise=torch.full((4, 1), bad, **tkwargs))


def test_condition_on_observations_rejects_bad_noise_and_counts(tkwargs):
    X, Y = _data(**tkwargs)
    model = NystromGP(X, Y)
    with pytest.raises(InputDataError, match="noise contains NaN"):
        model.condition_on_observations(
            X[:2], Y[:2], noise=torch.full((2, 1), float("nan"), **tkwargs)
        )
    with pytest.raises(BotorchTensorDimensionError, match="2 points but Y has 3"):
        model.condition_on_observations(X[:2], Y[:3])
    with pytest.raises(BotorchTensorDimensionError, match="noise must be shaped"):
        model.condition_on_observations(
            X[:2], Y[:2], noise=torch.full((3, 1), 0.1, **tkwargs)
        )


def test_one_dimensional_test_inputs_on_a_one_input_model(tkwargs):
    # BoTorch's tutorial (fit with a torch optimizer) evaluates a 1-input
    # model's posterior at a tensor of shape (n,): SingleTaskGP takes it as
    # n points, q = n, and NystromGP refused it.
    X, Y = _data(n=20, d=1, **tkwargs)
    ref = SingleTaskGP(X, Y)
    model = NystromGP(X, Y, inducing=_all_points(20))
    model.load_state_dict(ref.state_dict())
    Xt = torch.linspace(2.0, 5.0, 7, **tkwargs)
    post, ref_post = model.posterior(Xt), ref.posterior(Xt)
    assert post.mean.shape == ref_post.mean.shape == (7, 1)
    assert post.distribution.covariance_matrix.shape == (7, 7)
    torch.testing.assert_close(post.mean, ref_post.mean)
    torch.testing.assert_close(post.variance, ref_post.variance)
    noisy = model.posterior(Xt, observation_noise=True)
    assert noisy.mean.shape == (7, 1)
    # Two outcomes take it too.
    two = MultiOutputNystromGP(X, torch.cat([Y, -Y], -1), inducing=_all_points(20))
    assert two.posterior(Xt).mean.shape == (7, 2)
    # With more inputs a 1-d tensor is not a set of points: refused, as before.
    X3, Y3 = _data(n=20, d=3, **tkwargs)
    with pytest.raises(BotorchTensorDimensionError, match="batch_shape x q x d"):
        NystromGP(X3, Y3).posterior(torch.full((3,), 3.0, **tkwargs))


def test_one_dimensional_inputs_to_model_call_on_a_one_input_model(tkwargs):
    # ``model(x)`` in eval mode (GIBBON reads it) took a 1-d x for
    # SingleTaskGP and failed for NystromGP ("x1_ and x2_ must have the same
    # number of dimensions"), though ``posterior`` took it.
    X, Y = _data(n=20, d=1, **tkwargs)
    ref = SingleTaskGP(X, Y)
    model = NystromGP(X, Y, inducing=_all_points(20))
    model.load_state_dict(ref.state_dict())
    ref.eval()
    model.eval()
    x = torch.linspace(2.0, 5.0, 7, **tkwargs)
    out, ref_out = model(x), ref(x)
    assert out.mean.shape == ref_out.mean.shape == (7,)
    torch.testing.assert_close(out.mean, ref_out.mean)
    torch.testing.assert_close(out.variance, ref_out.variance)
    # More inputs: a 1-d tensor is no set of points, and a wrong width is named.
    X3, Y3 = _data(n=20, d=3, **tkwargs)
    model3 = NystromGP(X3, Y3).eval()
    with pytest.raises(BotorchTensorDimensionError, match="batch_shape x q x d"):
        model3(torch.full((3,), 3.0, **tkwargs))
    with pytest.raises(BotorchTensorDimensionError, match="2 input dimensions"):
        model3(torch.rand(4, 2, **tkwargs))


def test_the_width_is_checked_after_the_input_transform(tkwargs):
    # BoTorch's risk-averse BO tutorial: AppendFeatures appends environmental
    # variables to each test point, so the raw test points are narrower than
    # the training inputs; NystromGP refused them before the transform.
    from botorch.models.transforms.input import AppendFeatures

    X, Y = _data(n=24, d=3, **tkwargs)
    w_set = torch.rand(5, 1, **tkwargs) * 3.0 + 2.0
    ref = SingleTaskGP(X, Y, input_transform=AppendFeatures(feature_set=w_set))
    model = NystromGP(
        X,
        Y,
        inducing=_all_points(24),
        input_transform=AppendFeatures(feature_set=w_set),
    )
    model.load_state_dict(ref.state_dict())
    Xt = torch.rand(4, 1, 2, **tkwargs) * 3.0 + 2.0
    post, ref_post = model.posterior(Xt), ref.posterior(Xt)
    assert post.mean.shape == ref_post.mean.shape == (4, 5, 1)
    torch.testing.assert_close(post.mean, ref_post.mean)
    torch.testing.assert_close(post.variance, ref_post.variance)
    # Points of the training inputs' width are 4 wide once transformed.
    with pytest.raises(
        BotorchTensorDimensionError,
        match=r"4 input dimensions after the input transform \(3 before it\)",
    ):
        model.posterior(torch.rand(4, 1, 3, **tkwargs))


def test_finite_data_whose_sum_overflows_are_accepted(tkwargs):
    # The finiteness check reads one sum first; a sum that overflows on finite
    # values falls back to the element-wise test, which accepts them, and a
    # NaN or infinity among them is still named.
    from botorch_sketch.models.validation import check_training_data

    X = torch.rand(4, 2, **tkwargs)
    Y = torch.full((4, 1), 1e308, **tkwargs)
    check_training_data("NystromGP", X, Y, None)
    for bad, kind in ((float("inf"), "infinite"), (float("nan"), "NaN")):
        Y_bad = Y.clone()
        Y_bad[2] = bad
        with pytest.raises(InputDataError, match=f"train_Y contains {kind}"):
            check_training_data("NystromGP", X, Y_bad, None)
