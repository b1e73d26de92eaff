"""The tutorials as Jupyter notebooks (``docs/_ext/notebooks.py``): each generated notebook is
valid nbformat, runs top to bottom in a real Jupyter kernel (ipykernel, driven by nbclient),
and every cell that is a doctest example in the page prints what the page says it prints.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.docs.pages import DOCS

TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _hook() -> ModuleType:
    """``docs/_ext/notebooks.py``, loaded by path (mkdocs loads it the same way)."""
    path = DOCS / "_ext" / "notebooks.py"
    spec = importlib.util.spec_from_file_location("docs_notebooks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _execute(nb: dict[str, Any], cwd: Path) -> Any:
    nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[docs]'")
    nbclient = pytest.importorskip("nbclient", reason="pip install -e '.[docs]'")
    pytest.importorskip("ipykernel", reason="pip install -e '.[docs]'")
    node = nbformat.reads(json.dumps(nb), as_version=4)  # as read from the .ipynb file
    nbformat.validate(node)
    client = nbclient.NotebookClient(
        node, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()
    return node


def _printed(cell: Any) -> str:
    """What a doctest would have seen: the cell's stdout, then its result's repr."""
    text = ""
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream" and out["name"] == "stdout":
            text += out["text"]
        elif out["output_type"] == "execute_result":
            text += out["data"].get("text/plain", "") + "\n"
    return text


def mismatches(nb: Any) -> list[str]:
    """Cells whose output differs from the page's expected output."""
    checker = doctest.OutputChecker()
    bad = []
    for cell in nb["cells"]:
        expected = cell.get("metadata", {}).get("crowdhide", {}).get("expected")
        if expected is None:
            continue
        got = _printed(cell)
        if not checker.check_output(expected, got, _FLAGS):
            bad.append(f"{''.join(cell['source'])!r}: expected {expected!r}, got {got!r}")
    return bad


def test_the_conversion_keeps_prose_listings_and_one_cell_per_example() -> None:
    hook = _hook()
    assert doctest.testmod(hook).failed == 0
    page = (
        "# T\n\nText.\n\n<!-- not run: a listing -->\n```python\ndef f(): ...\n```\n\n"
        "```python\n>>> a = 2\n>>> a * 3\n6\n```\n\n```python\nb = 1\nprint(b)\n```\nEnd.\n"
    )
    cells = hook.notebook(page)["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code", "code", "markdown"]
    assert "def f(): ..." in "".join(cells[0]["source"])  # the listing stays prose
    assert [c["source"] for c in cells[1:4]] == [["a = 2"], ["a * 3"], ["b = 1\n", "print(b)"]]
    assert cells[2]["metadata"] == {"crowdhide": {"expected": "6\n"}}
    assert len({c["id"] for c in cells}) == len(cells)


def test_the_output_check_can_fail(tmp_path: Path) -> None:
    """A page whose stated output is wrong is caught in the executed notebook."""
    hook = _hook()
    page = "```python\n>>> print(40 + 2)\n42\n>>> 1 + 1\n3\n```\n"
    node = _execute(hook.notebook(page), tmp_path)
    bad = mismatches(node)
    assert len(bad) == 1
    assert "'1 + 1'" in bad[0]
    assert "got '2\\n'" in bad[0]


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_each_tutorial_notebook_runs_in_a_kernel_and_prints_what_the_page_says(
    page: Path, tmp_path: Path
) -> None:
    hook = _hook()
    nb = hook.notebook(page.read_text(encoding="utf-8"))
    examples = [c for c in nb["cells"] if "crowdhide" in c["metadata"]]
    assert len(examples) >= 10, "the page lost its checked examples"
    node = _execute(nb, tmp_path)
    assert mismatches(node) == []
