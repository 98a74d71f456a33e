"""The documentation site's configuration: maths in the tutorials, pages from disk.

The tutorials' maths (``$...$`` in their Markdown) showed as raw TeX: the
mkdocs-jupyter plugin wrote ``<script src="">`` where nbconvert's template loads
MathJax, because its ``custom_mathjax_url`` defaults to an empty string. A CDN's
URL there left the maths raw wherever the site is read without a network, so
the site ships MathJax itself (``docs/javascripts/mathjax.js`` loads the files
that ``docs/hooks/mathjax.py`` copies from an installed package). And
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


def test_the_maths_loads_no_script_from_the_network():
    text = (ROOT / "mkdocs.yml").read_text()
    config = _config()
    url = _jupyter_options(config).get("custom_mathjax_url", "")
    scripts = [
        s if isinstance(s, str) else s.get("path", "")
        for s in config.get("extra_javascript", [])
    ]
    for where in [url, *scripts]:
        assert "://" not in where and not where.startswith("//"), where
    # No CDN anywhere in the file (a comment's URL would invite one back).
    assert "mathjax/2." not in text and "cdn" not in text.lower()


def test_the_notebooks_load_the_shipped_mathjax():
    url = _jupyter_options(_config())["custom_mathjax_url"]
    # From a tutorial's page, site/tutorials/NAME/NAME.html, to the site's root.
    assert url == "../../javascripts/mathjax.js"
    loader = (ROOT / "docs" / "javascripts" / "mathjax.js").read_text()
    assert "tex-svg.js" in loader and "://" not in loader
    # The tutorials are all at that depth (docs/hooks/repo_pages.py adds them so).
    for notebook in ROOT.glob("tutorials/**/*.ipynb"):
        if ".ipynb_checkpoints" not in notebook.parts:
            assert len(notebook.relative_to(ROOT).parts) == 3, notebook
    assert "docs/hooks/mathjax.py" in _config()["hooks"]


def test_the_hook_finds_mathjax_3():
    pytest.importorskip("mkdocs", reason="the docs extra builds the site")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "mathjax_hook", ROOT / "docs" / "hooks" / "mathjax.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    try:
        es5 = hook.mathjax_es5()
    except Exception as error:  # the docs extra is not installed
        pytest.skip(str(error))
    assert all((es5 / part).exists() for part in hook.PARTS)


@pytest.mark.slow  # nbconvert's rendering: 3-6 s
def test_a_rendered_notebook_loads_mathjax_and_keeps_its_maths():
    convert = pytest.importorskip(
        "mkdocs_jupyter.nbconvert2", reason="the docs extra renders the notebooks"
    )
    url = _jupyter_options(_config())["custom_mathjax_url"]
    html = convert.nb2html(str(NOTEBOOK), custom_mathjax_url=url)
    assert f'<script src="{url}"' in html.replace("&amp;", "&")
    assert '<script src="">' not in html
    # The TeX is left for MathJax to typeset (the loader's inlineMath reads $...$).
    assert "$O(n^3)$" in html
