"""examples/walkthrough.py runs end to end (its own asserts check what it shows)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

WALKTHROUGH = Path(__file__).resolve().parents[2] / "examples" / "walkthrough.py"


def test_walkthrough_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(WALKTHROUGH), run_name="__main__")
    out = capsys.readouterr().out
    for step in ("1. RUN", "2. HIDE", "3. CERTIFY"):
        assert step in out
    assert "-DP per user" in out
