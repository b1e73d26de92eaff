"""The terminal report fits 80 columns and never cuts a number."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from crowdhide.plans.run_report import RunReport
from crowdhide.report.terminal import fit_panels, render_run
from crowdhide.report.words import fmt_count, fmt_num


def _render(report: RunReport, width: int) -> str:
    buffer = io.StringIO()
    render_run(report, Console(file=buffer, width=width, force_terminal=False))
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100, 140])
def test_fits_width_and_never_cuts(small_run: tuple[RunReport, Path], width: int) -> None:
    report, _ = small_run
    text = _render(report, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text
    # Every estimate, interval bound and exact value appears whole.
    for row in report.answer.estimates:
        assert fmt_count(row["count(*)"]) in text
        assert fmt_count(row["count(*) low"]) in text
        assert fmt_count(row["count(*) high"]) in text
        assert fmt_num(row["avg(insulin)"]) in text
    for row in report.answer.exact:
        assert re.search(rf"\b{re.escape(fmt_count(row['count(*)']))}\b", text)
        assert fmt_num(row["max(insulin)"]) in text
    assert fmt_num(report.privacy.epsilon) in text


def test_captions_and_plain_names(small_run: tuple[RunReport, Path]) -> None:
    report, _ = small_run
    text = _render(report, 80)
    assert "full-population estimates" in text
    assert "sources → compute nodes for age_range (sampling σ" in text
    assert "What the protection costs" in text
    # Paper terms only next to plain words.
    assert "lemma2-exact" not in text
    assert "S/S->C0" not in text
    assert "scrambler bound (Lemma 2" in text


def test_fit_panels_repeats_keys_and_respects_width() -> None:
    widths = [10, 20, 20, 20, 20]
    panels = fit_panels(widths, keys=1, width=60)
    assert sorted(i for p in panels for i in p) == [1, 2, 3, 4]
    for panel in panels:
        assert 1 + sum(widths[i] + 3 for i in [0, *panel]) <= 60 or len(panel) == 1
