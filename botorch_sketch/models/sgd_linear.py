#!/usr/bin/env python3
r"""A streaming Bayesian linear model on features whose mean is tracked by SGD.

``SGDLinearModel`` is the model ``f(x) = phi(x)^T w``, ``w ~ N(0, I)``, observed
with noise variance ``lambda``, on a feature map ``phi`` (the raw inputs, random
Fourier features, or Nystrom features;
:mod:`botorch_sketch.sketching.embedding.features`).
Its exact posterior is

- mean ``phi(x)^T V_n^{-1} b_n`` and
- covariance ``lambda phi(x)^T V_n^{-1} phi(x')``, ``V_n = Phi^T Phi + lambda I``.

The mean is tracked by fRLS-GD [Korda2015fast]_: one ``O(m)`` SGD step per new
observation on a sample redrawn from the history, whose fixed point (with the
default ridge schedule ``lambda_n = lambda / n``) is exactly ``V_n^{-1} b_n``. The
variance is either

- ``"exact"``: ``V_n^{-1}`` kept by Sherman-Morrison, ``O(m^2)`` per observation,
  valid everywhere and differentiable in ``x`` (for ``optimize_acqf``), or
- ``"tracked"``: the paper's per-arm width for a finite arm set given up front,
  ``O(A m)`` per observation, no ``m x m`` matrix; the posterior is then only
  defined on those arms (``optimize_acqf_discrete``) and its covariance is
  diagonal (the tracker estimates ``phi^T V^{-1} phi`` per arm, not across arms).

``condition_on_observations`` returns a model that shares the history with this
one and takes one SGD step per new point, ``O(m)`` for the mean (plus the
``O(m^2)`` copy of ``V^{-1}`` with exact variance).

Caveats: SGD tracks the posterior mean with an ``O(n^{-1/2})`` error only for
well-conditioned features (``||phi|| <= 1`` and ``lambda_min(Phi^T Phi / n)``
bounded below); correlated random features make it slow. Longer features do
not diverge: the steps are divided by the largest squared feature norm ``R^2``
seen (:class:`~botorch_sketch.sketching.linear.SGDLeastSquares`), which keeps the
fixed point (the posterior mean) and tracks it as on ``phi / R`` with the
noise variance over ``R^2``. A ridge schedule
other than ``lambda / n`` (the paper's ``n^{-(1 - alpha)}``) makes the mean a
non-Bayesian ridge estimate; the exact variance keeps the fixed-prior
``V_n``. The model has no hyperparameters to fit and no transforms: scale the
inputs and outcomes (``||phi|| <= 1``, ``|y| = O(1)``) before building it.

References

.. [Korda2015fast]
    N. Korda, Prashanth L.A., R. Munos. Fast gradient descent for drifting least
    squares regression, with application to bandits. AAAI 2015.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import (
    BotorchTensorDimensionError,
    InputDataError,
    UnsupportedError,
)
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator
from torch import Tensor

from botorch_sketch.checks import checked_real
from botorch_sketch.models.single_output import NoFantasiesMixin, SingleOutputMixin
from botorch_sketch.models.validation import check_test_inputs, check_training_data
from botorch_sketch.sketching.embedding import FeatureMap, IdentityFeatures
from botorch_sketch.sketching.linear import (
    HarmonicStep,
    InverseRidge,
    OnlineRidge,
    Schedule,
    SGDLeastSquares,
    WidthTracker,
    width_step,
)


class SGDLinearModel(SingleOutputMixin, NoFantasiesMixin, Model):
    r"""Bayesian linear regression on features, mean by SGD, variance exact or tracked.

    Example:
        >>> model = SGDLinearModel(train_X, train_Y, noise_var=0.01)
        >>> acqf = UpperConfidenceBound(model, beta=4.0)
        >>> x, _ = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=64)
        >>> model.update(x, observe(x))  # streaming, O(m^2) (O(m) tracked)
    """

    _num_outputs = 1

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        feature_map: FeatureMap | None = None,
        noise_var: float = 1.0,
        variance: Literal["exact", "tracked"] = "exact",
        arms: Tensor | None = None,
        step: Schedule | None = None,
        ridge: Schedule | None = None,
        averaging: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        r"""Build the model and stream the training data through it in order.

        Args:
            train_X: A ``n x d`` tensor of training inputs (``n`` may be 0).
            train_Y: A ``n x 1`` tensor of training observations.
            feature_map: The map ``phi``, ``d -> m``; defaults to the identity.
            noise_var: The noise variance ``lambda`` (also the ridge of ``V_n``).
            variance: ``"exact"`` (Sherman-Morrison ``V^{-1}``) or ``"tracked"``
                (per-arm SGD widths; needs ``arms``).
            arms: A ``A x d`` tensor of the finite arm set, for tracked variance.
            step: The SGD step schedule; defaults to ``HarmonicStep(3.5 m)``, the
                Theorem-1 choice for isotropic features (``mu = 1 / m``).
            ridge: The SGD ridge schedule; defaults to ``InverseRidge(noise_var)``,
                whose fixed point is the posterior mean.
            averaging: Report the Polyak average of the SGD iterates as the mean.
            generator: The generator of the resampled history indices.
        """
        super().__init__()
        if train_X.dim() == 2 and train_X.shape[0] == 0:
            if train_Y.shape != (0, 1):
                raise BotorchTensorDimensionError(
                    f"train_Y must be 0 x 1 with an empty train_X, got "
                    f"{tuple(train_Y.shape)}."
                )
        else:
            check_training_data(type(self).__name__, train_X, train_Y, None)
        # NaN passed ``noise_var <= 0`` and failed later inside a Cholesky;
        # True was a noise variance of 1, a two-element tensor a TypeError.
        noise_var = checked_real(noise_var, "noise_var", positive=True)
        if variance not in ("exact", "tracked"):
            raise UnsupportedError(
                f"variance must be exact or tracked, not {variance}."
            )
        if variance == "tracked" and arms is None:
            raise InputDataError("Tracked variance needs the finite arm set `arms`.")
        self.feature_map = feature_map or IdentityFeatures(train_X.shape[-1])
        if self.feature_map.input_dim != train_X.shape[-1]:
            raise BotorchTensorDimensionError(
                f"train_X has {train_X.shape[-1]} columns, the feature map expects "
                f"{self.feature_map.input_dim}."
            )
        m = self.feature_map.dim
        tkwargs = {"dtype": train_X.dtype, "device": train_X.device}
        self.noise_var = float(noise_var)
        self.variance = variance
        self.solver = SGDLeastSquares(
            m,
            step=step or HarmonicStep(3.5 * m),
            ridge=ridge or InverseRidge(self.noise_var),
            averaging=averaging,
            generator=generator,
            **tkwargs,
        )
        self.exact: OnlineRidge | None = None
        self.tracker: WidthTracker | None = None
        self.arms: Tensor | None = None
        if variance == "exact":
            self.exact = OnlineRidge(m, noise_var=self.noise_var, **tkwargs)
        else:
            if arms.ndim != 2 or arms.shape[-1] != train_X.shape[-1]:
                raise BotorchTensorDimensionError(
                    f"arms must be A x {train_X.shape[-1]}, got {tuple(arms.shape)}."
                )
            self.arms = arms.to(**tkwargs)
            with torch.no_grad():
                arm_features = self.feature_map(self.arms)
            # The tracker's ridge must be the fixed prior's, lambda / n, for its
            # target to be V_n^{-1} phi whatever the mean's schedule.
            self.tracker = WidthTracker(
                arm_features,
                step=width_step(m),
                ridge=InverseRidge(self.noise_var),
                initial_scale=self.noise_var,
            )
        self.update(train_X, train_Y)

    @property
    def num_outputs(self) -> int:  # noqa: D102
        return 1

    @property
    def batch_shape(self) -> torch.Size:  # noqa: D102
        return torch.Size([])

    @property
    def num_observations(self) -> int:
        r"""The number ``n`` of observations streamed in."""
        return self.solver.n

    @property
    def weights(self) -> Tensor:
        r"""The SGD estimate of the posterior mean weights ``V_n^{-1} b_n`` (``m``)."""
        return self.solver.estimate

    def update(self, X: Tensor, Y: Tensor) -> None:
        r"""Stream observations in, in place: one SGD step each.

        Args:
            X: A ``k x d`` tensor of inputs.
            Y: A ``k x 1`` tensor of observations.
        """
        if X.shape[0] == 0:
            return
        if X.dim() != 2 or Y.shape != (X.shape[0], 1):
            raise UnsupportedError(
                f"Expected X of shape k x d and Y of shape k x 1, got "
                f"{tuple(X.shape)} and {tuple(Y.shape)}; batched updates are not "
                "supported."
            )
        check_training_data(type(self).__name__, X, Y, None)
        with torch.no_grad():
            features = self.feature_map(X.to(self.solver.unscaled_theta))
        Y = Y.to(features)
        for phi, y in zip(features, Y.reshape(-1), strict=True):
            i = self.solver.observe(phi, y, validate=False)
            if self.exact is not None:
                self.exact.observe(phi, y)
            else:
                self.tracker.step(
                    self.solver.sample(i)[0], self.solver.n, self.solver.step_scale
                )

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs: Any) -> Model:
        r"""A new model with ``(X, Y)`` streamed in; this one is unchanged.

        Shares the history with this model (no ``O(n m)`` copy); ``O(m)`` per new
        point for the mean, plus ``O(m^2)`` per point and one ``O(m^2)`` copy with
        exact variance.

        Args:
            X: A ``k x d`` (or ``1 x k x d``) tensor of inputs.
            Y: A ``k x 1`` (or ``1 x k x 1``) tensor of observations.
            kwargs: Ignored (``noise`` is not supported: the noise is homoskedastic).

        Returns:
            The conditioned model.
        """
        if kwargs.get("noise") is not None:
            raise UnsupportedError("SGDLinearModel has a fixed homoskedastic noise.")
        if X.dim() == 3 and X.shape[0] == 1:
            X, Y = X[0], Y[0]
        if Y.dim() == 1:
            Y = Y.unsqueeze(-1)
        new = copy.copy(self)
        # nn.Module keeps its registries in dicts; give the copy its own.
        for name in ("_parameters", "_buffers", "_modules"):
            new.__dict__[name] = dict(self.__dict__[name])
        new.solver = self.solver.fork()
        new.exact = self.exact.clone() if self.exact is not None else None
        if self.tracker is not None:
            new.tracker = copy.copy(self.tracker)
        new.update(X, Y)
        return new

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
    ) -> GPyTorchPosterior:
        r"""The posterior at ``X``.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs (arms of the arm set for
                tracked variance).
            output_indices: Must be None or ``[0]``.
            observation_noise: Add the noise variance ``lambda`` to the diagonal.
            posterior_transform: An optional transform of the posterior.

        Returns:
            A ``GPyTorchPosterior`` over ``batch_shape x q`` points with a dense
            ``q x q`` covariance.
        """
        if output_indices not in (None, [0]):
            raise UnsupportedError("SGDLinearModel has a single output.")
        check_test_inputs(X, self.feature_map.input_dim)
        X = X.to(self.solver.unscaled_theta)
        features = self.feature_map(X)
        mean = features @ self.weights
        if self.exact is not None:
            covariance = self.noise_var * (features @ self.exact.inverse @ features.mT)
        else:
            variance = (
                self.noise_var * self.tracker.quadratic_forms()[self._arm_indices(X)]
            )
            covariance = torch.diag_embed(variance)
        if observation_noise is not False:
            if isinstance(observation_noise, Tensor):
                raise UnsupportedError("Pass observation_noise=True, not a tensor.")
            covariance = covariance + self.noise_var * torch.eye(
                X.shape[-2], dtype=X.dtype, device=X.device
            )
        # A rank-deficient covariance (q > m, or arms without width) would fail
        # Cholesky-based sampling; the jitter is far below any width that matters.
        jitter = 1e-10 * max(self.noise_var, 1.0)
        covariance = covariance + jitter * torch.eye(
            X.shape[-2], dtype=X.dtype, device=X.device
        )
        # As a linear operator, whose factorisation waits for a sample and
        # adds more jitter where this was too little (float32, large
        # features): a dense tensor was factorised at once by torch's
        # MultivariateNormal, which raised on the rank-deficient matrix.
        posterior = GPyTorchPosterior(
            MultivariateNormal(mean, to_linear_operator(covariance))
        )
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior

    def _arm_indices(self, X: Tensor) -> Tensor:
        # Tracked widths exist only for the arms; find each row among them.
        distances = torch.cdist(X.detach(), self.arms.expand(*X.shape[:-2], -1, -1))
        nearest, index = distances.min(dim=-1)
        if bool((nearest > 1e-9 * (1 + self.arms.abs().max())).any()):
            raise UnsupportedError(
                "With tracked variance the posterior is defined only on the arm set; "
                "use optimize_acqf_discrete(choices=arms) or variance='exact'."
            )
        return index
