#!/usr/bin/env python3
r"""Finite-dimensional feature maps ``phi(x)`` for linear models on kernels.

A linear model on ``phi`` with a standard normal weight prior is a GP with
kernel ``phi(x)^T phi(x')``; the three maps here make that kernel the linear
kernel (:class:`IdentityFeatures`), a Monte Carlo approximation of an RBF kernel
(:class:`RandomFourierFeatures`, [Rahimi2007random]_) or its Nystrom
approximation on an inducing set (:class:`NystromFeatures`). They are
differentiable in ``x``, so a model on them can be optimised by gradient.

References

.. [Rahimi2007random]
    A. Rahimi, B. Recht. Random features for large-scale kernel machines.
    NeurIPS 2007.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from gpytorch.kernels import Kernel, RBFKernel, ScaleKernel
from torch import Tensor

from botorch_sketch.sketching.embedding.nystrom import NystromEmbedding


class FeatureMap(ABC):
    r"""A map from ``batch_shape x n x d`` inputs to ``batch_shape x n x m``."""

    #: The input dimension ``d``.
    input_dim: int

    @property
    @abstractmethod
    def dim(self) -> int:
        r"""The feature dimension ``m``."""

    @abstractmethod
    def __call__(self, X: Tensor) -> Tensor:
        r"""The features of the rows of ``X``."""

    def _check(self, X: Tensor) -> None:
        if X.shape[-1] != self.input_dim:
            raise BotorchTensorDimensionError(
                f"X has {X.shape[-1]} input dimensions, the feature map expects "
                f"{self.input_dim}."
            )


class IdentityFeatures(FeatureMap):
    r"""``phi(x) = x``: the plain linear model (LinUCB's setting)."""

    def __init__(self, input_dim: int) -> None:
        r"""Configure the map.

        Args:
            input_dim: The input dimension ``d`` (= ``m``).
        """
        self.input_dim = input_dim

    @property
    def dim(self) -> int:  # noqa: D102
        return self.input_dim

    def __call__(self, X: Tensor) -> Tensor:  # noqa: D102
        self._check(X)
        return X


class RandomFourierFeatures(FeatureMap):
    r"""``phi(x) = sqrt(2 s / m) cos(W^T (x / l) + b)`` for a gpytorch RBF kernel.

    ``W`` has standard normal entries and ``b`` is uniform on ``[0, 2 pi)``, both
    drawn once from the given generator, so ``phi(x)^T phi(x')`` is an unbiased
    ``m``-sample estimate of ``s exp(-||x - x'||^2 / (2 l^2))``. The kernel's
    (ARD) lengthscale ``l`` and outputscale ``s`` are read at each call, so the
    map follows a kernel whose hyperparameters change.
    """

    def __init__(
        self,
        kernel: Kernel,
        input_dim: int,
        num_features: int,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.double,
        device: torch.device | str | None = None,
    ) -> None:
        r"""Draw the frequencies and phases.

        Args:
            kernel: An ``RBFKernel``, or a ``ScaleKernel`` around one.
            input_dim: The input dimension ``d``.
            num_features: The number ``m`` of features.
            generator: The random generator of the draw.
            dtype: The floating point type.
            device: The device.
        """
        base = kernel.base_kernel if isinstance(kernel, ScaleKernel) else kernel
        if not isinstance(base, RBFKernel):
            raise UnsupportedError(
                "RandomFourierFeatures supports RBFKernel (optionally in a "
                f"ScaleKernel), got {type(base).__name__}."
            )
        if num_features < 1:
            raise InputDataError(f"num_features must be positive, got {num_features}.")
        self.kernel = kernel
        self.base_kernel = base
        self.input_dim = input_dim
        self.num_features = num_features
        # Drawn on the generator's device (the CPU without one), then moved.
        draw = {
            "generator": generator,
            "dtype": dtype,
            "device": generator.device if generator is not None else "cpu",
        }
        W = torch.randn(input_dim, num_features, **draw)
        b = torch.rand(num_features, **draw)
        self.weights = W.to(device)
        self.phases = (2 * math.pi * b).to(device)

    @property
    def dim(self) -> int:  # noqa: D102
        return self.num_features

    def __call__(self, X: Tensor) -> Tensor:  # noqa: D102
        self._check(X)
        lengthscale = self.base_kernel.lengthscale.reshape(-1).to(X)
        scale = 2.0 / self.num_features
        if isinstance(self.kernel, ScaleKernel):
            scale = scale * self.kernel.outputscale.reshape(()).to(X)
        return torch.cos((X / lengthscale) @ self.weights + self.phases) * (
            scale**0.5 if isinstance(scale, float) else scale.sqrt()
        )


class NystromFeatures(FeatureMap):
    r"""The Nystrom embedding ``z(x) = (K_SS^{1/2})^+ k_S(x)`` of an inducing set.

    A thin adapter around :class:`~botorch_sketch.sketching.embedding.NystromEmbedding`
    so that the embedding serves wherever a feature map is expected.
    """

    def __init__(self, embedding: NystromEmbedding) -> None:
        r"""Wrap an embedding.

        Args:
            embedding: The Nystrom embedding.
        """
        self.embedding = embedding
        self.input_dim = embedding.inducing_points.shape[-1]

    @property
    def dim(self) -> int:  # noqa: D102
        return self.embedding.dim

    def __call__(self, X: Tensor) -> Tensor:  # noqa: D102
        self._check(X)
        return self.embedding(X)
