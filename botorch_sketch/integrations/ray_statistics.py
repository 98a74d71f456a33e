#!/usr/bin/env python3
r"""``NystromGP`` on data beyond one process: its statistics map-reduced on Ray.

The DTC posterior depends on the data only through sums over observations
(:class:`~botorch_sketch.sketching.posterior.DTCStatistics`), so each Ray worker sums
its own shard and the driver adds the sums. Building a model takes two passes
over the shards, each one Ray task per shard:

1. a survey: every shard is read and validated (input dimension, dtype, NaN or
   infinite values, emptiness), and returns its size, the moments of its
   outcomes, the range of its inputs and a random sample of its rows. The
   driver combines them into the global outcome standardisation and input
   normalisation (the values ``Standardize`` and ``Normalize`` would learn on
   all data at once) and into a uniform sample of ``fit_subset_size`` rows drawn
   across shards (the idea of ``NystromGP.fit_subset_size``);
2. the hyperparameters are fitted and the inducing set chosen on that sample, in
   the driver; then every shard's statistics are computed by
   :meth:`NystromGP.observation_statistics` (the model's own recipe) on a
   worker and added on the driver, in shard order.

The result is an ordinary ``NystromGP`` whose training data are the sample and
whose posterior is that of all the data (:meth:`NystromGP.set_data_statistics`),
so acquisition functions, ``condition_on_observations`` and ``fantasize`` take
it as they are. Its :class:`ShardRecord` names every shard summed: :func:`refresh`
sums only new shards, and a shard summed twice is refused. A failing shard
(bad data, an exception, a worker that died more often than ``max_retries``)
raises; no model is ever returned on part of the shards.

Shards are Ray object references (to ``(X, Y)`` or a mapping of columns), paths
of files read by the workers (``.pt``: ``torch.save`` of ``(X, Y)`` or a mapping;
``.npz``: arrays named by the columns; ``.npy``: an ``n x (d + 1)`` array whose
last column is ``Y``; anything else through ``reader``), zero-argument
callables run on the workers (data made from a seed), or a Ray Dataset (its
blocks). Each shard is read twice, once per pass, and must return the same
data both times: a hash of its values is compared across the passes, and a
shard that changed is refused by name. What the workers run (reading, checking,
surveying and summing a shard) is in :mod:`botorch_sketch.integrations.ray_shards`;
this module holds the public API (:class:`ShardFormat` is importable from here
too) and the driver.

Needs the ``ray`` extra (``pip install botorch-sketch[ray]``); Ray is imported
only when a function here runs.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from botorch.exceptions.errors import InputDataError, UnsupportedError
from botorch.fit import fit_gpytorch_mll
from botorch.models.transforms.input import (
    AffineInputTransform,
    ChainedInputTransform,
    InputTransform,
    Normalize,
)
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.kernels import Kernel
from gpytorch.likelihoods.likelihood import Likelihood
from gpytorch.means import Mean
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from botorch_sketch.integrations.ray_shards import (
    ShardFormat,
    Summed,
    combined_moments,
    named_shards,
    sample_across,
    summed_shard,
    survey_shard,
)
from botorch_sketch.models.nystrom_gp import ExactRegimeWarning, NystromGP
from botorch_sketch.sketching.posterior import DTCStatistics
from botorch_sketch.sketching.rules import FixedSelector, SelectionRule

__all__ = [
    "INSTALL_HINT",
    "ShardFailedError",
    "ShardFormat",
    "ShardRecord",
    "build_sharded_nystrom_gp",
    "rebuild",
    "refresh",
]

#: How to install what this module needs.
INSTALL_HINT = "pip install botorch-sketch[ray] (pip install -e '.[ray]' in a clone)"


class ShardFailedError(RuntimeError):
    r"""A shard could not be summed: its task raised or its worker died.

    Nothing is summed when this is raised: the model being built or refreshed
    is not returned, and a model being refreshed is unchanged.
    """


@dataclass(frozen=True)
class ShardRecord:
    r"""What a sharded model has summed, in the order it was summed.

    Attributes:
        shard_ids: The id of every shard summed.
        shard_sizes: Their numbers of rows.
        statistics: The sum of their statistics.
        sample_rows: The leading rows of the model's ``train_X``, the fitting
            sample, that the statistics include.
        shard_format: How the shards were read; new shards are read the same way.
        seconds: Worker wall seconds of each shard (reading and summing).
        cpu_seconds: Worker CPU seconds of each shard: its cost on an idle core
            (with one thread a worker), whatever else shares the machine.
        peak_rss_mb: Peak resident memory of the worker process that summed
            each shard, in MB (the process's peak so far, as ``getrusage``).
        phase_seconds: Wall seconds of the last build's or refresh's phases
            (``"survey"``, ``"fit"``, ``"statistics"``).
    """

    shard_ids: tuple[str, ...]
    shard_sizes: tuple[int, ...]
    statistics: DTCStatistics
    sample_rows: int
    shard_format: ShardFormat
    seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...]
    peak_rss_mb: tuple[float, ...]
    phase_seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def num_data(self) -> int:
        r"""The number of observations summed."""
        return sum(self.shard_sizes)


# ----------------------------------------------------------------- public API


def build_sharded_nystrom_gp(
    shards: Any,
    *,
    fit_subset_size: int = 2000,
    inducing: SelectionRule | Tensor | None = None,
    covar_module: Kernel | None = None,
    mean_module: Mean | None = None,
    likelihood: Likelihood | None = None,
    outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
    input_transform: InputTransform | None = None,
    fit: bool = True,
    shard_format: ShardFormat | None = None,
    seed: int = 0,
    num_workers: int | None = None,
    threads_per_worker: int = 1,
    max_retries: int = 3,
) -> NystromGP:
    r"""A ``NystromGP`` on sharded data, its statistics summed on Ray workers.

    Args:
        shards: A sequence of shards (object references, paths, or, with
            ``shard_format.reader``, anything it reads), a mapping ``{shard_id:
            shard}`` (needed for callables), or a Ray Dataset. Each shard holds
            ``n_i x d`` inputs and ``n_i`` (or ``n_i x 1``) outcomes.
        fit_subset_size: The size of the sample, drawn uniformly across shards,
            on which the hyperparameters are fitted and the inducing set chosen.
        inducing: The inducing rule, or ``m x d`` fixed inducing inputs, as for
            ``NystromGP`` (row indices, ``FixedSelector``, mean nothing here).
        covar_module: The kernel, as for ``NystromGP``.
        mean_module: The prior mean, as for ``NystromGP``.
        likelihood: A ``GaussianLikelihood`` (the noise is inferred).
        outcome_transform: ``Standardize(m=1)`` (the default) or None; its mean
            and standard deviation are those of all outcomes.
        input_transform: An input transform; a ``Normalize`` that learns its
            bounds gets those of all inputs. Other transforms must not learn
            from the data (their parameters may be fitted hyperparameters).
        fit: Fit the hyperparameters on the sample (``fit_gpytorch_mll``); if
            False, the given modules are used as they are and the rule chooses
            the inducing set at them.
        shard_format: How to read the shards; ``ShardFormat()`` by default.
        seed: Seeds the sample.
        num_workers: Shards summed at once (Ray tasks in flight); all by default,
            as many as the cluster's CPUs then run.
        threads_per_worker: Torch threads (and Ray CPUs) of each task.
        max_retries: Times Ray re-runs a task whose worker died.

    Returns:
        A ``NystromGP`` whose ``train_X``, ``train_Y`` are the sample and whose
        posterior is that of all shards; its :class:`ShardRecord` is
        ``model.shard_record``.

    Example:
        >>> refs = [ray.put((X_i, Y_i)) for X_i, Y_i in parts]
        >>> model = build_sharded_nystrom_gp(refs, input_transform=Normalize(d))
        >>> acqf = LogExpectedImprovement(model, best_f=best_observed)
        >>> model = refresh(model, [ray.put((X_new, Y_new))])
    """
    ray = _import_ray()
    shard_format = ShardFormat() if shard_format is None else shard_format
    if isinstance(inducing, FixedSelector):
        raise UnsupportedError(
            "FixedSelector names rows of one data set; pass the inducing inputs."
        )
    if fit_subset_size < 1:
        raise InputDataError(f"fit_subset_size must be positive, got {fit_subset_size}")
    named = named_shards(ray, shards)
    ids = [sid for sid, _ in named]
    options = {"num_cpus": threads_per_worker, "max_retries": max_retries}
    clock = time.perf_counter
    start = clock()
    surveys = _map_shards(
        ray,
        survey_shard,
        [(shard, sid, shard_format, fit_subset_size, seed) for sid, shard in named],
        ids,
        options,
        num_workers,
    )
    dims = {s.dim for s in surveys}
    if len(dims) > 1:
        first = surveys[0].dim
        odd = next(i for i, s in enumerate(surveys) if s.dim != first)
        raise InputDataError(
            f"Shard {ids[odd]!r} has {surveys[odd].dim} input dimensions, shard "
            f"{ids[0]!r} has {first}."
        )
    shard_format = replace(shard_format, dim=surveys[0].dim)
    phases = {"survey": clock() - start}
    start = clock()
    sample_X, sample_Y = sample_across(surveys, fit_subset_size, seed)
    n, mean, m2 = combined_moments(surveys)
    x_min = torch.stack([s.x_min for s in surveys]).amin(0)
    x_max = torch.stack([s.x_max for s in surveys]).amax(0)
    model = NystromGP(
        sample_X,
        sample_Y,
        inducing=inducing,
        covar_module=covar_module,
        mean_module=mean_module,
        likelihood=likelihood,
        outcome_transform=_outcome_transform(outcome_transform),
        input_transform=_global_input_transform(input_transform, x_min, x_max),
        fit_subset_size=sample_X.shape[0],
    )
    if hasattr(model, "outcome_transform"):
        _standardize_globally(model.outcome_transform, n, mean, m2)
        # The constructor standardised the sample with its own moments; redo it
        # with the global ones, and re-choose the initial set on those targets.
        model.retransform_targets()
        model.select_inducing_points(max_size=model.initial_max_inducing)
    if fit:
        # The sample may be in the exact regime (its inducing set all of its
        # inputs); the model of all shards is still a sketch. Not warned rather
        # than filtered: a filtered warning would use up the process's one.
        model.warn_exact_regime = False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExactRegimeWarning)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    phases["fit"] = clock() - start
    start = clock()
    summed = _sum_shards(ray, model, named, shard_format, options, num_workers)
    phases["statistics"] = clock() - start
    for sid, s, part in zip(ids, surveys, summed, strict=True):
        if part.n != s.n:
            raise ShardFailedError(
                f"Shard {sid!r} had {s.n} rows in the survey and {part.n} when "
                "summed: a shard must return the same data every time it is read."
            )
        # The same count of other values (a file rewritten between the passes)
        # would mix the survey's moments, range and sample with statistics of
        # other data.
        if part.digest != s.digest:
            raise ShardFailedError(
                f"Shard {sid!r} changed between the survey and the statistics "
                f"pass (the same {s.n} rows, other values): a shard must return "
                "the same data every time it is read; nothing was built."
            )
    return _attach(model, named, summed, shard_format, None, sample_X.shape[0], phases)


def refresh(
    model: NystromGP,
    new_shards: Any,
    *,
    num_workers: int | None = None,
    threads_per_worker: int = 1,
    max_retries: int = 3,
) -> NystromGP:
    r"""The sharded model with new shards added; only they are summed.

    Hyperparameters, transforms, inducing set and sample stay as they are (the
    standardisation keeps the mean and scale of the shards it was built on),
    so the result equals :func:`rebuild` on all shards. Observations added by
    ``condition_on_observations`` stay in the model.

    Args:
        model: A model from :func:`build_sharded_nystrom_gp` (or this function).
        new_shards: Shards as for :func:`build_sharded_nystrom_gp`; their ids must
            be new.
        num_workers: Shards summed at once; all by default.
        threads_per_worker: Torch threads (and Ray CPUs) of each task.
        max_retries: Times Ray re-runs a task whose worker died.

    Returns:
        A new ``NystromGP``; ``model`` is unchanged.
    """
    record = _record_of(model)
    return _resum(
        model, new_shards, record, num_workers, threads_per_worker, max_retries
    )


def rebuild(
    model: NystromGP,
    shards: Any,
    *,
    num_workers: int | None = None,
    threads_per_worker: int = 1,
    max_retries: int = 3,
) -> NystromGP:
    r"""The sharded model summed afresh over ``shards``, nothing refitted.

    For shards removed or replaced: hyperparameters, transforms, inducing set
    and sample are ``model``'s, the statistics those of ``shards`` only.

    Args:
        model: A model from :func:`build_sharded_nystrom_gp`.
        shards: All the shards the model is to hold.
        num_workers: Shards summed at once; all by default.
        threads_per_worker: Torch threads (and Ray CPUs) of each task.
        max_retries: Times Ray re-runs a task whose worker died.

    Returns:
        A new ``NystromGP``; ``model`` is unchanged.
    """
    _record_of(model)
    return _resum(model, shards, None, num_workers, threads_per_worker, max_retries)


# ------------------------------------------------------------------- driver


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            f"Sharded NystromGP statistics need Ray: {INSTALL_HINT}."
        ) from None
    if not ray.is_initialized():
        ray.init(log_to_driver=False)
    return ray


def _record_of(model: NystromGP) -> ShardRecord:
    record = getattr(model, "shard_record", None)
    if not isinstance(record, ShardRecord):
        raise UnsupportedError(
            "This model was not built from shards (build_sharded_nystrom_gp)."
        )
    return record


def _resum(
    model: NystromGP,
    shards: Any,
    record: ShardRecord | None,
    num_workers: int | None,
    threads_per_worker: int,
    max_retries: int,
) -> NystromGP:
    ray = _import_ray()
    base = _record_of(model)
    # The statistics must still describe the model's hyperparameters.
    model.check_data_statistics()
    named = named_shards(ray, shards)
    if record is not None:
        again = [sid for sid, _ in named if sid in set(record.shard_ids)]
        if again:
            raise InputDataError(
                f"Shards {again[:3]} were summed already; refresh takes new shards "
                "only (rebuild re-sums a changed set)."
            )
    options = {"num_cpus": threads_per_worker, "max_retries": max_retries}
    start = time.perf_counter()
    summed = _sum_shards(ray, model, named, base.shard_format, options, num_workers)
    phases = {"statistics": time.perf_counter() - start}
    return _attach(
        copy.deepcopy(model),
        named,
        summed,
        base.shard_format,
        record,
        base.sample_rows,
        phases,
    )


def _attach(
    model: NystromGP,
    named: list[tuple[str, Any]],
    summed: list[Summed],
    shard_format: ShardFormat,
    previous: ShardRecord | None,
    sample_rows: int,
    phases: dict[str, float],
) -> NystromGP:
    total = previous.statistics if previous is not None else None
    for part in summed:  # in shard order, whatever order the tasks finished in
        stats = _like(part.statistics, model.train_X)
        total = stats if total is None else total + stats
    old = previous or ShardRecord((), (), total, sample_rows, shard_format, (), (), ())
    record = ShardRecord(
        shard_ids=old.shard_ids + tuple(sid for sid, _ in named),
        shard_sizes=old.shard_sizes + tuple(p.n for p in summed),
        statistics=total,
        sample_rows=sample_rows,
        shard_format=shard_format,
        seconds=old.seconds + tuple(p.seconds for p in summed),
        cpu_seconds=old.cpu_seconds + tuple(p.cpu_seconds for p in summed),
        peak_rss_mb=old.peak_rss_mb + tuple(p.peak_rss_mb for p in summed),
        phase_seconds=phases,
    )
    model.set_data_statistics(total, rows_included=sample_rows)
    model.shard_record = record
    return model


def _like(stats: DTCStatistics, like: Tensor) -> DTCStatistics:
    return stats.map(lambda t: t.to(like))


def _sum_shards(
    ray: Any,
    model: NystromGP,
    named: list[tuple[str, Any]],
    shard_format: ShardFormat,
    options: dict[str, Any],
    num_workers: int | None,
) -> list[Summed]:
    worker_model = copy.deepcopy(model)
    worker_model.clear_posterior_state()  # rebuilt on the workers: not shipped
    worker_model.cpu()
    model_ref = ray.put(worker_model)
    threads = int(options["num_cpus"])
    args = [(model_ref, shard, sid, shard_format, threads) for sid, shard in named]
    ids = [sid for sid, _ in named]
    return _map_shards(ray, summed_shard, args, ids, options, num_workers)


def _map_shards(
    ray: Any,
    fn: Callable[..., Any],
    args: list[tuple[Any, ...]],
    ids: list[str],
    options: dict[str, Any],
    num_workers: int | None,
) -> list[Any]:
    # One task per shard, at most ``num_workers`` in flight; the first failure
    # cancels the rest and raises.
    task = ray.remote(**options)(fn)
    limit = len(args) if num_workers is None else max(1, num_workers)
    results: list[Any] = [None] * len(args)
    pending: dict[Any, int] = {}
    queue = iter(range(len(args)))
    exhausted = False
    try:
        while pending or not exhausted:
            while not exhausted and len(pending) < limit:
                i = next(queue, None)
                if i is None:
                    exhausted = True
                else:
                    pending[task.remote(*args[i])] = i
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                results[i] = _result(ray, ref, ids[i], options["max_retries"])
    finally:
        for ref in pending:
            ray.cancel(ref)
    return results


def _result(ray: Any, ref: Any, shard_id: str, max_retries: int) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = e.cause
        if isinstance(cause, (InputDataError, UnsupportedError)):
            raise type(cause)(*cause.args) from None
        raise ShardFailedError(
            f"Shard {shard_id!r} failed on its worker ({type(cause).__name__}: "
            f"{cause}); nothing was summed."
        ) from e
    except ray.exceptions.RayError as e:
        raise ShardFailedError(
            f"Shard {shard_id!r} could not be summed: its worker was lost "
            f"({type(e).__name__}) after {max_retries} retries; nothing was summed."
        ) from e


def _outcome_transform(
    transform: OutcomeTransform | _DefaultType | None,
) -> OutcomeTransform | None:
    if transform == DEFAULT:
        return Standardize(m=1)
    if transform is None:
        return None
    if type(transform) is not Standardize or transform.means.shape != (1, 1):
        raise UnsupportedError(
            "Sharded data support outcome_transform=Standardize(m=1) or None; "
            f"got {type(transform).__name__}."
        )
    return copy.deepcopy(transform)


def _standardize_globally(
    transform: Standardize, n: int, mean: float, m2: float
) -> None:
    # What Standardize learns on all outcomes at once (unbiased std, floored).
    std = math.sqrt(m2 / (n - 1)) if n > 1 else 1.0
    if std < transform._min_stdv:
        std = 1.0
    state = transform.state_dict()
    state["means"] = torch.full_like(state["means"], mean)
    state["stdvs"] = torch.full_like(state["stdvs"], std)
    state["_stdvs_sq"] = state["stdvs"].pow(2)
    state["_is_trained"] = torch.tensor(True)
    transform.load_state_dict(state)
    transform.eval()


def _global_input_transform(
    transform: InputTransform | None, x_min: Tensor, x_max: Tensor
) -> InputTransform | None:
    if transform is None:
        return None
    transform = copy.deepcopy(transform)
    parts = (
        list(transform.values())
        if isinstance(transform, ChainedInputTransform)
        else [transform]
    )
    for i, part in enumerate(parts):
        if not (isinstance(part, AffineInputTransform) and part.learn_coefficients):
            continue
        if type(part) is not Normalize or i > 0:
            raise UnsupportedError(
                f"{type(part).__name__} learns from the data; on sharded data only a "
                "Normalize (first in a chain) can, or give fixed bounds."
            )
        # The bounds Normalize learns are the columns' min and max, so learning
        # them on the two rows (min, max) of all shards gives them exactly.
        part.train()
        part(torch.stack([x_min, x_max]))
        part.learn_coefficients = False
        part.eval()
    return transform
