"""No module in ``src/crowdhide`` is longer than 800 lines (issue #29's quality bar).

Lines are counted as ``wc -l`` counts them (newline characters), docstrings and comments
included: a module that outgrows the limit is split into a sibling module by topic, not
trimmed of its documentation. There is no allow-list.

Reproduce the figures: ``python -m tests.test_module_size`` prints the largest modules.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "crowdhide"
LIMIT = 800


def line_count(text: str) -> int:
    """Lines of ``text`` as ``wc -l`` counts them (a last line without newline is not one)."""
    return text.count("\n")


def module_sizes() -> dict[str, int]:
    """``path relative to src/crowdhide`` -> line count, for every module of the package."""
    return {
        path.relative_to(SRC).as_posix(): line_count(path.read_text(encoding="utf-8"))
        for path in sorted(SRC.rglob("*.py"))
    }


def test_no_module_exceeds_the_limit() -> None:
    sizes = module_sizes()
    assert len(sizes) > 150  # the scan sees the package (not an empty glob)
    assert "engine/plan.py" in sizes
    assert "backends/tls/daemon.py" in sizes
    over = {name: lines for name, lines in sizes.items() if lines > LIMIT}
    assert over == {}, f"split these modules (limit {LIMIT} lines): {over}"


def test_the_count_can_fail() -> None:
    assert line_count("a\n" * LIMIT) == LIMIT
    assert line_count("a\n" * (LIMIT + 1)) > LIMIT
    assert line_count("no newline") == 0


if __name__ == "__main__":
    for name, lines in sorted(module_sizes().items(), key=lambda kv: -kv[1])[:15]:
        print(f"{lines:5d}  {name}")
