#!/usr/bin/env python3
r"""Public names imported on first use (PEP 562), for packages' ``__init__``.

``botorch-sketch --help`` and ``botorch-sketch tune --help`` must not wait for
torch, BoTorch and Ax: the packages name their public classes here and import
each from its module when it is first looked up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    r"""A package's ``__getattr__`` and ``__dir__`` for names imported on use.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module that defines it.

    Returns:
        ``__getattr__`` (the name imported from its module, then kept in the
        package's namespace, so later look-ups do not come back) and
        ``__dir__`` (the package's names, the ones not yet imported included).
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            # Then ``from package import submodule`` imports the submodule.
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
