#!/usr/bin/env python3
r"""Reading a model cheaply at many points: path values and posterior means.

Thompson sampling over thousands of shared candidates evaluates ``q`` pathwise
posterior samples [Wilson2020efficiently]_ at the same points; BoTorch's paths
evaluate each sample as its own matrix-vector product, and
:func:`path_values` makes the ``q`` of them one dense product, and
:func:`own_path_values` evaluates each path at points of its own from one
feature matrix.
:func:`posterior_means` reads a model's means at single points in chunks, so
that no joint covariance is formed.

References:

.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
"""

from __future__ import annotations

import torch
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.sampling.pathwise import GeneralizedLinearPath, PathDict, SamplePath
from linear_operator import to_dense
from torch import Tensor


def posterior_means(model: Model, X: Tensor, chunk_size: int = 4096) -> Tensor:
    r"""Posterior means of single points, in chunks (no joint covariance).

    Args:
        model: A fitted single-output model.
        X: A ``n x d`` tensor.
        chunk_size: Points per posterior call.

    Returns:
        A ``n`` tensor.
    """
    with torch.no_grad():
        return torch.cat(
            [
                model.posterior(chunk.unsqueeze(-2)).mean.reshape(-1)
                for chunk in X.split(chunk_size)
            ]
        )


def _transformed(module: SamplePath, X: Tensor, output: bool) -> Tensor:
    # What ``TransformedModuleMixin.__call__`` does around a path's forward.
    transform = getattr(module, "output_transform" if output else "input_transform")
    if transform is None:
        return X
    if output:
        if isinstance(transform, OutcomeTransform):
            return transform.untransform(X)[0]
        return transform(X)
    if isinstance(transform, InputTransform):
        return transform.forward(X)
    return transform(X)


def path_values(paths: SamplePath, X: Tensor) -> Tensor:
    r"""Every path's values at the same points, as dense matrix products.

    ``paths(X)`` evaluates a generalized linear path as a batched matrix-vector
    product per path (``q x N x F`` by broadcasting); at shared points the
    features are one ``N x F`` matrix and all ``q`` paths are one ``N x F``
    by ``F x q`` product. Matheron paths (sums of such paths, BoTorch's
    ``MatheronPath``) are evaluated part by part; other paths by ``paths(X)``.

    Args:
        paths: Single-output paths of ``sample_shape = q`` (``draw_matheron_paths``).
        X: A ``N x d`` tensor of points shared by every path.

    Returns:
        A ``q x N`` tensor, equal to ``paths(X)`` (squeezed).
    """
    X = _transformed(paths, X, output=False)
    if isinstance(paths, PathDict) and paths.join is not None:
        values = paths.join([path_values(path, X) for path in paths.values()])
    elif (
        isinstance(paths, GeneralizedLinearPath)
        and not paths.is_ensemble
        and paths.weight.dim() == 2
    ):
        features = paths.feature_map(X)  # N x F
        values = (features @ paths.weight.mT).mT  # q x N
        if paths.bias_module is not None:
            values = values + paths.bias_module(X)
    else:
        values = paths(X)
        return values.squeeze(-1) if values.dim() == X.dim() + 1 else values
    return _transformed(paths, values, output=True)


def own_path_values(paths: SamplePath, X: Tensor) -> Tensor:
    r"""Each path's values at its own points, from one feature matrix.

    ``paths(X)`` with ``X`` of shape ``q x L x d`` evaluates a kernel feature
    map per path on a batch of inputs (BoTorch's kernel evaluation maps expand
    their points to the batch); here the features of all ``q L`` points are one
    ``q L x F`` matrix, and each path's ``L`` rows meet its own weights.
    Matheron paths are evaluated part by part; other paths by ``paths(X)``.

    Args:
        paths: Single-output paths of ``sample_shape = q`` (``draw_matheron_paths``).
        X: A ``q x L x d`` tensor: ``L`` points for each path.

    Returns:
        A ``q x L`` tensor, equal to ``paths(X)`` (squeezed).
    """
    X = _transformed(paths, X, output=False)
    if isinstance(paths, PathDict) and paths.join is not None:
        values = paths.join([own_path_values(path, X) for path in paths.values()])
    elif (
        isinstance(paths, GeneralizedLinearPath)
        and not paths.is_ensemble
        and paths.weight.dim() == 2
        and X.dim() == 3
        and X.shape[0] == paths.weight.shape[0]
    ):
        flat = X.reshape(-1, X.shape[-1])
        features = to_dense(paths.feature_map(flat)).reshape(*X.shape[:2], -1)
        values = torch.einsum("qlf,qf->ql", features, paths.weight)
        if paths.bias_module is not None:
            values = values + paths.bias_module(flat).reshape(X.shape[:2])
    else:
        values = paths(X)
        return values.squeeze(-1) if values.dim() == X.dim() else values
    return _transformed(paths, values, output=True)
