"""Lower layers never import higher ones: the engine imports nothing from plans (or above),
plans import nothing from the CLI (or experiments), anywhere in the module (also inside
functions); ``ray`` is imported by ``engine/ray_backend.py`` only."""

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
            "engine",
            ("crowdhide.plans", "crowdhide.protocols", "crowdhide.experiments", "crowdhide.cli"),
        ),
        ("plans", ("crowdhide.cli", "crowdhide.experiments", "crowdhide.protocols")),
    ],
)
def test_no_upward_imports(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {
        f"{path.name}: {name}"
        for path in (SRC / package).glob("*.py")
        for name in _imports(path)
        if name.startswith(forbidden)
    }
    assert not bad


def test_ray_is_imported_by_the_ray_backend_only() -> None:
    users = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(n == "ray" or n.startswith("ray.") for n in _imports(path))
    }
    assert users == {"engine/ray_backend.py"}


def test_the_guard_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from crowdhide.plans import protect\n", encoding="utf-8")
    assert "crowdhide.plans" in _imports(module)
