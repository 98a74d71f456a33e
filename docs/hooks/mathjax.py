"""MkDocs hook: MathJax shipped with the site, so that the maths renders offline.

The tutorials' maths is typeset in the browser by MathJax 3 (SVG output: no web
fonts to load), which ``docs/javascripts/mathjax.js`` configures and loads from
``javascripts/mathjax/`` beside it. Those files are not committed: after the
build this hook copies them from the ``django-static-mathjax`` package (the docs
extra pins it; its module is ``mathjax``), which bundles MathJax 3's ``es5``
build. Only the SVG bundle and the files it loads on demand are copied (the
TeX extensions of ``autoload``, the menu and its accessibility tools).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError

#: Where the site's pages find MathJax (relative to the site's root).
TARGET = Path("javascripts") / "mathjax"
#: What is copied from the package's ``es5`` folder.
PARTS = ("tex-svg.js", "input", "ui", "a11y")


def mathjax_es5() -> Path:
    """The installed MathJax 3 ``es5`` folder (the package is not imported)."""
    spec = importlib.util.find_spec("mathjax")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        es5 = Path(location) / "static" / "mathjax" / "es5"
        if (es5 / "tex-svg.js").is_file():
            return es5
    raise PluginError(
        "MathJax 3 not found: install the docs extra (django-static-mathjax), "
        "whose es5/tex-svg.js the site ships so that its maths renders offline."
    )


def on_post_build(config) -> None:
    """Copy MathJax's SVG bundle into the built site."""
    es5 = mathjax_es5()
    target = Path(config["site_dir"]) / TARGET
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for part in PARTS:
        source = es5 / part
        if source.is_dir():
            shutil.copytree(source, target / part)
        else:
            shutil.copy2(source, target / part)
