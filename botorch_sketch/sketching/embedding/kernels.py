#!/usr/bin/env python3
r"""Dense kernel blocks from gpytorch kernels, evaluated eagerly.

Everything in :mod:`botorch_sketch.sketching` uses small dense blocks
(``chunk x m``) immediately. gpytorch's default lazy evaluation wraps each call in
a ``LazyEvaluatedKernelTensor`` first, which costs more than the block itself at
bandit sizes (one call per step), so the calls here switch it off for their own
duration (a context manager: global settings are left alone). ``active_dims``
and every other part of ``Kernel.__call__`` still apply.
"""

from __future__ import annotations

import gpytorch
from gpytorch.kernels import Kernel
from torch import Tensor


def kernel_matrix(kernel: Kernel, X1: Tensor, X2: Tensor | None = None) -> Tensor:
    r"""The dense ``batch_shape x n1 x n2`` block ``k(X1, X2)``, ``X2 = X1`` if None."""
    with gpytorch.settings.lazily_evaluate_kernels(False):
        return kernel(X1, X1 if X2 is None else X2).to_dense()


def kernel_diagonal(kernel: Kernel, X: Tensor) -> Tensor:
    r"""The ``batch_shape x n`` prior variances ``k(x_i, x_i)``."""
    with gpytorch.settings.lazily_evaluate_kernels(False):
        return kernel(X, diag=True)
