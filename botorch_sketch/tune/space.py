#!/usr/bin/env python3
r"""Search spaces of your own: the ``--space`` JSON file of ``botorch-sketch tune``.

The file is one JSON object mapping each parameter's name to its description::

    {
      "C":      {"type": "float", "low": 1e-3, "high": 1e3, "log": true},
      "degree": {"type": "int", "low": 1, "high": 5},
      "kernel": {"type": "categorical", "choices": ["rbf", "poly", "sigmoid"]}
    }

- ``float``: a real in ``[low, high]``; ``"log": true`` searches it on a log
  scale (then ``low > 0``).
- ``int``: an integer in ``[low, high]`` (integer bounds), optionally ``"log"``.
- ``categorical``: one of ``choices``, a list of at least two distinct
  strings, numbers or booleans (a parameter with one value is a constant of
  your function, not part of the space).

Optuna's ``suggest_float``, ``suggest_int`` and ``suggest_categorical`` and Ax's
``RangeParameterConfig`` and ``ChoiceParameterConfig`` take the same fields. Any
other field, a missing one or a bad value is an error that names the entry.
This module imports neither Ax nor Optuna.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botorch_sketch.tune.problems import Param

#: The fields each type takes (required, optional).
_FIELDS = {
    "float": ({"type", "low", "high"}, {"log"}),
    "int": ({"type", "low", "high"}, {"log"}),
    "categorical": ({"type", "choices"}, set()),
}


@dataclass(frozen=True)
class Choice:
    r"""A categorical parameter: one of ``choices``."""

    name: str
    choices: tuple[str | int | float | bool, ...]
    kind: str = "categorical"

    def to_dict(self) -> dict[str, Any]:
        r"""The JSON description (``--space`` entry plus ``name``)."""
        return {"name": self.name, "type": "categorical", "choices": list(self.choices)}


#: A parameter of a search space.
SpaceParam = Param | Choice


def to_dict(param: SpaceParam) -> dict[str, Any]:
    r"""A parameter's JSON description: its ``--space`` entry and its name."""
    if isinstance(param, Choice):
        return param.to_dict()
    out = {"name": param.name, "type": param.kind, "low": param.low}
    out.update(high=param.high, log=param.log)
    return out


def _number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def parse_entry(name: str, entry: Any) -> SpaceParam:
    r"""One parameter from its ``--space`` entry.

    Args:
        name: The parameter's name.
        entry: Its description (a JSON object).

    Returns:
        A :class:`~botorch_sketch.tune.problems.Param` or a
        :class:`Choice`.

    Raises:
        ValueError: Naming the parameter and what is wrong with its entry.
    """
    where = f"parameter {name!r}"
    if not isinstance(name, str) or not name:
        raise ValueError(f"parameter names must be non-empty texts, got {name!r}")
    if not isinstance(entry, Mapping):
        raise ValueError(
            f"{where} must be an object such as "
            '{"type": "float", "low": 0, "high": 1}, got ' + _short(entry)
        )
    kind = entry.get("type")
    if kind not in _FIELDS:
        raise ValueError(
            f"{where}: 'type' must be one of {sorted(_FIELDS)}, got {_short(kind)}"
        )
    required, optional = _FIELDS[kind]
    missing = sorted(required - set(entry))
    if missing:
        raise ValueError(f"{where} ({kind}) lacks {missing[0]!r}")
    unknown = sorted(set(entry) - required - optional)
    if unknown:
        allowed = sorted(required | optional)
        raise ValueError(
            f"{where} ({kind}) has an unknown field {unknown[0]!r}; its fields "
            f"are {allowed}"
        )
    if kind == "categorical":
        choices = entry["choices"]
        if (
            not isinstance(choices, list)
            or len(choices) < 2
            or not all(isinstance(c, (str, bool)) or _number(c) for c in choices)
        ):
            raise ValueError(
                f"{where}: 'choices' must be a list of at least two texts, numbers "
                f"or booleans, got {_short(choices)}"
            )
        # 1 and 1.0 are one value to Ax and Optuna; True is not 1.
        keys = [
            (type(c), c) if isinstance(c, (str, bool)) else (float, float(c))
            for c in choices
        ]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{where}: 'choices' repeats a value: {_short(choices)}")
        return Choice(name, tuple(choices))
    for bound in ("low", "high"):
        if not _number(entry[bound]):
            raise ValueError(
                f"{where}: {bound!r} must be a finite number, got "
                f"{_short(entry[bound])}"
            )
    log = entry.get("log", False)
    if not isinstance(log, bool):
        raise ValueError(f"{where}: 'log' must be true or false, got {_short(log)}")
    try:
        return Param(name, float(entry["low"]), float(entry["high"]), kind, log)
    except ValueError as e:
        # Param names itself first: "C: the lower bound ...".
        raise ValueError(f"{where}: {str(e).split(': ', 1)[-1]}") from None


def parse_space(space: Any) -> tuple[SpaceParam, ...]:
    r"""A search space from the JSON object of a ``--space`` file.

    Args:
        space: ``{name: entry}`` (see the module's documentation); a list of
            entries with a ``"name"`` field each (as a checkpoint stores them)
            is read too.

    Returns:
        The parameters, in the file's order.

    Raises:
        ValueError: For an empty space or a bad entry, naming it.
    """
    if isinstance(space, list):
        if not all(isinstance(e, Mapping) and "name" in e for e in space):
            raise ValueError("a stored space must be a list of objects with a 'name'")
        items = [
            (e["name"], {k: v for k, v in e.items() if k != "name"}) for e in space
        ]
        if len({name for name, _ in items}) != len(items):
            raise ValueError("a stored space names a parameter twice")
    elif isinstance(space, Mapping):
        items = list(space.items())
    else:
        raise ValueError(
            "the space must be a JSON object mapping parameter names to their "
            f"descriptions, got {_short(space)}"
        )
    if not items:
        raise ValueError("the space has no parameter")
    return tuple(parse_entry(name, entry) for name, entry in items)


def read_space(path: str) -> tuple[SpaceParam, ...]:
    r"""The search space in a ``--space`` JSON file.

    Raises:
        ValueError: If the file cannot be read, is not JSON, or has a bad entry;
            the message names the file (and the entry).
    """
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        space = json.loads(text, object_pairs_hook=_Object)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from None
    try:
        if not isinstance(space, dict):  # the list form is the checkpoint's
            raise ValueError(
                "the space must be a JSON object mapping parameter names to "
                f"their descriptions, got {_short(space)}"
            )
        _check_repeats(space)
        return parse_space(space)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


class _Object(dict):
    r"""A JSON object that remembers the keys it was given more than once.

    JSON's parsers keep the last of two entries of one name: a parameter
    named twice in ``--space`` silently lost its first description.
    """

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        seen: set[str] = set()
        self.repeated: list[str] = []
        for key, _ in pairs:
            if key in seen:
                self.repeated.append(key)
            seen.add(key)


def _check_repeats(space: dict) -> None:
    # A parameter named twice, or a field given twice in one entry.
    for name in getattr(space, "repeated", []):
        raise ValueError(
            f"parameter {name!r} is named twice (JSON would keep only the last)"
        )
    for name, entry in space.items():
        for field in getattr(entry, "repeated", []):
            raise ValueError(
                f"parameter {name!r} gives {field!r} twice (JSON would keep only "
                "the last)"
            )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
