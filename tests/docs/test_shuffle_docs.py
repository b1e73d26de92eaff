"""The runnable examples of docs/shuffle.md stay correct."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "shuffle.md"


@pytest.mark.slow
def test_docs_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 3
    text = "\n".join(blocks)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "docs/shuffle.md", str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 15
    assert result.failed == 0
