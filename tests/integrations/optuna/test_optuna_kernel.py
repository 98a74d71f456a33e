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
