import math

import pytest
import torch

optuna = pytest.importorskip("optuna")

from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel  # noqa: E402
from optuna_helpers import FAST, quadratic  # noqa: E402

from botorch_sketch.integrations.optuna import SketchSampler  # noqa: E402
from botorch_sketch.integrations.optuna.kernel import (  # noqa: E402
    _gpsampler_kernel,
    _InverseSquaredLengthscalePrior,
)


def test_the_lengthscale_prior_is_gpsampler_s_on_inverse_squares():
    lengthscale = torch.tensor([0.05, 0.3, 1.0, 2.0, 8.0], dtype=torch.float64)
    r = lengthscale.pow(-2)
    expected = -(0.1 / r + 0.1 * r)
    prior = _InverseSquaredLengthscalePrior()
    assert torch.allclose(prior.log_prob(lengthscale), expected)
    # Most likely at 1; very long and very short lengthscales both penalised.
    assert prior.log_prob(lengthscale).argmax() == 2
    assert prior.log_prob(torch.tensor(10.0)) < math.log(1e-4)
    assert prior.log_prob(torch.tensor(0.1)) < math.log(1e-4)


def test_the_kernel_is_a_scaled_matern_with_both_priors():
    kernel = _gpsampler_kernel(4)
    assert isinstance(kernel, ScaleKernel) and isinstance(
        kernel.base_kernel, MaternKernel
    )
    assert kernel.base_kernel.nu == 2.5
    assert kernel.base_kernel.lengthscale.shape == (1, 4)
    names = {name for name, *_ in kernel.named_priors()}
    assert names == {"outputscale_prior", "base_kernel.lengthscale_prior"}


def _two_objectives(trial):
    x = trial.suggest_float("x", -3.0, 3.0)
    y = trial.suggest_float("y", -3.0, 3.0)
    return x**2 + y, (x - 1.0) ** 2 - y


def test_each_carried_model_fits_its_own_gpsampler_kernel():
    sampler = SketchSampler(seed=0, n_startup_trials=4, **FAST)
    study = optuna.create_study(directions=["minimize"] * 2, sampler=sampler)
    study.optimize(_two_objectives, n_trials=6)
    models = [carried.model for carried in sampler._carried.incremental.values()]
    assert len(models) == 2
    kernels = [m.covar_module for m in models]
    assert all(isinstance(k, ScaleKernel) for k in kernels)
    assert all(isinstance(k.base_kernel, MaternKernel) for k in kernels)
    assert kernels[0] is not kernels[1]
    assert not torch.allclose(
        kernels[0].base_kernel.lengthscale, kernels[1].base_kernel.lengthscale
    )


def test_a_kernel_of_the_user_s_is_kept():
    sampler = SketchSampler(
        seed=0,
        n_startup_trials=4,
        model_options={"covar_module": RBFKernel(ard_num_dims=2)},
        **FAST,
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=6)
    (carried,) = sampler._carried.incremental.values()
    assert type(carried.model.covar_module) is RBFKernel


def test_a_parameter_s_columns_share_its_lengthscale():
    # Columns 0 and 4 are floats, 1-3 a categorical of three choices.
    from botorch_sketch.integrations.optuna.kernel import _ParameterMaternKernel

    owner = torch.tensor([0, 1, 1, 1, 2])
    kernel = _ParameterMaternKernel(owner, nu=2.5).to(torch.float64)
    kernel.lengthscale = torch.tensor([[0.3, 0.7, 1.9]], dtype=torch.float64)
    assert kernel.raw_lengthscale.shape == (1, 3)
    expanded = torch.tensor([[0.3, 0.7, 0.7, 0.7, 1.9]], dtype=torch.float64)
    assert torch.allclose(kernel.lengthscale, expanded)
    # The same values and gradients as BoTorch's ARD kernel at those lengthscales.
    reference = MaternKernel(nu=2.5, ard_num_dims=5).to(torch.float64)
    reference.lengthscale = expanded
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(7, 5, generator=generator, dtype=torch.float64)
    X[:, 1:4] = torch.nn.functional.one_hot(torch.arange(7) % 3, 3).to(X)
    Z = torch.rand(4, 5, generator=generator, dtype=torch.float64)
    x = X.clone().requires_grad_(True)
    value = kernel(x, Z).to_dense()
    (grad,) = torch.autograd.grad(value.sum(), x)
    x_ref = X.clone().requires_grad_(True)
    value_ref = reference(x_ref, Z).to_dense()
    (grad_ref,) = torch.autograd.grad(value_ref.sum(), x_ref)
    assert torch.allclose(value, value_ref, atol=1e-12)
    assert torch.allclose(grad, grad_ref, atol=1e-12)
    # Two points differing only in the categorical: sqrt(2) / 0.7 apart,
    # whichever two choices.
    a = torch.tensor([[0.5, 1.0, 0.0, 0.0, 0.5]], dtype=torch.float64)
    b = torch.tensor([[0.5, 0.0, 1.0, 0.0, 0.5]], dtype=torch.float64)
    c = torch.tensor([[0.5, 0.0, 0.0, 1.0, 0.5]], dtype=torch.float64)
    assert torch.allclose(kernel(a, b).to_dense(), kernel(a, c).to_dense())
    assert torch.allclose(kernel(b, c).to_dense(), kernel(a, b).to_dense())


def test_the_prior_sees_each_parameter_s_lengthscale_once():
    owner = [[0], [1, 2, 3, 4, 5, 6], [7]]
    kernel = _gpsampler_kernel(8, owner).to(torch.float64)
    assert kernel.base_kernel.raw_lengthscale.shape == (1, 3)
    assert kernel.base_kernel.lengthscale.shape == (1, 8)
    kernel.base_kernel.lengthscale = torch.tensor(
        [[0.5, 3.0, 2.0]], dtype=torch.float64
    )
    ((_, module, prior, closure, _),) = [
        entry
        for entry in kernel.named_priors()
        if entry[0] == "base_kernel.lengthscale_prior"
    ]
    log_prob = prior.log_prob(closure(module)).sum()
    expected = prior.log_prob(torch.tensor([0.5, 3.0, 2.0], dtype=torch.float64)).sum()
    assert torch.allclose(log_prob, expected)
    # Without a parameter of several columns: BoTorch's ARD kernel, as before.
    plain = _gpsampler_kernel(3, [[0], [1], [2]])
    assert type(plain.base_kernel) is MaternKernel
    assert plain.base_kernel.lengthscale.shape == (1, 3)
    with pytest.raises(ValueError, match="do not cover"):
        _gpsampler_kernel(4, [[0], [1, 2]])


def test_the_sampler_fits_one_lengthscale_per_parameter():
    # Two floats and a categorical of four choices: six encoded columns,
    # three lengthscales (GPSampler's count); the model of where trials fail
    # keeps BoTorch's kernel, one lengthscale per column.
    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        c = trial.suggest_categorical("c", ["a", "b", "c", "d"])
        y = trial.suggest_float("y", -3.0, 3.0)
        if x > 2.0:
            raise RuntimeError("failed")
        return (x - 1.0) ** 2 + (y + 0.5) ** 2 + "abcd".index(c)

    sampler = SketchSampler(seed=0, n_startup_trials=6, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=12, catch=(RuntimeError,))
    carried = sampler._carried.incremental
    kernel = carried["objective 0"].model.covar_module.base_kernel
    assert kernel.raw_lengthscale.shape == (1, 3)
    assert kernel.lengthscale.shape == (1, 6)
    # Columns sorted by name: c (4 one-hot), x, y.
    assert kernel.column_parameters.tolist() == [0, 0, 0, 0, 1, 2]
    failures = [name for name in carried if name != "objective 0"]
    if failures:
        (name,) = failures
        assert carried[name].model.covar_module.base_kernel.lengthscale.shape[-1] == 6
