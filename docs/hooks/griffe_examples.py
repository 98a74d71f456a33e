"""Griffe extension for the API pages: ``Example:`` read as ``Examples:``.

The docstrings follow BoTorch in writing a singular ``Example:`` section of
``>>>`` lines. Griffe's Google parser knows only the plural as a section (with its
``>>>`` lines read as Python code); a singular one becomes an admonition whose
``>>>`` lines Markdown renders as nested block quotes. This extension renames the
heading in the text griffe parses; the sources are unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", flags=re.MULTILINE)


class SingularExamples(griffe.Extension):
    """Read a docstring's ``Example:`` section as ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rename the section before the docstring is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
