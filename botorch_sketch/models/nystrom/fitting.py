#!/usr/bin/env python3
r"""Fitting a ``NystromGP``: the hooks ``fit_gpytorch_mll`` calls, and their options.

``fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))`` calls
:meth:`NystromFittingMixin.custom_fit`, which runs BoTorch's own fitting routine
(L-BFGS-B with retries) on :meth:`NystromFittingMixin.compute_custom_loss`,
Titsias' collapsed bound in explicit ``m x m`` algebra, and alternates it with the
inducing rule (:mod:`botorch_sketch.models.nystrom.inducing`): fit with the set
fixed, re-choose the set at the fitted hyperparameters, fit again. Shortcuts
keep the fit cheap at every size: up to ``exact_fit_size`` points, or when the
set covers most inputs (``exact_fraction``), one exact fit instead of the rounds;
above ``exact_fit_size`` points, by default, one exact fit on a random
``exact_fit_size`` of them (the rule still chooses among up to
``automatic_fit_subset_size`` points); or a fixed random subset of the user's
size (``fit_subset_size``). Subsets are fitted by a model that shares this one's
kernel, mean and likelihood. The options are class attributes, documented where
they are set.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.exceptions.warnings import BotorchWarning
from botorch.fit import _fit_fallback
from gpytorch.distributions import MultivariateNormal
from gpytorch.mlls import ExactMarginalLogLikelihood, MarginalLogLikelihood
from torch import Tensor

from botorch_sketch.models.validation import check_fit_subset_size
from botorch_sketch.sketching.selection import FixedSelector
from botorch_sketch.sketching.weight_posterior import WeightPosterior


class ExactRegimeWarning(BotorchWarning):
    r"""The inducing set covers most of the data, so the model is the exact GP.

    At that size a sketch costs more than the exact model per likelihood
    evaluation (``O(n m^2)`` with ``m`` near ``n`` against the exact GP's
    ``O(n^3 / 3)`` Cholesky), so :class:`NystromGP` fits the exact marginal
    likelihood and uses every distinct training input as an inducing point.

    It is warned once a process (the first time a model enters the regime);
    :attr:`~botorch_sketch.models.nystrom.inducing.InducingSetMixin.is_exact`
    tells it of every model.
    """


#: Whether this process has warned :class:`ExactRegimeWarning` yet. It warns once
#: a process, as the README says: a BO loop refits every iteration, and warned
#: on every fit (16 times in 16 iterations). Python's own once-only filters
#: cannot do it: the message differs from fit to fit, and every
#: ``warnings.catch_warnings`` (BoTorch's fit enters one) resets their registry.
#: Warning filters are left alone; tests reset this flag to see the warning.
_warned_exact_regime = False


class NystromFittingMixin:
    r"""Hyperparameter fitting alternated with the inducing rule, and its options."""

    #: Hyperparameter fits in ``fit_gpytorch_mll``, with the inducing rule re-run
    #: between them (only for rules that depend on the hyperparameters).
    fit_rounds: int = 2
    #: Fit on Titsias' collapsed bound (True) or the DTC marginal likelihood.
    titsias: bool = True
    #: Largest inducing set chosen at construction by a rule that depends on the
    #: hyperparameters. At that point they are the priors' (the noise prior's mode
    #: is small, so leverage scores are large); the set only has to carry the
    #: first fitting round, and is re-chosen after it.
    initial_max_inducing: int | None = 256
    #: Fit the hyperparameters, and choose the inducing points, on a fixed random
    #: subset of this many training points when there are more (None: all of
    #: them; also a constructor argument). The posterior still uses every point;
    #: at n = 10^6 this turns minutes into seconds, as hyperparameters and a
    #: well-spread inducing set are determined by a few thousand points.
    fit_subset_size: int | None = None
    #: With ``fit_subset_size`` None, an inferred noise level and an input
    #: transform without learnable parameters, choose the inducing points among
    #: a random subset of this many training points when there are more (None:
    #: no automatic subset), and fit the hyperparameters on a random
    #: ``exact_fit_size`` of them (a prefix of the same permutation) whenever
    #: there are more than that: one exact marginal-likelihood fit instead of two
    #: Titsias rounds. Measured on Hartmann-6 with noise sd 0.3 (benchmark
    #: ``default_fit``, one thread), see ``BENCHMARKS.md``; between 600 and 1000
    #: points on a BO loop's data, a fit 1.1-6.6x faster than the rounds with a
    #: held-out NLL 0.00-0.06 nats better.
    automatic_fit_subset_size: int | None = 1000
    #: Behave like the exact GP when the rule's inducing set holds at least this
    #: fraction of the distinct fitting inputs (None: never). At ``m = n / 2`` a
    #: Titsias evaluation already costs more than the exact likelihood's
    #: Cholesky, and the sketch would save nothing: the model then fits the exact
    #: marginal likelihood once (no second round), re-runs the rule once at the
    #: fitted hyperparameters, and keeps every input if the set still covers that
    #: fraction (warning :class:`ExactRegimeWarning`; see :attr:`is_exact`).
    exact_fraction: float | None = 0.5
    #: Fit the exact marginal likelihood once, then choose the inducing set once
    #: at the fitted hyperparameters, whenever the fitting data have at most this
    #: many points (None: only in the exact regime); with the automatic subset,
    #: larger data are fitted on a random this many. Below about 600 points one
    #: exact fit costs less than two Titsias rounds (``../shared/notes/
    #: bo-iteration-profile.md``: 2.5 s against 3.4 s at n = 350, 1.9 s against
    #: 11.7 s on a loop's own data at n = 400); the posterior is still the sketch
    #: unless the set covers ``exact_fraction`` of the inputs.
    exact_fit_size: int | None = 600
    #: Whether entering the exact regime warns (once a process). Off for models
    #: whose regime says nothing to the user, such as the fitting subset: a
    #: filtered warning would still use up the process's one.
    _warns_exact_regime: bool = True

    def log_marginal_likelihood(self) -> Tensor:
        r"""The fitting objective at the current hyperparameters, without priors.

        Titsias' bound (or the DTC marginal likelihood, ``titsias = False``) of
        every observation the posterior holds, conditioned ones included, in the
        model's (outcome-transformed) units; not normalised by ``n``.

        Returns:
            A scalar tensor (``batch_shape`` for fantasy models).
        """
        with torch.no_grad():
            _, state = self._posterior_state()
            return state.log_marginal_likelihood(titsias=self.titsias)

    def _fit_subset_limit(self) -> int | None:
        # ``fit_subset_size`` if set; else the automatic size, which fixed noise
        # (whose subset would need its own noise) and a learnable input transform
        # (whose parameters a subset fitted on transformed inputs would not
        # learn) do not take.
        if self.fit_subset_size is not None:
            return self.fit_subset_size
        if self.train_Yvar is not None or self._learnable_input_transform():
            return None
        return self.automatic_fit_subset_size

    def _hyperparameter_rows(self) -> Tensor:
        # The rows the hyperparameters are fitted on: all of ``fit_subset_size``;
        # for the automatic subset, the first ``exact_fit_size`` rows of the
        # permutation whose first ``automatic_fit_subset_size`` rows the rule
        # chooses among (nested prefixes). Between the two sizes the rule sees
        # every row and the hyperparameters a random ``exact_fit_size`` of them.
        rows = self._subset_rows()
        if (
            self.fit_subset_size is not None
            or self._fit_subset_limit() is None
            or self.exact_fit_size is None
        ):
            return rows
        size = min(self.exact_fit_size, self._fit_subset_limit())
        n = self.train_X.shape[0]
        return rows if n <= size else self._permutation()[:size]

    def _fits_on_subset(self) -> bool:
        # Whether ``custom_fit`` fits the hyperparameters on fewer rows than n.
        return self._hyperparameter_rows().numel() < self.train_X.shape[0]

    def _learnable_input_transform(self) -> bool:
        transform = getattr(self, "input_transform", None)
        return transform is not None and any(
            p.requires_grad for p in transform.parameters()
        )

    def _subset_rows(self) -> Tensor:
        # The fixed random subset of ``fit_subset_size`` rows (all rows if unset).
        n = self.train_X.shape[0]
        check_fit_subset_size(self.fit_subset_size)  # also set after __init__
        size = self._fit_subset_limit()
        if size is None or n <= size:
            return torch.arange(n, device=self.train_X.device)
        return self._permutation()[:size]

    def _permutation(self) -> Tensor:
        # One fixed random order of the rows: the subsets are its prefixes.
        g = torch.Generator().manual_seed(0)
        n = self.train_X.shape[0]
        return torch.randperm(n, generator=g).to(self.train_X.device)

    def _fitting_subset(self) -> Any:
        # A ``NystromGP`` on the hyperparameter rows that shares this
        # model's kernel, mean and likelihood (fitting it fits them), with inputs
        # and targets already transformed by this model's transforms, which are
        # neither refitted nor learned on the subset. (Imported here: the class
        # is assembled from this mixin.)
        from botorch_sketch.models.nystrom_gp import NystromGP

        if self.train_Yvar is not None:
            raise UnsupportedError(
                "fit_subset_size needs an inferred noise level; with train_Yvar "
                "set fit_subset_size = None."
            )
        if self._learnable_input_transform():
            raise UnsupportedError(
                "fit_subset_size cannot be used with an input transform that has "
                "learnable parameters (e.g. Warp): the subset is fitted on "
                "transformed inputs and would not learn them. Set "
                "fit_subset_size = None."
            )
        rows = self._hyperparameter_rows()
        inducing = self._rule
        if self._fixed_inducing is not None or isinstance(inducing, FixedSelector):
            # Fixed rows number this model's data, not the subset's: pass inputs.
            inducing = self.inducing_points
        subset = NystromGP(
            self.transformed_train_X[rows].detach(),
            self.train_targets[rows].unsqueeze(-1),
            inducing=inducing,
            covar_module=self.covar_module,
            mean_module=self.mean_module,
            likelihood=self.likelihood,
            outcome_transform=None,
        )
        # This model's fitting options, set on the class or the instance.
        for name in (
            "fit_rounds",
            "titsias",
            "initial_max_inducing",
            "exact_fraction",
            "exact_fit_size",
        ):
            setattr(subset, name, getattr(self, name))
        # The subset is the fitting data: it must not take a subset of its own.
        subset.automatic_fit_subset_size = None
        return subset

    def compute_custom_loss(
        self, mll: MarginalLogLikelihood | None = None, **kwargs: Any
    ) -> Tensor:
        r"""The negative objective per data point, as ``ExactMarginalLogLikelihood``.

        BoTorch's loss closure calls this instead of ``mll(model(X), y)``, so
        ``fit_gpytorch_mll`` never builds an ``n x n`` matrix. The objective is
        Titsias' bound (or the DTC marginal likelihood, ``titsias = False``) plus
        the log densities of the model's priors, divided by ``n``.

        Args:
            mll: The marginal log likelihood object (unused beyond the interface).
            kwargs: Ignored.

        Returns:
            A scalar loss.
        """
        self._refuse_if_summarised("Fitting")
        if self.is_exact:
            # Titsias' bound with every input inducing is the exact marginal
            # likelihood; gpytorch's one Cholesky costs a third of the DTC
            # algebra at m = n.
            X = self.transformed_train_X
            prior = MultivariateNormal(self.mean_module(X), self.covar_module(X))
            value = self.likelihood(prior).log_prob(self.train_targets)
        else:
            embedding, stats = self._embedding_and_statistics()
            value = WeightPosterior(stats).log_marginal_likelihood(titsias=self.titsias)
        for _, module, prior, closure, _ in self.named_priors():
            value = value + prior.log_prob(closure(module)).sum()
        return -value / self.train_X.shape[0]

    def custom_fit(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None = None,
        closure_kwargs: dict[str, Any] | None = None,
        optimizer_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        r"""Fit hyperparameters, alternating with the inducing rule.

        Called by ``fit_gpytorch_mll``. Each round is BoTorch's own fitting routine
        (L-BFGS-B with retries) on :meth:`compute_custom_loss`.

        Args:
            mll: The marginal log likelihood whose model is ``self``.
            closure: Forward-backward closure, passed to BoTorch's fitting routine.
            closure_kwargs: Passed to BoTorch's fitting routine.
            optimizer_kwargs: Passed to BoTorch's fitting routine.
            kwargs: Passed to BoTorch's fitting routine (e.g. ``optimizer``).

        Returns:
            The fitted ``mll``, in eval mode on success.
        """
        if self._extra_statistics is not None:
            raise UnsupportedError("A fantasy model cannot be refitted.")
        self._refuse_if_summarised("Fitting")
        if self._fits_on_subset():
            subset = self._fitting_subset()
            # The subset's own inducing set is discarded below, so whether it
            # would have been the exact GP says nothing about this model.
            subset._warns_exact_regime = False
            _ = subset.custom_fit(
                ExactMarginalLogLikelihood(subset.likelihood, subset),
                optimizer_kwargs=optimizer_kwargs,
                **kwargs,
            )
            # The hyperparameters are shared modules: re-choose the inducing set on
            # all the data at the fitted values.
            self.select_inducing_points()
            # The rule's fraction is of the rows it chose among: only when those
            # are all the rows does a set that covers most of them make the model
            # the exact GP (at n = 10^6 it would hold every input).
            every_row = self._subset_rows().numel() == self.train_X.shape[0]
            if every_row and self._covers_most():
                self._enter_exact_regime()
            self._cache = None
            return mll.eval()
        small = (
            self.exact_fit_size is not None
            and self._rule is not None
            and self._rule.depends_on_hyperparameters
            and self.train_X.shape[0] <= self.exact_fit_size
        )
        if not small:
            _ = self.inducing_index  # the first choice, if none was made yet
        if small or self._covers_most():
            return self._fit_exact(
                mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
            )
        adaptive = self._rule is not None and self._rule.depends_on_hyperparameters
        rounds = max(1, self.fit_rounds) if adaptive else 1
        for i in range(rounds):
            if i > 0:
                self.select_inducing_points()
            mll = self._fit_round(
                mll, closure, closure_kwargs, optimizer_kwargs, **kwargs
            )
        self._cache = None
        return mll

    @staticmethod
    def _fit_round(
        mll: MarginalLogLikelihood,
        closure: Callable | None,
        closure_kwargs: dict[str, Any] | None,
        optimizer_kwargs: dict[str, Any] | None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        # ``_fit_fallback`` is what ``fit_gpytorch_mll`` runs for models without
        # ``custom_fit``; botorch is pinned, and this keeps its retry policy.
        return _fit_fallback(
            mll=mll,
            closure=closure,
            closure_kwargs=closure_kwargs,
            optimizer_kwargs=optimizer_kwargs,
            **kwargs,
        )

    def _fit_exact(
        self,
        mll: MarginalLogLikelihood,
        closure: Callable | None,
        closure_kwargs: dict[str, Any] | None,
        optimizer_kwargs: dict[str, Any] | None,
        **kwargs: Any,
    ) -> MarginalLogLikelihood:
        # Small data, or the rule's set covers most of them: fit the exact
        # likelihood (the best hyperparameters any inducing set could give), then
        # choose the set once at them. No second round: the hyperparameters are
        # already those of the model the sketch approximates.
        self._use_every_input()
        mll = self._fit_round(mll, closure, closure_kwargs, optimizer_kwargs, **kwargs)
        self.select_inducing_points()
        if self._covers_most():
            self._enter_exact_regime()
        self._cache = None
        return mll

    def _enter_exact_regime(self) -> None:
        # The rule's set covers most inputs: keep them all, and say so (once a
        # process; ``is_exact`` tells every time).
        global _warned_exact_regime
        self._use_every_input()
        if _warned_exact_regime or not self._warns_exact_regime:
            return
        _warned_exact_regime = True
        warnings.warn(
            f"The inducing set would hold {self._inducing_fraction:.0%} of the "
            f"{self.inducing_index.numel()} distinct inputs (exact_fraction="
            f"{self.exact_fraction}); {type(self).__name__} is the exact GP "
            "here. It becomes a sketch once the data outgrow the effective "
            "dimension.",
            ExactRegimeWarning,
            stacklevel=5,
        )
