#!/usr/bin/env python3
r"""The sampler's options, checked once when it is built."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.models.model import Model
from gpytorch.constraints import GreaterThan
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import GammaPrior
from optuna.samplers import BaseSampler
from torch import Tensor

from botorch_sketch.integrations.optuna.kernel import _gpsampler_kernel
from botorch_sketch.models import NystromGP
from botorch_sketch.sketching.rules import SelectionRule

#: ``(train_X, train_Y) -> fitted Model``: ``train_X`` is ``n x D`` in the unit
#: cube, ``train_Y`` is ``n x 1`` (to be maximised), both float64.
ModelFactory = Callable[[Tensor, Tensor], Model]

#: Scheduled refits also wait for the trials to grow by 5% (every ``refit_every``
#: trials up to 200, every 5% of the trials after): see ``IncrementalGP``.
_REFIT_GROWTH = 0.05

#: A study's stored hyperparameters start a new sampler's first fit, which then
#: takes at most this many L-BFGS-B iterations.
_SHORT_FIT_MAXITER = 50
#: Fits on a subset (more trials than ``fit_subset_size``) take at most this
#: many: on the mixed benchmark task at N = 1000 a fit from the priors ran 1570
#: iterations (80 s) for a test error that 150 (10 s) already reached, the
#: rest creeping the lengthscales of irrelevant inputs towards infinity.
_LARGE_FIT_MAXITER = 150
#: The model of where trials fail (``failed_trials="constraint"``) is a coarse
#: surface: its carried ``NystromGP`` takes at most this many inducing points
#: and fits on at most this many trials, so that it adds little to a
#: suggestion's cost at N = 1000.
_FAILURES_MAX_INDUCING = 128
_FAILURES_FIT_SUBSET_SIZE = 200
#: The floor of the noise variance inferred for each objective of a study of
#: several (of the standardised values): ``GPSampler``'s, where BoTorch's is
#: ``1e-4``. At BoTorch's floor a wide objective (Branin's 0.4 to 300 in
#: BraninCurrin) kept a posterior standard deviation of 1% of its spread at
#: the trials: the hypervolume improvement of going below its best value
#: stayed large where the front's end has the widest cell, and every late
#: trial went to that end (``suggest --budget two-objective-unseen``).
_OBJECTIVES_NOISE_FLOOR = 1e-6
#: The noise variance of the objectives' and constraints' models with
#: ``deterministic_objective`` (of the standardised values): ``GPSampler``'s
#: minimum, at which it holds its noise then.
_DETERMINISTIC_NOISE = 1e-6


@dataclass(frozen=True)
class _SamplerOptions:
    r"""``SketchSampler``'s options but its independent sampler, checked.

    The arguments are those of ``SketchSampler``; a bad one raises
    ``InputDataError`` or ``UnsupportedError`` naming it. ``model_options``
    becomes a new dict (None: empty), ``seed`` a Python ``int`` (or None).
    """

    model: type[Model] | ModelFactory
    model_options: dict[str, Any] | None
    seed: int | None
    n_startup_trials: int
    num_restarts: int
    raw_samples: int
    mc_samples: int
    max_baseline: int
    warm_start: bool
    refit_every: int
    acquisition: str
    warp_objective: bool
    warn_independent_sampling: bool
    # Defaults: options pickled before they existed come back with them.
    max_inducing: int | None = 384
    fit_subset_size: int | None = 500
    failed_trials: str = "constraint"
    deterministic_objective: bool = False

    def __post_init__(self) -> None:
        _check_model(self.model, self.model_options)
        _check_bool("deterministic_objective", self.deterministic_objective)
        if self.deterministic_objective:
            _check_fixed_noise(self.model, self.model_options)
        _check_seed(self.seed)
        _check_int("n_startup_trials", self.n_startup_trials, 0)
        _check_int("num_restarts", self.num_restarts, 1)
        _check_int("raw_samples", self.raw_samples, 1)
        _check_int("mc_samples", self.mc_samples, 1)
        _check_int("max_baseline", self.max_baseline, 1)
        _check_int("refit_every", self.refit_every, 1)
        _check_acquisition(self.acquisition)
        _check_failed_trials(self.failed_trials)
        if self.max_inducing is not None:
            _check_int("max_inducing", self.max_inducing, 1)
        if self.fit_subset_size is not None:
            _check_int("fit_subset_size", self.fit_subset_size, 2)
        _check_bool("warp_objective", self.warp_objective)
        if self.raw_samples < self.num_restarts:
            raise InputDataError(
                f"raw_samples ({self.raw_samples}) must be at least num_restarts "
                f"({self.num_restarts}): the restarts are chosen from the raw samples."
            )
        object.__setattr__(self, "model_options", dict(self.model_options or {}))
        object.__setattr__(self, "seed", None if self.seed is None else int(self.seed))

    @property
    def analytic(self) -> bool:
        r"""Whether a trial chosen alone maximises analytic ``LogExpectedImprovement``.

        Else always the Monte Carlo acquisition.
        """
        return self.acquisition == "auto"

    @property
    def carries_nystrom(self) -> bool:
        r"""Whether ``NystromGP`` is carried by ``IncrementalGP`` between trials."""
        return self.model is NystromGP and self.warm_start

    def incremental_kwargs(
        self,
        dim: int,
        failures: bool = False,
        several_objectives: bool = False,
        columns: Sequence[np.ndarray] | None = None,
    ) -> dict[str, Any]:
        r"""``IncrementalGP``'s caps and kernel, for ``dim`` encoded columns.

        The caps are the inducing set's size and the fitting subset's. Each
        applies unless ``model_options`` already decide it: fixed
        inducing inputs (no rule to cap), a ``fit_subset_size`` of their own,
        or an input transform or observed noise (which a fitting subset
        does not support), a ``covar_module`` (else ``GPSampler``'s kernel:
        ``kernel._gpsampler_kernel``). ``failures``: for the model of where
        trials fail, whose caps are at most ``_FAILURES_MAX_INDUCING`` and
        ``_FAILURES_FIT_SUBSET_SIZE``, and which keeps BoTorch's kernel: with
        ``GPSampler``'s, the sampler proposed the same failing points again
        (4-5 repeats among 15-16 failed trials in the corner test of
        ``test_optuna_sampler``, seeds 0-2, against 0-1).
        ``columns``: each parameter's encoded columns, or None; a categorical
        parameter's share one lengthscale in ``GPSampler``'s kernel.
        ``several_objectives``: for the model of one objective of several,
        whose inferred noise takes ``GPSampler``'s prior and may go down to
        ``_OBJECTIVES_NOISE_FLOOR`` (``_objective_likelihood``) unless
        ``model_options`` give a ``likelihood``. With
        ``deterministic_objective``, the objectives' and constraints' models
        hold their noise at ``_DETERMINISTIC_NOISE`` (see
        :meth:`output_options`).
        """
        model_options = self.output_options(failures)
        if not failures:
            model_options.setdefault("covar_module", _gpsampler_kernel(dim, columns))
        if several_objectives and not failures:
            model_options.setdefault("likelihood", _objective_likelihood())
        kwargs: dict[str, Any] = {}
        inducing = model_options.get("inducing")
        cap = self.max_inducing
        subset = self.fit_subset_size
        if failures:
            cap = min(cap or _FAILURES_MAX_INDUCING, _FAILURES_MAX_INDUCING)
            subset = min(subset or _FAILURES_FIT_SUBSET_SIZE, _FAILURES_FIT_SUBSET_SIZE)
        if failures:
            # Its values are labels (+-1/2), not Gaussian: one failure where
            # it expected a completed trial lowers the likelihood by tens
            # of nats, and its drift check refitted the model (150 L-BFGS-B
            # iterations) after most such trials once a quarter of them failed.
            # Its scheduled refits remain.
            kwargs["drift_tolerance"] = None
        if cap is not None and (
            inducing is None or isinstance(inducing, SelectionRule)
        ):
            kwargs["max_inducing"] = cap
        if (
            subset is not None
            and "fit_subset_size" not in model_options
            and model_options.get("input_transform") is None
        ):
            kwargs["model_kwargs"] = {**model_options, "fit_subset_size": subset}
        else:
            kwargs["model_kwargs"] = dict(model_options)
        return kwargs

    def output_options(self, failures: bool = False) -> dict[str, Any]:
        r"""``model_options`` for one output's model, as a new dict.

        With ``deterministic_objective``, except for the model of where trials
        fail (``failures``): with a new likelihood whose noise is held at
        ``_DETERMINISTIC_NOISE``, as ``GPSampler`` holds its noise at its
        minimum then (for its objectives and constraints).
        """
        model_options = dict(self.model_options or {})
        if self.deterministic_objective and not failures:
            model_options["likelihood"] = _fixed_noise_likelihood()
        return model_options


def _fixed_noise_likelihood() -> GaussianLikelihood:
    r"""A Gaussian likelihood whose noise is ``_DETERMINISTIC_NOISE``, not fitted."""
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(0.0))
    likelihood.noise = _DETERMINISTIC_NOISE
    # Left out of fit_gpytorch_mll's parameters, as GPyTorch fixes one.
    likelihood.raw_noise.requires_grad_(False)
    return likelihood


def _objective_likelihood() -> GaussianLikelihood:
    r"""``GPSampler``'s prior and floor on the noise, on a GPyTorch likelihood.

    ``Gamma(1.1, 30)`` and at least ``_OBJECTIVES_NOISE_FLOOR``. BoTorch's
    ``LogNormal(-4, 1)`` prior is about 40 nats lower at a noise of ``1e-6``
    than at its mode (the gamma prior under 1): with it and the lower floor,
    the late trials still stayed at Branin's end on three of five
    BraninCurrin seeds.
    """
    # GreaterThan's softplus transform (BoTorch's floor has none): L-BFGS-B
    # reaches a noise near 1e-6 in a few steps of the raw value.
    return GaussianLikelihood(
        noise_prior=GammaPrior(1.1, 30.0),
        noise_constraint=GreaterThan(_OBJECTIVES_NOISE_FLOOR),
    )


def _check_model(model: Any, model_options: dict[str, Any] | None) -> None:
    if isinstance(model, type):
        if not issubclass(model, Model):
            raise UnsupportedError(
                f"model must be a BoTorch Model class or a factory "
                f"(train_X, train_Y) -> fitted Model; got the class {model!r}."
            )
        try:
            # Fail now, not at the first model-based trial, on a misspelling.
            inspect.signature(model).bind(None, None, **(model_options or {}))
        except TypeError as e:
            raise InputDataError(
                f"model_options {sorted(model_options or {})} do not fit "
                f"{model.__name__}: {e}."
            ) from e
    elif not callable(model):
        raise UnsupportedError(
            "model must be a BoTorch Model class or a factory "
            f"(train_X, train_Y) -> fitted Model; got {model!r}."
        )
    elif model_options:
        raise InputDataError(
            "model_options are passed to a model class; a factory takes its "
            "options itself (use functools.partial)."
        )


def _check_fixed_noise(model: Any, model_options: dict[str, Any] | None) -> None:
    # ``deterministic_objective`` passes each model a likelihood of its own.
    if "likelihood" in (model_options or {}):
        raise UnsupportedError(
            "deterministic_objective holds the models' noise with a likelihood "
            "of its own; model_options give a likelihood too. Pass one or the "
            "other."
        )
    if not isinstance(model, type):
        raise UnsupportedError(
            "deterministic_objective needs a model class that takes a likelihood; "
            "a factory builds its own model: hold its noise there."
        )
    try:
        inspect.signature(model).bind(
            None, None, likelihood=None, **(model_options or {})
        )
    except TypeError as e:
        raise UnsupportedError(
            f"deterministic_objective needs a model class that takes a "
            f"likelihood; {model.__name__} does not: {e}."
        ) from e


def _check_seed(seed: Any) -> None:
    if seed is not None and (
        isinstance(seed, bool)
        or not isinstance(seed, numbers.Integral)
        or not 0 <= seed < 2**32
    ):
        # NumPy's own error comes later and names a cast, not the argument.
        raise InputDataError(
            f"seed must be None or an integer in [0, 2**32); got {seed!r}."
        )


def _check_independent_sampler(independent_sampler: Any) -> None:
    if independent_sampler is not None and not isinstance(
        independent_sampler, BaseSampler
    ):
        raise UnsupportedError(
            "independent_sampler must be an optuna.samplers.BaseSampler; "
            f"got {independent_sampler!r}."
        )


def _check_acquisition(acquisition: str) -> None:
    if acquisition not in ("auto", "mc"):
        raise InputDataError(
            f'acquisition must be "auto" or "mc"; got {acquisition!r}.'
        )


def _check_failed_trials(failed_trials: str) -> None:
    if failed_trials not in ("constraint", "ignore"):
        raise InputDataError(
            f'failed_trials must be "constraint" or "ignore"; got {failed_trials!r}.'
        )


def _check_bool(name: str, value: bool) -> None:
    if not isinstance(value, bool):
        raise InputDataError(f"{name} must be True or False; got {value!r}.")


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputDataError(f"{name} must be an integer >= {minimum}; got {value!r}.")
