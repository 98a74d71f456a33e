"""Test helpers shared across the test suite: kernels, toy data, an exact GP.

Importable as ``helpers`` from any test module (pytest puts ``tests/`` on
``sys.path`` when it loads ``tests/conftest.py``). Plain functions rather than
fixtures, so that module-level helpers and parametrisations can call them too;
``tests/conftest.py`` also exposes them as factory fixtures.
"""

from collections.abc import Callable

import torch
from botorch.test_functions import Hartmann
from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel
from torch import Tensor


def rbf_kernel(
    lengthscale: float | Tensor,
    outputscale: float | None = None,
    *,
    scaled: bool | None = None,
    ard_num_dims: int | None = None,
    frozen: bool = True,
    dtype: torch.dtype = torch.double,
    device: torch.device | str | None = None,
) -> Kernel:
    """An RBF kernel with fixed hyperparameters.

    Args:
        lengthscale: The lengthscale (a tensor of ``ard_num_dims`` for ARD).
        outputscale: The outputscale of a ``ScaleKernel`` around the RBF kernel;
            None for a bare ``RBFKernel`` (unless ``scaled``).
        scaled: Wrap in a ``ScaleKernel``; by default when ``outputscale`` is set.
            ``scaled=True`` without an outputscale keeps GPyTorch's initial one.
        ard_num_dims: One lengthscale per input dimension.
        frozen: Switch off the hyperparameters' gradients.
        dtype: The kernel's dtype.
        device: The kernel's device.
    """
    if scaled is None:
        scaled = outputscale is not None
    base = RBFKernel(ard_num_dims=ard_num_dims)
    kernel = ScaleKernel(base) if scaled else base
    kernel = kernel.to(dtype=dtype, device=device)
    base.lengthscale = lengthscale
    if outputscale is not None:
        kernel.outputscale = outputscale
    if frozen:
        kernel.requires_grad_(False)
    return kernel


def sine_sum(frequency: float = 2.0) -> Callable[[Tensor], Tensor]:
    """The function ``x -> sum_j sin(frequency x_j)``, ``n x d -> n x 1``."""

    def f(X: Tensor) -> Tensor:
        return torch.sin(frequency * X).sum(-1, keepdim=True)

    return f


def hartmann3(X: Tensor) -> Tensor:
    """The negated 3-d Hartmann function, ``n x 3 -> n x 1``, maximum 3.86."""
    return Hartmann(dim=3, negate=True).to(X)(X).unsqueeze(-1)


def toy_data(
    n: int,
    d: int = 2,
    f: Callable[[Tensor], Tensor] | None = None,
    noise_sd: float = 0.0,
    seed: int = 0,
    low: float = 0.0,
    high: float = 1.0,
    num_test: int = 0,
    dtype: torch.dtype = torch.double,
    device: torch.device | str | None = None,
) -> tuple[Tensor, ...]:
    """``n`` uniform inputs in ``[low, high]^d`` and noisy values of ``f``.

    Drawn on the CPU from ``torch.Generator().manual_seed(seed)`` (the inputs,
    then the ``n x t`` noise, then the ``num_test`` test inputs), then moved:
    the same data on every device.

    Args:
        n: The number of points.
        d: The input dimension.
        f: A map from ``n x d`` inputs to ``n x t`` values; by default
            ``sum_j sin(2 x_j)`` (``t = 1``).
        noise_sd: The standard deviation of the Gaussian noise added to ``f``.
        seed: The generator's seed.
        low: The lower bound of every input.
        high: The upper bound of every input.
        num_test: The number of test inputs drawn after the data.
        dtype: The dtype of the draws and of the result.
        device: The device of the result.

    Returns:
        ``X`` (``n x d``) and ``Y`` (``n x t``), and ``X_test`` (``num_test x d``)
        when ``num_test > 0``.
    """
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=dtype)
    if (low, high) != (0.0, 1.0):
        X = low + (high - low) * X
    Y = sine_sum(2.0)(X) if f is None else f(X)
    if noise_sd:
        Y = Y + noise_sd * torch.randn(Y.shape, generator=g, dtype=dtype)
    out = (X.to(device), Y.to(device))
    if num_test:
        out += (torch.rand(num_test, d, generator=g, dtype=dtype).to(device),)
    return out


def residual_data(
    n: int = 30, d: int = 2, seed: int = 0, **tkwargs
) -> tuple[Tensor, Tensor, Tensor]:
    """Inputs, standard normal residuals and heteroskedastic noise in [0.05, 0.15].

    The raw material of the sketching layer's tests (no function behind it).

    Returns:
        ``X`` (``n x d``), ``r`` (``n``) and ``noise`` (``n``).
    """
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, **tkwargs)
    r = torch.randn(n, generator=g, **tkwargs)
    noise = 0.05 + 0.1 * torch.rand(n, generator=g, **tkwargs)
    return X, r, noise


def exact_gp_posterior(
    kernel: Kernel,
    X: Tensor,
    y: Tensor,
    noise: float | Tensor,
    X_test: Tensor,
    full_cov: bool = False,
) -> tuple[Tensor, Tensor]:
    """The exact GP posterior by dense solves: the reference of the sketches.

    Args:
        kernel: The prior covariance.
        X: The ``n x d`` training inputs.
        y: The ``n`` targets.
        noise: The noise variance, a number or ``n`` per-point variances.
        X_test: The ``t x d`` test inputs.
        full_cov: Return the ``t x t`` covariance instead of the ``t`` variances.

    Returns:
        The ``t`` means and the ``t`` variances (or the ``t x t`` covariance).
    """
    noise = torch.as_tensor(noise, dtype=X.dtype, device=X.device)
    K = kernel(X).to_dense() + torch.diag(noise.expand(X.shape[0]))
    Ks = kernel(X_test, X).to_dense()
    mean = Ks @ torch.linalg.solve(K, y)
    if full_cov:
        return mean, kernel(X_test).to_dense() - Ks @ torch.linalg.solve(K, Ks.mT)
    var = kernel(X_test, diag=True) - (Ks * torch.linalg.solve(K, Ks.mT).mT).sum(-1)
    return mean, var


def assert_same_hyperparameters(model, other) -> None:
    """Assert two fitted GPs with an unscaled kernel share lengthscale and noise."""
    torch.testing.assert_close(
        model.covar_module.lengthscale, other.covar_module.lengthscale
    )
    torch.testing.assert_close(model.likelihood.noise, other.likelihood.noise)


def sphere_uniform_noise(n: int, d: int, seed: int) -> tuple[Tensor, Tensor]:
    r"""``n`` unit-norm inputs, a unit-norm linear target, noise uniform on +-0.5."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.double)
    X = X / X.norm(dim=-1, keepdim=True)
    theta = torch.randn(d, generator=g, dtype=torch.double)
    theta = theta / theta.norm()
    y = X @ theta + 0.5 * (2 * torch.rand(n, generator=g, dtype=torch.double) - 1)
    return X, y


def sphere_normal_noise(n: int, d: int, seed: int, **tkwargs) -> tuple[Tensor, Tensor]:
    r"""``n`` unit-norm inputs, a unit-norm linear target, normal noise (sd 0.3)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, **tkwargs)
    X = X / X.norm(dim=-1, keepdim=True)
    theta = torch.randn(d, generator=g, **tkwargs)
    y = X @ (theta / theta.norm()) + 0.3 * torch.randn(n, generator=g, **tkwargs)
    return X, y
