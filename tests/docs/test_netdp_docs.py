"""The examples of docs/netdp.md run and give the printed results."""

from __future__ import annotations

import doctest
from pathlib import Path


def test_docs_examples() -> None:
    path = Path(__file__).resolve().parents[2] / "docs" / "netdp.md"
    result = doctest.testfile(
        str(path),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted >= 6
    assert result.failed == 0
