"""The tutorial pages as Jupyter notebooks: a mkdocs hook that ships ``docs/tutorials/X.md`` as
``tutorials/X.ipynb`` beside the page.

The page is the one source: its code is run and its printed results are checked by
``tests/docs/test_pages.py``, and the notebook is generated from it at build time, so the two
cannot drift apart (``tests/docs/test_notebooks.py`` executes every notebook in a Jupyter
kernel and compares each cell's output with the page's). The conversion:

* prose becomes markdown cells;
* a doctest block becomes one code cell per ``>>>`` example, so each result shows under the
  line that produced it, as in the page; the page's expected output is kept in the cell's
  metadata (``crowdhide.expected``) for the test;
* any other ``python`` block becomes one code cell;
* a block marked ``<!-- not run: REASON -->`` is a listing, not code: it stays a fenced block
  in a markdown cell.

No dependency beyond the standard library: the notebook is nbformat 4.5 JSON written directly.
"""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path
from typing import Any

_FENCE = re.compile(
    r"(?:<!-- (?P<mark>not run|needs): (?P<arg>[^>]+?) -->\s*\n)?"
    r"^```python\n(?P<code>.*?)^```[ \t]*\n?",
    flags=re.S | re.M,
)
TUTORIALS = "tutorials/"
_METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _markdown(cells: list[dict[str, Any]], text: str) -> None:
    """Append prose, merged into the previous markdown cell (no empty cells)."""
    text = text.strip("\n")
    if not text:
        return
    if cells and cells[-1]["cell_type"] == "markdown":
        text = "".join(cells[-1]["source"]) + "\n\n" + text
        cells.pop()
    cells.append({"cell_type": "markdown", "metadata": {}, "source": _lines(text)})


def _code(source: str, expected: str | None = None) -> dict[str, Any]:
    meta = {} if expected is None else {"crowdhide": {"expected": expected}}
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": meta,
        "outputs": [],
        "source": _lines(source.rstrip("\n")),
    }


def notebook(page: str) -> dict[str, Any]:
    """The nbformat 4.5 notebook of a tutorial page's Markdown text (module docstring).

    >>> nb = notebook("Intro.\\n\\n```python\\n>>> 1 + 1\\n2\\n>>> x = 3\\n```\\n")
    >>> [c["cell_type"] for c in nb["cells"]], nb["cells"][1]["source"]
    (['markdown', 'code', 'code'], ['1 + 1'])
    >>> nb["cells"][1]["metadata"]
    {'crowdhide': {'expected': '2\\n'}}
    """
    cells: list[dict[str, Any]] = []
    parser = doctest.DocTestParser()
    pos = 0
    for m in _FENCE.finditer(page):
        _markdown(cells, page[pos : m.start()])
        pos = m.end()
        code = m.group("code")
        if m.group("mark") == "not run":
            _markdown(cells, f"```python\n{code}```")
        elif any(line.lstrip().startswith(">>>") for line in code.splitlines()):
            cells.extend(_code(ex.source, ex.want) for ex in parser.get_examples(code))
        else:
            cells.append(_code(code))
    _markdown(cells, page[pos:])
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"  # stable ids: the same page gives the same notebook bytes
    return {"cells": cells, "metadata": _METADATA, "nbformat": 4, "nbformat_minor": 5}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add ``tutorials/X.ipynb`` for every ``tutorials/X.md`` page."""
    from mkdocs.structure.files import File

    for page in list(files.documentation_pages()):
        if page.src_uri.startswith(TUTORIALS) and page.src_uri.endswith(".md"):
            text = Path(page.abs_src_path).read_text(encoding="utf-8")
            content = json.dumps(notebook(text), indent=1, ensure_ascii=False) + "\n"
            files.append(File.generated(config, page.src_uri[:-3] + ".ipynb", content=content))
    return files
