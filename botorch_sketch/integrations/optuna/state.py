#!/usr/bin/env python3
r"""What ``SketchSampler`` carries from one trial of a study to the next."""

from __future__ import annotations

import json
import threading
import warnings
import weakref
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError
from botorch.exceptions.warnings import InputDataWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import Model
from botorch.optim.core import OptimizationStatus
from botorch.optim.fit import fit_gpytorch_mll_scipy
from gpytorch.mlls import ExactMarginalLogLikelihood
from optuna.distributions import BaseDistribution, distribution_to_json
from optuna.study import Study
from optuna.trial import FrozenTrial
from torch import Tensor

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.integrations.optuna.acquisition import FAILURES
from botorch_sketch.integrations.optuna.encoding import _TKWARGS, _Encoding
from botorch_sketch.integrations.optuna.options import (
    _LARGE_FIT_MAXITER,
    _REFIT_GROWTH,
    _SHORT_FIT_MAXITER,
    _SamplerOptions,
)
from botorch_sketch.integrations.optuna.trials import _SYSTEM_ATTR_MAX_LENGTH
from botorch_sketch.integrations.optuna.warping import _HalfRankWarp, _warped
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning

#: The study's system attributes ``{key}:{output}:{chunk}`` hold the carried
#: model's last fitted hyperparameters (JSON, in chunks the RDB storage takes).
_HYPERPARAMETERS_KEY = "botorch_sketch:hyperparameters"


class _CarriedModels:
    r"""Models, hyperparameters, warpings and encodings of one study's trials.

    Fitted hyperparameters (or carried ``NystromGP``\ s, or the objective's
    warping) by output name are valid for one search space only, and the
    encoded parameters of completed trials (by trial number) for one search
    space of one study: :meth:`use` drops what does not describe the study
    and search space of the next suggestion. The lock keeps ``n_jobs`` threads
    from updating one output's state at once; it is re-entrant, as a
    suggestion holds it and fits models, which take it too.
    """

    def __init__(self, options: _SamplerOptions) -> None:
        r"""Carry nothing yet, for a sampler with these options."""
        self.options = options
        self.warm_space: dict[str, BaseDistribution] | None = None
        self.warm_states: dict[str, dict[str, Tensor]] = {}
        self.incremental: dict[str, IncrementalGP] = {}
        # The objective's warping by output name, re-estimated only when its
        # model is refitted anyway (see ``warp``).
        self.warps: dict[str, _HalfRankWarp] = {}
        # A completed trial's parameters never change, and encoding every
        # trial anew each time costs more than the model at n = 1000.
        self.encoded: dict[int, np.ndarray] = {}
        # The study's number of objectives (see ``use``).
        self.objectives = 1
        # What ``_suggest`` carries from one suggestion to the next.
        self.memo: dict[str, int] = {}
        # The study all of the above describe, as (storage, study id): a
        # weak reference, so that the sampler neither keeps a finished
        # study's storage alive nor mistakes a new storage that reuses a
        # freed one's address for it.
        self.study_key: tuple[weakref.ref, int] | None = None
        self.lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        r"""Pickle without the lock and the study (a weak reference)."""
        state = self.__dict__.copy()
        del state["lock"]
        # The restored sampler encodes its next study's trials afresh but
        # keeps the fitted hyperparameters (see ``use``).
        state["study_key"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        r"""Restore a pickled state with a new lock."""
        self.__dict__.update(state)
        self.__dict__.setdefault("memo", {})
        self.__dict__.setdefault("objectives", 1)
        self.lock = threading.RLock()

    def use(self, study: Study, search_space: dict[str, BaseDistribution]) -> None:
        r"""Drop what does not describe ``study`` and ``search_space``.

        The study is told by its storage and study id, which Optuna does not
        make public: a study's name can be reused once it is deleted, and
        ``load_study`` makes a new ``Study`` object for the same study. Every
        study numbers its trials from 0, so the cached encodings go with
        another study. Models and hyperparameters fitted to another study's
        objective go too, but not those of a sampler just unpickled (no study
        yet), most likely to resume the same study.
        """
        self.objectives = len(study.directions)
        key = self.study_key
        storage, study_id = study._storage, study._study_id
        if key is None or key[0]() is not storage or key[1] != study_id:
            if key is not None:
                self.warm_space = None
            self.study_key = (weakref.ref(storage), study_id)
            self.encoded = {}
            self.memo = {}
        if self.warm_space != search_space:
            self.warm_space = dict(search_space)
            self.warm_states = {}
            self.incremental = {}
            self.warps = {}
            self.encoded = {}
            self.memo = {}

    def encode_completed(
        self, encoding: _Encoding, completed: list[FrozenTrial]
    ) -> Tensor:
        r"""The ``n x D`` encoded parameters of the trials (cached by number)."""
        rows = []
        for t in completed:
            row = self.encoded.get(t.number)
            if row is None:
                row = self.encoded[t.number] = encoding.encode(t.params)
            rows.append(row)
        return torch.as_tensor(np.stack(rows), **_TKWARGS)

    def columns(self, dim: int) -> list[np.ndarray] | None:
        r"""Each parameter's encoded columns in the search space in use, if ``dim``.

        None before a search space is in use (``use``), or when its encoding
        has other than ``dim`` columns (not the caller's points).
        """
        if not self.warm_space:
            return None
        columns = _Encoding(self.warm_space).columns
        return columns if sum(len(c) for c in columns) == dim else None

    def warp(self, train_Y: Tensor, name: str) -> Tensor:
        r"""The objective's values as modelled (see ``_HalfRankWarp``).

        A carried ``NystromGP`` absorbs new trials by a Woodbury step only
        while the earlier rows are unchanged: its warping is re-estimated when
        the model is refitted on schedule anyway and kept in between (new
        values go through the kept map). Other models are fitted anew each
        trial, and so is their warping.
        """
        with self.lock:
            carried = self.options.carries_nystrom
            surrogate = self.incremental.get(name) if carried else None
            return _warped(self.warps, name, train_Y, surrogate)

    def fit(self, train_X: Tensor, train_Y: Tensor, name: str) -> Model:
        r"""Build and fit one output's model, warm-started when possible."""
        options = self.options
        if not isinstance(options.model, type):
            model = options.model(train_X, train_Y)
            if not isinstance(model, Model):
                # Else an AttributeError deep in the acquisition, about
                # ``posterior``, names neither the factory nor what it returned.
                factory = getattr(options.model, "__qualname__", repr(options.model))
                raise InputDataError(
                    f"The model factory {factory} must return a fitted BoTorch "
                    f"Model; it returned a {type(model).__name__}."
                )
            return model
        with self.lock, warnings.catch_warnings():
            # Being exact below a few hundred trials is intended, not news.
            warnings.simplefilter("ignore", ExactRegimeWarning)
            if options.carries_nystrom:
                surrogate = self.incremental.get(name)
                if surrogate is None:
                    optimizer = _Optimizer(self.stored_hyperparameters(name), name)
                    surrogate = self.incremental[name] = IncrementalGP(
                        refit_every=options.refit_every,
                        refit_growth=_REFIT_GROWTH,
                        fit_kwargs={"optimizer": optimizer},
                        **options.incremental_kwargs(
                            train_X.shape[-1],
                            failures=name == FAILURES,
                            several_objectives=self.objectives > 1
                            and name.startswith("objective"),
                            columns=self.columns(train_X.shape[-1]),
                        ),
                    )
                optimizer = surrogate.fit_kwargs.get("optimizer")
                if isinstance(optimizer, _Optimizer):
                    subset = surrogate.model_kwargs.get("fit_subset_size")
                    large = subset is not None and train_X.shape[0] > subset
                    optimizer.maxiter = _LARGE_FIT_MAXITER if large else None
                    # At large N the inducing set changes only at refits: a
                    # point joining it between them re-embeds the set and
                    # folds the read-out twice (``O(n m^2 + m^3)``).
                    surrogate.grow_between_refits = not large
                model = surrogate(train_X, train_Y)
                if surrogate.counts.last in ("built", "refit"):
                    self.store_hyperparameters(name, model)
                return model
            model = options.model(
                train_X, train_Y, **options.output_options(name == FAILURES)
            )
            state = self.warm_states.get(name) if options.warm_start else None
            if state is not None:
                model.load_state_dict(state, strict=False)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            # Only the hyperparameters: the outcome transform's statistics
            # belong to the data they were computed on.
            self.warm_states[name] = {
                key: value.detach().clone() for key, value in model.named_parameters()
            }
        return model

    # ------------------------------------------- hyperparameters in the study

    def _storage(self) -> tuple[Any, int] | None:
        # The study's storage and id (see ``use``), None when it is gone.
        if self.study_key is None:
            return None
        storage = self.study_key[0]()
        return None if storage is None else (storage, self.study_key[1])

    def _space_signature(self) -> list[list[str]]:
        return [
            [name, distribution_to_json(d)]
            for name, d in (self.warm_space or {}).items()
        ]

    def store_hyperparameters(self, name: str, model: Model) -> None:
        r"""Write ``model``'s fitted hyperparameters to the study's system attributes.

        As plain lists of the raw parameters by name, with the search space
        they were fitted for. Another sampler on the study (a resumed study, a
        new worker on shared storage) starts its first fit from them: see
        :meth:`stored_hyperparameters`. System attributes, not user ones:
        they are the sampler's state, as the running trials' shared
        parameters are (:func:`_share_relative_params`), and a user attribute
        would show in ``study.user_attrs`` among the user's own. Optuna 5 sets
        them only through the storage.
        """
        where = self._storage()
        if where is None:
            return
        storage, study_id = where
        text = json.dumps(
            {
                "space": self._space_signature(),
                "parameters": {
                    key: value.detach().cpu().tolist()
                    for key, value in model.named_parameters()
                },
            }
        )
        for i in range(0, len(text), _SYSTEM_ATTR_MAX_LENGTH):
            storage.set_study_system_attr(
                study_id,
                f"{_HYPERPARAMETERS_KEY}:{name}:{i // _SYSTEM_ATTR_MAX_LENGTH}",
                text[i : i + _SYSTEM_ATTR_MAX_LENGTH],
            )
        # A shorter text than an earlier one's: its last chunks are stale.
        storage.set_study_system_attr(
            study_id,
            f"{_HYPERPARAMETERS_KEY}:{name}:{-(-len(text) // _SYSTEM_ATTR_MAX_LENGTH)}",
            "",
        )

    def stored_hyperparameters(self, name: str) -> dict[str, Any] | None:
        r"""The hyperparameters the study holds for output ``name``, if any.

        None unless they were fitted for the current search space (same
        parameters, distributions and order). What is not the JSON the sampler
        writes (an object of the space and the parameters by name, each a
        number or a nested list of numbers) is ignored with an
        ``InputDataWarning``: raised, it stopped every later suggestion.
        """
        where = self._storage()
        if where is None:
            return None
        storage, study_id = where
        attrs = storage.get_study_system_attrs(study_id)
        chunks = []
        while chunk := attrs.get(f"{_HYPERPARAMETERS_KEY}:{name}:{len(chunks)}"):
            chunks.append(chunk)
        if not chunks:
            return None
        try:
            stored = json.loads("".join(chunks))
        except (ValueError, RecursionError) as e:
            # RecursionError: arrays nested too deeply for the parser.
            reason = str(e)[:100] or type(e).__name__
            _warn_ignored(name, f"they are not JSON the sampler reads ({reason})")
            return None
        if not isinstance(stored, dict):
            _warn_ignored(name, f"they are a JSON {type(stored).__name__}, not object")
            return None
        if stored.get("space") != self._space_signature():
            return None
        parameters = stored.get("parameters")
        if not isinstance(parameters, dict):
            _warn_ignored(
                name,
                f"their parameters are a {type(parameters).__name__}, not an "
                "object of the parameters by name",
            )
            return None
        for key, value in parameters.items():
            if not _is_numeric(value):
                _warn_ignored(name, f"{key} is {value!r}, not numbers")
                return None
        return parameters


#: L-BFGS-B's stopping rule for the carried models' fits, looser than scipy's
#: defaults (``ftol`` 2.2e-9, ``gtol`` 1e-5), as ``GPSampler`` stops its own
#: fits early (``gtol`` 1e-2 on its unnormalised loss). Refitting every trial
#: of a two-objective study, a warm-started refit at 60 trials took 61
#: evaluations of the marginal likelihood, and the fits half of the study's
#: time (8.4 s; 4.0 s with these); the cold fit at N = 1000 on the mixed task
#: went from about 7 s to 2.5-3.4 s. The stopped fits did worse only when
#: refitted every trial on noisy data (see ``SketchSampler``'s ``refit_every``).
_FIT_TOLERANCES = {"ftol": 1e-6, "gtol": 1e-4}

#: The fewest correction pairs L-BFGS-B keeps (scipy's ``maxcor``, default 10);
#: a fit keeps at least one per hyperparameter. A carried model had one
#: lengthscale per encoded column (24 to 51 hyperparameters on the mixed spaces
#: of ``suggest --budget mixed-unseen``; one per parameter since, 15 to 32),
#: most of them for inputs that hardly matter, whose lengthscales creep out
#: slowly. With 10 pairs the cold fit on
#: 500 trials stopped at its cap of 150 iterations (loss -0.248 per trial on
#: ``wide``, -0.099 on ``long``); with 50 it stopped by itself after 87 and 91
#: (-0.251, -0.145) in 43% and 60% of the time, and the trials proposed after
#: it were as good (the removed mixed-unseen study: CHANGELOG.md).
_MIN_CORRECTIONS = 50


class _Optimizer:
    r"""``fit_gpytorch_mll``'s optimizer for a carried ``NystromGP``.

    BoTorch's ``fit_gpytorch_mll_scipy``, with at most ``maxiter`` iterations
    when set (the sampler sets it for fits on a subset: see
    ``_LARGE_FIT_MAXITER``; BoTorch accepts a fit so stopped, and does not
    retry it from the priors). Given a study's stored hyperparameters
    (``parameters``), its first call loads them into the model being fitted
    (the fitting subset's, for a ``NystromGP`` fitted on one) and runs a short
    fit: at most ``_SHORT_FIT_MAXITER`` iterations. Otherwise, on a subset
    (``maxiter`` set), the first fit runs from the priors on the whole subset
    (at most ``maxiter`` iterations), and every refit, from the previous
    values, takes at most ``_POLISH_MAXITER``. A fit from the priors that
    stops by itself is restarted from where it stopped (``_restarted_fit``).

    The first fit once started on 200 of the subset's rows, then polished on
    the subset: half the cold suggestion's time on 21-47 encoded columns, but
    the polish stalled in a worse optimum (on 21 columns a loss of -0.18 per
    trial against -0.25 from the priors, the lengthscales at a median of 5.3
    against 8.1: the irrelevant columns' were held short), and the search
    paid: continuing studies of 1000 trials for 20 suggestions, the best
    value rose on 13 of 18 runs without it (``long`` 0.25-0.27 to 0.30-0.31,
    ``wide`` 0.33-0.36 to 0.40, where ``GPSampler`` reaches 0.375 and 0.405),
    and the objective's model refitted on drift less often (the warm median
    on ``long`` 0.33 s to 0.15 s); the removed mixed-unseen study (CHANGELOG.md).
    """

    def __init__(self, parameters: dict[str, Any] | None, name: str = "") -> None:
        self.parameters = parameters
        self.name = name
        self.maxiter: int | None = None
        #: Whether no fit has run yet: the next one starts from the priors.
        self.cold = True

    def __call__(self, mll: Any, *args: Any, **kwargs: Any) -> Any:
        maxiter = self.maxiter
        # Absent from an optimizer pickled before ``cold`` was: not cold.
        cold, self.cold = getattr(self, "cold", False), False
        if self.parameters is not None:
            parameters, self.parameters = self.parameters, None
            # Absent from an optimizer pickled before it named its output.
            problem = _load_hyperparameters(
                mll.model, parameters, getattr(self, "name", "")
            )
            if problem is None:
                # A short fit from the study's values, neither cold nor capped
                # as a refit is.
                return self._fit(mll, args, kwargs, _short_maxiter(maxiter))
        if maxiter is not None and not cold:
            # The hyperparameters are near the optimum (the previous fit's):
            # the fit only polishes them.
            maxiter = min(maxiter, _POLISH_MAXITER)
        if cold:
            return self._restarted_fit(mll, args, kwargs, maxiter)
        return self._fit(mll, args, kwargs, maxiter)

    @staticmethod
    def _fit(mll: Any, args: tuple, kwargs: dict[str, Any], maxiter: int | None) -> Any:
        count = sum(p.numel() for p in mll.parameters() if p.requires_grad)
        options = {
            **_FIT_TOLERANCES,
            "maxcor": max(_MIN_CORRECTIONS, count),
            **(kwargs.get("options") or {}),
        }
        if maxiter is not None:
            options.setdefault("maxiter", maxiter)
        return fit_gpytorch_mll_scipy(mll, *args, **{**kwargs, "options": options})

    @classmethod
    def _restarted_fit(
        cls, mll: Any, args: tuple, kwargs: dict[str, Any], maxiter: int | None
    ) -> Any:
        r"""A fit from the priors, restarted where it stopped by itself.

        With ``_FIT_TOLERANCES``' ``ftol`` one poor line search (an
        iteration that gains under ``1e-6`` of the loss) ends the fit, early
        or not. A restart (a new L-BFGS-B run from the values reached, its
        memory cleared) tells the two apart: where the fit had converged it
        stops within an iteration or two; where it had not, it goes on, and
        is restarted again while a run gains more than ``_RESTART_GAIN`` of
        the loss, ``_MAX_RESTARTS`` times at most, within ``maxiter``
        iterations in all.
        """
        result = cls._fit(mll, args, kwargs, maxiter)
        steps = result.step
        for _ in range(_MAX_RESTARTS):
            if result.status != OptimizationStatus.SUCCESS or (
                maxiter is not None and steps >= maxiter
            ):
                break
            before = result.fval
            result = cls._fit(
                mll, args, kwargs, None if maxiter is None else maxiter - steps
            )
            steps += result.step
            if not before - result.fval > _RESTART_GAIN * max(abs(before), 1.0):
                break
        return result


def _short_maxiter(maxiter: int | None) -> int:
    return min(maxiter or _SHORT_FIT_MAXITER, _SHORT_FIT_MAXITER)


#: The most L-BFGS-B iterations of a refit on a subset, from the previous values.
_POLISH_MAXITER = 30

#: A fit from the priors that stopped by itself is restarted at most this many
#: times, while a run gains more than ``_RESTART_GAIN`` of the loss (per
#: trial, at least 1e-3 nats). On the ``categories`` task of ``suggest
#: --budget mixed-unseen`` the cold fit on 500 trials stopped after 11
#: iterations at a loss of 1.314 per trial, the lengthscales at a median of
#: 0.92: the restart went on for 94 iterations to 0.220 (median 5.8), where
#: the warm refits on drift had reached 0.358 after three of the next eight
#: suggestions (the removed mixed-unseen study: CHANGELOG.md).
_MAX_RESTARTS = 3
_RESTART_GAIN = 1e-3


#: A stored hyperparameter is implausible when its prior's log density is
#: this many nats below the prior's log density at the model's initial value
#: (about 14 standard deviations of a normal prior): far beyond anything a fit
#: reaches, far short of the values that stall one (a noise of ``1e300``).
_IMPLAUSIBLE_NATS = 100.0

#: And when a raw value (or a constrained one) is this large: the sampler's
#: models see standardised outcomes in the unit cube.
_LARGEST_RAW = 1e6


def _load_hyperparameters(
    model: Model, parameters: dict[str, Any], name: str = ""
) -> str | None:
    r"""Copy stored raw hyperparameters into ``model``, if they are plausible.

    Each stored parameter whose name the model has must have its shape and be
    finite; each of the model's priors must find the loaded values plausible
    (log density at most ``_IMPLAUSIBLE_NATS`` below the one at the model's
    initial value, and every value at most ``_LARGEST_RAW``). Stored values
    that are not (a noise of ``1e300``) stalled the fit that starts from them
    and were written back to the study, and the search degraded to random:
    they are ignored with an ``InputDataWarning`` and the model is left at its
    initial values (to be fitted from the priors).

    Args:
        model: The model being fitted, at its initial values.
        parameters: The stored raw hyperparameters by name.
        name: The output's name, for the warning.

    Returns:
        None when loaded, else what was wrong (the model is then unchanged).
    """
    initial = {key: p.detach().clone() for key, p in model.named_parameters()}
    reference = {
        prior_name: prior.log_prob(closure(module)).detach()
        for prior_name, module, prior, closure, _ in model.named_priors()
    }
    problem = None
    with torch.no_grad():
        for key, parameter in model.named_parameters():
            if key not in parameters or not parameter.requires_grad:
                # Absent, or held (deterministic_objective's noise).
                continue
            try:
                value = torch.as_tensor(
                    parameters[key], dtype=parameter.dtype, device=parameter.device
                )
            except (TypeError, ValueError, RuntimeError):
                problem = f"{key} is {parameters[key]!r}, not numbers"
                break
            if value.shape != parameter.shape:
                problem = (
                    f"{key} has shape {tuple(value.shape)}, the model's "
                    f"{tuple(parameter.shape)}"
                )
                break
            if not bool(value.isfinite().all()):
                problem = f"{key} is {value.tolist()}, not finite"
                break
            if bool((value.abs() > _LARGEST_RAW).any()):
                problem = f"{key} is {value.tolist()}, implausibly large"
                break
            parameter.copy_(value)
        if problem is None:
            problem = _implausible(model, reference)
        if problem is not None:
            for key, parameter in model.named_parameters():
                parameter.copy_(initial[key])
            _warn_ignored(name, problem)
    return problem


def _implausible(model: Model, reference: dict[str, Tensor]) -> str | None:
    r"""Which loaded hyperparameter its prior finds implausible, if any."""
    for prior_name, module, prior, closure, _ in model.named_priors():
        value = closure(module).detach()
        try:
            log_prob = prior.log_prob(value).detach()
        except ValueError as e:
            # Outside the prior's support (a stored raw noise of -1e5): torch's
            # argument validation raised, and every suggestion with it.
            parameter = prior_name.removesuffix("_prior")
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            return (
                f"{parameter} {value.tolist()} lies outside the support of its "
                f"prior {type(prior).__name__} ({reason})"
            )
        start = reference.get(prior_name)
        bad = ~log_prob.isfinite() | (value.abs() > _LARGEST_RAW)
        if start is not None and start.shape == log_prob.shape:
            bad = bad | (log_prob < start - _IMPLAUSIBLE_NATS)
        if bool(bad.any()):
            parameter = prior_name.removesuffix("_prior")
            return (
                f"{parameter} {value.tolist()} is implausible under its prior "
                f"{type(prior).__name__} (log density {log_prob.tolist()})"
            )
    return None


def _warn_ignored(name: str, problem: str) -> None:
    warnings.warn(
        f"The study's stored hyperparameters for {name!r} are ignored: "
        f"{problem}. The model is fitted from its priors and the new fit "
        "replaces them.",
        InputDataWarning,
        stacklevel=2,
    )


def _is_numeric(value: Any) -> bool:
    r"""Whether ``value`` is a number or a (nested) list of numbers."""
    # Iterative: a list nested as deep as the parser allows is no error here.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, bool) or not isinstance(item, (int, float)):
            return False
    return True
