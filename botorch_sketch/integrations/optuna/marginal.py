#!/usr/bin/env python3
r"""Single-point posteriors of fitted ``NystromGP``\ s, for analytic acquisitions.

A warm suggestion of ``SketchSampler`` maximises ``LogExpectedImprovement`` or
``LogConstrainedExpectedImprovement``: about 60 batched evaluations of
``optimize_acqf`` and the discrete sweep's batches after it. Each read the
posterior through ``NystromGP.posterior`` (a ``ModelListGP`` of two of them
for the constrained one: a ``MultitaskMultivariateNormal`` of two
distributions over linear operators, whose variance is a diagonal read through
three operators), and BoTorch's ``self.to(X)`` walked every module of both
models on each evaluation. On the ``categories`` task of ``suggest --budget
mixed-unseen`` an evaluation and its gradient cost 17 ms where the arithmetic
(the kernel rows of 8 points against 382 and 111 inducing points, two products
by the folded ``m x m`` roots) costs under 2 ms.

:class:`_Marginals` is a BoTorch ``Model`` whose posterior at ``b x 1 x d``
points is the ``b x 1 x M`` independent normals those acquisitions read
(``mean`` and ``variance``), each from
:func:`~botorch_sketch.models.nystrom.posterior.dtc_marginals`: the models'
own read-outs, so the values are theirs to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.posteriors.torch import TorchPosterior
from torch import Tensor
from torch.distributions import Normal

from botorch_sketch.models import NystromGP
from botorch_sketch.models.nystrom.posterior import dtc_marginals


class _Marginals(Model):
    r"""The marginal posteriors of single-output ``NystromGP``\ s at single points.

    Output ``i`` is model ``i``'s, as in a ``ModelListGP`` of them; only
    ``q = 1`` (the analytic acquisitions), without observation noise.

    Example:
        >>> marginals = _Marginals.of([objective_model, failures_model])
        >>> acqf = LogConstrainedExpectedImprovement(
        ...     model=marginals, best_f=0.3, objective_index=0,
        ...     constraints={1: (None, 0.0)},
        ... )
    """

    def __init__(self, models: Sequence[NystromGP]) -> None:
        r"""Read the posteriors of ``models`` (fitted, in eval mode).

        Use :meth:`of`, which checks that each model's read-out applies.

        Args:
            models: The models, one per output.
        """
        super().__init__()
        # A tuple, not submodules: BoTorch's analytic acquisitions call
        # ``self.to(X)`` at every evaluation, which walked every module of
        # the models (about 3 ms of an evaluation's 25 on a loaded machine).
        # The models already are on the device and dtype of the points the
        # sampler passes.
        self._models = tuple(models)

    @classmethod
    def of(cls, models: Sequence[Model]) -> _Marginals | None:
        r"""The marginals of ``models``, or None where their read-out does not apply.

        It applies to unbatched single-output ``NystromGP``\ s without an
        input transform, whose outcome transform is none or a plain
        ``Standardize`` (what the sampler fits by default); other models
        (a user's model class or options) keep BoTorch's posterior.
        """
        for model in models:
            if (
                not isinstance(model, NystromGP)
                or model.num_outputs != 1
                or len(model.batch_shape) > 0
                or getattr(model, "input_transform", None) is not None
            ):
                return None
        marginals = cls(models)
        for model in models:
            model.eval()
            probe = model.train_X[:1].unsqueeze(0)
            with torch.no_grad():
                if marginals._read(model, probe) is None:
                    return None
        return marginals

    @property
    def num_outputs(self) -> int:
        r"""The number of models."""
        return len(self._models)

    @property
    def batch_shape(self) -> torch.Size:
        r"""No batch: the models are unbatched."""
        return torch.Size([])

    @staticmethod
    def _read(model: NystromGP, X: Tensor) -> tuple[Tensor, Tensor] | None:
        return dtc_marginals(
            model.nystrom_state,
            X,
            model.mean_module,
            model.covar_module,
            getattr(model, "outcome_transform", None),
        )

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> TorchPosterior:
        r"""Independent normals at each of the ``b`` points.

        Args:
            X: A ``batch_shape x 1 x d`` tensor of points in the unit cube.
            output_indices: None (every output).
            observation_noise: False.
            posterior_transform: None.
            kwargs: Ignored.

        Returns:
            A posterior whose ``mean`` and ``variance`` are ``batch_shape x 1 x
            M``. Its samples are independent across the ``M`` outputs, as the
            models' are.
        """
        if (
            output_indices is not None
            or observation_noise is not False
            or posterior_transform is not None
        ):
            raise UnsupportedError(
                "_Marginals reads the models' latent posteriors only: no "
                "output_indices, observation_noise or posterior_transform."
            )
        d = self._models[0].train_X.shape[-1]
        if X.dim() < 2 or X.shape[-2] != 1 or X.shape[-1] != d:
            raise UnsupportedError(
                f"_Marginals takes batch_shape x 1 x {d} points (q = 1); got "
                f"{tuple(X.shape)}."
            )
        means, variances = [], []
        for model in self._models:
            mean, variance = self._read(model, X)
            means.append(mean)
            variances.append(variance)
        mean = torch.stack(means, dim=-1)
        scale = torch.stack(variances, dim=-1).sqrt()
        return TorchPosterior(Normal(mean, scale, validate_args=False))
