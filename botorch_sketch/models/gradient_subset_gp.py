#!/usr/bin/env python3
r"""An exact GP fitted on a gradient-selected subset of its data (GSSBO).

``GradientSubsetGP`` is a ``SingleTaskGP`` whose training data is ``M`` of the
``N`` observations it is given: the first ``num_initial`` (the initial design),
the last ``num_newest`` (the newest batch) and the rest chosen by a subset rule,
by default gradient diversity [Wei2025gssbo]_. It *is* a ``SingleTaskGP`` on
that subset, so every BoTorch feature (fantasize, qKG, pathwise sampling, the
cached-Cholesky qLogNEI) works unchanged; the other ``N - M`` observations are
kept (:attr:`full_train_X`) for the rule but do not enter the posterior
(subset of data, not a sparse approximation). With ``N <= M`` it is exactly
``SingleTaskGP``.

The paper's per-observation gradient, ``g_i = -(K^{-1}(y - mu))_i``, is a scalar,
which makes the cosine diversity it maximises degenerate (a cosine between
scalars is a sign). The default :func:`feature_residual_gradients` reads it as the
gradient of observation ``i``'s squared-error loss with respect to the weights of
the subset GP in its Nystrom feature space, ``g_i = r_i z(x_i)`` with
``r_i = -(y_i - mu(x_i)) / (sigma^2(x_i) + sigma_n^2)`` (the scalar above,
evaluated with the subset posterior so that no ``N x N`` system is solved) and
``z`` the subset's Nystrom embedding: the per-sample parameter gradient that GSS
[Aljundi2019gradient]_ was defined on. Two observations are then similar when
they are close in the kernel's geometry *and* their residuals have the same
sign. The gradient function is a constructor argument.

References:

.. [Wei2025gssbo]
    Y. Wei, Z. Wang, Y. Cao, W. Wang, R. Allmendinger, M. A. Alvarez.
    Gradient-based sample selection for faster Bayesian optimization. 2025.
.. [Aljundi2019gradient]
    R. Aljundi, M. Lin, B. Goujaud, Y. Bengio. Gradient based sample selection for
    online continual learning. NeurIPS 2019.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gpytorch
import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import _fit_fallback
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors import Posterior
from botorch.utils.datasets import SupervisedDataset
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import MarginalLogLikelihood
from torch import Tensor

from botorch_sketch.checks import checked_count, checked_optional_count
from botorch_sketch.models.validation import (
    check_new_observations,
    check_test_inputs,
    check_training_data,
    inputs_from_dataset,
)
from botorch_sketch.sketching.embedding import (
    NystromEmbedding,
    chunk_size_for,
    row_chunks,
)
from botorch_sketch.sketching.rules import (
    Candidates,
    GradientDiversitySubset,
    RandomSubset,
    SelectionRule,
)

#: ``(model, X, Y, Yvar) -> N x p`` gradients, in the model's transformed space.
GradientFunction = Callable[["GradientSubsetGP", Tensor, Tensor, Tensor], Tensor]


def scaled_residuals(
    model: GradientSubsetGP, X: Tensor, Y: Tensor, noise: Tensor
) -> Tensor:
    r"""``-(y_i - mu(x_i)) / (sigma^2(x_i) + noise_i)`` under the subset posterior.

    For an observation in the subset this is a leave-in estimate of the paper's
    ``-(K^{-1}(y - mu))_i``; for the others it is the pilot estimate of the same
    quantity (the derivative of the predictive log density in ``y_i``).

    Args:
        model: A fitted model in eval mode.
        X: A ``N x d`` tensor of input-transformed inputs.
        Y: A ``N`` tensor of outcome-transformed observations.
        noise: A ``N`` tensor of their noise variances (transformed units).

    Returns:
        A ``N`` tensor.
    """
    out = []
    # debug(False): a chunk may coincide with the training inputs, on purpose.
    with torch.no_grad(), gpytorch.settings.debug(False):
        for rows in row_chunks(X.shape[0], chunk_size_for(model.train_targets.numel())):
            latent = model(X[rows])
            variance = latent.variance + noise[rows]
            out.append(-(Y[rows] - latent.mean) / variance)
    return torch.cat(out)


def feature_residual_gradients(
    model: GradientSubsetGP, X: Tensor, Y: Tensor, noise: Tensor
) -> Tensor:
    r"""The default gradients: ``r_i z(x_i)`` in the subset's Nystrom features.

    ``O(N M^2)``. See the module docstring for why this reading of the paper.

    Args:
        model: A fitted model in eval mode.
        X: A ``N x d`` tensor of input-transformed inputs.
        Y: A ``N`` tensor of outcome-transformed observations.
        noise: A ``N`` tensor of their noise variances.

    Returns:
        A ``N x M'`` tensor (``M' <= M`` after dropping a numerically singular
        part of the subset's kernel matrix).
    """
    residual = scaled_residuals(model, X, Y, noise)
    with torch.no_grad():
        embedding = NystromEmbedding(model.covar_module, model.train_inputs[0])
        Z = torch.cat(
            [
                embedding(X[r])
                for r in row_chunks(X.shape[0], chunk_size_for(embedding.dim))
            ]
        )
    return residual.unsqueeze(-1) * Z


def scalar_residual_gradients(
    model: GradientSubsetGP, X: Tensor, Y: Tensor, noise: Tensor
) -> Tensor:
    r"""The paper's literal scalar gradient, as a ``N x 1`` tensor.

    With scalars, cosine diversity only balances the signs of the perturbed
    residuals; kept to compare against.

    Args:
        model: A fitted model in eval mode.
        X: A ``N x d`` tensor of input-transformed inputs.
        Y: A ``N`` tensor of outcome-transformed observations.
        noise: A ``N`` tensor of their noise variances.

    Returns:
        A ``N x 1`` tensor.
    """
    return scaled_residuals(model, X, Y, noise).unsqueeze(-1)


def hyperparameter_gradients(
    model: GradientSubsetGP,
    X: Tensor,
    Y: Tensor,
    noise: Tensor,
    step: float | None = None,
) -> Tensor:
    r"""Per-observation gradients of the predictive log density in the hyperparameters.

    ``g_i = d/d theta log N(y_i | mu(x_i), sigma^2(x_i) + noise_i)`` under the
    subset posterior, ``theta`` the model's raw (unconstrained) hyperparameters:
    the literal "per-sample gradient with respect to the model's parameters"
    when the GP's parameters are read as its hyperparameters, a third reading of
    [Wei2025gssbo]_ next to :func:`feature_residual_gradients` (weights) and
    :func:`scalar_residual_gradients` (the paper's scalar). Central differences
    in each of the ``p`` raw parameters: ``2 p`` posterior passes
    over the ``N`` points (``O(p N M^2)``), where reverse mode would need ``N``
    backward passes. The parameters are restored afterwards.

    Args:
        model: A fitted model in eval mode.
        X: A ``N x d`` tensor of input-transformed inputs.
        Y: A ``N`` tensor of outcome-transformed observations.
        noise: A ``N`` tensor of their noise variances (used as given with fixed
            noise; with an inferred noise level the likelihood's, which moves with
            its raw parameter).
        step: The finite-difference step in raw-parameter units; by default
            ``eps^(1/3)`` of the data type, the step that balances a central
            difference's truncation and rounding errors.

    Returns:
        A ``N x p`` tensor.
    """
    fixed = isinstance(model.likelihood, FixedNoiseGaussianLikelihood)
    params = [p for p in model.parameters() if p.requires_grad]
    if step is None:
        step = torch.finfo(X.dtype).eps ** (1 / 3)

    def log_density() -> Tensor:
        model.train()  # drops gpytorch's cached solves at the old parameters
        model.eval()
        out = []
        with torch.no_grad(), gpytorch.settings.debug(False):
            for rows in row_chunks(X.shape[0], chunk_size_for(Y.shape[0])):
                latent = model(X[rows])
                extra = noise[rows] if fixed else model.likelihood.noise.reshape(-1)
                var = latent.variance + extra
                out.append(-0.5 * (var.log() + (Y[rows] - latent.mean).pow(2) / var))
        return torch.cat(out)

    columns = []
    with torch.no_grad():
        for p in params:
            flat = p.view(-1)
            for j in range(flat.numel()):
                original = float(flat[j])
                flat[j] = original + step
                upper = log_density()
                flat[j] = original - step
                lower = log_density()
                flat[j] = original
                columns.append((upper - lower) / (2 * step))
    log_density()  # leave the caches at the restored parameters
    return torch.stack(columns, dim=-1)


def _lengthscale(kernel: Kernel | None) -> Tensor | None:
    # The lengthscales of a kernel or of the kernel a ScaleKernel wraps; None
    # for kernels without one (or of another shape than ``d`` or 1).
    while kernel is not None:
        if getattr(kernel, "has_lengthscale", False):
            return kernel.lengthscale.detach()
        kernel = getattr(kernel, "base_kernel", None)
    return None


class GradientSubsetGP(SingleTaskGP):
    r"""A ``SingleTaskGP`` on ``subset_size`` of its observations, chosen by a rule.

    At construction the subset is the forced observations plus a random choice
    (the hyperparameters are not fitted yet). ``fit_gpytorch_mll`` then fits,
    re-runs the rule with the fitted model (its gradients on all ``N``
    observations, or its kernel), switches the training data to the new subset
    and fits again from there (``fit_rounds`` fits in all). Rules that need no
    fitted model (random) are run once, at construction. Cost per fit
    ``O(M^3 + N M^2)``; nothing of size ``N x N``.

    Example:
        >>> model = GradientSubsetGP(train_X, train_Y, subset_size=100, num_initial=20)
        >>> fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        >>> acqf = UpperConfidenceBound(model, beta=2.0)
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        train_Yvar: Tensor | None = None,
        subset_size: int | None = 100,
        num_initial: int = 0,
        num_newest: int = 1,
        subset_rule: SelectionRule | None = None,
        gradient: GradientFunction | None = None,
        fit_rounds: int = 2,
        num_best: int = 0,
        likelihood: Likelihood | None = None,
        covar_module: Kernel | None = None,
        mean_module: Mean | None = None,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        input_transform: InputTransform | None = None,
        num_neighbours: int = 0,
    ) -> None:
        r"""Choose the initial subset and build the GP on it.

        Args:
            train_X: A ``N x d`` tensor of all observed inputs, oldest first.
            train_Y: A ``N x 1`` tensor of all observations.
            train_Yvar: An optional ``N x 1`` tensor of observed noise variances.
            subset_size: ``M``, the number of observations the GP is fitted on; None
                (or ``M >= N``) fits on all of them.
            num_initial: ``n0``: the first ``n0`` observations (the initial design)
                are always in the subset.
            num_newest: ``q``: the last ``q`` observations (the newest batch) are
                always in the subset.
            subset_rule: The rule choosing the other ``M - n0 - q``; defaults to
                ``GradientDiversitySubset()``.
            gradient: The per-observation gradient function for rules that use
                gradients; defaults to :func:`feature_residual_gradients`.
            fit_rounds: Hyperparameter fits in ``fit_gpytorch_mll`` for rules that
                read the fitted model. 2: fit on the initial subset, re-select,
                fit again. 1: select at the hyperparameters the model has, then
                fit once; for a model warm-started from the previous BO
                iteration's hyperparameters, as GSSBO selects with the previous
                fit, at half the cost.
            num_best: The observations with the ``num_best`` largest ``train_Y``
                (BoTorch maximises) are always in the subset too. Not in the
                paper (0 is GSSBO as published); a subset that drops the
                incumbents can stop a BO run from improving on them.
            likelihood: As for ``SingleTaskGP``.
            covar_module: As for ``SingleTaskGP``.
            mean_module: As for ``SingleTaskGP``.
            outcome_transform: As for ``SingleTaskGP``; fitted on the subset.
            input_transform: As for ``SingleTaskGP``.
            num_neighbours: The ``num_neighbours`` observations nearest to the
                best one (largest ``train_Y``, itself not counted) are always in
                the subset too, nearest in the kernel's geometry (inputs divided
                by the lengthscales the model has when the subset is chosen:
                the warm-started or fitted ones). Not in the paper (0 is GSSBO
                as published); without them the subset GP knows the incumbent's
                region from a few points, and a BO loop stops refining it.
        """
        check_training_data(type(self).__name__, train_X, train_Y, train_Yvar)
        n = train_X.shape[0]
        # Float counts failed in a slice or an index with a TypeError; a NaN
        # subset size fitted on all N, silently.
        subset_size = checked_optional_count(subset_size, "subset_size")
        num_initial = checked_count(num_initial, "num_initial", minimum=0)
        num_newest = checked_count(num_newest, "num_newest", minimum=0)
        num_best = checked_count(num_best, "num_best", minimum=0)
        num_neighbours = checked_count(num_neighbours, "num_neighbours", minimum=0)
        fit_rounds = checked_count(fit_rounds, "fit_rounds")
        if subset_rule is not None and not isinstance(subset_rule, SelectionRule):
            raise InputDataError(
                "subset_rule must be a SelectionRule (such as "
                "GradientDiversitySubset() or RandomSubset()), got "
                f"{subset_rule!r}."
            )
        forced = num_initial + num_newest + num_best + num_neighbours
        if subset_size is not None and subset_size <= forced:
            raise InputDataError(
                f"subset_size ({subset_size}) must exceed num_initial + num_newest + "
                f"num_best + num_neighbours ({num_initial} + {num_newest} + "
                f"{num_best} + {num_neighbours}), or no observation is chosen."
            )
        self.num_best = num_best
        self.num_neighbours = num_neighbours
        self.full_train_X = train_X
        self.full_train_Y = train_Y
        self.full_train_Yvar = train_Yvar
        self.subset_size = subset_size
        self.num_initial = num_initial
        self.num_newest = num_newest
        self.subset_rule = (
            GradientDiversitySubset() if subset_rule is None else subset_rule
        )
        self.gradient = feature_residual_gradients if gradient is None else gradient
        self.fit_rounds = fit_rounds
        if self.is_subset:
            # Rules that read the fitted model start from a random subset.
            rule = self.subset_rule
            if rule.depends_on_hyperparameters:
                rule = RandomSubset(generator=rule.generator)
            index = self._run_rule(rule, gradients=None, kernel=None)
        else:
            index = torch.arange(n, device=train_X.device)
        self.subset_indices = index
        with warnings.catch_warnings():
            # Callers that standardise Y themselves (Ax) standardise all N; a
            # subset of it is not exactly standardised, and that is expected.
            if self.is_subset:
                warnings.filterwarnings(
                    "ignore", message=r"Data \(outcome observations\) is not standard"
                )
            super().__init__(
                train_X=train_X[index],
                train_Y=train_Y[index],
                train_Yvar=None if train_Yvar is None else train_Yvar[index],
                likelihood=likelihood,
                covar_module=covar_module,
                mean_module=mean_module,
                outcome_transform=outcome_transform,
                input_transform=input_transform,
            )

    @property
    def is_subset(self) -> bool:
        r"""Whether the GP is fitted on fewer than all observations."""
        size = self.subset_size
        return size is not None and size < self.full_train_X.shape[0]

    @property
    def forced_indices(self) -> Tensor:
        r"""Indices of the observations every subset contains."""
        n = self.full_train_X.shape[0]
        device = self.full_train_X.device
        initial = torch.arange(min(self.num_initial, n), device=device)
        newest = torch.arange(max(n - self.num_newest, 0), n, device=device)
        best = self.full_train_Y.squeeze(-1).argsort(descending=True)
        best = best[: self.num_best].to(device)
        forced = torch.cat([initial, newest, best, self.neighbour_indices()])
        # Distinct, in order of first appearance (a few dozen entries at most).
        repeat = (forced[:, None] == forced[None, :]).tril(-1).any(-1)
        return forced[~repeat]

    def neighbour_indices(self) -> Tensor:
        r"""The ``num_neighbours`` observations nearest to the best one.

        Distances are Euclidean in the model's input-transformed inputs divided
        by the kernel's lengthscales (plain Euclidean before the kernel exists
        or for kernels without one); ``O(N d)``.

        Returns:
            A 1-d long tensor of at most ``num_neighbours`` indices into
            :attr:`full_train_X`, nearest first, the best one excluded.
        """
        k = getattr(self, "num_neighbours", 0)
        X = self.full_train_X
        if k == 0 or X.shape[0] < 2:
            return torch.arange(0, device=X.device)
        with torch.no_grad():
            if getattr(self, "input_transform", None) is not None:
                X = self.input_transform.preprocess_transform(X)
            lengthscale = _lengthscale(getattr(self, "covar_module", None))
            if lengthscale is not None:
                X = X / lengthscale.reshape(-1).to(X)
            best = self.full_train_Y.squeeze(-1).argmax()
            distance = (X - X[best]).square().sum(-1)
            distance[best] = float("inf")
            k = min(k, X.shape[0] - 1)
            return distance.topk(k, largest=False).indices

    def _run_rule(
        self, rule: SelectionRule, gradients: Tensor | None, kernel: Kernel | None
    ) -> Tensor:
        X = self.full_train_X
        if kernel is not None and hasattr(self, "input_transform"):
            with torch.no_grad():
                X = self.input_transform.preprocess_transform(X)
        candidates = Candidates(X=X, kernel=kernel, gradients=gradients)
        forced = self.forced_indices
        #: The forced indices of the last selection (the neighbours move with
        #: the hyperparameters they were chosen at).
        self.selection_forced = forced
        return rule.select(candidates, size=self.subset_size, forced=forced)

    def full_gradients(self) -> Tensor:
        r"""The gradient function on all ``N`` observations, at the current fit.

        Returns:
            A ``N x p`` tensor.
        """
        self.eval()
        X = self.transform_inputs(self.full_train_X)
        Y, Yvar = self.full_train_Y, self.full_train_Yvar
        if hasattr(self, "outcome_transform"):
            Y, Yvar = self.outcome_transform(Y, Yvar, X=X)
        if Yvar is None:
            noise = self.likelihood.noise.reshape(-1)[:1].expand(Y.shape[0])
        else:
            noise = Yvar.squeeze(-1)
        gradients = self.gradient(self, X, Y.squeeze(-1), noise)
        if not (
            isinstance(gradients, Tensor)
            and gradients.shape[:1] == X.shape[:1]
            and bool(torch.isfinite(gradients).all())
        ):
            # NaN gradients picked a subset by NaN comparisons, silently.
            raise InputDataError(
                "The gradient function must return finite N x p gradients of the "
                f"N = {X.shape[0]} observations, got "
                + (
                    f"shape {tuple(gradients.shape)} with non-finite values."
                    if isinstance(gradients, Tensor)
                    else f"{type(gradients).__name__}."
                )
            )
        return gradients

    def select_subset(self) -> Tensor:
        r"""Re-run the rule at the current hyperparameters and switch to its subset.

        The outcome transform is refitted on the new subset, as ``SingleTaskGP``
        would be on that data.

        Returns:
            The new subset, as indices into :attr:`full_train_X`.
        """
        if not self.is_subset:
            return self.subset_indices
        gradients = self.full_gradients() if self.subset_rule.uses_gradients else None
        index = self._run_rule(self.subset_rule, gradients, self.covar_module)
        self._set_subset(index)
        return index

    def _set_subset(self, index: Tensor) -> None:
        X = self.full_train_X[index]
        Y = self.full_train_Y[index]
        Yvar = None if self.full_train_Yvar is None else self.full_train_Yvar[index]
        self.train()  # raw inputs are kept in train mode, transformed in eval
        if hasattr(self, "outcome_transform"):
            transformed_X = self.transform_inputs(X)
            Y, Yvar = self.outcome_transform(Y, Yvar, X=transformed_X)
            # Refitting marks the transform trained with a new CPU tensor
            # (Standardize's ``_is_trained``); keep its buffers on the data's
            # device, as SingleTaskGP's ``to(train_X)`` at construction does.
            self.outcome_transform.to(X.device)
        self.set_train_data(inputs=X, targets=Y.squeeze(-1), strict=False)
        if isinstance(self.likelihood, FixedNoiseGaussianLikelihood):
            self.likelihood.noise = Yvar.squeeze(-1)
        self.subset_indices = index

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit, re-select the subset with the fitted gradients, fit again.

        Called by ``fit_gpytorch_mll``; each fit is BoTorch's own routine (L-BFGS-B
        with retries), the later ones starting from the previous hyperparameters.

        Args:
            mll: The marginal log likelihood whose model is ``self``.
            closure: Passed to BoTorch's fitting routine.
            closure_kwargs: Passed to BoTorch's fitting routine.
            optimizer_kwargs: Passed to BoTorch's fitting routine.
            kwargs: Passed to BoTorch's fitting routine (e.g. ``optimizer``).

        Returns:
            The fitted ``mll``, in eval mode on success.
        """
        adaptive = self.is_subset and self.subset_rule.depends_on_hyperparameters
        rounds = self.fit_rounds if adaptive else 1
        for i in range(rounds):
            if adaptive and (i > 0 or rounds == 1):
                self.select_subset()
            mll = _fit_fallback(
                mll=mll,
                closure=closure,
                closure_kwargs=closure_kwargs,
                optimizer_kwargs=optimizer_kwargs,
                **kwargs,
            )
        return mll

    def posterior(self, X: Tensor, *args: Any, **kwargs: Any) -> Posterior:
        r"""``SingleTaskGP``'s posterior, after a check of ``X``.

        A wrong input dimension or a 1-d ``X`` failed inside gpytorch with a
        size mismatch, and NaN inputs gave NaN silently.
        """
        check_test_inputs(X, self.full_train_X.shape[-1])
        return super().posterior(X, *args, **kwargs)

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, **kwargs: Any
    ) -> GradientSubsetGP:
        r"""``SingleTaskGP``'s conditioning, with the observations kept in the full set.

        The conditioned model's GP holds its subset plus the new observations,
        as ``SingleTaskGP``'s would; they also join :attr:`full_train_X` (and
        its targets), so a later fit, which re-selects the subset from the
        full set, keeps them in play instead of dropping them. Batched
        conditioning (fantasies) leaves the full set as it was: a fantasy model
        is read, not refitted.

        Args:
            X: A ``batch_shape x q x d`` tensor of inputs (raw, as for ``posterior``).
            Y: The ``batch_shape x q x 1`` outcomes (raw).
            **kwargs: Passed on (``noise``: the ``q x 1`` observation noise).

        Returns:
            The conditioned model.
        """
        check_test_inputs(X, self.full_train_X.shape[-1])
        check_new_observations(X, Y, kwargs.get("noise"))
        if not bool(torch.isfinite(Y).all()):
            raise InputDataError("Y contains NaN or infinite values.")
        conditioned = super().condition_on_observations(X, Y, **kwargs)
        if X.dim() == 2 and Y.dim() == 2 and Y.shape[-1] == 1:
            noise = kwargs.get("noise")
            n = self.full_train_X.shape[0]
            conditioned.full_train_X = torch.cat(
                [self.full_train_X, X.to(self.full_train_X)]
            )
            conditioned.full_train_Y = torch.cat(
                [self.full_train_Y, Y.to(self.full_train_Y)]
            )
            if self.full_train_Yvar is not None:
                if noise is None:
                    raise UnsupportedError(
                        "A GradientSubsetGP with observed noise needs the new "
                        "observations' noise: condition_on_observations(X, Y, "
                        "noise=...)."
                    )
                conditioned.full_train_Yvar = torch.cat(
                    [self.full_train_Yvar, noise.reshape(Y.shape).to(Y)]
                )
            new = torch.arange(n, n + X.shape[0], device=self.subset_indices.device)
            conditioned.subset_indices = torch.cat([self.subset_indices, new])
        return conditioned

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any):
        super()._apply(fn, *args, **kwargs)
        for name in ("full_train_X", "full_train_Y", "full_train_Yvar"):
            value = getattr(self, name, None)
            if value is not None:
                setattr(self, name, fn(value))
        if getattr(self, "subset_indices", None) is not None:
            self.subset_indices = self.subset_indices.to(self.full_train_X.device)
        return self

    @classmethod
    def construct_inputs(
        cls,
        training_data: SupervisedDataset,
        subset_size: int | None = 100,
        num_initial: int = 0,
        num_newest: int = 1,
        subset_rule: SelectionRule | None = None,
        gradient: GradientFunction | None = None,
        fit_rounds: int = 2,
        num_best: int = 0,
        num_neighbours: int = 0,
        **kwargs: Any,
    ) -> dict[str, Any]:
        r"""Constructor arguments from a dataset (the hook Ax calls).

        Args:
            training_data: A ``SupervisedDataset``.
            subset_size: The ``subset_size`` constructor argument.
            num_initial: The ``num_initial`` constructor argument.
            num_newest: The ``num_newest`` constructor argument.
            subset_rule: The ``subset_rule`` constructor argument.
            gradient: The ``gradient`` constructor argument.
            fit_rounds: The ``fit_rounds`` constructor argument.
            num_best: The ``num_best`` constructor argument.
            num_neighbours: The ``num_neighbours`` constructor argument.
            kwargs: Other options Ax passes (``categorical_features`` and the like);
                empty ones are ignored, others are not supported.

        Returns:
            A dict of keyword arguments for ``GradientSubsetGP``.
        """
        return inputs_from_dataset(
            cls.__name__,
            training_data,
            kwargs,
            subset_size=subset_size,
            num_initial=num_initial,
            num_newest=num_newest,
            subset_rule=subset_rule,
            gradient=gradient,
            fit_rounds=fit_rounds,
            num_best=num_best,
            num_neighbours=num_neighbours,
        )
