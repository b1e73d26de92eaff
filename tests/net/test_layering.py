"""``crowdhide.net`` sits beside the engine; ``crowdhide.audit`` below both (ast scan)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "crowdhide"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (
            "net",
            ("crowdhide.plans", "crowdhide.protocols", "crowdhide.experiments", "crowdhide.cli"),
        ),
        ("audit", ("crowdhide.engine", "crowdhide.net", "crowdhide.plans", "crowdhide.cli")),
    ],
)
def test_no_upward_imports(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {
        f"{path.name}: {name}"
        for path in (SRC / package).glob("*.py")
        for name in _imports(path)
        if name.startswith(forbidden)
    }
    assert bad == set()
