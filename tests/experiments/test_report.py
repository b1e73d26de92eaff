"""``crowdhide reproduce all`` writes one self-contained page; headless Chromium renders it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from crowdhide.experiments.registry import resolve, run_experiment
from crowdhide.experiments.report import (
    TABLE_BEGIN,
    TABLE_END,
    TargetRun,
    claim_table_markdown,
    main,
    write_report,
)

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
PROVENANCE = {"crowdhide version": "0.1.0", "seed": "7", "mode": "quick", "started (UTC)": "x"}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("all")
    runs = [
        TargetRun(resolve(name), run_experiment(name, out / name, seed=7, quick=True), "", 1.0)
        for name in ("jurado-fig3", "ladjel-fig3")
    ]
    runs.append(TargetRun(resolve("cheu-error"), None, "ValueError: broken on purpose"))
    return write_report(out / "report.html", runs, provenance=PROVENANCE)


def test_page_is_self_contained_with_claims_and_provenance(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)=['\"](?!data:|#)", text)  # nothing fetched
    assert text.count("data:image/png;base64,") == 2
    assert "crowdhide version" in text
    assert "0.1.0" in text
    assert "seed" in text
    assert "n = 201, p = 0.8: V = 0.52111" in text  # a claim, with its verdict
    assert ">holds<" in text
    assert "failed: cheu-error" in text
    assert "broken on purpose" in text
    assert "/tmp" not in text
    assert str(page.parent) not in text


@pytest.mark.browser
def test_chromium_renders_the_report(page: Path, tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: apt-get install -y chromium (CI installs it)")
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
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
    assert "All claims" in dom
    assert "Jurado et al." in dom
    assert "Ladjel et al." in dom
    import matplotlib.image
    import numpy as np

    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) > 50  # the embedded figures are drawn, not a blank page
    assert counts.max() / len(pixels) < 0.97


def test_page_lists_every_erratum_and_deviation(page: Path) -> None:
    import html

    from crowdhide.experiments.errata import ERRATA
    from crowdhide.experiments.registry import discover

    text = html.unescape(page.read_text(encoding="utf-8"))
    assert '<h2 id="errata">Errata and deviations</h2>' in text
    for entry in ERRATA:
        assert entry.text in text
        assert entry.why in text
    assert {e.kind for e in ERRATA} == {"erratum", "deviation"}
    names = set(discover())
    assert all(e.target in names for e in ERRATA if e.target)  # no stale target names
    papers = {e.paper for e in ERRATA}
    assert len(papers) == 5


def test_claim_table_is_generated_from_the_claims_files(
    page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = page.parent  # the fixture's run: jurado-fig3 and ladjel-fig3 judged claims
    assert main([str(run_dir)]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].startswith("| paper | claim | paper's number | crowdhide's | verdict |")
    targets = {line.rsplit("|", 2)[1].strip() for line in lines[2:]}
    assert targets == {"jurado-fig3", "ladjel-fig3"}
    doc = tmp_path / "doc.md"
    doc.write_text(f"# t\n{TABLE_BEGIN}\nstale\n{TABLE_END}\nafter\n", encoding="utf-8")
    assert main([str(run_dir), str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert "stale" not in text
    assert table in text
    assert text.endswith(f"{TABLE_END}\nafter\n")
    assert main([str(tmp_path / "nothing")]) == 2


def test_claim_table_rows_escape_pipes_and_sort_by_paper() -> None:
    base = {"section": "s", "claim": "c", "verdict": "holds", "paper_value": "1"}
    rows = [{**base, "paper": "Z", "crowdhide_value": "a|b"}, {**base, "paper": "A"}]
    lines = claim_table_markdown(rows).splitlines()
    assert lines[2].startswith("| A |")
    assert lines[3].startswith("| Z |")
    assert "a\\|b" in lines[3]


def test_claim_table_tells_repeated_claims_apart() -> None:
    base = {"paper": "P", "section": "s", "claim": "c", "verdict": "holds"}
    rows = [
        {**base, "measured": "tight σ, ε=1: 1 vs 2"},
        {**base, "measured": "authors σ, ε=1: 1 vs 3"},
        {**base, "claim": "d", "measured": "once: 1 vs 2"},
    ]
    lines = claim_table_markdown(rows).splitlines()
    assert "| s: c (tight σ, ε=1) |" in lines[2]
    assert "| s: c (authors σ, ε=1) |" in lines[3]
    assert "| s: d |" in lines[4]


def test_reproduce_all_writes_the_claim_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from crowdhide.cli.reproduce import _run_all
    from crowdhide.experiments import registry

    one = {"jurado-fig3": resolve("jurado-fig3")}  # resolved before discover is replaced
    monkeypatch.setattr(registry, "discover", lambda: one)
    _run_all(tmp_path / "run", seed=0, quick=True, as_json=True)
    capsys.readouterr()
    table = (tmp_path / "run" / "claims.md").read_text(encoding="utf-8")
    rows = table.splitlines()[2:]
    assert len(rows) == 2  # jurado-fig3 judges two claims
    assert all(r.startswith("| Jurado et al. |") and r.endswith("| jurado-fig3 |") for r in rows)
