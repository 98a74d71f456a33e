#!/usr/bin/env python3
r"""Fitting a ``NystromGP``: what ``fit_gpytorch_mll``'s hook runs, and its options.

``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))`` calls
``NystromGP.custom_fit``, that is :func:`fit_alternating`: BoTorch's own fitting
routine (L-BFGS-B with retries, :func:`fit_round`) on
``NystromGP.compute_custom_loss`` (:func:`custom_loss`), Titsias' collapsed
bound in explicit ``m x m`` algebra (the exact marginal likelihood when every
input is inducing), alternated with the inducing rule: fit with the set fixed,
re-choose the set at the fitted hyperparameters, fit again. Shortcuts keep the
fit cheap at every size: up to ``exact_fit_size`` points, or when the set covers
most inputs (``exact_fraction``), one exact fit instead of the rounds; above
``exact_fit_size`` points, by default, one exact fit on a random
``exact_fit_size`` of them (the rule still chooses among up to
``automatic_fit_subset_size`` points: :func:`rule_rows` and :func:`fit_rows`);
or a fixed random subset of the user's size (``fit_subset_size``). Subsets are
fitted by a model that shares the model's kernel, mean and likelihood
(:func:`fitting_subset`). These functions read the model through its public
attributes and methods; the inducing set they change is passed to them.

The options are class attributes of ``NystromGP`` (set them on the class or on
a model):

- ``fit_rounds`` (2): hyperparameter fits, with the inducing rule re-run between
  them (only for rules that depend on the hyperparameters).
- ``titsias`` (True): fit on Titsias' collapsed bound, else on the DTC marginal
  likelihood.
- ``initial_max_inducing`` (256): the largest set the rule's first choice keeps.
  At that point the hyperparameters are the priors' (the noise prior's mode is
  small, so leverage scores are large); the set only has to carry the first
  fitting round, and is re-chosen after it.
- ``fit_subset_size`` (None; also a constructor argument): fit the
  hyperparameters, and choose the inducing points, on a fixed random subset of
  this many points when there are more. The posterior still uses every point;
  at n = 10^6 this turns minutes into seconds.
- ``automatic_fit_subset_size`` (1000): with ``fit_subset_size`` None, an
  inferred noise level and an input transform without learnable parameters,
  choose the inducing points among a random subset of this many points, and
  fit the hyperparameters on a random ``exact_fit_size`` of them (a prefix of
  the same permutation): one exact fit instead of two Titsias rounds. Measured
  on Hartmann-6 with noise sd 0.3 (``BENCHMARKS.md``): between 600 and 1000
  points of a BO loop, a fit 1.1-6.6x faster than the rounds with a held-out
  NLL 0.00-0.06 nats better.
- ``exact_fraction`` (0.5): behave like the exact GP when the rule's set holds
  at least this fraction of the distinct fitting inputs (None: never). At
  ``m = n / 2`` a Titsias evaluation already costs more than the exact
  likelihood's Cholesky: the model then fits the exact marginal likelihood
  once, re-runs the rule once, and keeps every input if the set still covers
  that fraction (warning :class:`ExactRegimeWarning`; see ``is_exact``).
- ``exact_fit_size`` (600): fit the exact marginal likelihood once, then choose
  the set once, whenever the fitting data have at most this many points (None:
  only in the exact regime). Below about 600 points one exact fit costs less
  than two Titsias rounds (2.5 s against 3.4 s at n = 350); the posterior is
  still the sketch unless the set covers ``exact_fraction`` of the inputs.
- ``warn_exact_regime`` (True): whether entering the exact regime warns (once a
  process). Off for models whose regime says nothing to the user (the fitting
  subset, the sample of a sharded model): a filtered warning would still use
  up the process's one.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.exceptions.warnings import BotorchWarning
from botorch.fit import _fit_fallback
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import ExactMarginalLogLikelihood, MarginalLogLikelihood
from torch import Tensor

from botorch_sketch.models.nystrom.inducing import InducingSet
from botorch_sketch.models.validation import check_fit_subset_size
from botorch_sketch.sketching.posterior import DTCStatistics, WeightPosterior
from botorch_sketch.sketching.rules import FixedSelector

#: The fitting options a fitting subset copies from its model.
FIT_OPTIONS = (
    "fit_rounds",
    "titsias",
    "initial_max_inducing",
    "exact_fraction",
    "exact_fit_size",
)


class ExactRegimeWarning(BotorchWarning):
    r"""The inducing set covers most of the data, so the model is the exact GP.

    At that size a sketch costs more than the exact model per likelihood
    evaluation (``O(n m^2)`` with ``m`` near ``n`` against the exact GP's
    ``O(n^3 / 3)`` Cholesky), so :class:`NystromGP` fits the exact marginal
    likelihood and uses every distinct training input as an inducing point.

    It is warned once a process (the first time a model enters the regime);
    ``NystromGP.is_exact`` tells it of every model.
    """


#: Whether this process has warned :class:`ExactRegimeWarning` yet. It warns once
#: a process, as the README says: a BO loop refits every iteration, and warned
#: on every fit (16 times in 16 iterations). Python's own once-only filters
#: cannot do it: the message differs from fit to fit, and every
#: ``warnings.catch_warnings`` (BoTorch's fit enters one) resets their registry.
#: Warning filters are left alone; tests reset this flag to see the warning.
_warned_exact_regime = False


def warn_exact_regime(
    model_name: str, fraction: float, num_inputs: int, exact_fraction: float
) -> None:
    r"""Warn :class:`ExactRegimeWarning`, once a process.

    Args:
        model_name: The model's class name.
        fraction: The fraction of the inputs the rule's set held.
        num_inputs: The number of distinct inputs.
        exact_fraction: The model's ``exact_fraction``.
    """
    global _warned_exact_regime
    if _warned_exact_regime:
        return
    _warned_exact_regime = True
    warnings.warn(
        f"The inducing set would hold {fraction:.0%} of the {num_inputs} distinct "
        f"inputs (exact_fraction={exact_fraction}); {model_name} is the exact GP "
        "here. It becomes a sketch once the data outgrow the effective dimension.",
        ExactRegimeWarning,
        stacklevel=6,
    )


def fit_round(
    mll: MarginalLogLikelihood,
    closure: Callable | None = None,
    closure_kwargs: dict[str, Any] | None = None,
    optimizer_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> MarginalLogLikelihood:
    r"""One hyperparameter fit: BoTorch's own routine, with its retry policy.

    ``_fit_fallback`` is what ``fit_gpytorch_mll`` runs for models without
    ``custom_fit``; botorch is pinned.

    Args:
        mll: The marginal log likelihood (its model's loss is
            ``compute_custom_loss``).
        closure: Passed to BoTorch's fitting routine.
        closure_kwargs: Passed to BoTorch's fitting routine.
        optimizer_kwargs: Passed to BoTorch's fitting routine.
        kwargs: Passed to BoTorch's fitting routine (e.g. ``optimizer``).

    Returns:
        The fitted ``mll``, in eval mode on success.
    """
    return _fit_fallback(
        mll=mll,
        closure=closure,
        closure_kwargs=closure_kwargs,
        optimizer_kwargs=optimizer_kwargs,
        **kwargs,
    )


def exact_log_likelihood(
    mean_module: Mean,
    covar_module: Kernel,
    likelihood: Likelihood,
    X: Tensor,
    targets: Tensor,
) -> Tensor:
    r"""The exact marginal log likelihood (Titsias' bound with every input inducing).

    gpytorch's one Cholesky costs a third of the DTC algebra at ``m = n``.

    Args:
        mean_module: The prior mean.
        covar_module: The kernel.
        likelihood: The Gaussian likelihood.
        X: The ``n x d`` transformed training inputs.
        targets: The ``n`` training targets.

    Returns:
        A scalar tensor, with gradients.
    """
    prior = MultivariateNormal(mean_module(X), covar_module(X))
    marginal = likelihood(prior)
    if targets.dim() != 1 or marginal.loc.dim() != 1:
        return marginal.log_prob(targets)
    covariance = marginal.lazy_covariance_matrix.to_dense()
    factor, info = torch.linalg.cholesky_ex(covariance.detach())
    if info.item() != 0:
        # Not numerically positive definite: GPyTorch's log_prob adds jitter.
        return marginal.log_prob(targets)
    return _GaussianLogDensity.apply(targets - marginal.loc, covariance, factor)


class _GaussianLogDensity(torch.autograd.Function):
    r"""``log N(r; 0, K)`` of a residual ``r`` given ``K``'s Cholesky factor ``L``.

    The value is GPyTorch's ``MultivariateNormal.log_prob``; the gradient is
    written out: ``d/dK = (a a^T - K^{-1}) / 2`` and ``d/dr = -a`` with
    ``a = K^{-1} r``, one ``cholesky_inverse`` (about ``n^3 / 3`` multiply-adds
    on top of the factor). Autograd through ``torch.linalg.cholesky`` and the
    triangular solves costs several times that: at ``n = 500`` on one thread
    about 50 ms against 11 ms, most of a fitting iteration's cost. The kernel's
    own gradient (from ``d/dK``) is still autograd's, so any kernel works.
    """

    @staticmethod
    def forward(
        ctx: Any, residual: Tensor, covariance: Tensor, factor: Tensor
    ) -> Tensor:
        r"""The log density.

        Args:
            ctx: Autograd's context.
            residual: The ``n`` residuals ``y - mean``.
            covariance: The ``n x n`` covariance ``K`` (only its gradient uses it).
            factor: The ``n x n`` lower Cholesky factor of ``K`` (no gradient).

        Returns:
            A scalar tensor.
        """
        alpha = torch.cholesky_solve(residual.unsqueeze(-1), factor).squeeze(-1)
        ctx.save_for_backward(alpha, factor)
        n = residual.shape[-1]
        quadratic = residual @ alpha
        log_det = 2.0 * factor.diagonal().log().sum()
        return -0.5 * (quadratic + log_det + n * math.log(2.0 * math.pi))

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        r"""The gradients with respect to the residual and the covariance."""
        alpha, factor = ctx.saved_tensors
        grad_residual = grad_covariance = None
        if ctx.needs_input_grad[0]:
            grad_residual = -grad * alpha
        if ctx.needs_input_grad[1]:
            inverse = torch.cholesky_inverse(factor)
            grad_covariance = (0.5 * grad) * (torch.outer(alpha, alpha) - inverse)
        return grad_residual, grad_covariance, None


def custom_loss(model: Model, statistics: DTCStatistics | None) -> Tensor:
    r"""A ``NystromGP``'s negative fitting objective over ``n``, with gradients.

    Titsias' bound (or the DTC marginal likelihood, ``titsias = False``) of
    ``statistics``, or the exact marginal likelihood when every input is
    inducing (:func:`exact_log_likelihood`), plus the log densities of the
    model's priors: what ``ExactMarginalLogLikelihood`` computes, without an
    ``n x n`` matrix.

    Args:
        model: The model.
        statistics: Its data's statistics, or None in the exact regime.

    Returns:
        A scalar loss.
    """
    if statistics is None:
        modules = (model.mean_module, model.covar_module, model.likelihood)
        X, y = model.transformed_train_X, model._train_targets
        value = exact_log_likelihood(*modules, X, y)
    else:
        posterior = WeightPosterior(statistics)
        value = posterior.log_marginal_likelihood(titsias=model.titsias)
    for _, module, prior, closure, _ in model.named_priors():
        value = value + prior.log_prob(closure(module)).sum()
    return -value / model.train_X.shape[0]


def permutation(n: int, device: torch.device) -> Tensor:
    r"""One fixed random order of ``n`` rows: the fitting subsets are its prefixes."""
    g = torch.Generator().manual_seed(0)
    return torch.randperm(n, generator=g).to(device)


def subset_rows(n: int, limit: int | None, device: torch.device) -> Tensor:
    r"""The rows the inducing rule chooses among: a random ``limit`` of ``n``.

    Args:
        n: The number of training rows.
        limit: The subset size (None: all rows).
        device: The data's device.

    Returns:
        A long tensor of rows.
    """
    if limit is None or n <= limit:
        return torch.arange(n, device=device)
    return permutation(n, device)[:limit]


def hyperparameter_rows(
    rows: Tensor, n: int, limit: int | None, exact_fit_size: int | None
) -> Tensor:
    r"""The rows the hyperparameters are fitted on, for the automatic subset.

    The first ``exact_fit_size`` rows of the permutation whose first ``limit``
    rows the rule chooses among (nested prefixes). Between the two sizes the
    rule sees every row and the hyperparameters a random ``exact_fit_size`` of
    them.

    Args:
        rows: The rule's rows (:func:`subset_rows`).
        n: The number of training rows.
        limit: The automatic subset size (None: no automatic subset).
        exact_fit_size: The model's ``exact_fit_size``.

    Returns:
        A long tensor of rows.
    """
    if limit is None or exact_fit_size is None:
        return rows
    size = min(exact_fit_size, limit)
    return rows if n <= size else permutation(n, rows.device)[:size]


def learns_inputs(input_transform: InputTransform | None) -> bool:
    r"""Whether the input transform has learnable parameters (e.g. ``Warp``)."""
    return input_transform is not None and any(
        p.requires_grad for p in input_transform.parameters()
    )


def subset_limit(
    fit_subset_size: int | None,
    automatic_fit_subset_size: int | None,
    fixed_noise: bool,
    input_transform: InputTransform | None,
) -> int | None:
    r"""The size of the rows the rule chooses among (None: all rows).

    ``fit_subset_size`` if set; else the automatic size, which fixed noise
    (whose subset would need its own noise) and a learnable input transform
    (whose parameters a subset fitted on transformed inputs would not learn)
    do not take.

    Args:
        fit_subset_size: The model's ``fit_subset_size``.
        automatic_fit_subset_size: The model's ``automatic_fit_subset_size``.
        fixed_noise: Whether the model has observed noise variances.
        input_transform: The model's input transform, or None.

    Returns:
        The limit.
    """
    if fit_subset_size is not None:
        return fit_subset_size
    if fixed_noise or learns_inputs(input_transform):
        return None
    return automatic_fit_subset_size


def check_subset_fit(fixed_noise: bool, input_transform: InputTransform | None) -> None:
    r"""Refuse a fit on a subset that could not fit what the model needs.

    Args:
        fixed_noise: Whether the model has observed noise variances.
        input_transform: The model's input transform, or None.
    """
    if fixed_noise:
        raise UnsupportedError(
            "fit_subset_size needs an inferred noise level; with train_Yvar "
            "set fit_subset_size = None."
        )
    if learns_inputs(input_transform):
        raise UnsupportedError(
            "fit_subset_size cannot be used with an input transform that has "
            "learnable parameters (e.g. Warp): the subset is fitted on "
            "transformed inputs and would not learn them. Set "
            "fit_subset_size = None."
        )


def rule_rows(model: Model) -> Tensor:
    r"""The rows of a ``NystromGP``'s data its inducing rule chooses among."""
    check_fit_subset_size(model.fit_subset_size)  # also set after __init__
    n, device = model.train_X.shape[0], model.train_X.device
    return subset_rows(n, _limit(model), device)


def fit_rows(model: Model) -> Tensor:
    r"""The rows of a ``NystromGP``'s data its hyperparameters are fitted on."""
    rows = rule_rows(model)
    if model.fit_subset_size is not None:
        return rows
    n = model.train_X.shape[0]
    return hyperparameter_rows(rows, n, _limit(model), model.exact_fit_size)


def _limit(model: Model) -> int | None:
    transform = getattr(model, "input_transform", None)
    fixed_noise = model.train_Yvar is not None
    automatic = model.automatic_fit_subset_size
    return subset_limit(model.fit_subset_size, automatic, fixed_noise, transform)


def fitting_subset(
    model: Model, model_class: type[Model], rows: Tensor | None = None
) -> Model:
    r"""A model of ``model``'s hyperparameter rows that shares its modules.

    Its kernel, mean and likelihood are ``model``'s (fitting it fits them), its
    data already transformed by ``model``'s transforms, which are neither refitted
    nor learned, and its fitting options ``model``'s.

    Args:
        model: A ``NystromGP`` without statistics of other data.
        model_class: The class to build (``NystromGP``).
        rows: The rows to fit on, a 1-d long tensor into the model's data
            (None: :func:`fit_rows`, the model's own subset).

    Returns:
        The subset's model.
    """
    check_subset_fit(
        model.train_Yvar is not None, getattr(model, "input_transform", None)
    )
    rows = fit_rows(model) if rows is None else rows
    rule = model.inducing_rule
    if rule is None or isinstance(rule, FixedSelector):
        rule = model.inducing_points  # fixed rows number the model's data
    subset = model_class(
        model.transformed_train_X[rows].detach(),
        model._train_targets[rows].unsqueeze(-1),
        inducing=rule,
        covar_module=model.covar_module,
        mean_module=model.mean_module,
        likelihood=model.likelihood,
        outcome_transform=None,
    )
    for name in FIT_OPTIONS:  # set on the class or the instance
        setattr(subset, name, getattr(model, name))
    subset.automatic_fit_subset_size = None  # it is the fitting data
    return subset


def fit_alternating(
    model: Model,
    inducing: InducingSet,
    model_class: type[Model],
    mll: MarginalLogLikelihood,
    closure: Callable | None = None,
    closure_kwargs: dict[str, Any] | None = None,
    optimizer_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> MarginalLogLikelihood:
    r"""Fit a ``NystromGP``'s hyperparameters, alternating with its inducing rule.

    Args:
        model: A ``NystromGP`` that can be refitted.
        inducing: Its inducing set (changed here).
        model_class: The class of fitting subsets (``NystromGP``).
        mll: The marginal log likelihood whose model is ``model``.
        closure: Passed to BoTorch's fitting routine.
        closure_kwargs: Passed to BoTorch's fitting routine.
        optimizer_kwargs: Passed to BoTorch's fitting routine.
        kwargs: Passed to BoTorch's fitting routine (e.g. ``optimizer``).

    Returns:
        The fitted ``mll``, in eval mode on success.
    """
    n, exact_fraction = model.train_X.shape[0], model.exact_fraction
    if fit_rows(model).numel() < n:
        # Fit the shared modules on a subset, then choose the set on all the
        # data at them; the subset's own set is discarded (so is its regime).
        subset = fitting_subset(model, model_class)
        subset.warn_exact_regime = False
        subset_mll = ExactMarginalLogLikelihood(subset.likelihood, subset)
        subset.custom_fit(subset_mll, optimizer_kwargs=optimizer_kwargs, **kwargs)
        model.select_inducing_points()
        # The rule's fraction is of the rows it chose among: only when those are
        # all the rows does a set covering most of them make the exact GP.
        if rule_rows(model).numel() == n and inducing.covers_most(exact_fraction):
            _enter_exact_regime(model, inducing)
        model.clear_posterior_state()
        return mll.eval()
    small = inducing.adaptive and model.exact_fit_size is not None
    small = small and n <= model.exact_fit_size
    if not small:
        _ = model.inducing_index  # the first choice, if none was made yet
    args = (closure, closure_kwargs, optimizer_kwargs)
    if small or inducing.covers_most(exact_fraction):
        # The exact likelihood (the best hyperparameters any set could give),
        # then one choice of the set at them: no second round.
        inducing.use_every_input(model.transformed_train_X)
        model.clear_posterior_state()
        mll = fit_round(mll, *args, **kwargs)
        model.select_inducing_points()
        if inducing.covers_most(exact_fraction):
            _enter_exact_regime(model, inducing)
    else:
        for i in range(max(1, model.fit_rounds) if inducing.adaptive else 1):
            if i > 0:
                model.select_inducing_points()
            mll = fit_round(mll, *args, **kwargs)
    model.clear_posterior_state()
    return mll


def _enter_exact_regime(model: Model, inducing: InducingSet) -> None:
    # Keep every input, and say so (once a process; ``is_exact`` tells).
    inducing.use_every_input(model.transformed_train_X)
    model.clear_posterior_state()
    if model.warn_exact_regime:
        name, m = type(model).__name__, inducing.rows.numel()
        warn_exact_regime(name, inducing.fraction, m, model.exact_fraction)
