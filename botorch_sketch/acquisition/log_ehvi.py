#!/usr/bin/env python3
r"""Analytic log expected hypervolume improvement of one point.

For one candidate ``x`` and independent outputs ``y_j ~ N(mu_j, sigma_j^2)``,
the hypervolume improvement over a Pareto front is a sum over the cells
``[l_k, u_k]`` of a box decomposition of the non-dominated region of products
``prod_j (min(y_j, u_j) - l_j)^+``, and its expectation factorises per cell
[Yang2019]_:

    EHVI(x) = sum_k prod_j E[(min(y_j, u_kj) - l_kj)^+]
            = sum_k prod_j sigma_j (h(z_lkj) - h(z_ukj)),

with ``z_b = (mu_j - b) / sigma_j`` and ``h(z) = phi(z) + z Phi(z)`` (expected
improvement's function: ``sigma h((mu - b) / sigma)`` is EI over ``b``, and
``h(z_l) - h(z_u)`` integrates ``Phi`` from ``z_u`` to ``z_l``). BoTorch's
``ExpectedHypervolumeImprovement`` expands the same product into ``2^M`` terms
per cell. :class:`LogExpectedHypervolumeImprovement` keeps it in log space,
as LogEI does for EI [Ament2023unexpected]_: a sum of ``log sigma + log h``
terms per cell and a ``logsumexp`` over the cells, so that its value and
gradient stay informative where the improvement underflows (far from the
front, the usual case for most of L-BFGS-B's starting points).

It is exact and deterministic, with no Monte Carlo samples, and costs one
posterior (means and variances) and ``batch x K x M`` elementwise terms for
``K`` cells: the lean path for a point chosen alone, where
``qLogExpectedHypervolumeImprovement`` draws joint samples and evaluates a
smoothed ``q``-batch improvement per sample. Both reach the same maximiser in
the limit of many samples (compare ``tests/acquisition/test_log_ehvi.py``).

References:

.. [Yang2019]
    K. Yang, M. Emmerich, A. Deutz, T. Bäck. Efficient computation of expected
    hypervolume improvement using box decomposition algorithms. Journal of
    Global Optimization, 2019.

.. [Ament2023unexpected]
    S. Ament, S. Daulton, D. Eriksson, M. Balandat, E. Bakshy. Unexpected
    improvements to expected improvement for Bayesian optimization. NeurIPS 2023.
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition.multi_objective.base import (
    MultiObjectiveAnalyticAcquisitionFunction,
)
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model, ModelList
from botorch.utils.multi_objective.box_decompositions.non_dominated import (
    NondominatedPartitioning,
)
from botorch.utils.probability.utils import log_erfcx, log_phi, ndtr, phi
from botorch.utils.safe_math import log1mexp
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

#: Below this ``z``, ``log h(z)`` takes its asymptote ``log phi(z) - 2 log|z|``
#: (``1 - |z| Phi(z) / phi(z)`` is about ``1 / z^2``; the asymptote's next
#: term, ``3 / z^2``, is below ``1e-7`` there).
_ASYMPTOTE = -1e4


def log_h(z: Tensor) -> Tensor:
    r"""``log(phi(z) + z Phi(z))``, accurate and differentiable for any real ``z``.

    Above ``z = -1`` directly; below, as ``log phi(z) + log(1 - |z| Phi(z) /
    phi(z))``, with ``Phi(z) / phi(z) = sqrt(pi / 2) erfcx(-z / sqrt(2))``;
    below ``-1e4`` its asymptote ``log phi(z) - 2 log|z|``. Each branch sees
    only its own inputs (the others clamped to a safe value), so that no
    gradient is NaN.

    Args:
        z: A tensor of any shape.

    Returns:
        A tensor of the shape of ``z``.
    """
    upper = z.clamp_min(-1.0)
    log_upper = (phi(upper) + upper * ndtr(upper)).log()
    lower = z.clamp(_ASYMPTOTE, -1.0)
    log_ratio = (
        lower.neg().log()
        + 0.5 * math.log(math.pi / 2.0)
        + log_erfcx(lower.neg() / math.sqrt(2.0))
    )
    log_lower = log_phi(lower) + log1mexp(log_ratio)
    far = z.clamp_max(_ASYMPTOTE)
    log_far = log_phi(far) - 2.0 * far.neg().log()
    return torch.where(
        z > -1.0, log_upper, torch.where(z >= _ASYMPTOTE, log_lower, log_far)
    )


class LogExpectedHypervolumeImprovement(MultiObjectiveAnalyticAcquisitionFunction):
    r"""Analytic log EHVI of one point, for independent outputs.

    Example:
        >>> model = ModelListGP(model_0, model_1)
        >>> partitioning = FastNondominatedPartitioning(ref_point, Y=pareto_Y)
        >>> acqf = LogExpectedHypervolumeImprovement(model, ref_point, partitioning)
        >>> value = acqf(test_X)  # batch_shape x 1 x d -> batch_shape
    """

    def __init__(
        self,
        model: Model,
        ref_point: list[float] | Tensor,
        partitioning: NondominatedPartitioning,
    ) -> None:
        r"""Take the cells of a box decomposition of the non-dominated region.

        Args:
            model: A model of ``M`` independent outputs (a ``ModelListGP`` of
                single-output models, or a multi-output model whose posterior
                has no cross-output covariance), all to be maximised: one per
                objective of ``partitioning``, else an ``UnsupportedError``.
            ref_point: The ``M`` reference point (maximised outputs).
            partitioning: A decomposition of the region the front does not
                dominate, above ``ref_point`` (for example BoTorch's
                ``FastNondominatedPartitioning``).
        """
        ref_point = torch.as_tensor(
            ref_point,
            dtype=partitioning.pareto_Y.dtype,
            device=partitioning.pareto_Y.device,
        )
        if ref_point.shape != (partitioning.num_outcomes,):
            raise UnsupportedError(
                f"The reference point has shape {tuple(ref_point.shape)}; the "
                f"partitioning has {partitioning.num_outcomes} outcomes."
            )
        # Else one output broadcasts silently over every objective, and more
        # outputs than objectives fail at the first evaluation only.
        num_outputs = model.num_outputs
        if num_outputs != partitioning.num_outcomes:
            raise UnsupportedError(
                f"The model has {num_outputs} output"
                f"{'' if num_outputs == 1 else 's'}; the partitioning has "
                f"{partitioning.num_outcomes} objectives. "
                "LogExpectedHypervolumeImprovement needs a model of one output "
                "per objective (a ModelListGP of one model each, or a "
                "multi-output model)."
            )
        super().__init__(model=model)
        lower, upper = partitioning.get_hypercell_bounds()
        # Cells of zero width add nothing and would put log(0) in the sum.
        keep = (upper > lower).all(dim=-1)
        lower, upper = lower[keep], upper[keep]
        self.register_buffer("ref_point", ref_point)
        self.register_buffer("cell_lower_bounds", lower)
        self.register_buffer("cell_upper_bounds", upper)
        # ``2 x K x M``: each cell's lower and upper bounds, an unbounded top
        # replaced by a finite one whose term is then dropped (``bounded``).
        self.register_buffer("bounded", upper.isfinite())
        self.register_buffer(
            "bounds", torch.stack([lower, torch.where(self.bounded, upper, lower + 1)])
        )

    def _marginals(self, X: Tensor) -> tuple[Tensor, Tensor]:
        r"""The ``batch_shape x 1 x M`` posterior means and variances at ``X``.

        A ``ModelList``'s outputs one model at a time: its joint posterior
        would build a block-diagonal multitask normal only to read its diagonal.
        """
        if isinstance(self.model, ModelList):
            posteriors = [model.posterior(X) for model in self.model.models]
            return (
                torch.cat([p.mean for p in posteriors], dim=-1),
                torch.cat([p.variance for p in posteriors], dim=-1),
            )
        posterior = self.model.posterior(X)
        return posterior.mean, posterior.variance

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        r"""Log EHVI at ``batch_shape x 1 x d`` points.

        Returns:
            A ``batch_shape`` tensor.
        """
        # ``batch_shape x 1 x M``, against ``K x M`` cells.
        mean, variance = self._marginals(X)
        sigma = variance.clamp_min(1e-12).sqrt()
        if self.bounds.shape[-2] == 0:
            return torch.full(X.shape[:-2], -math.inf, dtype=X.dtype, device=X.device)
        # ``batch_shape x 2 x K x M``: log h at each cell's lower and upper bound.
        log_hs = log_h((mean.unsqueeze(-3) - self.bounds) / sigma.unsqueeze(-3))
        log_h_lower, log_h_upper = log_hs.unbind(dim=-3)
        # An unbounded cell top leaves EI over its lower bound; a bounded one
        # subtracts the part above the top: log(h(z_l) - h(z_u)), z_u < z_l.
        log_rest = log1mexp((log_h_upper - log_h_lower).clamp_max(-1e-300))
        log_terms = sigma.log() + log_h_lower + log_rest.masked_fill(~self.bounded, 0)
        # ``batch_shape x K``: each cell's expected volume, then their sum.
        return torch.logsumexp(log_terms.sum(dim=-1), dim=-1)
