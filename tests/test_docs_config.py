"""The documentation site's configuration: maths in the tutorials, pages from disk.

The tutorials' maths (``$...$`` in their Markdown) showed as raw TeX: the
mkdocs-jupyter plugin wrote ``<script src="">`` where nbconvert's template loads
MathJax, because its ``custom_mathjax_url`` defaults to an empty string. And
``site/index.html`` opened from disk led to folder listings: with directory URLs
every link ends in ``page/``, which only a web server turns into
``page/index.html``.
"""

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "tutorials" / "incremental_bo" / "incremental_bo.ipynb"


class _Loader(yaml.SafeLoader):
    """``mkdocs.yml`` may hold MkDocs' own tags (``!ENV``, ``!relative``)."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)


def _jupyter_options(config: dict) -> dict:
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocs-jupyter" in plugin:
            return plugin["mkdocs-jupyter"]
    raise AssertionError("mkdocs.yml has no mkdocs-jupyter plugin")


def test_pages_are_files_not_directories():
    assert _config().get("use_directory_urls") is False


def test_the_notebooks_load_mathjax_2():
    url = _jupyter_options(_config()).get("custom_mathjax_url", "")
    # nbconvert's template configures MathJax through MathJax.Hub: version 2.
    assert url.startswith("https://"), url
    assert "mathjax/2." in url and "MathJax.js?config=" in url, url


@pytest.mark.slow  # nbconvert's rendering: 3-6 s
def test_a_rendered_notebook_loads_mathjax_and_keeps_its_maths():
    convert = pytest.importorskip(
        "mkdocs_jupyter.nbconvert2", reason="the docs extra renders the notebooks"
    )
    url = _jupyter_options(_config())["custom_mathjax_url"]
    html = convert.nb2html(str(NOTEBOOK), custom_mathjax_url=url)
    assert f'<script src="{url}"' in html.replace("&amp;", "&")
    assert '<script src="">' not in html
    # The TeX is left for MathJax to typeset (tex2jax reads $...$).
    assert "$O(n^3)$" in html
