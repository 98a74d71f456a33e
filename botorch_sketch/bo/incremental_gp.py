#!/usr/bin/env python3
r"""A ``NystromGP`` carried across the iterations of a BO loop.

BoTorch's loops rebuild and refit the surrogate on all data every iteration.
:class:`IncrementalGP` replaces those two lines with one call that carries the
model forward instead:

- new observations enter the weight posterior by the Woodbury step of
  :meth:`NystromGP.condition_on_observations
  <botorch_sketch.models.nystrom_gp.NystromGP.condition_on_observations>`
  (``O(q m^2)``, hyperparameters and outcome transform unchanged);
- each new input joins the inducing set with its ridge-leverage probability
  ``min(1, qbar * var(x) / lambda)``, BKB's coin [Calandriello2019bkb]_, so the
  set grows with the effective dimension of the data;
- the set never exceeds ``max_inducing`` points: the rule's draws are capped
  there, and once the set is full the coins stop (the cap bounds every step at
  ``O(q m^2 + m^3)`` whatever ``n``);
- the model is rebuilt on all data and refitted from the previous
  hyperparameters (one fitting round, the inducing rule re-run from the current
  set) every ``refit_every`` calls (once the data have also grown by the
  fraction ``refit_growth``), when the inducing set has grown by the factor
  ``redraw_growth`` since it was last drawn, when the per-observation log
  marginal likelihood has fallen by ``drift_tolerance`` nats since the last
  fit, or when the new observations surprise the model (``surprise_tolerance``:
  their standardised residuals under its predictive distribution are too
  large or too small to be draws of it); in both cases the data no longer
  agree with the hyperparameters;
- optionally the hyperparameters are refitted on a bounded subset of the data
  (``hyperparameter_subset`` rows: the newest, the best observation's
  neighbours and a uniform sample,
  :class:`~botorch_sketch.sketching.rules.NeighbourhoodSubset`), so that a
  refit costs the same at ``n = 10^3`` and ``10^5`` and in 60 dimensions as
  in 6; the statistics still use every point.

Between refits the posterior is exactly that of a ``NystromGP`` built on the same
data with the same inducing set, hyperparameters and outcome transform. The
model holds its own copies of the data, so that a caller who corrects earlier
observations in place gets a rebuilt model, not a stale one.

Cost as ``n`` grows: a conditioning step is ``O(q m^2)``; a coin that adds a
point, or a refit, recomputes the statistics from all data (``O(n m^2)``, the
hyperparameters themselves are fitted on a subset of at most
``NystromGP.exact_fit_size`` points). With ``refit_growth`` the refits come at
geometric sizes and their cost per observation stays flat; with
``grow_between_refits=False`` the set changes only at refits, so every other
step is ``O(q m^2)`` (what :func:`~botorch_sketch.bo.large_batch.run_large_batch`
uses at 10^4-10^5 evaluations).

Example:
    >>> surrogate = IncrementalGP(refit_every=10)
    >>> for _ in range(iterations):
    ...     model = surrogate(train_X, train_Y)  # replaces SingleTaskGP + fit
    ...     acqf = qLogNoisyExpectedImprovement(model, X_baseline=train_X)
    ...     candidates, _ = optimize_acqf(acqf, bounds, q=10, ...)
    ...     train_X = torch.cat([train_X, candidates])
    ...     train_Y = torch.cat([train_Y, f(candidates)])

References:

.. [Calandriello2019bkb]
    D. Calandriello, L. Carratino, A. Lazaric, M. Valko, L. Rosasco. Gaussian
    process optimization with adaptive sketching: scalable and no regret. COLT 2019.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_sketch.checks import checked_count, checked_optional_count, checked_real
from botorch_sketch.models.nystrom.data import constant_outcomes_not_warned
from botorch_sketch.models.nystrom.fitting import fitting_subset
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning, NystromGP
from botorch_sketch.models.validation import check_training_data
from botorch_sketch.sketching.rules import (
    Candidates,
    InducingSetCapWarning,
    NeighbourhoodSubset,
    RidgeLeverageSampler,
    SelectionRule,
)


@dataclass
class UpdateCounts:
    r"""What :class:`IncrementalGP` did so far.

    Attributes:
        builds: Models built and fitted from the priors' starting values.
        refits: Models rebuilt on all data and refitted from warm hyperparameters.
        conditioned: Calls that only absorbed observations (Woodbury step).
        grown: Inducing points added by the coins between refits.
        last: What the last call did: ``"built"``, ``"refit"``, ``"conditioned"``
            or ``"unchanged"``.
        last_reason: Why the last refit happened (``"schedule"``, ``"growth"``,
            ``"drift"``, ``"surprise"``, ``"data changed"``), or ``""``.
        last_surprise: The surprise statistic of the last call's new
            observations (see ``IncrementalGP``'s ``surprise_tolerance``), NaN
            when it was not computed.
    """

    builds: int = 0
    refits: int = 0
    conditioned: int = 0
    grown: int = 0
    last: str = ""
    last_reason: str = ""
    last_surprise: float = math.nan


class IncrementalGP:
    r"""Build, fit and carry forward a ``NystromGP`` as the data grow."""

    def __init__(
        self,
        refit_every: int = 10,
        refit_growth: float = 0.0,
        redraw_growth: float = 2.0,
        drift_tolerance: float | None = 0.1,
        qbar: float | None = None,
        max_inducing: int | None = None,
        grow_between_refits: bool = True,
        model_kwargs: dict[str, Any] | None = None,
        fit_kwargs: dict[str, Any] | None = None,
        generator: torch.Generator | None = None,
        surprise_tolerance: float | None = None,
        surprise_growth: float = 0.1,
        hyperparameter_subset: int | None = None,
        subset_rule: SelectionRule | None = None,
    ) -> None:
        r"""Configure the schedule.

        Args:
            refit_every: Refit after this many calls that brought new data (1:
                every call, warm-started).
            refit_growth: Refit on that schedule only once the data have also
                grown by this fraction since the last fit (0: the count alone
                decides). With ``0.05`` a refit comes every ``refit_every``
                calls while that adds 5% to the data, and every 5% of the data
                after: the hyperparameters of a thousand observations barely
                move with ten more.
            redraw_growth: Refit (and redraw the inducing set) once the set has
                grown by this factor since it was last drawn.
            drift_tolerance: Refit when the per-observation log marginal
                likelihood at the current hyperparameters has fallen by this many
                nats since the last fit; None never checks.
            qbar: BKB's oversampling factor for the coins; defaults to the model's
                ``RidgeLeverageSampler``'s ``qbar`` (2 if it has another rule).
            max_inducing: The largest inducing set: the cap of the default
                ``RidgeLeverageSampler`` (``max_size``, which scales ``qbar``
                down for a draw that would exceed it) and of the coins between
                refits (beyond it, the new points with the largest leverage
                join). None keeps the rule's own cap (1024 for the default).
            grow_between_refits: Toss the coins after every call (True), or
                change the set only at refits (False: no ``O(n m^2)`` step
                between refits).
            model_kwargs: Passed to ``NystromGP`` (``inducing``,
                ``covar_module``, transforms, ...). A ``covar_module`` is a
                template: each model built gets a deep copy of it, so that
                no two models share their hyperparameters.
            fit_kwargs: Passed to ``fit_gpytorch_mll`` (e.g.
                ``{"optimizer_kwargs": {"options": {"maxiter": 50}}}`` caps
                L-BFGS-B's iterations).
            generator: The random generator of the coins and of the subset rule.
            surprise_tolerance: Refit when the new observations' mean squared
                standardised residual ``s = mean(z_i^2)``, ``z_i = (y_i -
                mu(x_i)) / sqrt(var(x_i) + noise)`` under the current model,
                departs from 1 by more than this many of its standard
                deviations ``sqrt(2 / b)`` (``b`` new observations); None never
                tests. Each call's statistic is ``counts.last_surprise``.
            surprise_growth: A surprise refits only once the data have grown by
                this fraction since the last fit (a bound on how often).
            hyperparameter_subset: Fit the hyperparameters on at most this many
                rows, chosen by ``subset_rule`` (the newest third forced); None
                fits as ``NystromGP`` does. Not with ``train_Yvar``.
            subset_rule: The rule choosing those rows; defaults to
                :class:`~botorch_sketch.sketching.rules.NeighbourhoodSubset`.
        """
        if int(refit_every) != refit_every or refit_every < 1:
            raise InputDataError(
                f"refit_every must be a positive integer, got {refit_every}."
            )
        if not refit_growth >= 0:
            raise InputDataError(f"refit_growth must be >= 0, got {refit_growth}.")
        if not redraw_growth > 1:
            raise InputDataError(f"redraw_growth must be > 1, got {redraw_growth}.")
        if drift_tolerance is not None and not drift_tolerance > 0:
            raise InputDataError(
                f"drift_tolerance must be positive or None, got {drift_tolerance}."
            )
        if qbar is not None and not qbar > 0:
            raise InputDataError(f"qbar must be positive, got {qbar}.")
        self.max_inducing = checked_optional_count(max_inducing, "max_inducing")
        if self.max_inducing is not None:
            inducing = (model_kwargs or {}).get("inducing")
            if inducing is None:
                model_kwargs = {
                    **(model_kwargs or {}),
                    "inducing": RidgeLeverageSampler(
                        max_size=self.max_inducing, generator=generator
                    ),
                }
            elif not isinstance(inducing, SelectionRule):
                raise InputDataError(
                    "max_inducing caps a rule's inducing set; model_kwargs gives "
                    "fixed inducing inputs."
                )
        if not isinstance(grow_between_refits, bool):
            # "no" read as True: a string is a user's mistake, not a choice.
            raise InputDataError(
                f"grow_between_refits must be True or False, got "
                f"{grow_between_refits!r}."
            )
        if surprise_tolerance is not None:
            surprise_tolerance = checked_real(
                surprise_tolerance, "surprise_tolerance", positive=True
            )
        self.surprise_tolerance = surprise_tolerance
        self.surprise_growth = checked_real(
            surprise_growth, "surprise_growth", minimum=0.0
        )
        self.hyperparameter_subset = checked_optional_count(
            hyperparameter_subset, "hyperparameter_subset", minimum=2
        )
        if subset_rule is None and hyperparameter_subset is not None:
            subset_rule = NeighbourhoodSubset(generator=generator)
        self.subset_rule = subset_rule
        self.grow_between_refits = grow_between_refits
        self.refit_every = int(refit_every)
        self.refit_growth = float(refit_growth)
        self.redraw_growth = redraw_growth
        self.drift_tolerance = drift_tolerance
        self.qbar = qbar
        self.model_kwargs = dict(model_kwargs or {})
        self.fit_kwargs = dict(fit_kwargs or {})
        self.generator = generator
        self.model: NystromGP | None = None
        self.counts = UpdateCounts()
        self._since_refit = 0
        self._drawn_size = 0
        self._fitted_size = 0
        self._fitted_per_point = 0.0
        # The model as data: its state at the last build and the Woodbury
        # steps since (rows after each step, inducing rows it added).
        self._built: dict[str, Any] | None = None
        self._steps: list[tuple[int, Tensor]] = []

    def __call__(
        self, train_X: Tensor, train_Y: Tensor, train_Yvar: Tensor | None = None
    ) -> NystromGP:
        r"""The fitted model of all observations so far.

        Args:
            train_X: A ``n x d`` tensor: the inputs of the previous call followed
                by the new ones (otherwise the model is rebuilt and refitted).
            train_Y: A ``n x 1`` tensor of observations, likewise.
            train_Yvar: An optional ``n x 1`` tensor of observed noise variances.

        Returns:
            A fitted ``NystromGP`` (a new object whenever data were added).
        """
        # Before anything is built: a bad shape failed later on rows the user
        # never touched (``inducing_index``, or only the new rows quoted).
        check_training_data(type(self).__name__, train_X, train_Y, train_Yvar)
        # Own copies: a caller who corrects earlier rows in place must see them
        # compared with what the model was built on, not with themselves.
        train_X, train_Y = train_X.detach().clone(), train_Y.detach().clone()
        if train_Yvar is not None:
            train_Yvar = train_Yvar.detach().clone()
        model = self.model
        if model is None:
            return self._build(train_X, train_Y, train_Yvar, warm=None)
        old_n = model.train_X.shape[0]
        if not self._extends(train_X, train_Y, train_Yvar):
            return self._refit(train_X, train_Y, train_Yvar, "data changed")
        if train_X.shape[0] == old_n:
            self.counts.last, self.counts.last_reason = "unchanged", ""
            return model
        if self.refit_due(train_X.shape[0]):
            return self._refit(train_X, train_Y, train_Yvar, "schedule")
        new_X, new_Y = train_X[old_n:], train_Y[old_n:]
        if self._surprised(new_X, new_Y, train_X.shape[0]):
            return self._refit(train_X, train_Y, train_Yvar, "surprise")
        noise = None
        if train_Yvar is not None:
            # ``condition_on_observations`` takes outcome-transformed noise.
            noise = train_Yvar[old_n:]
            if hasattr(model, "outcome_transform"):
                _, noise = model.outcome_transform(new_Y, noise)
        conditioned = model.condition_on_observations(new_X, new_Y, noise=noise)
        joined = torch.zeros(0, dtype=torch.long)
        if self.grow_between_refits:
            joined = self._grow(conditioned, old_n)
        size = conditioned.inducing_index.numel()
        if size >= self.redraw_growth * self._drawn_size:
            return self._refit(train_X, train_Y, train_Yvar, "growth")
        if self.drift_tolerance is not None:
            per_point = float(conditioned.log_marginal_likelihood()) / train_X.shape[0]
            if self._fitted_per_point - per_point > self.drift_tolerance:
                return self._refit(train_X, train_Y, train_Yvar, "drift")
        self.model = conditioned
        self._steps.append((train_X.shape[0], joined.cpu()))
        self._since_refit += 1
        self.counts.conditioned += 1
        self.counts.last, self.counts.last_reason = "conditioned", ""
        return conditioned

    def refit_due(self, n: int) -> bool:
        r"""Whether a call that extends the data to ``n`` rows refits on schedule.

        True before the first build. A caller that transforms its observations
        with statistics of all of them (``SketchSampler`` warps its objective)
        can re-estimate those statistics only at such calls: the earlier rows
        then change only when the model is refitted anyway, and the calls in
        between stay Woodbury steps.

        Args:
            n: The number of rows the next call will pass.

        Returns:
            Whether ``refit_every`` and ``refit_growth`` call for a refit then
            (the growth of the inducing set and the drift of the likelihood,
            which also refit, are known only once the new rows are absorbed).
        """
        model = self.model
        if model is None:
            return True
        return (
            n > model.train_X.shape[0]
            and self._since_refit + 1 >= self.refit_every
            and n >= (1 + self.refit_growth) * self._fitted_size
        )

    def surprise(self, new_X: Tensor, new_Y: Tensor, chunk_size: int = 4096) -> float:
        r"""How far new observations are from draws of the current model.

        ``(mean(z_i^2) - 1) / sqrt(2 / b)`` with ``z_i`` the standardised
        residuals of the ``b`` observations under the model's predictive
        distribution (marginals, the noise included): about ``N(0, 1)`` when
        the hyperparameters describe the data, large when the observations
        vary more than the model expects, very negative when less.

        Args:
            new_X: A ``b x d`` tensor of inputs the model has not seen.
            new_Y: A ``b x 1`` tensor of their observations.
            chunk_size: Points per posterior call (a positive integer).

        Returns:
            The statistic (NaN before the first build).
        """
        chunk_size = checked_count(chunk_size, "chunk_size")
        model = self.model
        if model is None or new_X.shape[0] == 0:
            return math.nan
        with torch.no_grad():
            z2 = []
            for x, y in zip(
                new_X.split(chunk_size), new_Y.split(chunk_size), strict=True
            ):
                posterior = model.posterior(x.unsqueeze(-2), observation_noise=True)
                mean = posterior.mean.reshape(-1)
                var = posterior.variance.reshape(-1).clamp_min(1e-12)
                z2.append((y.reshape(-1) - mean).square() / var)
            b = new_X.shape[0]
            return float((torch.cat(z2).mean() - 1.0) / math.sqrt(2.0 / b))

    def _surprised(self, new_X: Tensor, new_Y: Tensor, n: int) -> bool:
        self.counts.last_surprise = math.nan
        if self.surprise_tolerance is None:
            return False
        if n < (1 + self.surprise_growth) * self._fitted_size:
            return False
        statistic = self.surprise(new_X, new_Y)
        self.counts.last_surprise = statistic
        return abs(statistic) > self.surprise_tolerance

    # ------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        r"""The schedule's counters and the carried model, as plain data.

        The model is saved as what made it: its parameters and buffers (the
        hyperparameters, the outcome transform's statistics), inducing rows and
        number of rows at its last build or refit, then the row counts of the
        Woodbury steps since (and the inducing rows each added). Tensors,
        numbers, strings and None only: ``torch.load(weights_only=True)``
        reads it back, and nothing runs on load. The data themselves are the
        caller's (see :meth:`load_state_dict`).

        Returns:
            A dict.
        """
        return {
            "since_refit": self._since_refit,
            "drawn_size": self._drawn_size,
            "fitted_size": self._fitted_size,
            "fitted_per_point": self._fitted_per_point,
            "counts": dataclasses.asdict(self.counts),
            "built": None if self.model is None else dict(self._built),
            "steps": [[rows, joined] for rows, joined in self._steps],
            "rows": 0 if self.model is None else self.model.train_X.shape[0],
        }

    def load_state_dict(
        self, state: dict[str, Any], train_X: Tensor, train_Y: Tensor
    ) -> None:
        r"""Restore :meth:`state_dict`'s model on the data it was made of.

        The model is rebuilt on the first rows of the data with the saved
        parameters and inducing rows, then conditioned step by step as it was:
        its posterior is the saved model's, to rounding, and the next call
        continues the same schedule. Configure this ``IncrementalGP`` as the
        saved one was (``model_kwargs`` and the schedule are code, not data).

        Args:
            state: A :meth:`state_dict`.
            train_X: A ``n x d`` tensor whose first rows are the saved model's
                training inputs.
            train_Y: A ``n x 1`` tensor of their observations.
        """
        try:
            self._since_refit = int(state["since_refit"])
            self._drawn_size = int(state["drawn_size"])
            self._fitted_size = int(state["fitted_size"])
            self._fitted_per_point = float(state["fitted_per_point"])
            self.counts = UpdateCounts(**state["counts"])
            built, steps, rows = state["built"], state["steps"], int(state["rows"])
        except (KeyError, TypeError, ValueError) as e:
            raise InputDataError(
                f"Not an IncrementalGP state: {type(e).__name__} {e}."
            ) from e
        self._steps = [(int(n), joined) for n, joined in steps]
        self.model, self._built = None, built
        if built is None:
            return
        if train_X.shape[0] < rows or train_Y.shape[0] < rows:
            raise InputDataError(
                f"The saved model was trained on {rows} rows; {train_X.shape[0]} "
                "were given."
            )
        X, Y = train_X[:rows].detach().clone(), train_Y[:rows].detach().clone()
        first = int(built["rows"])
        kwargs = dict(self.model_kwargs)
        if isinstance(kwargs.get("covar_module"), Kernel):
            kwargs["covar_module"] = copy.deepcopy(kwargs["covar_module"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InducingSetCapWarning)
            model = NystromGP(X[:first], Y[:first], **kwargs)
            try:
                model.load_state_dict(built["parameters"])
            except RuntimeError as e:
                raise InputDataError(
                    "The saved model's parameters do not fit this IncrementalGP's "
                    f"model_kwargs: {e}"
                ) from e
            model.exact_fraction = built["exact_fraction"]
            if built["inducing_index"] is not None:
                model._inducing.set_rows(
                    built["inducing_index"].to(X.device), bool(built["every_input"])
                )
            model.eval()
            model.clear_posterior_state()
            before = first
            for after, joined in self._steps:
                model = model.condition_on_observations(
                    X[before:after], Y[before:after]
                )
                if joined.numel() > 0:
                    model.add_inducing_points(joined.to(X.device))
                before = after
        self.model = model

    # ----------------------------------------------------------------- steps

    def _extends(self, X: Tensor, Y: Tensor, Yvar: Tensor | None) -> bool:
        # The new data must start with the model's data, unchanged.
        model = self.model
        n = model.train_X.shape[0]
        if X.shape[0] < n or X.shape[-1] != model.train_X.shape[-1]:
            return False
        if (Yvar is None) != (model.train_Yvar is None):
            return False
        same = torch.equal(X[:n], model.train_X) and torch.equal(Y[:n], model.train_Y)
        if Yvar is not None:
            same = same and torch.equal(Yvar[:n], model.train_Yvar)
        return same

    def _grow(self, model: NystromGP, old_n: int) -> Tensor:
        # BKB's coin for each new input: it joins the inducing set with
        # probability min(1, qbar * var / lambda) under the updated posterior,
        # the ridge leverage a full redraw would give it.
        with torch.no_grad():
            X_new = model.train_X[old_n:]
            var = model.posterior(X_new).variance.squeeze(-1)
            if hasattr(model, "outcome_transform"):
                # The posterior is in the data's units; the noise is not.
                _, var_tf = model.outcome_transform(
                    torch.zeros_like(var).unsqueeze(-1), var.unsqueeze(-1)
                )
                var = var_tf.squeeze(-1)
            noise = model.likelihood.noise.expand(model.train_X.shape[0])[old_n:]
            p = (self._coin_qbar(model) * var / noise).clamp(0, 1)
            u = torch.rand(p.shape, generator=self.generator, dtype=p.dtype)
            won = (u.to(p.device) < p).nonzero().squeeze(-1)
            room = self._room(model)
            if won.numel() > room:
                # The cap: the winners with the largest leverage join.
                won = won[p[won].argsort(descending=True)[:room]].sort().values
            joined = won + old_n
        if joined.numel() > 0:
            model.add_inducing_points(joined)
            self.counts.grown += joined.numel()
        return joined

    def _room(self, model: NystromGP) -> int:
        # Points the set may still take: ``max_inducing``, else the rule's cap.
        cap = self.max_inducing
        if cap is None:
            cap = getattr(model.inducing_rule, "max_size", None)
        if cap is None:
            return model.train_X.shape[0]
        return max(0, cap - model.inducing_index.numel())

    def _coin_qbar(self, model: NystromGP) -> float:
        if self.qbar is not None:
            return self.qbar
        rule = model.inducing_rule
        return rule.qbar if isinstance(rule, RidgeLeverageSampler) else 2.0

    def _refit(
        self, X: Tensor, Y: Tensor, Yvar: Tensor | None, reason: str
    ) -> NystromGP:
        # Changed data (rows removed or reordered) keep the warm hyperparameters
        # but not the inducing set, whose row numbers no longer mean the same;
        # changed values at the same inputs (re-estimated warping, corrected
        # observations) keep it, as a scheduled refit does.
        previous = self.model
        n = previous.train_X.shape[0]
        same_rows = reason != "data changed" or (
            X.shape[0] >= n and torch.equal(X[:n], previous.train_X)
        )
        model = self._build(X, Y, Yvar, warm=previous, same_rows=same_rows)
        self.counts.last_reason = reason
        return model

    def _build(
        self,
        X: Tensor,
        Y: Tensor,
        Yvar: Tensor | None,
        warm: NystromGP | None,
        same_rows: bool = True,
    ) -> NystromGP:
        with warnings.catch_warnings():
            if self.max_inducing is not None:
                # The cap is the caller's own setting: the rule's note that it
                # binds came at every refit of a long loop (dozens a run).
                warnings.simplefilter("ignore", InducingSetCapWarning)
            return self._build_and_fit(X, Y, Yvar, warm, same_rows)

    def _build_and_fit(
        self,
        X: Tensor,
        Y: Tensor,
        Yvar: Tensor | None,
        warm: NystromGP | None,
        same_rows: bool,
    ) -> NystromGP:
        kwargs = dict(self.model_kwargs)
        if isinstance(kwargs.get("covar_module"), Kernel):
            kwargs["covar_module"] = copy.deepcopy(kwargs["covar_module"])
        # (Nearly) constant outcomes are warned of at the first build: each
        # refit of a loop warned again.
        first = warm is None
        with contextlib.nullcontext() if first else constant_outcomes_not_warned():
            model = NystromGP(X, Y, train_Yvar=Yvar, **kwargs)
        if self.max_inducing is not None and X.shape[0] > self.max_inducing:
            # The exact regime would make every input inducing, past the cap.
            model.exact_fraction = None
        on_subset = (
            self.hyperparameter_subset is not None
            and Yvar is None
            and X.shape[0] > self.hyperparameter_subset
        )
        if warm is not None:
            self._warm_start(model, warm, same_rows, select=not on_subset)
        try:
            with warnings.catch_warnings():
                # A carried model starts with every input inducing (the exact
                # regime) and grows out of it: nothing for the caller to act on.
                warnings.simplefilter("ignore", ExactRegimeWarning)
                if on_subset:
                    self._fit_on_subset(model)
                else:
                    fit_gpytorch_mll(
                        ExactMarginalLogLikelihood(model.likelihood, model),
                        **self.fit_kwargs,
                    )
        except ModelFittingError as e:
            # BoTorch restores the starting values: a long loop goes on with them.
            warnings.warn(
                f"Fitting failed ({e}); the model keeps its starting hyperparameters.",
                OptimizationWarning,
                stacklevel=4,
            )
        index = model.inducing_index
        if self.max_inducing is not None and index.numel() > self.max_inducing:
            # The rule caps the expected size; the cap is a hard one: the
            # rule's first picks at the fitted hyperparameters.
            model.select_inducing_points(max_size=self.max_inducing)
        self.model = model
        index = model.inducing_index
        self._built = {
            "rows": X.shape[0],
            "parameters": {
                k: v.detach().clone() for k, v in model.state_dict().items()
            },
            "inducing_index": None if index is None else index.detach().clone(),
            "every_input": bool(model._inducing.every_input),
            "exact_fraction": model.exact_fraction,
        }
        self._steps = []
        self._since_refit = 0
        self._drawn_size = model.inducing_index.numel()
        n = X.shape[0]
        self._fitted_size = n
        self._fitted_per_point = float(model.log_marginal_likelihood()) / n
        if warm is None:
            self.counts.builds += 1
            self.counts.last = "built"
        else:
            self.counts.refits += 1
            self.counts.last = "refit"
        self.counts.last_reason = ""
        return model

    def _fit_on_subset(self, model: NystromGP) -> None:
        # The shared kernel, mean and likelihood fitted on the rule's rows (the
        # newest third forced), then the inducing rule run once on all the data
        # at them (from the warm set, if any).
        n, size = model.train_X.shape[0], self.hyperparameter_subset
        newest = torch.arange(n - size // 3, n, device=model.train_X.device)
        candidates = Candidates(
            X=model.transformed_train_X.detach(), scores=model.train_targets.detach()
        )
        rows = self.subset_rule.select(candidates, size, forced=newest)
        subset = fitting_subset(model, NystromGP, rows=rows)
        subset.warn_exact_regime = False
        subset.exact_fit_size = max(size, subset.exact_fit_size or 0)
        fit_gpytorch_mll(
            ExactMarginalLogLikelihood(subset.likelihood, subset), **self.fit_kwargs
        )
        model.select_inducing_points(max_size=self.max_inducing)
        model.clear_posterior_state()

    @staticmethod
    def _warm_start(
        model: NystromGP, previous: NystromGP, same_rows: bool, select: bool = True
    ) -> None:
        # The previous hyperparameters (parameters only: the transforms belong to
        # the new data), then the inducing rule run once from the previous set
        # when its rows are still the first rows of the data (``same_rows``).
        # One fitting round follows: the hyperparameters are near the optimum.
        old = dict(previous.named_parameters())
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if name in old and old[name].shape == parameter.shape:
                    parameter.copy_(old[name])
        if (
            same_rows
            and previous.inducing_index is not None
            and model.inducing_rule is not None
        ):
            model.inducing_index = previous.inducing_index
            if select:
                model.select_inducing_points()
        model.fit_rounds = 1
