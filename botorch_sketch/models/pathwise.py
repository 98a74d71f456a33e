#!/usr/bin/env python3
r"""``NystromGP`` in BoTorch's pathwise sampling (Matheron's rule).

Registering the model with BoTorch's ``DrawMatheronPaths`` (and its prior
sampler) makes ``draw_matheron_paths``, ``get_matheron_path_model`` and
``PathwiseThompsonSampling`` work with it, and with a
:class:`~botorch_sketch.models.MultiOutputNystromGP` (one path per outcome,
joined as a batched ``SingleTaskGP``'s: :class:`OutcomePaths`). A path is a
random-feature draw ``f_0`` from the prior plus the update ``z(x)^T v`` of
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
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.sampling.pathwise.features.maps import KernelEvaluationMap
from botorch.sampling.pathwise.paths import (
    GeneralizedLinearPath,
    PathList,
    SamplePath,
)
from botorch.sampling.pathwise.posterior_samplers import (
    DrawMatheronPaths,
    MatheronPath,
    draw_matheron_paths,
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
    return CheckedMatheronPath(
        num_inputs=model.train_X.shape[-1],
        prior_paths=prior_paths,
        update_paths=update_paths,
        output_transform=get_output_transform(model),
    )


class CheckedMatheronPath(MatheronPath):
    r"""BoTorch's ``MatheronPath``, refusing inputs the model cannot take.

    Inputs of another width than the model's training inputs failed deep in a
    matrix product, naming tensor sizes; NaN inputs gave NaN values. Both now
    raise, as ``NystromGP.posterior`` does. (Evaluating the parts directly, as
    ``bo.sampling.path_values`` does, skips the check.)
    """

    def __init__(self, num_inputs: int, **kwargs: Any) -> None:
        r"""A ``MatheronPath`` of ``kwargs`` taking ``... x num_inputs`` inputs."""
        super().__init__(**kwargs)
        self.num_inputs = num_inputs

    def forward(self, x: Tensor, **kwargs: Any) -> Tensor:
        r"""The paths' values at ``batch_shape x n x d`` (untransformed) inputs."""
        if x.shape[-1] != self.num_inputs:
            raise BotorchTensorDimensionError(
                f"The paths take inputs of {self.num_inputs} dimensions (the "
                f"model's training inputs); got inputs of shape {tuple(x.shape)}."
            )
        if not bool(torch.isfinite(x).all()):
            raise InputDataError("The paths' inputs contain NaN or infinite values.")
        return super().forward(x, **kwargs)


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
    model: MultiOutputNystromGP,
    *,
    sample_shape: Size,
    prior_sampler: Any,
    update_strategy: Any,
) -> PathList:
    # One path per outcome model (independent outcomes), each in the
    # outcome-transformed units of its column; the container's outcome
    # transform acts on the t joined outputs, as on a SingleTaskGP's.
    paths = [
        draw_matheron_paths(
            outcome,
            sample_shape=sample_shape,
            prior_sampler=prior_sampler,
            update_strategy=update_strategy,
        )
        for outcome in model.outcome_models
    ]
    return OutcomePaths(paths, output_transform=get_output_transform(model))


class OutcomePaths(PathList):
    r"""The paths of ``t`` independent outcomes, evaluated as a batched GP's.

    A ``SingleTaskGP`` of ``t`` outputs is a GP batched over them: its paths
    at ``batch_shape x n x d`` inputs are ``sample_shape x batch_shape x t x
    n``, and an input batch dimension of size ``t`` in the ``-3`` position
    pairs with the outputs (size 1 broadcasts), which is how
    ``get_matheron_path_model`` evaluates them. These paths take inputs the
    same way and return the same shape, outcome ``j`` from its own path.
    """

    def __init__(
        self, paths: list[SamplePath], output_transform: Any | None = None
    ) -> None:
        r"""Join ``paths``, one per outcome, then apply ``output_transform``."""
        super().__init__(paths, join=_stack_outcomes, output_transform=output_transform)

    def forward(self, x: Tensor, **kwargs: Any) -> Tensor:
        r"""``sample_shape x batch_shape x t x n`` values at ``batch_shape x n x d``.

        Args:
            x: A ``batch_shape x n x d`` tensor; a ``-3`` dimension (when
                ``x`` has three or more) of size 1 or ``t`` pairs with the
                outcomes, as a GP batched over them pairs it.
            kwargs: Passed to each outcome's path.
        """
        t = len(self.paths)
        paired = x.dim() > 2
        if paired and x.shape[-3] not in (1, t):
            raise UnsupportedError(
                f"Paths of {t} outcomes are a GP batched over them: the inputs' "
                f"batch dimension -3 must be 1 or {t}, not {x.shape[-3]} (inputs "
                f"of shape {tuple(x.shape)}); pass batch_shape x 1 x n x d."
            )
        values = []
        for j, path in enumerate(self.paths):
            x_j = x[..., j if x.shape[-3] == t else 0, :, :] if paired else x
            values.append(path(x_j, **kwargs))
        return self.join(values)


def _stack_outcomes(values: list[Tensor]) -> Tensor:
    # ``t`` tensors of ``sample_shape x batch_shape x n`` -> ``... x t x n``.
    return torch.stack(values, dim=-2)
