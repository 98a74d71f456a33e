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
from botorch.sampling.pathwise.features.maps import KernelFeatureMap
from botorch.sampling.pathwise.utils import SineCosineTransform
from gpytorch.settings import skip_posterior_variances
from linear_operator import to_dense
from torch import Tensor
from torch.nn import Module

from botorch_sketch.checks import checked_count


def posterior_means(model: Model, X: Tensor, chunk_size: int = 4096) -> Tensor:
    r"""Posterior means of single points, in chunks (no joint covariance).

    Read under GPyTorch's ``skip_posterior_variances``: a model that honours it
    (an exact GP, ``NystromGP``) forms no covariance at all, which for a
    ``NystromGP`` just conditioned on new observations is the eigendecomposition
    of its weight covariance; the means are the same.

    Args:
        model: A fitted single-output model.
        X: A ``n x d`` tensor.
        chunk_size: Points per posterior call (a positive integer).

    Returns:
        A ``n`` tensor.
    """
    # 0 failed in ``Tensor.split`` as "split_size can only be 0 if ...".
    chunk_size = checked_count(chunk_size, "chunk_size")
    with torch.no_grad(), skip_posterior_variances():
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
        A ``q x N`` tensor, equal to ``paths(X)`` (squeezed) up to rounding.
    """
    X = _transformed(paths, X, output=False)
    if isinstance(paths, PathDict) and paths.join is not None:
        values = paths.join([path_values(path, X) for path in paths.values()])
    elif (
        isinstance(paths, GeneralizedLinearPath)
        and not paths.is_ensemble
        and paths.weight.dim() == 2
    ):
        values = _fourier_values(paths.feature_map, paths.weight, X)
        if values is None:
            features = paths.feature_map(X)  # N x F
            values = features @ paths.weight.mT
        values = values.mT  # q x N
        if paths.bias_module is not None:
            values = values + paths.bias_module(X)
    else:
        values = paths(X)
        return values.squeeze(-1) if values.dim() == X.dim() + 1 else values
    return _transformed(paths, values, output=True)


def _fourier_values(feature_map: Module, weight: Tensor, X: Tensor) -> Tensor | None:
    # BoTorch's random Fourier features are ``s [sin(X W^T), cos(X W^T)]``: the
    # ``N x q`` values ``s sin(X W^T) a^T + s cos(X W^T) b^T`` of weights
    # ``[a, b]`` need neither the ``N x F`` concatenation nor its scaling
    # (a third of a 1000-candidate batch's cost in 60-D). None for other maps.
    transform = getattr(feature_map, "output_transform", None)
    if not isinstance(feature_map, KernelFeatureMap) or not isinstance(
        transform, SineCosineTransform
    ):
        return None
    projection = feature_map.forward(_transformed(feature_map, X, output=False))
    if projection.dim() != 2 or 2 * projection.shape[-1] != weight.shape[-1]:
        return None
    if transform.scale is not None:
        weight = transform.scale * weight
    half = projection.shape[-1]
    cosine = projection.cos()
    values = cosine @ weight[:, half:].mT
    sine = projection.sin() if projection.requires_grad else projection.sin_()
    return values.addmm_(sine, weight[:, :half].mT)


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
