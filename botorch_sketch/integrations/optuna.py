#!/usr/bin/env python3
r"""An Optuna sampler backed by this package's models and BoTorch's acquisitions.

:class:`SketchSampler` is an Optuna sampler that fits
:class:`~botorch_sketch.models.NystromGP` (or
:class:`~botorch_sketch.models.GradientSubsetGP`, or any model a factory returns)
to the completed trials and suggests the next one by maximising BoTorch's
``qLogNoisyExpectedImprovement`` (one objective) or
``qLogNoisyExpectedHypervolumeImprovement`` (several), with the running trials as
pending points. Its model costs ``O(n m^2)`` per fit for ``n`` trials and an
inducing set of ``m``, against the ``O(n^3)`` of Optuna's exact-GP ``GPSampler``;
BoTorch's acquisition optimisation adds about a second per trial whatever ``n``,
so ``GPSampler`` is the faster of the two below about a thousand trials.

:func:`nystrom_candidates_func` plugs the same model into optuna-integration's
``BoTorchSampler`` through its ``candidates_func`` argument, refitted from
scratch each trial as optuna-integration's own candidates functions are;
:class:`NystromCandidates` does the same with the model carried from trial to
trial.

Install with ``pip install -e ".[optuna]"``.

Example:
    >>> import optuna
    >>> from botorch_sketch.integrations.optuna import SketchSampler
    >>> study = optuna.create_study(sampler=SketchSampler(seed=0))
    >>> study.optimize(objective, n_trials=500)
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import numbers
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from botorch.acquisition.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.logei import (
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.acquisition.multi_objective.objective import (
    IdentityMCMultiOutputObjective,
)
from botorch.acquisition.objective import GenericMCObjective
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models import ModelListGP
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler
from botorch.utils.multi_objective.hypervolume import infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.sampling import draw_sobol_samples, manual_seed
from botorch.utils.transforms import normalize, unnormalize
from gpytorch.mlls import ExactMarginalLogLikelihood
from scipy import special
from torch import Tensor

try:
    # Optuna's own one-hot / log / step encoding, as its BoTorchSampler uses it.
    from optuna._transform import _SearchSpaceTransform
    from optuna.distributions import (
        BaseDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState

except ImportError as e:  # pragma: no cover - exercised in a subprocess
    raise ImportError(
        "botorch_sketch.integrations.optuna needs Optuna: "
        "pip install -e '.[optuna]' in a clone"
    ) from e

from botorch_sketch.bo import IncrementalGP
from botorch_sketch.models import NystromGP
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning

__all__ = ["NystromCandidates", "SketchSampler", "nystrom_candidates_func"]

_logger = logging.getLogger(__name__)

#: ``(train_X, train_Y) -> fitted Model``: ``train_X`` is ``n x D`` in the unit
#: cube, ``train_Y`` is ``n x 1`` (to be maximised), both float64.
ModelFactory = Callable[[Tensor, Tensor], Model]

# Relative parameters are written to the trial's system attributes so that other
# workers on the same storage see a running trial's point before its objective has
# called ``suggest_*``. RDB storage caps an attribute at 2046 characters.
_RELATIVE_PARAMS_KEY = "botorch_sketch:relative_params"
_SYSTEM_ATTR_MAX_LENGTH = 2045
_MAX_SEED = 2**31 - 1
#: Scheduled refits also wait for the trials to grow by 5% (every ``refit_every``
#: trials up to 200, every 5% of the trials after): see ``IncrementalGP``.
_REFIT_GROWTH = 0.05
#: ``_HalfRankWarp`` warps only values whose standard deviation is more than
#: this many times the upper half's spread about the median.
_WARP_SPREAD = 10.0
_TKWARGS: dict[str, Any] = {"dtype": torch.float64, "device": torch.device("cpu")}


class SketchSampler(BaseSampler):
    r"""Optuna sampler: a scalable GP with qLogNEI, or qLogNEHVI for several objectives.

    Parameters are encoded as Optuna's ``BoTorchSampler`` encodes them (Optuna's
    ``_SearchSpaceTransform``): log-scaled ones in log space, integers and stepped
    floats on a grid widened by half a step on each side, categorical ones one-hot;
    then everything is scaled to the unit cube. The acquisition is maximised over
    the continuous relaxation with ``botorch.optim.optimize_acqf`` and every
    restart's optimum is rounded to a valid configuration (argmax of the one-hot
    block, nearest step) *before* the best restart is chosen, so the point
    returned is the best rounded point, not the rounding of the best relaxed one.
    This costs one optimisation whatever the number of categories, where
    ``optimize_acqf_mixed`` would run one per combination of categories
    (exponential in the number of categorical parameters). A rounded point
    that repeats a completed or running trial is passed over for the best one
    that does not (from the restarts, else from the rounded raw samples) while
    there is one. Values come back as Python ``float`` and ``int`` (categorical
    choices as given), as Optuna's own samplers return them.

    As Optuna's ``GPSampler`` does, the sampler:

    - fits only ``COMPLETE`` trials; failed and pruned trials are ignored (their
      last intermediate value is not used);
    - samples the first ``n_startup_trials`` trials, and parameters outside the
      intersection search space (conditional or dynamic parameters), with the
      independent sampler (``RandomSampler(seed)`` by default);
    - passes running trials whose parameters are known (from this or another
      process on the same storage, ``n_jobs > 1`` included) to the acquisition as
      ``X_pending``: qLogNEI adds them to its baseline, so the new point is chosen
      jointly with them;
    - honours constraints set with ``trial.set_constraint`` (feasible when
      ``<= 0``), each modelled by its own GP.

    A single objective is modelled through its half-rank warping when a few
    bad trials make most of its spread (``warp_objective``; see
    :class:`_HalfRankWarp`): a GP standardises the values and infers a noise
    of at least ``1e-4`` of their variance, under which the differences
    between good trials vanished (issue 38: the README's learning-rate search
    stopped improving at trial 20). The warping is monotone, so incumbents and
    improvements keep their order; a carried ``NystromGP`` has it re-estimated
    only at its scheduled refits.

    Several objectives are modelled by a ``ModelListGP`` of one model per
    objective (as a multi-output ``NystromGP`` is: one sketch per outcome); the
    hypervolume reference point is BoTorch's ``infer_reference_point`` on the
    observed (feasible) Pareto front.

    Hyperparameters are fitted with ``fit_gpytorch_mll`` in float64, starting
    from the previous trial's fitted values while the search space is unchanged;
    ``NystromGP`` is carried from trial to trial by
    :class:`~botorch_sketch.bo.IncrementalGP` (previous inducing set, one fitting
    round, or only a Woodbury update between refits with ``refit_every > 1``).
    """

    def __init__(
        self,
        *,
        model: type[Model] | ModelFactory = NystromGP,
        model_options: dict[str, Any] | None = None,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        n_startup_trials: int = 10,
        num_restarts: int = 8,
        raw_samples: int = 256,
        mc_samples: int = 128,
        max_baseline: int = 128,
        warm_start: bool = True,
        refit_every: int = 10,
        acquisition: str = "auto",
        warp_objective: bool = True,
        warn_independent_sampling: bool = True,
    ) -> None:
        r"""Check the options and build the sampler.

        Args:
            model: The model class, called as ``model(train_X, train_Y,
                **model_options)`` and fitted with ``fit_gpytorch_mll``
                (``NystromGP``, ``GradientSubsetGP``, ``SingleTaskGP``, ...), or a
                factory ``(train_X, train_Y) -> fitted Model`` (no warm start then).
                ``train_X`` is ``n x D`` in the unit cube; ``train_Y`` is ``n x 1``,
                to be maximised: the objective's half-rank warping with one
                objective (``warp_objective``), else the values as observed
                (the model standardises it).
            model_options: Keyword arguments for the model class, e.g.
                ``{"subset_size": 100}`` for ``GradientSubsetGP``.
            seed: Seed for the independent sampler and for the acquisition's
                quasi-random draws and restarts; a seeded sequential study repeats.
                None or an integer in ``[0, 2**32)`` (NumPy's range).
            independent_sampler: Sampler for the startup trials and for parameters
                outside the relative search space; ``RandomSampler(seed)`` if None.
            n_startup_trials: Number of completed trials before the model is used
                (at least one is always needed).
            num_restarts: Restarts of the acquisition optimiser.
            raw_samples: Quasi-random points from which the restarts are chosen.
            mc_samples: Quasi-Monte Carlo samples of the acquisition.
            max_baseline: Keep at most this many observed points as qLogNEI's
                baseline (those with the best posterior means; the acquisition then
                prunes them further). Its pruning samples the posterior jointly at
                every baseline point, which costs ``O(n^3)`` over ``n`` trials.
            warm_start: Start each fit from the previous fit's hyperparameters
                (for ``NystromGP`` through
                :class:`~botorch_sketch.bo.IncrementalGP`, which also reuses the
                previous inducing set and fits one round).
            refit_every: For ``NystromGP`` with ``warm_start``: refit the
                hyperparameters every this many trials (and at least 5% more
                trials than at the last fit), and in between absorb
                the new trials by ``condition_on_observations`` (a Woodbury
                step; see :class:`~botorch_sketch.bo.IncrementalGP`, which also
                refits when the inducing set has doubled or the data stop
                agreeing with the hyperparameters). 1 refits every trial.
            acquisition: ``"auto"``: analytic ``LogExpectedImprovement`` at the
                best posterior mean of the observed points when a trial is
                chosen alone (one objective, no constraints, no running trials;
                what ``GPSampler`` does), else the Monte Carlo acquisition.
                ``"mc"``: always ``qLogNoisyExpectedImprovement`` (or qLogNEHVI).
            warp_objective: With one objective, model its half-rank warping
                (see :class:`_HalfRankWarp`: when the values spread over more
                than ten times the upper half's spread, those below the median
                are drawn in to a few of the upper half's spreads, in rank
                order) rather than the values themselves. A model that
                standardises all values sees the differences between the good
                trials as noise when a few bad ones make the spread (BoTorch's
                inferred noise is at least ``1e-4`` of the standardised
                variance). False models the values as they are.
            warn_independent_sampling: Log a warning when a parameter is sampled by
                the independent sampler after the startup trials.
        """
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
        if seed is not None and (
            isinstance(seed, bool)
            or not isinstance(seed, numbers.Integral)
            or not 0 <= seed < 2**32
        ):
            # NumPy's own error comes later and names a cast, not the argument.
            raise InputDataError(
                f"seed must be None or an integer in [0, 2**32); got {seed!r}."
            )
        _check_int("n_startup_trials", n_startup_trials, 0)
        _check_int("num_restarts", num_restarts, 1)
        _check_int("raw_samples", raw_samples, 1)
        _check_int("mc_samples", mc_samples, 1)
        _check_int("max_baseline", max_baseline, 1)
        _check_int("refit_every", refit_every, 1)
        _check_acquisition(acquisition)
        _check_bool("warp_objective", warp_objective)
        if raw_samples < num_restarts:
            raise InputDataError(
                f"raw_samples ({raw_samples}) must be at least num_restarts "
                f"({num_restarts}): the restarts are chosen from the raw samples."
            )
        if independent_sampler is not None and not isinstance(
            independent_sampler, BaseSampler
        ):
            raise UnsupportedError(
                "independent_sampler must be an optuna.samplers.BaseSampler; "
                f"got {independent_sampler!r}."
            )
        self._model = model
        self._model_options = dict(model_options or {})
        seed = None if seed is None else int(seed)
        self._rng = np.random.RandomState(seed)
        self._independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._intersection_search_space = IntersectionSearchSpace()
        self._n_startup_trials = n_startup_trials
        self._num_restarts = num_restarts
        self._raw_samples = raw_samples
        self._mc_samples = mc_samples
        self._max_baseline = max_baseline
        self._warm_start = warm_start
        self._refit_every = refit_every
        self._analytic = acquisition == "auto"
        self._warp_objective = warp_objective
        self._warn_independent_sampling = warn_independent_sampling
        # Fitted hyperparameters (or carried NystromGPs) by output name, valid for
        # this search space only; the lock keeps n_jobs threads from updating
        # one output's state at once.
        self._warm_space: dict[str, BaseDistribution] | None = None
        self._warm_states: dict[str, dict[str, Tensor]] = {}
        self._incremental: dict[str, IncrementalGP] = {}
        # The objective's warping by output name, re-estimated only when its
        # model is refitted anyway (see ``_warp``).
        self._warps: dict[str, _HalfRankWarp] = {}
        # Encoded parameters of completed trials by trial id, for this search
        # space: a completed trial's parameters never change, and encoding
        # every trial anew each time costs more than the model at n = 1000.
        self._encoded: dict[int, np.ndarray] = {}
        # The study all of the above describe, as (storage, study id): trial
        # ids are unique within one storage only (each in-memory study starts
        # again at 0), so the state is dropped when the sampler moves to
        # another study. A weak reference, so that the sampler neither keeps
        # a finished study's storage alive nor mistakes a new storage that
        # reuses a freed one's address for it.
        self._study_key: tuple[weakref.ref, int] | None = None
        # Re-entrant: a suggestion holds it and fits models, which take it too.
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        r"""Pickle without the lock (Optuna's way to save a sampler's state)."""
        state = self.__dict__.copy()
        del state["_lock"]
        # A weak reference does not pickle: the restored sampler encodes its
        # next study's trials afresh but keeps the fitted hyperparameters
        # (see ``_sample_relative``).
        state["_study_key"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        r"""Restore a pickled sampler with a new lock."""
        self.__dict__.update(state)
        self.__dict__.setdefault("_encoded", {})
        self.__dict__.setdefault("_study_key", None)
        self.__dict__.setdefault("_warps", {})
        self.__dict__.setdefault("_warp_objective", True)
        self._lock = threading.RLock()

    def reseed_rng(self) -> None:
        r"""Reseed the random generators (Optuna calls this for ``n_jobs > 1``)."""
        self._rng.seed()
        self._independent_sampler.reseed_rng()

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        r"""Return the parameters every completed trial has, with one distribution.

        Parameters with a single possible value are left to Optuna, as
        ``GPSampler`` does.
        """
        return {
            name: distribution
            for name, distribution in self._intersection_search_space.calculate(
                study
            ).items()
            if not distribution.single()
        }

    def sample_relative(
        self,
        study: Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        r"""Suggest values of the relative search space from the model.

        Returns an empty dict (so that the independent sampler is used) during
        the startup trials.
        """
        if not search_space:
            return {}
        # One suggestion at a time within a process: with ``n_jobs > 1`` two
        # threads that both read the trials before either had shared its
        # parameters saw no pending point and could propose the same one.
        with self._lock:
            return self._sample_relative(study, trial, search_space)

    def _sample_relative(
        self,
        study: Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        trials = study.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)
        )
        completed = [
            t
            for t in trials
            if t.state == TrialState.COMPLETE and search_space.keys() <= t.params.keys()
        ]
        if len(completed) < max(self._n_startup_trials, 1):
            return {}
        # In completion order, so that each trial's data extend the previous
        # trial's and a carried model only absorbs the new rows.
        completed.sort(key=_completion_order)
        running = [
            t
            for t in trials
            if t.state == TrialState.RUNNING and t._trial_id != trial._trial_id
        ]
        key = self._study_key
        if key is None or key[0]() is not study._storage or key[1] != study._study_id:
            # Another study, whose trial ids may be the cached ones (each
            # in-memory study counts from 0): its encodings would be another
            # study's parameters. Models and hyperparameters fitted to another
            # study's objective go too, but not those of a sampler just
            # unpickled (no key), most likely to resume the same study.
            if key is not None:
                self._warm_space = None
            self._study_key = (weakref.ref(study._storage), study._study_id)
            self._encoded = {}
        if self._warm_space != search_space:
            self._warm_space = dict(search_space)
            self._warm_states = {}
            self._incremental = {}
            self._warps = {}
            self._encoded = {}
        transform = _SearchSpaceTransform(search_space, transform_0_1=True)
        train_X = self._encode_completed(transform, completed)
        signs = np.array(
            [1.0 if d == StudyDirection.MAXIMIZE else -1.0 for d in study.directions]
        )
        train_obj = signs * np.array([t.values for t in completed], dtype=np.float64)
        train_con = _constraint_values(completed)
        pending = [
            p
            for p in (_params_of_running(t) for t in running)
            if _contains(search_space, p)
        ]
        pending_X = _encode(transform, pending) if pending else None
        seed = int(self._rng.randint(_MAX_SEED))
        with manual_seed(seed):
            candidate = _suggest(
                train_X=train_X,
                train_obj=torch.as_tensor(train_obj, **_TKWARGS),
                train_con=(
                    None
                    if train_con is None
                    else torch.as_tensor(train_con, **_TKWARGS)
                ),
                pending_X=pending_X,
                fit=self._fit,
                seed=seed,
                num_restarts=self._num_restarts,
                raw_samples=self._raw_samples,
                mc_samples=self._mc_samples,
                max_baseline=self._max_baseline,
                round_to_grid=_rounding(transform, search_space),
                analytic=self._analytic,
                warp=self._warp if self._warp_objective else None,
            )
        params = _plain_values(
            transform.untransform(candidate.squeeze(0).numpy()), search_space
        )
        _share_relative_params(study, trial, params)
        return params

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        r"""Sample a parameter outside the relative search space independently."""
        if self._warn_independent_sampling:
            n_complete = len(
                study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            )
            if n_complete >= self._n_startup_trials:
                _logger.warning(
                    f"The parameter `{param_name}` in trial {trial.number} is sampled "
                    f"by {type(self._independent_sampler).__name__}, not by "
                    f"{type(self).__name__}: it is not in every completed trial with "
                    "one distribution (a conditional or dynamic parameter). Pass "
                    "warn_independent_sampling=False if this is intended."
                )
        return self._independent_sampler.sample_independent(
            study, trial, param_name, param_distribution
        )

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        r"""Let the independent sampler prepare the trial."""
        self._independent_sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        r"""Let the independent sampler see the finished trial."""
        self._independent_sampler.after_trial(study, trial, state, values)

    def _encode_completed(
        self, transform: _SearchSpaceTransform, completed: list[FrozenTrial]
    ) -> Tensor:
        r"""The ``n x D`` encoded parameters of completed trials (cached)."""
        rows = []
        for t in completed:
            row = self._encoded.get(t._trial_id)
            if row is None:
                row = self._encoded[t._trial_id] = transform.transform(t.params)
            rows.append(row)
        return torch.as_tensor(np.stack(rows), **_TKWARGS)

    def _warp(self, train_Y: Tensor, name: str) -> Tensor:
        r"""The objective's values as modelled (see ``_HalfRankWarp``).

        A carried ``NystromGP`` absorbs new trials by a Woodbury step only
        while the earlier rows are unchanged: its warping is re-estimated when
        the model is refitted on schedule anyway and kept in between (new
        values go through the kept map). Other models are fitted anew each
        trial, and so is their warping.
        """
        with self._lock:
            carried = self._model is NystromGP and self._warm_start
            surrogate = self._incremental.get(name) if carried else None
            return _warped(self._warps, name, train_Y, surrogate)

    def _fit(self, train_X: Tensor, train_Y: Tensor, name: str) -> Model:
        r"""Build and fit one output's model, warm-started when possible."""
        if not isinstance(self._model, type):
            model = self._model(train_X, train_Y)
            if not isinstance(model, Model):
                # Else an AttributeError deep in the acquisition, about
                # ``posterior``, names neither the factory nor what it returned.
                factory = getattr(self._model, "__qualname__", repr(self._model))
                raise InputDataError(
                    f"The model factory {factory} must return a fitted BoTorch "
                    f"Model; it returned a {type(model).__name__}."
                )
            return model
        with self._lock, warnings.catch_warnings():
            # Being exact below a few hundred trials is intended, not news.
            warnings.simplefilter("ignore", ExactRegimeWarning)
            if self._model is NystromGP and self._warm_start:
                surrogate = self._incremental.get(name)
                if surrogate is None:
                    surrogate = self._incremental[name] = IncrementalGP(
                        refit_every=self._refit_every,
                        refit_growth=_REFIT_GROWTH,
                        model_kwargs=self._model_options,
                    )
                return surrogate(train_X, train_Y)
            model = self._model(train_X, train_Y, **self._model_options)
            state = self._warm_states.get(name) if self._warm_start else None
            if state is not None:
                model.load_state_dict(state, strict=False)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            # Only the hyperparameters: the outcome transform's statistics
            # belong to the data they were computed on.
            self._warm_states[name] = {
                key: value.detach().clone() for key, value in model.named_parameters()
            }
        return model


def nystrom_candidates_func(
    train_x: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    bounds: Tensor,
    pending_x: Tensor | None,
) -> Tensor:
    r"""A ``candidates_func`` for optuna-integration's ``BoTorchSampler``.

    It has the signature and return value of ``logei_candidates_func`` and
    ``qei_candidates_func`` but fits one :class:`~botorch_sketch.models.NystromGP`
    per objective and constraint (a ``ModelListGP`` when there are several) and
    maximises ``qLogNoisyExpectedImprovement`` (one objective) or
    ``qLogNoisyExpectedHypervolumeImprovement`` (several), with pending points.
    A single objective is modelled through its half-rank warping, as
    ``SketchSampler`` models it.

    Example:
        >>> from optuna_integration import BoTorchSampler
        >>> sampler = BoTorchSampler(
        ...     candidates_func=nystrom_candidates_func, consider_running_trials=True
        ... )

    Args:
        train_x: A ``n x D`` tensor of observed parameters, not normalised
            (categorical parameters one-hot encoded).
        train_obj: A ``n x M`` tensor of observed objectives, to be maximised.
        train_con: A ``n x C`` tensor of constraint values (feasible when
            ``<= 0``), or None.
        bounds: A ``2 x D`` tensor of lower and upper bounds of ``train_x``.
        pending_x: A ``p x D`` tensor of pending (running) parameters, or None.

    Returns:
        A ``1 x D`` tensor: the next parameters, in the space of ``train_x``.
    """

    def fit(X: Tensor, Y: Tensor, name: str) -> Model:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExactRegimeWarning)
            model = NystromGP(X, Y)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    def warp(Y: Tensor, name: str) -> Tensor:
        return _HalfRankWarp(Y)(Y)

    return _candidates(train_x, train_obj, train_con, bounds, pending_x, fit, warp=warp)


class NystromCandidates:
    r"""A ``candidates_func`` for ``BoTorchSampler`` that carries its models.

    :func:`nystrom_candidates_func` builds and fits a ``NystromGP`` from
    scratch at every trial, as optuna-integration's own candidates functions
    do. An instance of this class keeps one
    :class:`~botorch_sketch.bo.IncrementalGP` per objective and constraint, so
    each trial absorbs the new observations (a Woodbury step) and the
    hyperparameters are refitted, warm-started, every ``refit_every`` trials
    (or sooner when the data stop agreeing with them), as ``SketchSampler``
    does. A trial chosen alone (one objective, no constraints, no running
    trials) maximises analytic ``LogExpectedImprovement`` at the best posterior
    mean of the observed points; otherwise the Monte Carlo acquisition of
    :func:`nystrom_candidates_func`.

    Example:
        >>> from optuna_integration import BoTorchSampler
        >>> sampler = BoTorchSampler(candidates_func=NystromCandidates())
    """

    def __init__(
        self,
        refit_every: int = 10,
        acquisition: str = "auto",
        warp_objective: bool = True,
    ) -> None:
        r"""Configure the carried models.

        Args:
            refit_every: Refit the hyperparameters every this many trials (see
                :class:`~botorch_sketch.bo.IncrementalGP`).
            acquisition: ``"auto"`` or ``"mc"``, as for ``SketchSampler``.
            warp_objective: Model a single objective's half-rank warping, as
                for ``SketchSampler`` (re-estimated at the scheduled refits).
        """
        _check_int("refit_every", refit_every, 1)
        _check_acquisition(acquisition)
        _check_bool("warp_objective", warp_objective)
        self.refit_every = refit_every
        self.analytic = acquisition == "auto"
        self.warp_objective = warp_objective
        self._incremental: dict[str, IncrementalGP] = {}
        self._warps: dict[str, _HalfRankWarp] = {}
        self._bounds: Tensor | None = None

    def __call__(
        self,
        train_x: Tensor,
        train_obj: Tensor,
        train_con: Tensor | None,
        bounds: Tensor,
        pending_x: Tensor | None,
    ) -> Tensor:
        r"""The next parameters (arguments as for ``nystrom_candidates_func``)."""
        if self._bounds is None or not torch.equal(bounds, self._bounds):
            # A new search space: the carried models describe another one.
            self._bounds = bounds.clone()
            self._incremental = {}
            self._warps = {}

        def fit(X: Tensor, Y: Tensor, name: str) -> Model:
            surrogate = self._incremental.get(name)
            if surrogate is None:
                surrogate = self._incremental[name] = IncrementalGP(
                    refit_every=self.refit_every, refit_growth=_REFIT_GROWTH
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExactRegimeWarning)
                return surrogate(X, Y)

        def warp(Y: Tensor, name: str) -> Tensor:
            return _warped(self._warps, name, Y, self._incremental.get(name))

        return _candidates(
            train_x,
            train_obj,
            train_con,
            bounds,
            pending_x,
            fit,
            self.analytic,
            warp if self.warp_objective else None,
        )


def _candidates(
    train_x: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    bounds: Tensor,
    pending_x: Tensor | None,
    fit: Callable[[Tensor, Tensor, str], Model],
    analytic: bool = False,
    warp: Callable[[Tensor, str], Tensor] | None = None,
) -> Tensor:
    r"""The body of both candidates functions, in ``train_x``'s space."""
    D = train_x.shape[-1]
    if train_x.dim() != 2 or bounds.shape != (2, D):
        # Else a size mismatch deep in ``normalize`` that names neither.
        raise InputDataError(
            f"bounds must be a 2 x D tensor for train_x of shape n x D; got "
            f"bounds of shape {tuple(bounds.shape)} for train_x of shape "
            f"{tuple(train_x.shape)}."
        )
    if pending_x is not None and (pending_x.dim() != 2 or pending_x.shape[-1] != D):
        raise InputDataError(
            f"pending_x must be a p x D tensor for train_x of shape n x D; got "
            f"pending_x of shape {tuple(pending_x.shape)} for train_x of shape "
            f"{tuple(train_x.shape)}."
        )
    tkwargs = {"dtype": torch.float64, "device": train_x.device}
    bounds = bounds.to(**tkwargs)
    candidate = _suggest(
        train_X=normalize(train_x.to(**tkwargs), bounds),
        train_obj=train_obj.to(**tkwargs),
        train_con=None if train_con is None else train_con.to(**tkwargs),
        pending_X=(
            None
            if pending_x is None or len(pending_x) == 0
            else normalize(pending_x.to(**tkwargs), bounds)
        ),
        fit=fit,
        seed=None,
        num_restarts=10,
        raw_samples=512,
        mc_samples=256,
        max_baseline=128,
        round_to_grid=None,
        analytic=analytic,
        warp=warp,
    )
    # Strictly below the upper bounds: Optuna's untransform (BoTorchSampler's)
    # returns a continuous parameter at its upper bound as the
    # ``numpy.float64`` one step below it, and anything under that as a Python
    # float. Integer and one-hot columns round as before.
    below = torch.nextafter(bounds[1], bounds[0])
    return unnormalize(candidate, bounds).clamp(bounds[0], below)


def _suggest(
    train_X: Tensor,
    train_obj: Tensor,
    train_con: Tensor | None,
    pending_X: Tensor | None,
    fit: Callable[[Tensor, Tensor, str], Model],
    seed: int | None,
    num_restarts: int,
    raw_samples: int,
    mc_samples: int,
    max_baseline: int,
    round_to_grid: Callable[[Tensor], Tensor] | None,
    analytic: bool = False,
    warp: Callable[[Tensor, str], Tensor] | None = None,
) -> Tensor:
    r"""Fit the models and maximise the acquisition over the unit cube.

    Args:
        train_X: A ``n x D`` tensor of observed points in the unit cube.
        train_obj: A ``n x M`` tensor of objectives, to be maximised.
        train_con: A ``n x C`` tensor of constraints (feasible when ``<= 0``).
        pending_X: A ``p x D`` tensor of pending points in the unit cube.
        fit: ``(X, Y, name) -> fitted single-output model``.
        seed: Seed of the quasi-Monte Carlo sampler.
        num_restarts: Restarts of the optimiser.
        raw_samples: Raw samples for the restarts.
        mc_samples: Quasi-Monte Carlo samples.
        max_baseline: Largest baseline passed to the acquisition.
        round_to_grid: Maps ``... x D`` points to valid configurations.
        analytic: Use analytic LogEI when the trial is chosen alone (one
            objective, no constraints, no pending points).
        warp: ``(Y, name) -> values modelled``, a monotone map of a single
            objective's ``n x 1`` values (several objectives and the
            constraints are modelled as they are).

    Returns:
        A ``1 x D`` tensor in the unit cube.
    """
    train_obj = _modelable(train_obj)
    train_con = None if train_con is None else _modelable(train_con)
    n_obj = train_obj.shape[-1]
    outputs = [(f"objective {i}", train_obj[:, i : i + 1]) for i in range(n_obj)]
    if warp is not None and n_obj == 1:
        # Monotone: the incumbent and the improvements keep their order.
        outputs[0] = (outputs[0][0], warp(train_obj, outputs[0][0]))
    if train_con is not None:
        outputs += [
            (f"constraint {i}", train_con[:, i : i + 1])
            for i in range(train_con.shape[-1])
        ]
    models = [fit(train_X, Y, name) for name, Y in outputs]
    model = models[0] if len(models) == 1 else ModelListGP(*models)
    constraints = None
    if train_con is not None:
        # Optuna's and BoTorch's conventions agree: feasible when <= 0.
        constraints = [_OutcomeIndex(n_obj + i) for i in range(train_con.shape[-1])]
    acqf: AcquisitionFunction
    if analytic and len(models) == 1 and pending_X is None:
        # One point chosen alone: the noisy incumbent is the best posterior mean
        # at the observed points, and EI needs no Monte Carlo (nor the joint
        # posterior over a baseline that qLogNEI samples each evaluation).
        with torch.no_grad():
            best_f = model.posterior(train_X.unsqueeze(-2)).mean.max()
        acqf = LogExpectedImprovement(model=model, best_f=best_f)
        return _maximise(acqf, train_X, None, num_restarts, raw_samples, round_to_grid)
    sampler = SobolQMCNormalSampler(torch.Size([mc_samples]), seed=seed)
    baseline = _baseline(model, train_X, n_obj, max_baseline)
    if n_obj == 1:
        acqf = qLogNoisyExpectedImprovement(
            model=model,
            X_baseline=baseline,
            sampler=sampler,
            objective=GenericMCObjective(_OutcomeIndex(0)) if len(models) > 1 else None,
            constraints=constraints,
            X_pending=pending_X,
            prune_baseline=True,
        )
    else:
        feasible = (
            torch.ones(len(train_obj), dtype=torch.bool, device=train_obj.device)
            if train_con is None
            else (train_con <= 0).all(dim=-1)
        )
        front = train_obj[feasible] if feasible.any() else train_obj
        front = front[is_non_dominated(front)]
        acqf = qLogNoisyExpectedHypervolumeImprovement(
            model=model,
            ref_point=infer_reference_point(front),
            X_baseline=baseline,
            sampler=sampler,
            objective=(
                IdentityMCMultiOutputObjective(outcomes=list(range(n_obj)))
                if constraints
                else None
            ),
            constraints=constraints,
            X_pending=pending_X,
            prune_baseline=True,
        )
    return _maximise(acqf, train_X, pending_X, num_restarts, raw_samples, round_to_grid)


def _maximise(
    acqf: AcquisitionFunction,
    train_X: Tensor,
    pending_X: Tensor | None,
    num_restarts: int,
    raw_samples: int,
    round_to_grid: Callable[[Tensor], Tensor] | None,
) -> Tensor:
    r"""The best (rounded) restart of ``optimize_acqf`` that is a new point.

    Rounding can snap every restart back onto an observed or running
    configuration (the acquisition is low there, not minus infinity), which
    would repeat a trial. The best restart that is neither is returned; if
    there is none, the best of the rounded raw samples that is neither; if
    there is none either (the grid is all but exhausted), the best restart.

    Args:
        acqf: The acquisition function to maximise.
        train_X: A ``n x D`` tensor of observed points in the unit cube.
        pending_X: A ``p x D`` tensor of running points in the unit cube.
        num_restarts: Restarts of the optimiser.
        raw_samples: Raw samples for the restarts, and for the fallback.
        round_to_grid: Maps ``... x D`` points to valid configurations.

    Returns:
        A ``1 x D`` tensor in the unit cube.
    """
    unit = torch.stack([torch.zeros_like(train_X[0]), torch.ones_like(train_X[0])])
    candidates, values = optimize_acqf(
        acq_function=acqf,
        bounds=unit,
        q=1,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        # The raw samples scored in one batch (init_batch_limit defaults to
        # batch_limit: 32 small calls for 256 samples), the restarts by 8.
        options={"batch_limit": 8, "init_batch_limit": raw_samples, "maxiter": 200},
        post_processing_func=round_to_grid,
        return_best_only=False,
    )
    # ``num_restarts x 1 x D`` rounded optima and their acquisition values.
    candidates, values = candidates.detach().squeeze(-2), values.detach().view(-1)
    taken = train_X if pending_X is None else torch.cat([train_X, pending_X])
    new = ~_taken(candidates, taken)
    if not new.any():
        X = draw_sobol_samples(bounds=unit, n=raw_samples, q=1).squeeze(-2)
        if round_to_grid is not None:
            X = round_to_grid(X)
        X = torch.unique(X, dim=0)
        X = X[~_taken(X, taken)]
        if len(X):
            with torch.no_grad():
                X_values = torch.cat(
                    [acqf(x.unsqueeze(-2)) for x in X.split(raw_samples)]
                )
            candidates, values = X, X_values
            new = torch.ones_like(values, dtype=torch.bool)
        else:
            new = torch.ones_like(new)
    best = values.masked_fill(~new, -math.inf).argmax()
    return candidates[best].unsqueeze(0)


def _taken(X: Tensor, taken: Tensor) -> Tensor:
    r"""Which rows of ``X`` (``k x D``) repeat a row of ``taken`` (``n x D``).

    Equal to within ``1e-9`` in the unit cube, not bit for bit: a candidate
    is rounded by decoding and re-encoding it, the trials are encoded from
    their stored values, and the two can differ in the last bits.
    """
    if len(X) == 0 or len(taken) == 0:
        return torch.zeros(len(X), dtype=torch.bool, device=X.device)
    # Chunked: ``k x n`` distances for k raw samples and n trials.
    return torch.cat(
        [(torch.cdist(x, taken, p=math.inf) <= 1e-9).any(dim=-1) for x in X.split(256)]
    )


def _warped(
    warps: dict[str, _HalfRankWarp],
    name: str,
    Y: Tensor,
    surrogate: IncrementalGP | None,
) -> Tensor:
    r"""``Y`` through ``warps[name]``, re-estimated where no refit is skipped.

    Re-estimating changes the earlier rows, which a carried ``IncrementalGP``
    would take for changed data and refit: the warping is kept while the
    surrogate would absorb ``Y`` by a Woodbury step, and re-estimated at the
    calls it refits on schedule (``surrogate`` None: at every call).
    """
    warp = warps.get(name)
    if warp is None or surrogate is None or surrogate.refit_due(len(Y)):
        warp = warps[name] = _HalfRankWarp(Y)
    return warp(Y)


class _HalfRankWarp:
    r"""Half-rank warping of one objective's values, fixed once estimated.

    A GP standardises its outcomes and infers a noise variance of at least
    ``1e-4`` of that scale (BoTorch's ``MIN_INFERRED_NOISE_LEVEL``). When a few
    bad trials make the spread (a wrong ``depth`` costing units where the
    learning rate moves the objective by ``0.01``), the differences between
    the good trials are below that noise: the model calls them noise, and
    expected improvement keeps proposing the trials it has (issue 38). Optuna's
    ``GPSampler`` lets the noise go down to ``1e-6`` of the scale, which
    resolves them (with a floor of ``1e-4`` it stalls as well); the sampler
    cannot reach the noise constraint of a model a factory builds, so the
    values are warped instead, after Vizier's half-rank warping [Song2024]_
    but drawing in only. The map is the identity unless the standard deviation
    of the values is more than ``_WARP_SPREAD`` (10) times the upper half's
    spread ``s`` (below), where the floor's standard deviation (1% of theirs)
    exceeds a tenth of ``s``; otherwise:

    - values at or above the median ``m`` of the estimation values are kept;
    - a value ``y`` below it becomes ``max(y, m + s * Phi^-1(q))``, with ``q``
      its rank quantile ``(rank - 1/2) / n`` among the estimation values (ties
      share their mean rank) and ``s`` the root-mean-square distance of the
      upper half from ``m``: the bad half is drawn in to a few ``s`` below the
      median, in rank order, and never spread wider than it was.

    The map is monotone, so the order of the values (the incumbent, what is an
    improvement) is kept. It is fixed once estimated: a value it was not
    estimated on is interpolated linearly between the neighbouring estimation
    values (below the lowest, ``y_0`` warped to ``w_0``, it becomes
    ``max(y, w_0 - s * log1p((y_0 - y) / (m - y_0)))``), so that the earlier
    rows of a carried model do not change between re-estimations.

    References:

    .. [Song2024]
        X. Song et al. The Vizier Gaussian process bandit algorithm.
        arXiv:2408.11527, 2024 (its output warping: half-rank, then log).
    """

    def __init__(self, Y: Tensor) -> None:
        r"""Estimate the warping on ``n x 1`` finite values (to be maximised)."""
        y = Y.detach().reshape(-1).cpu().numpy().astype(np.float64)
        self.median = float(np.median(y))
        upper = y[y >= self.median]
        scale = math.sqrt(float(np.mean((upper - self.median) ** 2)))
        if not scale > 0:
            # The upper half all at the median (ties): the whole spread.
            scale = math.sqrt(float(np.mean((y - self.median) ** 2)))
        # Only a spread that buries the upper half's differences under the
        # noise floor is warped; otherwise the map is the identity.
        self.scale = scale if float(np.std(y)) > _WARP_SPREAD * scale else 0.0
        values, counts = np.unique(y, return_counts=True)
        # Mean 1-based rank of each distinct value.
        rank = np.cumsum(counts) - (counts - 1) / 2.0
        below = values < self.median
        quantile = (rank[below] - 0.5) / len(y)
        warped = np.maximum(
            values[below], self.median + scale * special.ndtri(quantile)
        )
        # Knots of the interpolation, increasing in both coordinates, ending at
        # the median (which maps to itself).
        self.knots = np.append(values[below], self.median)
        self.warped = np.append(warped, self.median)

    def __call__(self, Y: Tensor) -> Tensor:
        r"""The warped ``n x 1`` values, each row's from its own value alone."""
        if not self.scale > 0:
            return Y
        y = Y.detach().reshape(-1).cpu().numpy().astype(np.float64)
        s, y0, w0 = self.scale, self.knots[0], self.warped[0]
        # Below the lowest estimation value: further by the log of how much
        # further than it the value is from the median.
        spread = self.median - y0 if self.median > y0 else s
        inside = np.interp(y, self.knots, self.warped)
        tail = np.maximum(y, w0 - s * np.log1p(np.maximum(y0 - y, 0.0) / spread))
        w = np.where(y >= self.median, y, np.where(y < y0, tail, inside))
        return torch.as_tensor(w, dtype=Y.dtype, device=Y.device).reshape(Y.shape)


class _OutcomeIndex:
    r"""``Z -> Z[..., index]``, a picklable objective or constraint callable."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, Z: Tensor, X: Tensor | None = None) -> Tensor:
        return Z[..., self.index]


def _baseline(model: Model, train_X: Tensor, n_obj: int, max_baseline: int) -> Tensor:
    r"""The ``max_baseline`` observed points least dominated in posterior mean.

    The acquisition prunes its baseline by sampling the posterior jointly at every
    baseline point (an ``n x n`` Cholesky); points that few others beat in mean
    are the only ones with a real chance of being the incumbent.
    """
    if len(train_X) <= max_baseline:
        return train_X
    with torch.no_grad():
        # One point per batch: the posterior means cost O(n m^2), no n x n.
        mean = model.posterior(train_X.unsqueeze(-2)).mean.squeeze(-2)
    objectives = mean[:, :n_obj]
    if mean.shape[-1] > n_obj:
        feasible = (mean[:, n_obj:] <= 0).all(dim=-1)
        if feasible.any():
            objectives = objectives.masked_fill(~feasible.unsqueeze(-1), -torch.inf)
    if n_obj == 1:
        # One objective: its rank, with no n x n comparison.
        keep = torch.argsort(objectives.squeeze(-1), descending=True, stable=True)
        return train_X[keep[:max_baseline]]
    # Number of points that dominate each point.
    dominated_by = (
        (
            (objectives.unsqueeze(0) >= objectives.unsqueeze(1)).all(dim=-1)
            & (objectives.unsqueeze(0) > objectives.unsqueeze(1)).any(dim=-1)
        )
        .sum(dim=-1)
        .to(torch.float64)
    )
    keep = torch.argsort(dominated_by, stable=True)[:max_baseline]
    return train_X[keep]


def _rounding(
    transform: _SearchSpaceTransform, search_space: dict[str, BaseDistribution]
) -> Callable[[Tensor], Tensor] | None:
    r"""The map of relaxed points to valid configurations, None if all continuous."""
    if all(
        getattr(d, "step", None) is None and not _is_categorical(d)
        for d in search_space.values()
    ):
        return None

    def round_to_grid(X: Tensor) -> Tensor:
        rows = X.detach().reshape(-1, X.shape[-1]).cpu().numpy()
        rounded = np.stack(
            [transform.transform(transform.untransform(r)) for r in rows]
        )
        return torch.as_tensor(rounded, dtype=X.dtype, device=X.device).reshape(X.shape)

    return round_to_grid


def _plain_values(
    params: dict[str, Any], search_space: dict[str, BaseDistribution]
) -> dict[str, Any]:
    r"""``params`` as Python floats and ints, as Optuna's own samplers give them.

    Optuna's untransform returns a continuous parameter at its upper bound as
    a ``numpy.float64``; categorical choices keep their own type.
    """
    plain = {}
    for name, value in params.items():
        distribution = search_space[name]
        if isinstance(distribution, FloatDistribution):
            value = float(value)
        elif isinstance(distribution, IntDistribution):
            value = int(value)
        plain[name] = value
    return plain


def _is_categorical(distribution: BaseDistribution) -> bool:
    return hasattr(distribution, "choices")


def _encode(transform: _SearchSpaceTransform, params: list[dict[str, Any]]) -> Tensor:
    return torch.as_tensor(
        np.stack([transform.transform(p) for p in params]), **_TKWARGS
    )


def _modelable(values: Tensor) -> Tensor:
    r"""Observed values a GP can model, in the same order per column.

    Optuna accepts infinite objectives and constraints; a GP does not: each is
    replaced by a value one spread of its column's finite values beyond them
    (and beyond 0, so that an infinite constraint keeps its side). A column
    beyond ``1e100`` in magnitude is scaled down by a power of two (exact):
    its squares overflowed in the outcome standardisation. Neither changes
    which values are better, nor a constraint's sign.

    Args:
        values: A ``n x k`` tensor (objectives to maximise, or constraints).

    Returns:
        A new ``n x k`` tensor.
    """
    finite = torch.isfinite(values)
    if not bool(finite.all()):
        inf = torch.full_like(values, math.inf)
        high = torch.where(finite, values, -inf).amax(0).nan_to_num(0.0, 0.0, 0.0)
        low = torch.where(finite, values, inf).amin(0).nan_to_num(0.0, 0.0, 0.0)
        spread = (high - low).clamp_min(1.0)
        values = torch.where(values == math.inf, high.clamp_min(0) + spread, values)
        values = torch.where(values == -math.inf, low.clamp_max(0) - spread, values)
    scale = values.abs().nan_to_num(0.0).amax(0)
    if bool((scale > 1e100).any()):
        exponent = torch.frexp(scale).exponent.to(values.dtype)
        values = values * torch.where(scale > 1e100, 2.0**-exponent, 1.0)
    return values


def _constraint_values(trials: list[FrozenTrial]) -> np.ndarray | None:
    r"""The ``n x C`` constraints set by ``trial.set_constraint``, None if none."""
    keys = sorted(trials[0].constraints)
    for t in trials:
        if sorted(t.constraints) != keys:
            raise InputDataError(
                f"Every completed trial must set the same constraints: trial "
                f"{trials[0].number} set {keys}, trial {t.number} set "
                f"{sorted(t.constraints)}."
            )
    if not keys:
        return None
    return np.array([[t.constraints[k] for k in keys] for t in trials])


def _completion_order(trial: FrozenTrial) -> tuple[float, int]:
    done = trial.datetime_complete
    return (done.timestamp() if done is not None else -math.inf, trial.number)


def _params_of_running(trial: FrozenTrial) -> dict[str, Any]:
    r"""A running trial's parameters, with those chosen but not yet suggested."""
    chunks = []
    while chunk := trial.system_attrs.get(f"{_RELATIVE_PARAMS_KEY}:{len(chunks)}"):
        chunks.append(chunk)
    params = json.loads("".join(chunks)) if chunks else {}
    params.update(trial.params)
    return params


def _share_relative_params(
    study: Study, trial: FrozenTrial, params: dict[str, Any]
) -> None:
    text = json.dumps(params)
    for i in range(0, len(text), _SYSTEM_ATTR_MAX_LENGTH):
        study._storage.set_trial_system_attr(
            trial._trial_id,
            f"{_RELATIVE_PARAMS_KEY}:{i // _SYSTEM_ATTR_MAX_LENGTH}",
            text[i : i + _SYSTEM_ATTR_MAX_LENGTH],
        )


def _contains(search_space: dict[str, BaseDistribution], params: dict) -> bool:
    r"""Whether ``params`` gives every parameter a value its distribution allows."""
    try:
        return all(
            name in params and d._contains(d.to_internal_repr(params[name]))
            for name, d in search_space.items()
        )
    except (ValueError, TypeError):
        return False


def _check_acquisition(acquisition: str) -> None:
    if acquisition not in ("auto", "mc"):
        raise InputDataError(
            f'acquisition must be "auto" or "mc"; got {acquisition!r}.'
        )


def _check_bool(name: str, value: bool) -> None:
    if not isinstance(value, bool):
        raise InputDataError(f"{name} must be True or False; got {value!r}.")


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputDataError(f"{name} must be an integer >= {minimum}; got {value!r}.")
