"""benchmarks/README.md lists every script of benchmarks/ with its command, so it cannot drift.

A script added without a row (or a row whose script was renamed or removed) fails here; so
does a row without a command that runs its own script, a shared ``_module.py`` the README
does not name, and an ``--option`` a row names that its script does not take.
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


OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
NAMED_SCRIPT = re.compile(r"(?<![\w/])(?:benchmarks/)?(?P<name>[a-z_0-9]+\.py)")


def _options_by_script(name: str, rest: str) -> dict[str, set[str]]:
    """Script -> the ``--options`` a row names for it: those inside a backquoted command of
    another script of benchmarks/ (``python benchmarks/other.py --x``, ``other.py --x``)
    belong to that script, every other one to the row's own."""
    named: dict[str, set[str]] = {name: set()}
    for span in re.findall(r"`([^`]*)`", rest) or []:
        other = NAMED_SCRIPT.search(span)
        owner = other["name"] if other and (BENCHMARKS / other["name"]).is_file() else name
        named.setdefault(owner, set()).update(OPTION.findall(span))
    named[name].update(OPTION.findall(re.sub(r"`[^`]*`", " ", rest)))
    return named


def _undeclared(script: str, options: set[str]) -> list[str]:
    """The options the script's source does not spell as a quoted string (its argparse)."""
    source = (BENCHMARKS / script).read_text(encoding="utf-8")
    return sorted(o for o in options if f'"{o}"' not in source and f"'{o}'" not in source)


def test_every_option_a_row_names_is_one_its_script_takes() -> None:
    """A row naming ``--warm`` for a script without that option sent readers to an error."""
    rows = _rows((BENCHMARKS / "README.md").read_text(encoding="utf-8"))
    wrong = {
        f"{name} -> {script}": missing
        for name, rest in rows.items()
        for script, options in _options_by_script(name, rest).items()
        if (missing := _undeclared(script, options))
    }
    assert wrong == {}


def test_an_option_no_script_takes_is_found() -> None:
    """The check above can fail: an invented option in a row is reported for its script, and
    one inside another script's command for that script."""
    rest = " `--warm` keeps them. Command: `python benchmarks/bench_shuffle.py --nope` | t | r |"
    rest += " (from `bench_qif.py --table`) | t | r |"
    named = _options_by_script("bench_shuffle_vratio.py", rest)
    assert named == {
        "bench_shuffle_vratio.py": {"--warm"},
        "bench_shuffle.py": {"--nope"},
        "bench_qif.py": {"--table"},
    }
    assert _undeclared("bench_shuffle_vratio.py", {"--warm", "--baseline"}) == ["--warm"]
