"""Run the ``python`` code blocks of a documentation page, in order, like a notebook.

A block that holds ``>>>`` prompts is a doctest: its printed results are checked. Any other
``python`` block is run as a script and must not raise. Every block of a page shares one
namespace, so a tutorial can build on its earlier cells. A block right after an HTML comment
``<!-- not run: REASON -->`` is skipped (a signature listing, not code to run); the reason is
required so that skipping stays a visible decision. A block after ``<!-- needs: MODULE -->``
is skipped when ``MODULE`` (an optional extra) is not installed.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs"

_BLOCK = re.compile(
    r"(?:<!-- not run: (?P<reason>[^>]+?) -->\s*\n|<!-- needs: (?P<needs>[\w.]+) -->\s*\n)?"
    r"^```python\n(?P<code>.*?)^```",
    flags=re.S | re.M,
)
_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@dataclass(frozen=True)
class Block:
    """One fenced ``python`` block of a page."""

    line: int
    code: str
    skip_reason: str | None
    needs: str | None = None

    @property
    def is_doctest(self) -> bool:
        return any(line.lstrip().startswith(">>>") for line in self.code.splitlines())


@dataclass(frozen=True)
class PageResult:
    doctests_attempted: int
    scripts_run: int
    skipped: int


def blocks(path: Path) -> list[Block]:
    """The fenced ``python`` blocks of ``path`` with their first line number."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            line=text.count("\n", 0, m.start("code")) + 1,
            code=m.group("code"),
            skip_reason=m.group("reason"),
            needs=m.group("needs"),
        )
        for m in _BLOCK.finditer(text)
    ]


def pages_with_code() -> list[Path]:
    """Every page under docs/ that has at least one ``python`` block."""
    return sorted(p for p in DOCS.rglob("*.md") if blocks(p))


def run_page(path: Path) -> PageResult:
    """Run every block of ``path`` in one namespace; raise ``AssertionError`` on a failure."""
    namespace: dict[str, Any] = {"__name__": f"docs_{path.stem}"}
    rel = path.relative_to(DOCS.parent) if path.is_relative_to(DOCS) else path
    attempted = scripts = skipped = 0
    for block in blocks(path):
        if block.skip_reason is not None or (
            block.needs is not None and importlib.util.find_spec(block.needs) is None
        ):
            skipped += 1
            continue
        where = f"{rel}:{block.line}"
        if block.is_doctest:
            test = doctest.DocTestParser().get_doctest(
                block.code, namespace, where, str(path), block.line - 1
            )
            runner = doctest.DocTestRunner(optionflags=_FLAGS)
            runner.run(test, clear_globs=False)
            namespace.update(test.globs)  # the parser ran on a copy: keep what it defined
            result = runner.summarize(verbose=False)
            assert result.failed == 0, f"{where}: {result.failed} doctest example(s) failed"
            attempted += result.attempted
        else:
            exec(compile(block.code, where, "exec"), namespace)
            scripts += 1
    return PageResult(doctests_attempted=attempted, scripts_run=scripts, skipped=skipped)
