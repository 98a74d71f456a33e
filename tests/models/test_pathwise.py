import pytest
import torch
from botorch.acquisition.thompson_sampling import PathwiseThompsonSampling
from botorch.exceptions.errors import BotorchTensorDimensionError, InputDataError
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf
from botorch.sampling.pathwise import draw_matheron_paths, get_matheron_path_model
from botorch.test_functions import Branin

from botorch_sketch import NystromGP, RidgeLeverageSampler


def _uniform(f, n, tkwargs, generator=None):
    # Drawn on the CPU (where generators live), then moved: the same points on
    # every device.
    u = torch.rand(n, 2, generator=generator, dtype=tkwargs["dtype"]).to(**tkwargs)
    return f.bounds[0] + (f.bounds[1] - f.bounds[0]) * u


def _model(tkwargs, n=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    f = Branin(negate=True).to(**tkwargs)
    X = _uniform(f, n, tkwargs, generator=g)
    noise = torch.randn(n, generator=g, dtype=tkwargs["dtype"]).to(**tkwargs)
    Y = (f(X) + 2.0 * noise).unsqueeze(-1)
    model = NystromGP(
        X,
        Y,
        inducing=RidgeLeverageSampler(generator=torch.Generator().manual_seed(1)),
        input_transform=Normalize(2, bounds=f.bounds.double()),
        outcome_transform=Standardize(1),
    )
    model.covar_module.lengthscale = 0.3
    model.likelihood.noise = 0.05
    model.select_inducing_points()
    return model.eval(), f


def test_matheron_paths_match_the_dtc_posterior(tkwargs):
    torch.manual_seed(0)
    model, f = _model(tkwargs)
    assert model.inducing_points.shape[0] < 300  # a genuine sketch
    g = torch.Generator().manual_seed(2)
    Xt = _uniform(f, 25, tkwargs, generator=g)
    paths = draw_matheron_paths(model, sample_shape=torch.Size([4000]))
    with torch.no_grad():
        draws = paths(Xt)  # 4000 x 25, in the data's units
        post = model.posterior(Xt)
    mean, std = post.mean.squeeze(-1), post.variance.squeeze(-1).sqrt()
    # Monte-Carlo error of the mean is std / sqrt(4000) ~ 0.016 std.
    assert ((draws.mean(0) - mean).abs() / std).max() < 0.08
    # The prior is a 1024-feature approximation: variances within 15%.
    ratio = draws.var(0) / std.pow(2)
    assert 0.85 < float(ratio.min()) and float(ratio.max()) < 1.15


def test_flat_and_nested_sample_shapes_draw_the_same_paths(tkwargs):
    # A flat sample shape takes one dense product for the prior draw at the
    # inducing points, a nested one BoTorch's per-path forward; from the same
    # random stream they must give the same paths.
    model, f = _model(tkwargs)
    Xt = _uniform(f, 9, tkwargs, generator=torch.Generator().manual_seed(4))
    values = []
    for shape in (torch.Size([6]), torch.Size([2, 3])):
        torch.manual_seed(3)
        paths = draw_matheron_paths(model, sample_shape=shape)
        with torch.no_grad():
            values.append(paths(Xt).reshape(6, 9))
    assert values[0].std() > 0
    assert torch.allclose(values[0], values[1], rtol=1e-8, atol=1e-8)


def test_thompson_sampling_over_many_candidates(tkwargs):
    torch.manual_seed(1)
    model, f = _model(tkwargs)
    path_model = get_matheron_path_model(model)
    cand = _uniform(f, 100_000, tkwargs)
    with torch.no_grad():
        values = path_model(cand.unsqueeze(-2)).reshape(-1)
    assert values.shape == (100_000,) and bool(torch.isfinite(values).all())
    best = cand[values.argmax()]
    # A draw's maximiser is where Branin is good, not anywhere.
    assert float(f(best.unsqueeze(0), noise=False)) > -15.0
    acqf = PathwiseThompsonSampling(model)
    x, _ = optimize_acqf(acqf, f.bounds.double(), q=1, num_restarts=4, raw_samples=128)
    assert x.shape == (1, 2)


def test_paths_refuse_inputs_the_model_cannot_take(tkwargs):
    # Another width failed deep in a matrix product, naming tensor sizes; NaN
    # inputs gave NaN values.
    model, f = _model(tkwargs)
    paths = draw_matheron_paths(model, sample_shape=torch.Size([2]))
    Xt = _uniform(f, 5, tkwargs)
    assert paths(Xt).shape == (2, 5)
    for bad in (Xt[:, :1], torch.cat([Xt, Xt[:, :1]], -1), Xt[0, 0].view(1)):
        with pytest.raises(BotorchTensorDimensionError, match="inputs of 2 dim"):
            paths(bad)
    Xt[1, 0] = float("nan")
    with pytest.raises(InputDataError, match="NaN or infinite"):
        paths(Xt)
