"""The documentation site builds strictly (a warning fails it) and its internal links resolve.

``mkdocs build --strict`` already refuses a Markdown link to a missing page or anchor and a
docstring griffe cannot parse; the link walk below checks the *built* HTML too, which covers
the API reference's cross-references and the navigation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _docs_extra_missing() -> str | None:
    import importlib.util

    for module in DOCS_EXTRA:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the parent package of a dotted name is missing
            found = False
        if not found:
            return f"the docs extra is not installed ({module} missing): pip install -e '.[docs]'"
    return None


class _Links(HTMLParser):
    """Collects the ids of a page and the targets of its href/src attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in {"id", "name"}:
                self.ids.add(value)
            elif name in {"href", "src"} and not (tag == "link" and "://" in value):
                self.targets.append(value)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Every internal link of the built ``site`` whose file or anchor does not exist."""
    pages = {path: _parse(path) for path in site.rglob("*.html")}
    broken = []
    for page, links in pages.items():
        if page.name == "404.html":
            continue  # served at any missing URL, so its links are root-relative by design
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:")):
                continue  # external: not followed (the build is offline)
            dest = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if dest.is_dir():
                dest = dest / "index.html"
            where = f"{page.relative_to(site)} -> {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif parts.fragment and dest.suffix == ".html":
                ids = pages[dest].ids if dest in pages else _parse(dest).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no such anchor")
    return broken


@pytest.mark.slow
def test_site_builds_strictly_with_working_links(tmp_path: Path) -> None:
    missing = _docs_extra_missing()
    if missing is not None:
        pytest.skip(missing)
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life banner
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    assert (site / "api" / "crowdhide.html").exists()
    tutorials = sorted((site / "tutorials").glob("*.html"))
    assert len(tutorials) == 3
    for page in tutorials:  # each tutorial ships its notebook
        assert json.loads(page.with_suffix(".ipynb").read_text(encoding="utf-8"))["nbformat"] == 4
    assert broken_links(site) == []


def test_the_link_check_finds_a_broken_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<h1 id="top">A</h1><a href="b.html#nowhere">b</a><a href="c.html">c</a>'
        '<a href="#top">top</a><a href="https://example.org/x">ext</a>',
        encoding="utf-8",
    )
    (tmp_path / "b.html").write_text('<h1 id="here">B</h1>', encoding="utf-8")
    assert broken_links(tmp_path) == [
        "a.html -> b.html#nowhere: no such anchor",
        "a.html -> c.html: no such file",
    ]


def test_sphinx_roles_render_as_code() -> None:
    pytest.importorskip("griffe", reason="the docs extra is not installed (griffe missing)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("rst_roles", ROOT / "docs/_ext/rst_roles.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.plain(":meth:`~a.B.c` and :mod:`crowdhide.qif`") == "`c` and `crowdhide.qif`"
