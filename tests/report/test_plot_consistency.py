"""The trade-off plot's chosen point is the certified ε of the run."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from crowdhide.plans.run_report import RunReport


def test_chosen_point_is_the_certificate(small_run: tuple[RunReport, Path]) -> None:
    report, out = small_run
    route = next(iter(report.plan.countermeasures))
    choice = report.plan.countermeasures[route]
    with (out / "tradeoff.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    chosen = [r for r in rows if r["n"] == str(choice.n) and r["d"] == str(choice.d)]
    assert len(chosen) == 1
    assert float(chosen[0]["epsilon"]) == pytest.approx(report.privacy.epsilon, rel=1e-9)
