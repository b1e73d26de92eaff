"""Every ``python`` block of every documentation page runs, and its printed results hold.

The pages are the site's (``mkdocs.yml``); a new page with code is picked up on its own. The
minimum counts keep a page from silently losing its checked examples (a fence typo turns a
doctest block into prose).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.pages import DOCS, blocks, pages_with_code, run_page

#: Page -> fewest doctest examples plus scripts it must run (what it had when counted).
MIN_RUN: dict[str, int] = {
    "engine.md": 1,
    "getting-started.md": 4,
    "interop.md": 14,
    "mechanisms.md": 19,
    "netdp.md": 8,
    "protocols.md": 2,
    "qif.md": 17,
    "scrambler.md": 12,
    "shuffle.md": 17,
    "shuffle_composition.md": 7,
    "tutorials/plan-certify-run.md": 12,
    "tutorials/protocol-dataframe.md": 20,
    "tutorials/shuffle-tour.md": 12,
}
#: Pages whose examples take longer than a few seconds.
SLOW = {
    "getting-started.md",
    "interop.md",
    "shuffle.md",
    "tutorials/plan-certify-run.md",
    "tutorials/protocol-dataframe.md",
    "tutorials/shuffle-tour.md",
}


def _params() -> list[object]:
    return [
        pytest.param(
            page,
            id=str(page.relative_to(DOCS)),
            marks=[pytest.mark.slow] if str(page.relative_to(DOCS)) in SLOW else [],
        )
        for page in pages_with_code()
    ]


@pytest.mark.parametrize("page", _params())
def test_page_examples_run(page: Path) -> None:
    result = run_page(page)
    ran = result.doctests_attempted + result.scripts_run
    assert ran >= MIN_RUN.get(str(page.relative_to(DOCS)), 1)


def test_every_counted_page_still_has_code() -> None:
    for name in MIN_RUN:
        assert blocks(DOCS / name), name


def test_a_failing_example_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "bad.md"
    page.write_text("```python\n>>> 1 + 1\n3\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="1 doctest example"):
        run_page(page)


def test_skipping_needs_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "skip.md"
    page.write_text(
        "<!-- not run: a listing -->\n```python\nraise SystemExit\n```\n"
        "<!-- not run: -->\n```python\nx = 1\n```\n",
        encoding="utf-8",
    )
    [listing, code] = blocks(page)
    assert listing.skip_reason == "a listing"
    assert code.skip_reason is None
