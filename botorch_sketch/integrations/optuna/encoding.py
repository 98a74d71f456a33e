#!/usr/bin/env python3
r"""The search space as the unit cube: encoding, decoding, rounding to the grid.

The encoding is the one Optuna's ``BoTorchSampler`` uses (Optuna's
``_SearchSpaceTransform`` with ``transform_0_1=True``), written here on the
distributions' public attributes, operation for operation, so that it gives
the same floats: log-scaled parameters in log space, integers and stepped
floats on a grid widened by half a step on each side, categorical parameters
one-hot, then every column scaled to ``[0, 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from botorch.exceptions.errors import UnsupportedError
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from torch import Tensor

_TKWARGS: dict[str, Any] = {"dtype": torch.float64, "device": torch.device("cpu")}


class _Encoding:
    r"""Parameters of a search space to points of the unit cube, and back.

    ``encode`` and ``decode`` give the floats of Optuna's
    ``_SearchSpaceTransform(search_space, transform_0_1=True)``'s ``transform``
    and ``untransform``; ``decode`` then gives Python ``float`` and ``int``
    values (Optuna's returns a continuous parameter at its upper bound as a
    ``numpy.float64``), as Optuna's own samplers return them.
    """

    def __init__(self, search_space: dict[str, BaseDistribution]) -> None:
        r"""Lay out the columns of a non-empty search space."""
        if not search_space:
            raise UnsupportedError("Cannot encode an empty search space.")
        self.search_space = search_space
        bounds: list[tuple[float, float]] = []
        #: The encoded columns of each parameter, in the search space's order.
        self.columns: list[np.ndarray] = []
        for distribution in search_space.values():
            if isinstance(distribution, CategoricalDistribution):
                width = len(distribution.choices)
                bounds += [(0.0, 1.0)] * width
            else:
                width = 1
                bounds.append(_bounds(distribution))
            self.columns.append(np.arange(len(bounds) - width, len(bounds)))
        self._bounds = np.array(bounds, dtype=np.float64)
        self._single = self._bounds[:, 0] == self._bounds[:, 1]

    def encode(self, params: dict[str, Any]) -> np.ndarray:
        r"""The ``D`` encoded values of a configuration of every parameter."""
        x = np.zeros(len(self._bounds), dtype=np.float64)
        for (name, distribution), columns in zip(
            self.search_space.items(), self.columns, strict=True
        ):
            value = params[name]
            if isinstance(distribution, CategoricalDistribution):
                x[columns[0] + int(distribution.to_internal_repr(value))] = 1
            else:
                x[columns[0]] = _to_real(value, distribution)
        low, high, single = self._bounds[:, 0], self._bounds[:, 1], self._single
        x[single] = 0.5
        x[~single] = (x[~single] - low[~single]) / (high[~single] - low[~single])
        return x

    def decode(self, x: np.ndarray) -> dict[str, Any]:
        r"""The configuration of ``D`` encoded values (argmax of a one-hot block).

        Values are clipped into their distributions and rounded to their steps.
        """
        if x.shape != (len(self._bounds),):
            raise UnsupportedError(
                f"Expected {len(self._bounds)} encoded values; got shape {x.shape}."
            )
        low, high = self._bounds[:, 0], self._bounds[:, 1]
        x = low + x * (high - low)
        params = {}
        for (name, distribution), columns in zip(
            self.search_space.items(), self.columns, strict=True
        ):
            if isinstance(distribution, CategoricalDistribution):
                params[name] = distribution.to_external_repr(x[columns].argmax())
            elif isinstance(distribution, FloatDistribution):
                params[name] = float(_from_real(x[columns].item(), distribution))
            else:
                params[name] = int(_from_real(x[columns].item(), distribution))
        return params


def _bounds(distribution: BaseDistribution) -> tuple[float, float]:
    r"""A numerical parameter's column before scaling, widened by half a step."""
    d = distribution
    if isinstance(d, FloatDistribution):
        if d.step is None:
            return _to_real(d.low, d), _to_real(d.high, d)
        half_step = 0.5 * d.step
        return _to_real(d.low, d) - half_step, _to_real(d.high, d) + half_step
    if isinstance(d, IntDistribution):
        half_step = 0.5 * d.step
        if d.log:
            return _to_real(d.low - half_step, d), _to_real(d.high + half_step, d)
        return _to_real(d.low, d) - half_step, _to_real(d.high, d) + half_step
    raise UnsupportedError(f"Cannot encode the distribution {d!r}.")


def _to_real(value: float, distribution: FloatDistribution | IntDistribution) -> float:
    return math.log(value) if distribution.log else float(value)


def _from_real(
    value: float, distribution: FloatDistribution | IntDistribution
) -> int | float:
    r"""The parameter value of a column's value before scaling (as Optuna's)."""
    d = distribution
    if isinstance(d, FloatDistribution):
        if d.log:
            value = math.exp(value)
            if d.single():
                return value
            return float(np.clip(value, d.low, np.nextafter(d.high, d.high - 1)))
        if d.step is not None:
            value = np.round((value - d.low) / d.step) * d.step + d.low
            return float(np.clip(value, d.low, d.high))
        if d.single():
            return value
        return min(value, np.nextafter(d.high, d.high - 1))
    if d.log:
        return min(max(int(round(math.exp(value))), d.low), d.high)
    step_index = math.floor((value - d.low) / d.step + 0.5)
    return min(max(step_index * d.step + d.low, d.low), d.high)


def _encode(encoding: _Encoding, params: list[dict[str, Any]]) -> Tensor:
    r"""The ``n x D`` encoded configurations, as a float64 tensor."""
    return torch.as_tensor(np.stack([encoding.encode(p) for p in params]), **_TKWARGS)


def _rounding(encoding: _Encoding) -> Callable[[Tensor], Tensor] | None:
    r"""The map of relaxed points to valid configurations, None if all continuous."""
    if all(
        getattr(d, "step", None) is None and not _is_categorical(d)
        for d in encoding.search_space.values()
    ):
        return None

    def round_to_grid(X: Tensor) -> Tensor:
        rows = X.detach().reshape(-1, X.shape[-1]).cpu().numpy()
        rounded = np.stack([encoding.encode(encoding.decode(r)) for r in rows])
        return torch.as_tensor(rounded, dtype=X.dtype, device=X.device).reshape(X.shape)

    return round_to_grid


#: Discrete parameters of at most this many values are searched exhaustively
#: once the acquisition's optimum is rounded (``GPSampler``'s bound too).
_MAX_EXHAUSTIVE = 16


def _discrete_choices(encoding: _Encoding) -> list[tuple[Tensor, Tensor]]:
    r"""Every value of each small discrete parameter, as its encoded columns.

    One entry per categorical parameter, integer or stepped float of 2 to
    ``_MAX_EXHAUSTIVE`` values: its ``c`` column indices and the ``k x c``
    encoded values of its ``k`` choices (one-hot rows for a categorical one).
    """
    entries = []
    for distribution, columns in zip(
        encoding.search_space.values(), encoding.columns, strict=True
    ):
        d = distribution
        if isinstance(d, CategoricalDistribution):
            choices = np.eye(len(columns))
        elif getattr(d, "step", None) is not None or isinstance(d, IntDistribution):
            step = 1 if d.step is None else d.step
            count = int(round((d.high - d.low) / step)) + 1
            if count > _MAX_EXHAUSTIVE:
                continue
            low, high = _bounds(d)
            values = [_to_real(d.low + i * step, d) for i in range(count)]
            choices = ((np.array(values) - low) / (high - low)).reshape(-1, 1)
        else:
            continue
        if len(choices) < 2:
            continue
        entries.append(
            (
                torch.as_tensor(columns, dtype=torch.long),
                torch.as_tensor(choices, **_TKWARGS),
            )
        )
    return entries


def _is_categorical(distribution: BaseDistribution) -> bool:
    return hasattr(distribution, "choices")


def _contains(search_space: dict[str, BaseDistribution], params: dict) -> bool:
    r"""Whether ``params`` gives every parameter a value its distribution allows."""
    try:
        return all(
            name in params and _allows(d, d.to_internal_repr(params[name]))
            for name, d in search_space.items()
        )
    except (ValueError, TypeError):
        return False


def _allows(distribution: BaseDistribution, value: float) -> bool:
    r"""Whether an internal value is in a distribution (as Optuna's ``_contains``)."""
    d = distribution
    if isinstance(d, CategoricalDistribution):
        return 0 <= int(value) < len(d.choices)
    if isinstance(d, FloatDistribution):
        if d.step is None:
            return d.low <= value <= d.high
        k = (value - d.low) / d.step
        return d.low <= value <= d.high and abs(k - round(k)) < 1.0e-8
    if isinstance(d, IntDistribution):
        return d.low <= value <= d.high and (value - d.low) % d.step == 0
    raise UnsupportedError(f"Cannot check a value of the distribution {d!r}.")
