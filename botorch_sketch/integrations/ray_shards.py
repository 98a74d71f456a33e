#!/usr/bin/env python3
r"""The shards of a sharded ``NystromGP``: naming, reading, surveying, summing.

:mod:`botorch_sketch.integrations.ray_statistics` builds a ``NystromGP`` on data
held in shards, in two passes of Ray tasks, one task per shard; this module is
what those tasks run and what the driver combines. Shards are named
(:func:`named_shards`), and on a worker read (Ray object references to
``(X, Y)`` or a mapping of columns; paths of ``.pt``, ``.npz`` or ``.npy``
files, or anything :class:`ShardFormat`'s ``reader`` reads; zero-argument
callables; the blocks of a Ray Dataset) and checked. The first pass
(:func:`survey_shard`) returns each shard's :class:`Survey`, which the driver
combines into the global outcome moments (:func:`combined_moments`) and a
uniform sample of rows across shards (:func:`sample_across`); the second
(:func:`summed_shard`) returns each shard's statistics under the fitted model
(:class:`Summed`). Each pass hashes the values it read, so that a shard that
changed between them is refused.
"""

from __future__ import annotations

import hashlib
import os
import resource
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import InputDataError
from torch import Tensor

from botorch_sketch.models.nystrom_gp import NystromGP
from botorch_sketch.sketching.posterior import DTCStatistics


@dataclass(frozen=True)
class ShardFormat:
    r"""How workers turn a shard into tensors.

    Attributes:
        x_columns: The input column of mapping-like shards (a ``n x d`` array),
            or the names of ``d`` one-dimensional columns.
        y_column: The outcome column of mapping-like shards.
        reader: Reads a path into ``(X, Y)`` or a mapping of columns (on the
            worker); None for the built-in ``.pt``, ``.npz`` and ``.npy`` readers.
        dtype: The floating point type of the model; shards are cast to it.
        dim: The input dimension every shard must have (None: the first's).
    """

    x_columns: str | tuple[str, ...] = "X"
    y_column: str = "Y"
    reader: Callable[[str], Any] | None = None
    dtype: torch.dtype = torch.float64
    dim: int | None = None


@dataclass
class Survey:
    r"""One shard's first pass: size, outcome moments, input range, row sample.

    Attributes:
        n: The number of rows.
        dim: The input dimension.
        y_mean: The mean of the outcomes.
        y_m2: The sum of their squared deviations from it.
        x_min: The ``d`` smallest input values.
        x_max: The ``d`` largest input values.
        sample_X: The inputs of a uniformly random order of (up to the sample
            size of) its rows; any prefix is a uniform sample.
        sample_Y: Their outcomes.
        digest: A hash of the shard's values (see :func:`summed_shard`).
    """

    n: int
    dim: int
    y_mean: float
    y_m2: float
    x_min: Tensor
    x_max: Tensor
    sample_X: Tensor
    sample_Y: Tensor
    digest: str


@dataclass
class Summed:
    r"""One shard's second pass: its statistics, and what summing them cost.

    Attributes:
        statistics: The shard's DTC statistics under the model.
        n: The number of rows.
        digest: A hash of the shard's values, compared with the survey's.
        seconds: Worker wall seconds (reading and summing).
        cpu_seconds: Worker CPU seconds.
        peak_rss_mb: Peak resident memory of the worker process, in MB.
    """

    statistics: DTCStatistics
    n: int
    digest: str
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float


def named_shards(ray: Any, shards: Any) -> list[tuple[str, Any]]:
    r"""The shards as ``(shard_id, shard)`` pairs, ids checked to be distinct.

    Args:
        ray: The ``ray`` module.
        shards: A sequence of shards (object references, paths), a mapping
            ``{shard_id: shard}`` or a Ray Dataset.

    Returns:
        The named shards, in order.
    """
    if hasattr(shards, "to_numpy_refs") and not isinstance(shards, Mapping):
        # A Ray Dataset: its blocks, as references to mappings of columns. The
        # ids name the dataset (Dataset.set_name), so that refreshing with an
        # unnamed dataset again is refused rather than counted twice.
        name = getattr(shards, "name", None)
        name = name if isinstance(name, str) and name else "dataset"
        named = [(f"{name}[{i}]", ref) for i, ref in enumerate(shards.to_numpy_refs())]
    elif isinstance(shards, Mapping):
        named = [(str(k), v) for k, v in shards.items()]
    elif isinstance(shards, Sequence) and not isinstance(shards, (str, bytes)):
        named = [(_default_id(ray, s), s) for s in shards]
    else:
        raise InputDataError(
            "shards must be a sequence of shards, a mapping {shard_id: shard} or "
            f"a Ray Dataset; got {type(shards).__name__}."
        )
    if not named:
        raise InputDataError("No shards were given.")
    ids = [sid for sid, _ in named]
    if len(set(ids)) != len(ids):
        twice = sorted({sid for sid in ids if ids.count(sid) > 1})
        raise InputDataError(f"Shards {twice[:3]} are given more than once.")
    return named


def _default_id(ray: Any, shard: Any) -> str:
    if isinstance(shard, ray.ObjectRef):
        return f"ref:{shard.hex()}"
    if isinstance(shard, (str, os.PathLike)):
        return str(Path(shard).resolve())
    raise InputDataError(
        f"A shard of type {type(shard).__name__} has no id of its own: pass the "
        "shards as a mapping {shard_id: shard}."
    )


def sample_across(surveys: list[Survey], size: int, seed: int) -> tuple[Tensor, Tensor]:
    r"""A uniform sample without replacement of ``size`` rows of all shards.

    The rows taken from each shard are multivariate hypergeometric, and each
    shard's sample is a uniformly random prefix of its rows.

    Args:
        surveys: The shards' surveys.
        size: The sample size (all rows if there are fewer).
        seed: Seeds the counts per shard.

    Returns:
        The sample's ``size x d`` inputs and ``size x 1`` outcomes.
    """
    sizes = np.array([s.n for s in surveys], dtype=np.int64)
    if sizes.sum() <= size:
        counts = sizes
    else:
        counts = np.random.default_rng(seed).multivariate_hypergeometric(sizes, size)
    X = torch.cat([s.sample_X[: int(c)] for s, c in zip(surveys, counts, strict=True)])
    Y = torch.cat([s.sample_Y[: int(c)] for s, c in zip(surveys, counts, strict=True)])
    return X, Y


def combined_moments(surveys: list[Survey]) -> tuple[int, float, float]:
    r"""The count, mean and sum of squared deviations of all shards' outcomes.

    Chan et al.'s pairwise update, without the cancellation of ``sum(y^2)``.
    """
    n, mean, m2 = 0, 0.0, 0.0
    for s in surveys:
        total = n + s.n
        delta = s.y_mean - mean
        mean = mean + delta * s.n / total
        m2 = m2 + s.y_m2 + delta * delta * n * s.n / total
        n = total
    return n, mean, m2


# ------------------------------------------------------------------- workers


def survey_shard(
    shard: Any, shard_id: str, shard_format: ShardFormat, sample_size: int, seed: int
) -> Survey:
    r"""Read and check a shard, and survey it (a Ray task: the first pass).

    Args:
        shard: The shard.
        shard_id: Its id (seeds its row order, and names it in errors).
        shard_format: How to read it.
        sample_size: Rows of its random order to return.
        seed: The build's seed.

    Returns:
        The survey.
    """
    X, Y = _load_shard(shard, shard_id, shard_format)
    n = X.shape[0]
    y = Y.squeeze(-1).double()
    y_mean = y.mean()
    g = torch.Generator().manual_seed(_shard_seed(seed, shard_id))
    rows = torch.randperm(n, generator=g)[:sample_size]
    return Survey(
        n=n,
        dim=X.shape[1],
        y_mean=float(y_mean),
        y_m2=float((y - y_mean).pow(2).sum()),
        x_min=X.amin(0),
        x_max=X.amax(0),
        sample_X=X[rows].clone(),
        sample_Y=Y[rows].clone(),
        digest=_digest(X, Y),
    )


def summed_shard(
    model: NystromGP, shard: Any, shard_id: str, shard_format: ShardFormat, threads: int
) -> Summed:
    r"""Read a shard and sum its statistics under ``model`` (a Ray task).

    The statistics are ``model.observation_statistics`` of the shard: the
    model's own recipe. The digest, a hash of the shard's values as the model
    reads them, is compared with the survey's: one pass over the bytes, far
    below the statistics' ``O(n m^2)``, where row counts alone let changed
    values by.

    Args:
        model: The model (shipped without its posterior state).
        shard: The shard.
        shard_id: Its id, for errors.
        shard_format: How to read it.
        threads: Torch threads of the task.

    Returns:
        The shard's statistics and what they cost.
    """
    torch.set_num_threads(threads)
    start, cpu = time.perf_counter(), time.process_time()
    X, Y = _load_shard(shard, shard_id, shard_format)
    stats = model.observation_statistics(X, Y)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    return Summed(stats, X.shape[0], _digest(X, Y), seconds, cpu, peak)


def _digest(X: Tensor, Y: Tensor) -> str:
    # A hash of a shard's values as the model reads them (after the cast to its
    # dtype), compared across the two passes. One pass over the bytes, far
    # below the statistics' O(n m^2); row counts alone let changed values by.
    h = hashlib.blake2b(digest_size=16)
    for t in (X, Y):
        t = t.detach().cpu().contiguous()
        h.update(f"{tuple(t.shape)}{t.dtype}".encode())
        h.update(t.numpy().data)
    return h.hexdigest()


def _shard_seed(seed: int, shard_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{shard_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _load_shard(
    shard: Any, shard_id: str, shard_format: ShardFormat
) -> tuple[Tensor, Tensor]:
    where = f"Shard {shard_id!r}"
    value = shard
    if isinstance(shard, (str, os.PathLike)):
        if shard_format.reader is not None:
            value = shard_format.reader(str(shard))
        else:
            value = _read_file(Path(shard), where)
    elif callable(shard):
        value = shard()
    X, Y = _columns(value, shard_format, where)
    return _checked(X, Y, shard_format, where)


def _read_file(path: Path, where: str) -> Any:
    suffix = path.suffix.lower()
    if suffix in (".pt", ".pth"):
        return torch.load(path, weights_only=True)
    if suffix == ".npz":
        with np.load(path) as archive:
            return {k: archive[k] for k in archive.files}
    if suffix == ".npy":
        array = np.load(path)
        if array.ndim != 2 or array.shape[1] < 2:
            raise InputDataError(
                f"{where}: a .npy shard is an n x (d + 1) array whose last column "
                f"is Y; got shape {array.shape}."
            )
        return array[:, :-1], array[:, -1]
    raise InputDataError(
        f"{where}: no reader for {suffix or 'files without a suffix'!r} (.pt, .npz "
        "and .npy are read; pass ShardFormat(reader=...) for others)."
    )


def _columns(value: Any, shard_format: ShardFormat, where: str) -> tuple[Any, Any]:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    if isinstance(value, Mapping):
        names = shard_format.x_columns
        try:
            if isinstance(names, str):
                X = value[names]
            else:
                X = np.column_stack([np.asarray(value[c]) for c in names])
            return X, value[shard_format.y_column]
        except KeyError as e:
            raise InputDataError(
                f"{where} has no column {e.args[0]!r} (it has {sorted(value)[:8]})."
            ) from None
    raise InputDataError(
        f"{where} is a {type(value).__name__}; a shard is (X, Y) or a mapping of "
        "columns."
    )


def _checked(
    X: Any, Y: Any, shard_format: ShardFormat, where: str
) -> tuple[Tensor, Tensor]:
    X, Y = torch.as_tensor(X), torch.as_tensor(Y)
    for name, value in (("X", X), ("Y", Y)):
        if not value.dtype.is_floating_point:
            raise InputDataError(
                f"{where}: {name} has dtype {value.dtype}; floating point expected."
            )
    if X.dim() != 2:
        raise InputDataError(f"{where}: X must be n x d, got {tuple(X.shape)}.")
    if Y.dim() == 2 and Y.shape[1] == 1:
        Y = Y.squeeze(1)
    if Y.dim() != 1 or Y.shape[0] != X.shape[0]:
        raise InputDataError(
            f"{where}: Y must have n = {X.shape[0]} rows and one column, got "
            f"{tuple(Y.shape)}."
        )
    if X.shape[0] == 0:
        raise InputDataError(f"{where} is empty.")
    if shard_format.dim is not None and X.shape[1] != shard_format.dim:
        raise InputDataError(
            f"{where} has {X.shape[1]} input dimensions; the model has "
            f"{shard_format.dim}."
        )
    for name, value in (("X", X), ("Y", Y)):
        if not bool(torch.isfinite(value).all()):
            kind = "NaN" if bool(torch.isnan(value).any()) else "infinite"
            raise InputDataError(f"{where}: {name} contains {kind} values.")
    dtype = shard_format.dtype
    return X.to(dtype), Y.to(dtype).unsqueeze(-1)
