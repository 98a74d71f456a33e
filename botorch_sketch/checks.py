#!/usr/bin/env python3
r"""Checks of the numbers a user sets: counts and finite reals.

Every layer takes settings such as a subset size or a noise variance. Python's
comparisons let the wrong ones through: NaN fails every comparison, so
``value < 0`` passed it; ``True`` is an ``int``; a float count failed later
inside ``range`` or a slice with a ``TypeError`` that names neither the setting
nor the fix. These helpers return the checked value or raise
:class:`~botorch.exceptions.errors.InputDataError` naming the setting.
"""

from __future__ import annotations

import math
import numbers
import operator

from botorch.exceptions.errors import InputDataError


def checked_count(value: object, name: str, minimum: int = 1) -> int:
    r"""``value`` as an ``int`` of at least ``minimum``, else an ``InputDataError``.

    Args:
        value: The count (any integer type, such as a numpy integer; not a bool
            and not a float, even a whole one).
        name: Its name in the error.
        minimum: The smallest value allowed.

    Returns:
        The count as an ``int``.
    """
    count = None
    if not isinstance(value, bool):
        try:
            count = operator.index(value)
        except TypeError:
            pass
    if count is None or count < minimum:
        raise InputDataError(
            f"{name} must be an integer of at least {minimum}, got {value!r}."
        )
    return count


def checked_optional_count(value: object, name: str, minimum: int = 1) -> int | None:
    r"""None, or :func:`checked_count` of ``value``."""
    return None if value is None else checked_count(value, name, minimum)


def checked_real(
    value: object,
    name: str,
    minimum: float = -math.inf,
    positive: bool = False,
) -> float:
    r"""``value`` as a finite ``float`` (at least ``minimum``; above 0 if ``positive``).

    Args:
        value: A real number (a Python or numpy number, or a one-element
            tensor; not a bool).
        name: Its name in the error.
        minimum: The smallest value allowed.
        positive: Require ``value > 0``.

    Returns:
        The value as a ``float``.
    """
    number = None
    if not isinstance(value, bool):
        if isinstance(value, numbers.Real):
            number = float(value)
        elif (
            getattr(value, "numel", lambda: 0)() == 1
            and not getattr(value, "is_complex", lambda: False)()
        ):
            number = float(value)
    bound = "positive" if positive else f"at least {minimum}"
    if (
        number is None
        or not math.isfinite(number)
        or number < minimum
        or (positive and number <= 0)
    ):
        shown = value if number is None else number
        raise InputDataError(
            f"{name} must be finite and {bound} (a real number); got {shown!r}."
        )
    return number


#: The most memory, in bytes, one call sets out to use at once for a request's
#: points (4 GiB). A request estimated above it (a batch of 10^6 Thompson
#: paths, a CMA-ES population of 10^8) is refused by
#: :func:`checked_memory` before anything is allocated; raise it to allow
#: one deliberately.
MAX_BYTES = 4 * 2**30


def checked_memory(count: int, per_item: float, name: str, what: str) -> int:
    r"""``count`` if ``count * per_item`` bytes fit :data:`MAX_BYTES`, else an error.

    Args:
        count: The requested size (a number of points).
        per_item: The estimated bytes each of them needs at once.
        name: The argument that set ``count``, as the error names it.
        what: What each item is, for the error (e.g. "Thompson paths over
            1000 candidates").

    Returns:
        ``count``.
    """
    need = count * per_item
    if need > MAX_BYTES:
        most = int(MAX_BYTES // per_item)
        fix = (
            f"Use at most {most}"
            if most > 0
            else f"Even one needs {_gib(per_item)}: lower the settings it depends on"
        )
        raise InputDataError(
            f"{name} = {count} asks for {count} {what}: about {_gib(need)} at "
            f"once, above botorch_sketch.checks.MAX_BYTES ({_gib(MAX_BYTES)}). "
            f"{fix}, or raise MAX_BYTES if the machine has the memory."
        )
    return count


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB"
