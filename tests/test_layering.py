"""The package's layers, checked on the source: lower layers never import higher ones, no
module imports another package's private module, and heavy or optional dependencies stay
where they belong. The layer table below is the one docs/architecture.md draws."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "crowdhide"

#: Rank of each top-level package or module: imports may only go to a lower rank (or inside
#: the same package). Packages of equal rank are siblings and do not import each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_validation": 1,
    "_extras": 1,
    "_json": 1,
    "_lazy": 1,
    "_output": 2,
    "_tables": 2,
    "datasets": 2,
    "accounting": 3,
    "mechanisms": 4,
    "qif": 4,
    "audit": 4,
    "netdp": 4,
    "interop": 4,
    "engine": 5,
    "backends": 6,
    "plans": 7,
    "protocols": 8,
    "report": 9,
    "experiments": 10,
    "api": 10,
    "cli": 11,
    "__main__": 12,
    "__init__": 12,
}

#: Third-party packages that only these modules may import (anywhere in the module).
CONFINED = {
    "ray": {"backends/ray.py"},
    # Nothing crosses a process or network boundary as a pickle: the local backend's spill
    # files are read back by the process that wrote them; node hosts get signed plan
    # documents naming their programs (crowdhide.engine.document), never code.
    "pickle": {"backends/local.py"},
    "cloudpickle": set(),
}


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every module ``path`` imports, also inside functions (relative imports resolved)."""
    found: set[str] = set()
    package = ".".join(("crowdhide", *path.relative_to(SRC).parent.parts))
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _owner(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "egg-info" not in str(p))


def test_every_package_has_a_layer() -> None:
    assert {_owner(p) for p in _modules()} <= set(LAYERS)


def _violations(path: Path, source: str | None = None) -> list[str]:
    owner = _owner(path)
    bad = []
    for name in _imports(path, source):
        parts = name.split(".")
        if parts[0] != "crowdhide" or len(parts) < 2 or parts[1] == owner:
            continue
        target = parts[1]
        if target not in LAYERS:
            continue  # a name imported from the package root (``from crowdhide import x``)
        if LAYERS[target] >= LAYERS[owner]:
            bad.append(f"{path.relative_to(SRC)} imports {name} (upward or sideways)")
        private = [p for p in parts[2:] if p.startswith("_") and not p.startswith("__")]
        if private:
            bad.append(f"{path.relative_to(SRC)} imports private {name}")
    return bad


def test_no_upward_sideways_or_private_imports() -> None:
    bad = [v for p in _modules() for v in _violations(p)]
    assert bad == []


@pytest.mark.parametrize(("dependency", "allowed"), sorted(CONFINED.items()))
def test_confined_dependencies(dependency: str, allowed: set[str]) -> None:
    users = {
        str(p.relative_to(SRC))
        for p in _modules()
        if any(n == dependency or n.startswith(f"{dependency}.") for n in _imports(p))
    }
    assert users == allowed


def test_the_guard_sees_violations() -> None:
    """The checks can fail: an upward import inside a function and a private import."""
    source = (
        "def f():\n    from crowdhide.plans import protect\n"
        "    from ..accounting._krr_fast import x\n"
    )
    found = _violations(SRC / "engine" / "probe.py", source)
    assert any("crowdhide.plans" in v for v in found)
    assert any("private" in v for v in found)


#: Backend implementations: only the backends wing itself imports them (``make_backend``
#: in ``backends/__init__.py`` is the one place that chooses a backend by name).
IMPLEMENTATIONS = (
    "crowdhide.backends.local",
    "crowdhide.backends.ray",
    "crowdhide.backends.tls.backend",
)


def test_backends_are_chosen_in_one_place() -> None:
    outside = {
        str(p.relative_to(SRC)): sorted(
            n for n in _imports(p) if any(n == m or n.startswith(f"{m}.") for m in IMPLEMENTATIONS)
        )
        for p in _modules()
        if _owner(p) != "backends"
    }
    assert {k: v for k, v in outside.items() if v} == {}
