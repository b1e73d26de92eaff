"""benchmarks/README.md lists every script of benchmarks/ with its command, so it cannot drift.

A script added without a row (or a row whose script was renamed or removed) fails here; so
does a row without a command that runs its own script, and a shared ``_module.py`` the README
does not name.
"""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ROW = re.compile(r"^\| `(?P<name>[^`]+\.py)` \|(?P<rest>.*)$")


def _rows(text: str) -> dict[str, str]:
    """Script name -> the rest of its table row (every row naming a script in its first cell)."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            assert match["name"] not in rows, f"two rows for {match['name']}"
            rows[match["name"]] = match["rest"]
    return rows


def _scripts() -> tuple[set[str], set[str]]:
    """(runnable scripts, shared modules) of benchmarks/: a leading underscore marks a module."""
    names = {p.name for p in BENCHMARKS.glob("*.py")}
    shared = {n for n in names if n.startswith("_")}
    return names - shared, shared


def test_every_script_has_a_row_with_its_command() -> None:
    rows = _rows((BENCHMARKS / "README.md").read_text(encoding="utf-8"))
    scripts, _ = _scripts()
    assert sorted(scripts - rows.keys()) == [], "benchmarks without a row in benchmarks/README.md"
    assert sorted(rows.keys() - scripts) == [], "rows naming a script that does not exist"
    for name, rest in rows.items():
        # The command is the script run from the repository root, in backquotes.
        assert re.search(rf"`[^`]*python benchmarks/{re.escape(name)}[^`]*`", rest), name
        cells = [cell.strip() for cell in rest.rstrip(" |").split(" | ")]
        assert len(cells) == 3, f"{name}: not 4 cells"
        assert all(cells), f"{name}: an empty cell"


def test_every_shared_module_is_named() -> None:
    text = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    _, shared = _scripts()
    assert shared, "benchmarks/ has no shared module: this test's premise changed"
    assert sorted(n for n in shared if f"`{n}`" not in text) == []


def test_rows_are_parsed() -> None:
    """The row pattern must see a row with a command, and refuse one without (so the check
    above can fail)."""
    good = "| `bench_x.py` | times x. Command: `python benchmarks/bench_x.py` | t | r |"
    bad = "| `bench_x.py` | times x | t | r |"
    assert re.search(r"`[^`]*python benchmarks/bench_x\.py[^`]*`", _rows(good)["bench_x.py"])
    assert not re.search(r"`[^`]*python benchmarks/bench_x\.py[^`]*`", _rows(bad)["bench_x.py"])
