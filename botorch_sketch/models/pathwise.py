#!/usr/bin/env python3
r"""``NystromGP`` in BoTorch's pathwise sampling (Matheron's rule).

Registering the model with BoTorch's ``DrawMatheronPaths`` (and its prior
sampler) makes ``draw_matheron_paths``, ``get_matheron_path_model`` and
``PathwiseThompsonSampling`` work with it. A path is a random-feature draw
``f_0`` from the prior plus the update ``z(x)^T v`` of
:meth:`~botorch_sketch.sketching.posterior.WeightPosterior.matheron_update`, written as
``k(x, S) root v``: after an ``O(m^3)`` set-up, evaluating a path costs
``O(m + num_features)`` per point, so Thompson sampling over many candidates
costs no ``n``-dependent work and no joint covariance.

References:

.. [Wilson2020efficiently]
    J. Wilson, V. Borovitskiy, A. Terenin, P. Mostowsky, M. Deisenroth.
    Efficiently sampling functions from Gaussian process posteriors. ICML 2020.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.sampling.pathwise.features.maps import KernelEvaluationMap
from botorch.sampling.pathwise.paths import GeneralizedLinearPath
from botorch.sampling.pathwise.posterior_samplers import (
    DrawMatheronPaths,
    MatheronPath,
)
from botorch.sampling.pathwise.prior_samplers import (
    DrawKernelFeaturePaths,
    _draw_kernel_feature_paths_fallback,
)
from botorch.sampling.pathwise.utils import get_input_transform, get_output_transform
from botorch.utils.context_managers import delattr_ctx
from linear_operator import to_dense
from torch import Size, Tensor
from torch.nn import Module

from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.models.nystrom_outcomes import MultiOutputNystromGP


@DrawKernelFeaturePaths.register(NystromGP)
def _draw_kernel_feature_paths_NystromGP(
    model: NystromGP, **kwargs: Any
) -> GeneralizedLinearPath:
    # BoTorch's generic random-feature prior (its ExactGP registration does
    # the same with the ExactGP's modules).
    return _draw_kernel_feature_paths_fallback(
        num_inputs=model.train_X.shape[-1],
        mean_module=model.mean_module,
        covar_module=model.covar_module,
        input_transform=get_input_transform(model),
        output_transform=get_output_transform(model),
        **kwargs,
    )


@DrawMatheronPaths.register(NystromGP)
def _draw_matheron_paths_NystromGP(
    model: NystromGP,
    *,
    sample_shape: Size,
    prior_sampler: Any,
    update_strategy: Any,
) -> MatheronPath:
    # ``update_strategy`` is not used: the DTC update comes from the model's own
    # statistics (BoTorch's Gaussian update would solve with the n x n kernel).
    if len(model.batch_shape) > 0:  # a batched fantasy model
        raise UnsupportedError(
            "Pathwise sampling of a fantasy NystromGP is not supported; draw paths "
            "from the model before conditioning."
        )
    model.eval()
    embedding, posterior = model.posterior_state()
    with torch.no_grad(), delattr_ctx(model, "outcome_transform"):
        prior_paths = prior_sampler(model=model, sample_shape=sample_shape)
        S = embedding.inducing_points  # already input-transformed
        # The prior draw's Nystrom coordinates w_0 = root^T (f_0(S) - mu_0(S)).
        centred = _centred_prior_values(prior_paths, S, model.mean_module)
        v = posterior.matheron_update(centred @ embedding.root)
        update_paths = GeneralizedLinearPath(
            feature_map=KernelEvaluationMap(
                kernel=model.covar_module,
                points=S,
                input_transform=get_input_transform(model),
            ),
            weight=v @ embedding.root.mT,
        )
    return MatheronPath(
        prior_paths=prior_paths,
        update_paths=update_paths,
        output_transform=get_output_transform(model),
    )


def _centred_prior_values(
    prior_paths: GeneralizedLinearPath, S: Tensor, mean_module: Module
) -> Tensor:
    # ``f_0(S) - mu_0(S)`` as a ``sample_shape x m`` tensor. BoTorch's forward
    # broadcasts one matrix-vector product per path (``q`` copies of the
    # ``m x F`` features); for a flat ``sample_shape`` the ``q`` paths are one
    # ``m x F`` by ``F x q`` product, and the bias (the prior mean) cancels.
    weight = prior_paths.weight
    if weight.dim() != 2 or prior_paths.bias_module is not mean_module:
        return prior_paths.forward(S) - mean_module(S)
    return (to_dense(prior_paths.feature_map(S)) @ weight.mT).mT


@DrawMatheronPaths.register(MultiOutputNystromGP)
def _draw_matheron_paths_MultiOutputNystromGP(
    model: MultiOutputNystromGP, **kwargs: Any
) -> MatheronPath:
    raise UnsupportedError(
        "Pathwise sampling of a multi-output NystromGP is not supported; draw paths "
        "from model.subset_output([j]) for each outcome j (or use a ModelListGP of "
        "them, which BoTorch's pathwise sampling handles)."
    )
