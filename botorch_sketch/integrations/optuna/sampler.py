#!/usr/bin/env python3
r"""``SketchSampler``: an Optuna sampler on this package's models.

It fits :class:`~botorch_sketch.models.NystromGP` (or any model class, or a
factory) to the completed trials and suggests the next one by maximising a
BoTorch acquisition, with the running trials as pending points: see
:class:`SketchSampler`.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.utils.sampling import manual_seed
from linear_operator.utils.warnings import NumericalWarning
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.search_space import IntersectionSearchSpace
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from botorch_sketch.integrations.optuna.acquisition import _suggest
from botorch_sketch.integrations.optuna.encoding import (
    _discrete_choices,
    _encode,
    _Encoding,
    _rounding,
)
from botorch_sketch.integrations.optuna.options import (
    ModelFactory,
    _check_independent_sampler,
    _SamplerOptions,
)
from botorch_sketch.integrations.optuna.state import _CarriedModels
from botorch_sketch.integrations.optuna.trials import (
    _completed_trials,
    _completion_order,
    _constraint_values,
    _failed_trials,
    _objective_values,
    _pending_params,
    _record_constraints,
    _share_relative_params,
)
from botorch_sketch.models import NystromGP

# The package's name, which the logger had before the package was split up.
_logger = logging.getLogger(__package__)

_MAX_SEED = 2**31 - 1


class SketchSampler(BaseSampler):
    r"""Optuna sampler: a scalable GP with (q)LogEI, or qLog(N)EHVI for objectives.

    Parameters are encoded as Optuna's ``BoTorchSampler`` encodes them (as Optuna's
    ``_SearchSpaceTransform`` does): log-scaled ones in log space, integers and
    stepped floats on a grid widened by half a step on each side, categorical ones
    one-hot; then everything is scaled to the unit cube
    (:mod:`~botorch_sketch.integrations.optuna.encoding`). The acquisition is
    maximised over the continuous relaxation with ``botorch.optim.optimize_acqf``
    and every restart's optimum is rounded to a valid configuration (argmax of the
    one-hot block, nearest step) *before* the best restart is chosen, so the point
    returned is the best rounded point, not the rounding of the best relaxed one.
    Then, as ``GPSampler`` does, every value of each categorical parameter and of
    each integer or stepped float of at most 16 values is tried at each restart's
    optimum, one parameter at a time, and the continuous columns of a restart
    that moved are optimised again. This costs one relaxed optimisation whatever
    the number of categories, where
    ``optimize_acqf_mixed`` would run one per combination of categories (exponential
    in the number of categorical parameters). A rounded point that repeats a
    completed or running trial is passed over for the best one that does not (from
    the restarts, else from the rounded raw samples) while there is one. Values come
    back as Python ``float`` and ``int`` (categorical choices as given), as Optuna's
    own samplers return them.

    As Optuna's ``GPSampler`` does, the sampler:

    - fits ``COMPLETE`` trials; pruned trials are ignored (their last
      intermediate value is not used);
    - samples the first ``n_startup_trials`` trials, and parameters outside the
      intersection search space (conditional or dynamic parameters), with the
      independent sampler (``RandomSampler(seed)`` by default);
    - passes running trials whose parameters are known (from this or another
      process on the same storage, ``n_jobs > 1`` included) to the acquisition as
      ``X_pending``: qLogNEI adds them to its baseline, so the new point is chosen
      jointly with them;
    - honours constraints set with ``trial.set_constraint`` or returned by
      ``constraints_func`` (feasible when ``<= 0``), each modelled by its own
      GP;
    - takes ``GPSampler``'s arguments (``seed``, ``independent_sampler``,
      ``n_startup_trials``, ``deterministic_objective``, ``constraints_func``,
      ``warn_independent_sampling``), so that swapping it in is a change of
      the class's name.

    Unlike ``GPSampler``, which ignores them, it models where trials fail
    (``failed_trials="constraint"``): once a ``FAIL`` trial has every
    parameter, one more model is fitted to ``+1/2`` at the failed trials and
    ``-1/2`` at the completed ones, and the acquisition takes it as a
    constraint (feasible when ``<= 0``), so that it is weighed by the
    probability that a trial does not fail (for a trial chosen alone, only
    when plain LogEI's choice would more likely fail than not). Ignoring
    them, both GP samplers proposed one failing point again and again
    (issue 38); failures that do not depend on the parameters leave that
    probability flat.

    A single objective is modelled through its half-rank warping when a few
    bad trials make most of its spread (``warp_objective``; see
    :class:`_HalfRankWarp`): a GP standardises the values and infers a noise
    of at least ``1e-4`` of their variance, under which the differences
    between good trials vanished (issue 38: the README's learning-rate search
    stopped improving at trial 20). The warping is monotone, so incumbents and
    improvements keep their order; a carried ``NystromGP`` has it re-estimated
    only at its scheduled refits.

    Several objectives are modelled by a ``ModelListGP`` of one model per
    objective, as observed (each model standardises its outcome, as
    ``GPSampler`` standardises each objective; as a multi-output ``NystromGP``
    is: one sketch per outcome). A trial chosen alone (no constraints, no
    running trials) maximises the analytic
    :class:`~botorch_sketch.acquisition.LogExpectedHypervolumeImprovement`
    (exact, no Monte Carlo samples) over the box decomposition of the Pareto
    front of the posterior means at the observed points (``GPSampler`` takes
    a Monte Carlo log EHVI over the observed front), with up to half as many
    observed points of that front as ``num_restarts`` as further starts of the
    optimiser, as ``GPSampler`` starts from its Pareto-optimal trials; with
    the failed-trials model, ``qLogExpectedHypervolumeImprovement`` with it
    as a constraint; otherwise qLogNEHVI. The hypervolume reference point is
    ``GPSampler``'s: each objective's worst standardised (feasible) value, made
    10% worse, so that extending the ends of the front counts. Each
    objective's carried ``NystromGP`` infers its noise variance under
    ``GPSampler``'s prior, down to ``1e-6`` of its standardised values,
    ``GPSampler``'s floor, where BoTorch's (which one objective keeps) is
    ``1e-4``: on BraninCurrin, whose Branin
    spans 0.4 to 300, the posterior kept 1% of that spread at the trials, and
    the late trials all went to the end of the front where Branin is least.

    A carried ``NystromGP`` (the default model) of an objective or a
    constraint takes ``GPSampler``'s kernel unless ``model_options`` give a
    ``covar_module``: a scaled Matern-5/2 ARD
    kernel whose lengthscale prior keeps every lengthscale near the unit
    cube's scale (:mod:`~botorch_sketch.integrations.optuna.kernel`). BoTorch's
    dimension-scaled prior let weakly informative lengthscales run long: on
    DTLZ2 the models were confidently wrong in five of six dimensions.

    Hyperparameters are fitted with ``fit_gpytorch_mll`` in float64, starting
    from the previous trial's fitted values while the search space is unchanged
    (a carried ``NystromGP``'s last fitted values are also stored in the study's
    system attributes: a new sampler on the study, a resumed run or another
    worker on shared storage, starts from them with a short fit);
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
        deterministic_objective: bool = False,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
        num_restarts: int = 8,
        raw_samples: int = 256,
        mc_samples: int = 128,
        max_baseline: int = 128,
        warm_start: bool = True,
        refit_every: int = 10,
        acquisition: str = "auto",
        warp_objective: bool = True,
        warn_independent_sampling: bool = True,
        max_inducing: int | None = 384,
        fit_subset_size: int | None = 500,
        failed_trials: str = "constraint",
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
                ``{"subset_size": 100}`` for ``GradientSubsetGP``. For a
                carried ``NystromGP`` a ``covar_module`` replaces
                ``GPSampler``'s kernel (each model fits a copy of it).
            seed: Seed for the independent sampler and for the acquisition's
                quasi-random draws and restarts; a seeded sequential study repeats.
                None or an integer in ``[0, 2**32)`` (NumPy's range).
            independent_sampler: Sampler for the startup trials and for parameters
                outside the relative search space; ``RandomSampler(seed)`` if None.
            n_startup_trials: Number of completed trials before the model is used
                (at least one is always needed).
            deterministic_objective: As ``GPSampler``'s: the objectives'
                and constraints' models hold their noise variance at ``1e-6``
                of the standardised values (``GPSampler``'s minimum) rather
                than infer it. The model class must take a ``likelihood``
                (``NystromGP``, ``SingleTaskGP``, ...), and ``model_options``
                must not give one. The model of where trials fail keeps its
                inferred noise.
            constraints_func: As ``GPSampler``'s (which Optuna 5 deprecates
                for ``trial.set_constraint``): a function of a finished
                ``COMPLETE`` or ``PRUNED`` trial returning a sequence of
                floats, feasible when every one is ``<= 0``, written to the
                trial as its constraints after it finishes (a NaN raises
                ``ValueError`` and stops the study, as with ``GPSampler``).
                Not called for failed trials. Not pickled with a lambda, as
                with any sampler.
            num_restarts: Restarts of the acquisition optimiser.
            raw_samples: Quasi-random points from which the restarts are chosen.
            mc_samples: Quasi-Monte Carlo samples of the acquisition (at most
                64 for the qLogEHVI of several objectives chosen alone with
                failed trials modelled; without them, that acquisition is
                analytic).
            max_baseline: Keep at most this many observed points as qLogNEI's
                baseline (those with the best posterior means; the acquisition then
                prunes them further). Its pruning samples the posterior jointly at
                every baseline point, which costs ``O(n^3)`` over ``n`` trials.
            warm_start: Start each fit from the previous fit's hyperparameters
                (for ``NystromGP`` through
                :class:`~botorch_sketch.bo.IncrementalGP`, which also reuses the
                previous inducing set and fits one round).
            refit_every: For ``NystromGP`` with ``warm_start``: refit the
                hyperparameters every this many trials and once the trials
                have grown by 5% since the last fit, and in between absorb
                the new trials by ``condition_on_observations`` (a Woodbury
                step; see :class:`~botorch_sketch.bo.IncrementalGP`, which also
                refits when the inducing set has doubled or the data stop
                agreeing with the hyperparameters): every 10 trials below 200
                trials, every 5% of the trials after. 1 refits every trial up
                to 20 trials: on noisy Hartmann-6 (80 trials, seeds 0-3) that
                more than tripled the regret (mean 0.061 against 0.019), and
                with two objectives it tied (hypervolume 4.321 against 4.323
                over 6 seeds).
            acquisition: ``"auto"``: analytic ``LogExpectedImprovement`` at the
                best posterior mean of the observed points when a trial is
                chosen alone (one objective, no constraints, no running trials;
                what ``GPSampler`` does), or the analytic
                ``LogExpectedHypervolumeImprovement`` over the posterior
                means' Pareto front (several objectives, no constraints, no
                running trials), else the Monte Carlo acquisition. ``"mc"``:
                always ``qLogNoisyExpectedImprovement`` (or qLogNEHVI).
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
            max_inducing: For a carried ``NystromGP``: the largest inducing set
                (``IncrementalGP``'s ``max_inducing``), which bounds every
                suggestion's ``O(m^3)`` work; None keeps the rule's own cap
                (1024). Ignored with fixed inducing inputs. Cost on the mixed
                benchmark task (``benchmarks/suggest.py``, 951 completed
                trials, where the uncapped set took every trial): mean squared
                error of the posterior mean at 2000 fresh points 0.0016
                (capped at 384), 0.0008 (512), 0.0005 (uncapped), against a
                variance of 1.6; warm suggestions took 0.16 s at 384 and 0.30 s
                at 512 (one thread).
            fit_subset_size: For a carried ``NystromGP``: fit the
                hyperparameters on a random subset of at most this many
                trials (``NystromGP``'s ``fit_subset_size``; the inducing set is
                still chosen among all of them), in at most 150 L-BFGS-B
                iterations when there are more trials. At N = 1000 on the mixed
                task the default fit from the priors (exact, on 600 trials)
                ran 1570 iterations in 80 s; on 500 trials and 150 iterations
                it took 5 s, for a test error of 0.00081 against 0.00077.
                None fits as ``NystromGP`` does by default. Ignored when
                ``model_options`` set it or an input transform.
            failed_trials: ``"constraint"``: model where the ``FAIL`` trials
                whose parameters all lie in the search space are (a model of
                ``+1/2`` there and ``-1/2`` at the completed trials, taken as
                a constraint; a trial chosen alone maximises
                ``LogExpectedImprovement`` and, where that point would more
                likely fail than not, ``LogConstrainedExpectedImprovement``
                instead; after such a suggestion the next ones maximise the
                latter directly, and LogEI's choice is checked again every
                tenth). ``"ignore"``: model only completed trials, as
                ``GPSampler`` does. On the mixed task from scratch
                (``suggest --budget mixed-scratch``) ignoring them let the
                sampler propose one failing point for 88 trials in a row on
                two of five seeds. (Counting a failed trial as the worst
                trial seen, as SMAC imputes a crashed run, fixed that but lost
                to ignoring them where 10% of the trials failed at random:
                best value 0.03 against 0.39 on one seed.)
        """
        self._options = _SamplerOptions(
            model=model,
            model_options=model_options,
            seed=seed,
            n_startup_trials=n_startup_trials,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            mc_samples=mc_samples,
            max_baseline=max_baseline,
            warm_start=warm_start,
            refit_every=refit_every,
            acquisition=acquisition,
            warp_objective=warp_objective,
            warn_independent_sampling=warn_independent_sampling,
            max_inducing=max_inducing,
            fit_subset_size=fit_subset_size,
            failed_trials=failed_trials,
            deterministic_objective=deterministic_objective,
        )
        _check_independent_sampler(independent_sampler)
        if constraints_func is not None and not callable(constraints_func):
            raise UnsupportedError(
                "constraints_func must be a function of a FrozenTrial returning "
                f"a sequence of floats; got {constraints_func!r}."
            )
        self._constraints_func = constraints_func
        seed = self._options.seed
        self._rng = np.random.RandomState(seed)
        self._independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._intersection_search_space = IntersectionSearchSpace()
        # The study the search space describes (see ``_search_space``).
        self._space_study: tuple[weakref.ref, int] | None = None
        self._carried = _CarriedModels(self._options)

    def __getstate__(self) -> dict[str, Any]:
        r"""Pickle without the study the search space was read from (a weak reference).

        The restored sampler reads its next study's search space afresh.
        """
        state = self.__dict__.copy()
        state["_space_study"] = None
        state["_intersection_search_space"] = IntersectionSearchSpace()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        r"""Restore a pickled sampler (Optuna's way to save a sampler's state)."""
        if "_options" not in state:
            state = _upgrade_pickled_state(state)
        self.__dict__.update(state)
        # Absent from a sampler pickled before it was kept: that sampler's
        # search space may describe another study.
        if "_space_study" not in state:
            self._intersection_search_space = IntersectionSearchSpace()
            self._space_study = None

    def _search_space(self, study: Study) -> dict[str, BaseDistribution]:
        r"""The intersection search space of ``study``'s trials.

        Optuna's ``IntersectionSearchSpace`` serves one study: it caches the
        space by trial number and tells studies apart by id alone. A sampler
        reused on another study (its trials imported from the first, say)
        kept the first study's space, where a study in another in-memory
        storage has the same id: a parameter the studies encode differently
        was left to the independent sampler for good, or one the first
        study lacked was added; another study of the same storage raised
        ``ValueError``. The space is read afresh for a new study, told by its
        storage and id as the carried models tell it.
        """
        key = self._space_study
        storage, study_id = study._storage, study._study_id
        if key is None or key[0]() is not storage or key[1] != study_id:
            self._intersection_search_space = IntersectionSearchSpace()
            self._space_study = (weakref.ref(storage), study_id)
        return self._intersection_search_space.calculate(study)

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
            for name, distribution in self._search_space(study).items()
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
        with self._carried.lock:
            return self._sample_relative(study, trial, search_space)

    def _sample_relative(
        self,
        study: Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        options = self._options
        trials = study.get_trials(
            deepcopy=False,
            states=(TrialState.COMPLETE, TrialState.RUNNING, TrialState.FAIL),
        )
        completed = _completed_trials(trials, search_space)
        if len(completed) < max(options.n_startup_trials, 1):
            return {}
        self._carried.use(study, search_space)
        encoding = _Encoding(search_space)
        train_obj = _objective_values(study, completed)
        train_con = _constraint_values(completed)
        train_X = self._carried.encode_completed(encoding, completed)
        failed = (
            # A failed trial encoded before (the cache is the search space's)
            # was found in it then.
            _failed_trials(trials, search_space, known=self._carried.encoded)
            if options.failed_trials == "constraint"
            else []
        )
        failures = None
        if failed:
            # Completed and failed trials in completion order, so that a
            # carried model of the failures only absorbs the new rows.
            observed = sorted(completed + failed, key=_completion_order)
            is_failed = torch.tensor(
                [t.state == TrialState.FAIL for t in observed], dtype=torch.bool
            )
            failures = (
                self._carried.encode_completed(encoding, observed),
                (is_failed.to(train_X) - 0.5).unsqueeze(-1),
            )
        pending = _pending_params(trials, trial, search_space)
        seed = int(self._rng.randint(_MAX_SEED))
        with manual_seed(seed), warnings.catch_warnings():
            # A candidate on a running or completed trial's point (every point
            # of a small discrete space is one soon) makes qLogNEI's joint
            # covariance singular: linear_operator adds a jitter of 1e-8 and
            # says so at each such evaluation, hundreds of lines in Optuna's
            # own sampler tests that a user cannot act on.
            warnings.filterwarnings(
                "ignore", message="A not p.d., added jitter", category=NumericalWarning
            )
            candidate = _suggest(
                train_X=train_X,
                train_obj=train_obj,
                train_con=train_con,
                pending_X=_encode(encoding, pending) if pending else None,
                fit=self._carried.fit,
                seed=seed,
                num_restarts=options.num_restarts,
                raw_samples=options.raw_samples,
                mc_samples=options.mc_samples,
                max_baseline=options.max_baseline,
                round_to_grid=_rounding(encoding),
                analytic=options.analytic,
                warp=self._carried.warp if options.warp_objective else None,
                failures=failures,
                discrete=_discrete_choices(encoding),
                memo=self._carried.memo,
            )
        params = encoding.decode(candidate.squeeze(0).numpy())
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
        if self._options.warn_independent_sampling:
            n_complete = len(
                study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            )
            # A parameter every completed trial has was sampled independently
            # only because its trial started among the startup trials (with
            # n_jobs > 1 another trial may complete the startup meanwhile):
            # not the conditional parameter the warning is about.
            common = self._search_space(study)
            # With no completed trial there is nothing to model yet (the
            # first trial, whatever n_startup_trials): not worth a warning.
            if n_complete >= max(self._options.n_startup_trials, 1) and (
                param_name not in common
            ):
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
        r"""Record ``constraints_func``'s values, then tell the independent sampler."""
        # Absent from a sampler pickled before the option existed.
        constraints_func = getattr(self, "_constraints_func", None)
        if constraints_func is not None:
            _record_constraints(constraints_func, study, trial, state)
        self._independent_sampler.after_trial(study, trial, state, values)


def _upgrade_pickled_state(state: dict[str, Any]) -> dict[str, Any]:
    r"""The state of a sampler pickled before the package split, as it is now.

    Its cached encodings are left out: they were dropped at its next
    suggestion anyway (a pickled sampler forgets its study).
    """
    options = _SamplerOptions(
        model=state["_model"],
        model_options=state["_model_options"],
        seed=None,  # Not kept: it seeded the generators, which are.
        n_startup_trials=state["_n_startup_trials"],
        num_restarts=state["_num_restarts"],
        raw_samples=state["_raw_samples"],
        mc_samples=state["_mc_samples"],
        max_baseline=state["_max_baseline"],
        warm_start=state["_warm_start"],
        refit_every=state["_refit_every"],
        acquisition="auto" if state["_analytic"] else "mc",
        warp_objective=state.get("_warp_objective", True),
        warn_independent_sampling=state["_warn_independent_sampling"],
    )
    carried = _CarriedModels(options)
    carried.warm_space = state["_warm_space"]
    carried.warm_states = state["_warm_states"]
    carried.incremental = state["_incremental"]
    carried.warps = state.get("_warps", {})
    return {
        "_options": options,
        "_rng": state["_rng"],
        "_independent_sampler": state["_independent_sampler"],
        "_intersection_search_space": state["_intersection_search_space"],
        "_carried": carried,
    }
