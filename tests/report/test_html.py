"""report.html: self-contained, opened in headless Debian Chromium (marker ``browser``)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from crowdhide.plans.run_report import RunReport
from crowdhide.report.html import write_html
from crowdhide.report.words import fmt_count, fmt_num

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_self_contained(small_run: tuple[RunReport, Path]) -> None:
    report, out = small_run
    page = write_html(report, out).read_text(encoding="utf-8")
    # Nothing fetched: no external URLs, stylesheets or scripts; images are data URIs.
    assert not re.search(r"(src|href)=['\"](?!data:)", page)
    assert page.count("data:image/png;base64,") == 3
    assert "sources → compute nodes for bmi" in page
    assert "What the protection costs" in page


@pytest.mark.browser
def test_chromium_renders_report(small_run: tuple[RunReport, Path], tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: apt-get install -y chromium (CI installs it)")
    report, out = small_run
    page = write_html(report, out)
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}"]
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # Key numbers are in the rendered page.
    assert f"ε = {fmt_num(report.privacy.epsilon)}" in dom
    first = report.answer.estimates[0]
    assert fmt_count(first["count(*)"]) in dom
    assert fmt_count(report.costs.messages) in dom
    assert fmt_count(report.answer.exact[0]["count(*)"]) in dom
    # The screenshot is not blank: many distinct colours, not mostly one.
    import matplotlib.image

    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).astype(np.uint8)
    flat = pixels.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    assert len(colours) > 50
    assert counts.max() / len(flat) < 0.97
