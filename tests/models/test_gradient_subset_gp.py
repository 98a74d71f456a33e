import inspect

import gpytorch
import pytest
import torch
from botorch.acquisition import qKnowledgeGradient, qLogNoisyExpectedImprovement
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.sampling import SobolQMCNormalSampler
from botorch.sampling.pathwise import draw_matheron_paths
from botorch.utils.datasets import SupervisedDataset
from gpytorch.mlls import ExactMarginalLogLikelihood
from helpers import hartmann3, toy_data

from botorch_sketch import GradientSubsetGP, RandomSubset
from botorch_sketch.models.gradient_subset_gp import (
    feature_residual_gradients,
    hyperparameter_gradients,
    scalar_residual_gradients,
)
from botorch_sketch.sketching.embedding import kernel_matrix
from botorch_sketch.sketching.rules import GradientDiversitySubset


def _data(tkwargs, n=120, seed=0):
    # Drawn on the CPU, then moved: the same data on every device.
    return toy_data(n, 3, hartmann3, 0.05, seed, **tkwargs)


def _fit(model):
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def _model(X, Y, seed=0, **kw):
    kw.setdefault("subset_size", 40)
    kw.setdefault("num_initial", 10)
    kw.setdefault("num_newest", 2)
    rule = GradientDiversitySubset(generator=torch.Generator().manual_seed(seed))
    kw.setdefault("subset_rule", rule)
    return GradientSubsetGP(X, Y, **kw)


def _as_single_task_gp(model):
    index = model.subset_indices
    X, Y = model.full_train_X[index], model.full_train_Y[index]
    Yvar = None if model.full_train_Yvar is None else model.full_train_Yvar[index]
    ref = SingleTaskGP(X, Y, Yvar)
    ref.load_state_dict(model.state_dict())
    return ref.eval()


def test_is_exactly_a_single_task_gp_on_its_subset(tkwargs):
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    assert model.train_inputs[0].shape == (40, 3)
    ref = _as_single_task_gp(model)
    Xt = torch.rand(25, 3, **tkwargs)
    a, b = model.posterior(Xt), ref.posterior(Xt)
    assert torch.allclose(a.mean, b.mean, atol=1e-10)
    assert torch.allclose(a.variance, b.variance, atol=1e-10)


def test_small_data_is_single_task_gp_on_everything(tkwargs):
    X, Y = _data(tkwargs, n=30)
    model = _fit(_model(X, Y))
    assert torch.equal(model.subset_indices, torch.arange(30, device=X.device))
    assert torch.equal(model.train_inputs[0], X)


def test_forced_points_are_always_in_the_subset_and_fit_reselects(tkwargs):
    X, Y = _data(tkwargs)
    model = _model(X, Y)
    before = model.subset_indices.clone()
    _fit(model)
    chosen = set(model.subset_indices.tolist())
    assert set(range(10)) <= chosen and {118, 119} <= chosen
    assert len(chosen) == 40
    # The gradient rule ran after the first fit: the subset is not the random
    # one the model was built with.
    assert chosen != set(before.tolist())


def test_selection_is_deterministic_under_a_seed(tkwargs):
    X, Y = _data(tkwargs)
    a = _fit(_model(X, Y, seed=3)).subset_indices
    b = _fit(_model(X, Y, seed=3)).subset_indices
    c = _fit(_model(X, Y, seed=4)).subset_indices
    assert torch.equal(a, b)
    assert set(a.tolist()) != set(c.tolist())


def test_feature_gradients_have_kernel_geometry_and_residual_signs(tkwargs):
    # On the subset, z(x_i)^T z(x_j) = k(x_i, x_j), so the gradient Gram matrix
    # is r r^T * K_UU: cosines combine closeness and residual signs.
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    G = model.full_gradients()
    r = scalar_residual_gradients(model, *_transformed(model), _noise(model)).squeeze(
        -1
    )
    index = model.subset_indices
    K = kernel_matrix(model.covar_module, model.train_inputs[0]).detach()
    gram = G[index] @ G[index].T
    assert torch.allclose(gram, r[index, None] * r[None, index] * K, atol=1e-6)
    assert G.shape[0] == 120


def _transformed(model):
    X = model.transform_inputs(model.full_train_X)
    Y, _ = model.outcome_transform(model.full_train_Y)
    return X, Y.squeeze(-1)


def _noise(model):
    return model.likelihood.noise.reshape(-1)[:1].expand(model.full_train_X.shape[0])


def test_hyperparameter_gradients_equal_autograd_per_observation(tkwargs):
    X, Y = _data(tkwargs, n=60)
    model = _fit(_model(X, Y, gradient=hyperparameter_gradients)).eval()
    Xt, Yt = _transformed(model)
    before = [p.detach().clone() for p in model.parameters()]
    G = hyperparameter_gradients(model, Xt, Yt, _noise(model))
    params = [p for p in model.parameters() if p.requires_grad]
    assert G.shape == (60, sum(p.numel() for p in params))
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.detach(), b)  # restored
    for i in (0, 17, 59):  # inside and outside the subset
        model.train()
        model.eval()
        # gpytorch detaches its test caches by default: the solve against the
        # training data must carry gradients too.
        with gpytorch.settings.detach_test_caches(False):
            latent = model(Xt[i : i + 1])
            var = latent.variance + model.likelihood.noise.reshape(-1)
            density = -0.5 * (var.log() + (Yt[i : i + 1] - latent.mean).pow(2) / var)
            grads = torch.autograd.grad(density.sum(), params)
        expected = torch.cat([g.reshape(-1) for g in grads])
        torch.testing.assert_close(G[i], expected, rtol=1e-5, atol=1e-7)


def test_residuals_match_the_posterior_predictive(tkwargs):
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    post = model.posterior(X, observation_noise=True)
    scale = model.outcome_transform.stdvs.squeeze()
    expected = -(Y - post.mean).squeeze(-1) / post.variance.squeeze(-1) * scale
    r = scalar_residual_gradients(model, *_transformed(model), _noise(model))
    assert torch.allclose(r.squeeze(-1), expected.detach(), rtol=1e-6, atol=1e-8)


def test_random_rule_runs_once_and_skips_the_second_fit(tkwargs):
    X, Y = _data(tkwargs)
    rule = RandomSubset(generator=torch.Generator().manual_seed(0))
    model = _model(X, Y, subset_rule=rule)
    before = model.subset_indices.clone()
    _fit(model)
    assert torch.equal(model.subset_indices, before)


def test_fixed_noise_follows_the_subset(tkwargs):
    X, Y = _data(tkwargs)
    Yvar = torch.full_like(Y, 0.01)
    model = _fit(_model(X, Y, train_Yvar=Yvar)).eval()
    assert model.likelihood.noise.shape == (40,)
    ref = _as_single_task_gp(model)
    Xt = torch.rand(5, 3, **tkwargs)
    assert torch.allclose(model.posterior(Xt).mean, ref.posterior(Xt).mean)


def test_fantasize_knowledge_gradient_pathwise_and_cached_nei(tkwargs):
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    Xt = torch.rand(4, 1, 3, **tkwargs)
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([3]))
    fantasy = model.fantasize(torch.rand(2, 3, **tkwargs), sampler)
    assert fantasy.train_inputs[0].shape == (3, 42, 3)
    kg = qKnowledgeGradient(model, num_fantasies=4)
    values = kg(torch.rand(2, 1 + 4, 3, **tkwargs))
    assert values.shape == (2,) and torch.isfinite(values).all()
    paths = draw_matheron_paths(model, sample_shape=torch.Size([5]))
    assert paths(Xt.squeeze(1)).shape == (5, 4)
    nei = qLogNoisyExpectedImprovement(model, X_baseline=X)
    assert nei._cache_root
    assert torch.isfinite(nei(Xt)).all()


def test_bad_input_names_the_problem(tkwargs):
    X, Y = _data(tkwargs)
    with pytest.raises(InputDataError, match="subset_size"):
        GradientSubsetGP(X, Y, subset_size=12, num_initial=10, num_newest=2)
    with pytest.raises(UnsupportedError, match="batched"):
        GradientSubsetGP(X.expand(2, -1, -1), Y.expand(2, -1, -1))
    with pytest.raises(InputDataError, match="NaN"):
        GradientSubsetGP(X, torch.full_like(Y, float("nan")))


def test_constructor_and_construct_inputs_follow_ax_conventions(tkwargs):
    parameters = inspect.signature(GradientSubsetGP.__init__).parameters.values()
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in list(parameters)[1:])
    X, Y = _data(tkwargs)
    dataset = SupervisedDataset(
        X, Y, feature_names=["a", "b", "c"], outcome_names=["y"]
    )
    inputs = GradientSubsetGP.construct_inputs(
        dataset, subset_size=50, num_initial=5, categorical_features=[]
    )
    model = GradientSubsetGP(**inputs)
    assert model.train_inputs[0].shape == (50, 3)
    with pytest.raises(UnsupportedError, match="task_feature"):
        GradientSubsetGP.construct_inputs(dataset, task_feature=0)


def test_gradient_function_is_pluggable(tkwargs):
    X, Y = _data(tkwargs)
    calls = []

    def gradient(model, X, Y, noise):
        calls.append(X.shape)
        return feature_residual_gradients(model, X, Y, noise)

    _fit(_model(X, Y, gradient=gradient))
    assert calls == [torch.Size([120, 3])]


@pytest.mark.parametrize("rounds", [1, 2])
def test_fit_rounds_count_the_fits(rounds, monkeypatch, tkwargs):
    from botorch_sketch.models import gradient_subset_gp as module

    events = []
    real_fit, real_select = module._fit_fallback, GradientSubsetGP.select_subset

    def fit(*args, **kwargs):
        events.append("fit")
        return real_fit(*args, **kwargs)

    def select(self):
        events.append("select")
        return real_select(self)

    monkeypatch.setattr(module, "_fit_fallback", fit)
    monkeypatch.setattr(GradientSubsetGP, "select_subset", select)
    X, Y = _data(tkwargs)
    model = _model(X, Y, fit_rounds=rounds)
    before = set(model.subset_indices.tolist())
    _fit(model)
    expected = ["select", "fit"] if rounds == 1 else ["fit", "select", "fit"]
    assert events == expected
    assert set(model.subset_indices.tolist()) != before
    with pytest.raises(InputDataError, match="fit_rounds"):
        _model(X, Y, fit_rounds=0)


def test_a_subset_of_standardised_data_does_not_warn(tkwargs):
    import warnings

    from botorch.exceptions.warnings import InputDataWarning

    X, Y = _data(tkwargs)
    Y = (Y - Y.mean()) / Y.std()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _model(X, Y, outcome_transform=None)
    assert not [w for w in caught if issubclass(w.category, InputDataWarning)]
    # An unstandardised full data set still warns, as for SingleTaskGP.
    with pytest.warns(InputDataWarning, match="standardized"):
        GradientSubsetGP(X, 10 + 5 * Y, subset_size=None, outcome_transform=None)


def test_num_best_forces_the_incumbents(tkwargs):
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y, num_best=5))
    best = set(Y.squeeze(-1).argsort(descending=True)[:5].tolist())
    assert best <= set(model.subset_indices.tolist())
    forced = model.forced_indices
    expected = set(range(10)) | {118, 119} | best
    assert forced.unique().numel() == forced.numel() == len(expected)
    assert set(forced.tolist()) == expected
    with pytest.raises(InputDataError, match="num_best"):
        _model(X, Y, subset_size=17, num_best=5)


def test_num_neighbours_forces_the_incumbents_nearest_neighbours(tkwargs):
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y, num_neighbours=6))
    neighbours = model.neighbour_indices()
    best = int(Y.argmax())
    # Nearest in the fitted kernel's geometry, the best itself excluded.
    lengthscale = model.covar_module.lengthscale.detach().reshape(-1)
    distance = ((X - X[best]) / lengthscale).norm(dim=-1)
    distance[best] = float("inf")
    assert neighbours.tolist() == distance.argsort()[:6].tolist()
    assert set(model.selection_forced.tolist()) <= set(model.subset_indices.tolist())
    assert model.selection_forced.numel() == len(set(model.selection_forced.tolist()))
    with pytest.raises(InputDataError, match="num_neighbours"):
        _model(X, Y, subset_size=18, num_neighbours=6)
    with pytest.raises(InputDataError, match="num_neighbours"):
        _model(X, Y, num_neighbours=-1)


def test_reselecting_keeps_every_tensor_of_the_state_on_the_data_device(tkwargs):
    # BoTorch's Standardize marks itself trained with a new CPU tensor whenever
    # it is refitted, as it is on every new subset; on CUDA a mixed-device state
    # would fail torch.equal against another model's and load_state_dict copies.
    X = torch.rand(60, 2, **tkwargs)
    Y = (X * 6).sin().sum(-1, keepdim=True)
    model = GradientSubsetGP(X, Y, subset_size=20)
    model.select_subset()
    assert {t.device for t in model.state_dict().values()} == {X.device}


def test_conditioned_observations_stay_in_the_set_a_refit_selects_from(tkwargs):
    # A refit re-selects the subset from the full set: the conditioned
    # observations were not in it and were dropped, silently.
    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    model.posterior(X[:2])  # caches, as a BO loop's acquisition would
    Xn = torch.rand(3, 3, **tkwargs)
    Yn = hartmann3(Xn).reshape(3, 1)
    conditioned = model.condition_on_observations(Xn, Yn)
    assert conditioned.full_train_X.shape == (123, 3)
    torch.testing.assert_close(conditioned.full_train_X[-3:], Xn)
    torch.testing.assert_close(conditioned.full_train_Y[-3:], Yn)
    assert conditioned.subset_indices[-3:].tolist() == [120, 121, 122]
    assert model.full_train_X.shape == (120, 3)  # the original is unchanged
    _fit(conditioned)
    # num_newest = 2 forces the two newest in; the third is up to the rule.
    assert {121, 122} <= set(conditioned.subset_indices.tolist())
    assert conditioned.train_inputs[0].shape == (40, 3)
    # Fantasies (batched) leave the full set alone.
    sampler = SobolQMCNormalSampler(torch.Size([2]))
    fantasy = model.fantasize(Xn, sampler)
    assert fantasy.full_train_X.shape == (120, 3)


def test_bad_settings_are_named(tkwargs):
    # Float counts failed in slices and indices with TypeErrors; a NaN
    # subset size fitted on all N; a string rule failed on an attribute.
    X, Y = _data(tkwargs)
    for kw, name in (
        ({"subset_size": 50.0}, "subset_size"),
        ({"subset_size": float("nan")}, "subset_size"),
        ({"subset_size": True}, "subset_size"),
        ({"num_initial": 2.5}, "num_initial"),
        ({"num_newest": -1}, "num_newest"),
        ({"num_best": 2.5}, "num_best"),
        ({"fit_rounds": 1.5}, "fit_rounds"),
    ):
        with pytest.raises(InputDataError, match=f"{name} must be an integer"):
            _model(X, Y, **kw)
    with pytest.raises(InputDataError, match="subset_rule must be a SelectionRule"):
        _model(X, Y, subset_rule="random")

    def nan_gradients(model, X, Y, noise):
        return torch.full((X.shape[0], 2), float("nan"), **tkwargs)

    model = _model(X, Y, gradient=nan_gradients)
    with pytest.raises(InputDataError, match="finite N x p gradients"):
        _fit(model)


def test_bad_test_inputs_and_observations_are_named(tkwargs):
    # Inherited from SingleTaskGP: a size mismatch inside gpytorch, and NaN
    # posteriors for NaN inputs, silently.
    from botorch.exceptions.errors import BotorchTensorDimensionError

    X, Y = _data(tkwargs)
    model = _fit(_model(X, Y)).eval()
    with pytest.raises(BotorchTensorDimensionError, match="input dimensions"):
        model.posterior(torch.rand(4, 2, **tkwargs))
    with pytest.raises(BotorchTensorDimensionError, match="batch_shape x q x d"):
        model.posterior(torch.rand(3, **tkwargs))
    with pytest.raises(InputDataError, match="NaN"):
        model.posterior(torch.full((2, 3), float("nan"), **tkwargs))
    Xn = torch.rand(3, 3, **tkwargs)
    with pytest.raises(BotorchTensorDimensionError, match="3 points but Y has 2"):
        model.condition_on_observations(Xn, torch.rand(2, 1, **tkwargs))
    with pytest.raises(InputDataError, match="Y contains NaN"):
        model.condition_on_observations(Xn, torch.full((3, 1), float("nan"), **tkwargs))
