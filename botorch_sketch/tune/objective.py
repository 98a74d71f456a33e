#!/usr/bin/env python3
r"""Objectives of your own: ``botorch-sketch tune --objective package.module:function``.

The function takes a dict of parameters (names as in the ``--space`` file) and
returns a float, or a dict of floats for several objectives. ``--objectives``
names each value and says whether it is minimised or maximised
(``--objectives loss=min``, ``--objectives accuracy=max latency=min``); without
it a float is minimised under the name ``value`` (as in Optuna's
``create_study``). A returned NaN makes the trial FAILED, as it does in Ax and
Optuna; an exception does too.

The module is imported by name with :func:`importlib.import_module`, from the
current directory or ``sys.path`` (``PYTHONPATH``); worker processes import it
again, so it must be importable on every machine that runs trials (on a Ray
cluster: installed there, or shipped with Ray's ``runtime_env``).
"""

from __future__ import annotations

import importlib
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Where a minimised or maximised objective is named in ``--objectives``.
DIRECTIONS = {"min": "min", "max": "max", "minimize": "min", "maximize": "max"}
#: The name of a float-valued objective when ``--objectives`` is not given.
DEFAULT_NAME = "value"
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_NAME = re.compile(r"[A-Za-z_][\w.]*")


class ObjectiveError(Exception):
    r"""A bad objective: not importable, not callable, or a bad return value."""


def load_objective(spec: str) -> Callable[[dict[str, Any]], Any]:
    r"""The function named by ``package.module:function``.

    The current directory is searched first, as ``python -m`` does, so that a
    module beside the command's working directory is found.

    Raises:
        ObjectiveError: If the text is not ``module:function``, the module cannot
            be found or fails to import, or it has no such callable.
    """
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec):
        raise ObjectiveError(
            f"--objective must be MODULE:FUNCTION (e.g. mypackage.train:objective), "
            f"got {spec!r}"
        )
    module_name, function_name = spec.split(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and module_name.startswith(e.name):
            raise ObjectiveError(
                f"--objective {spec}: no module named {e.name!r} (searched the "
                "current directory and PYTHONPATH)"
            ) from None
        raise ObjectiveError(
            f"--objective {spec}: importing {module_name} failed: {e}"
        ) from None
    except Exception as e:  # the module's own code failed
        raise ObjectiveError(
            f"--objective {spec}: importing {module_name} failed with "
            f"{type(e).__name__}: {e}"
        ) from None
    if not hasattr(module, function_name):
        raise ObjectiveError(
            f"--objective {spec}: module {module_name} has no {function_name!r}"
        )
    function = getattr(module, function_name)
    if not callable(function):
        raise ObjectiveError(
            f"--objective {spec}: {function_name} is not callable (got "
            f"{_short(function)})"
        )
    return function


def parse_objectives(items: Sequence[str] | None) -> dict[str, str]:
    r"""``["loss=min", "acc=max"]`` as ``{"loss": "min", "acc": "max"}``.

    Args:
        items: ``NAME=min|max`` texts (``minimize`` and ``maximize`` too), or None
            for one minimised objective named :data:`DEFAULT_NAME`.

    Raises:
        ObjectiveError: For a malformed item or a name given twice.
    """
    if not items:
        return {DEFAULT_NAME: "min"}
    out: dict[str, str] = {}
    for item in items:
        name, sep, direction = item.partition("=")
        if not (sep and _NAME.fullmatch(name) and direction in DIRECTIONS):
            raise ObjectiveError(
                f"--objectives takes NAME=min or NAME=max (e.g. loss=min), got {item!r}"
            )
        if name in out:
            raise ObjectiveError(f"--objectives names {name!r} twice")
        out[name] = DIRECTIONS[direction]
    return out


def objective_values(
    result: Any, objectives: Mapping[str, str], spec: str = "the objective"
) -> dict[str, float]:
    r"""The objective values a function returned, by name.

    Args:
        result: What the function returned: a real number, or a dict of real
            numbers with the names of ``objectives`` as keys (extra keys are
            ignored).
        objectives: The objectives' names and directions.
        spec: The function, for messages.

    Returns:
        A float for each objective (NaN stays NaN: a failed trial).

    Raises:
        ObjectiveError: If ``result`` is of another type or lacks an objective.
    """
    names = list(objectives)
    if isinstance(result, Mapping):
        missing = [n for n in names if n not in result]
        if missing:
            raise ObjectiveError(
                f"{spec} returned a dict with keys {sorted(map(str, result))[:10]}, "
                f"without {missing[0]!r}; name its values with --objectives "
                "NAME=min|max ..."
            )
        values = {n: result[n] for n in names}
    elif len(names) == 1:
        values = {names[0]: result}
    else:
        raise ObjectiveError(
            f"{spec} returned a {type(result).__name__}, not a dict of the "
            f"{len(names)} objectives {names}"
        )
    out = {}
    for name, value in values.items():
        if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
            value = value.item()  # a numpy or torch scalar
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ObjectiveError(
                f"{spec} returned {_short(value)} for {name!r}; it must return a "
                "float (or a dict of floats)"
            )
        out[name] = float(value)
    return out


def call_objective(
    spec: str, objectives: Mapping[str, str], parameters: Mapping[str, Any]
) -> tuple[dict[str, float], float]:
    r"""Evaluate ``spec`` at ``parameters`` (what a worker runs for one trial).

    Args:
        spec: ``package.module:function``.
        objectives: The objectives' names and directions.
        parameters: The trial's parameters.

    Returns:
        The values by objective name (NaN for a failed evaluation) and the
        seconds the call took.

    Raises:
        ObjectiveError: If the function cannot be loaded or returns a bad value;
            whatever the function raises is passed on.
    """
    function = load_objective(spec)
    start = time.perf_counter()
    result = function(dict(parameters))
    seconds = time.perf_counter() - start
    return objective_values(result, objectives, spec), seconds


def is_failure(values: Mapping[str, float]) -> bool:
    r"""Whether any value is NaN or infinite (a failed trial).

    NaN fails a trial in Ax and Optuna. An infinite value failed it too in
    effect: Ax recorded it as complete, then could not fit a model to it
    (every later suggestion, and every resume, raised), so both backends
    treat it as a failed evaluation.
    """
    return not all(math.isfinite(v) for v in values.values())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
