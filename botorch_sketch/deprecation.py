#!/usr/bin/env python3
r"""Renamed keywords, attributes and modules that keep working, with a warning.

One mechanism for every rename in the package, so that an old spelling keeps
working for a release and says what to write instead:

- :func:`renamed_keywords`: a decorator mapping old keyword arguments to new ones.
- :func:`renamed_attribute`: a property forwarding an old attribute name.
- :func:`warn_moved_module`: the warning a shim module issues on import.

Each emits a ``DeprecationWarning`` naming the old and the new spelling.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    r"""Accept old keyword names for a callable, with a ``DeprecationWarning``.

    Example:
        >>> @renamed_keywords(refactor_every="refactorise_every")
        ... def __init__(self, refactorise_every: int = 1000) -> None: ...

    Args:
        **renames: ``old_name="new_name"`` pairs.

    Returns:
        A decorator; the decorated callable takes the new names, and an old name
        is passed on as the new one after a warning. Passing both is a
        ``TypeError``, as Python's own for a repeated argument.
    """

    def decorator(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{func.__qualname__}() got both {old!r} (deprecated) and "
                        f"{new!r}; pass only {new!r}."
                    )
                warnings.warn(
                    f"{func.__qualname__}(): {old!r} is deprecated, use {new!r}.",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator


def renamed_attribute(old: str, new: str) -> property:
    r"""A property that reads and writes ``new`` under the name ``old``, warning.

    Example:
        >>> class Policy:
        ...     old = renamed_attribute("old", "new")

    Args:
        old: The deprecated attribute name (the name the property is bound to).
        new: The current attribute name.

    Returns:
        The property.
    """
    message = f"attribute {old!r} is deprecated, use {new!r}."

    def fget(self: Any) -> Any:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    def fset(self: Any, value: Any) -> None:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        setattr(self, new, value)

    return property(fget, fset, doc=f"Deprecated alias of ``{new}``.")


def warn_moved_module(old: str, new: str) -> None:
    r"""Warn, from a shim module ``old``, that its contents now live in ``new``.

    Args:
        old: The deprecated module's dotted name.
        new: The module to import from instead.
    """
    warnings.warn(
        f"module {old} is deprecated, import from {new}.",
        DeprecationWarning,
        stacklevel=3,
    )
