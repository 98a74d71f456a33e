"""MkDocs hook: pages that live outside ``docs/``, read in place.

The site's home page is ``README.md``, its benchmark page ``BENCHMARKS.md``, and
its tutorials ``tutorials/<name>/<name>.ipynb`` (rendered by mkdocs-jupyter from
the outputs they are committed with). None of them is copied into ``docs/``:
each is added to the build as a file read from where it is, and the links that
``README.md`` and ``BENCHMARKS.md`` write from the repository root
(``docs/...``) are rewritten to the site's layout.

The docstrings are Google style with some reST roles (``:class:`~a.b.C```), which
Markdown renders as the role's name before the code. On the API pages each role is
turned into a cross-reference (optional: a name that is not documented on the site
stays plain code), showing the last component where the role's target starts
with ``~``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]

# site path -> file in the repository
ROOT_PAGES = {"index.md": "README.md", "BENCHMARKS.md": "BENCHMARKS.md"}

# "](docs/x)" and "](./docs/x)" in a root page -> "](x)" on the site
_DOCS_LINK = re.compile(r"\]\((?:\./)?docs/")

_ROLE_NAME = r":(?:py:)?(?:class|mod|func|meth|attr|data|exc|obj|const):"
# ":class:<code>~a.b.C</code>", as Markdown renders a docstring's reST role (a
# target broken over two lines has a space in it)
_ROLE = re.compile(
    _ROLE_NAME + r"<code>(?P<tilde>~?)(?P<target>\.?[\w. ]+?)(?P<call>\(\))?</code>"
)
# ":meth:<code>Title &lt;a.b.C&gt;</code>", a role with an explicit title
_TITLED_ROLE = re.compile(
    _ROLE_NAME + r"<code>(?P<title>[^<]+?)\s*&lt;(?P<target>[\w.]+)&gt;</code>"
)


@event_priority(100)  # before mkdocs-jupyter wraps the notebooks
def on_files(files: Files, config) -> Files:
    """Add the root pages and the tutorials to the build."""
    for uri, name in ROOT_PAGES.items():
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(ROOT / name)))
    # A real file under the repository root (not File.generated): mkdocs-jupyter's
    # wrapper finds the notebook through src_dir.
    for notebook in sorted(ROOT.glob("tutorials/*/*.ipynb")):
        uri = notebook.relative_to(ROOT).as_posix()
        files.append(
            File(
                uri,
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Rewrite the root pages' links into ``docs/`` to the site's layout."""
    if page.file.src_uri in ROOT_PAGES:
        return _DOCS_LINK.sub("](", markdown)
    return markdown


def _autoref(target: str, shown: str) -> str:
    return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'


def _role_to_autoref(match: re.Match) -> str:
    target = match["target"].replace(" ", "").lstrip(".")
    shown = target.rsplit(".", 1)[-1] if match["tilde"] else target
    return _autoref(target, shown + (match["call"] or ""))


def _titled_role_to_autoref(match: re.Match) -> str:
    return _autoref(match["target"], match["title"].strip())


def on_page_content(html: str, page, config, files) -> str:
    """Turn the reST roles of the API pages' docstrings into cross-references."""
    if page.file.src_uri.startswith("api/"):
        html = _TITLED_ROLE.sub(_titled_role_to_autoref, html)
        return _ROLE.sub(_role_to_autoref, html)
    return html
