"""Verdicts follow from the measured numbers and the stated tolerance, never from the text."""

from __future__ import annotations

import math

import pytest

from crowdhide.experiments.claims import (
    HOLDS,
    MAGNITUDE,
    NOT_HOLD,
    Claim,
    better,
    match,
    match_all,
    verdict_lines,
)

CLAIM = Claim("A et al.", "Fig. 1", "x is 10")


@pytest.mark.parametrize(
    ("measured", "outcome"),
    [(10.4, HOLDS), (9.6, HOLDS), (10.6, MAGNITUDE), (60.0, MAGNITUDE), (101.0, NOT_HOLD),
     (-10.0, NOT_HOLD), (math.nan, NOT_HOLD)],
)  # fmt: skip
def test_match_bands(measured: float, outcome: str) -> None:
    v = match(CLAIM, measured=measured, paper=10.0, rtol=0.05, what="x", reason="why")
    assert v.outcome == outcome
    assert (v.reason == "") == (outcome == HOLDS)
    assert "±5%" in v.tolerance


def test_match_with_a_loose_band() -> None:
    v = match(CLAIM, measured=13.0, paper=10.0, rtol=0.05, loose=0.2, what="x")
    assert v.outcome == NOT_HOLD


def test_better_orders_and_magnitudes() -> None:
    assert better(CLAIM, low=1.0, high=1.04, margin=0.05, what="e").outcome == NOT_HOLD
    assert better(CLAIM, low=1.0, high=1.06, margin=0.05, what="e").outcome == HOLDS
    ratio_off = better(CLAIM, low=1.0, high=4.0, paper_ratio=2.0, rtol=0.5, what="e")
    assert ratio_off.outcome == MAGNITUDE
    assert better(CLAIM, low=1.0, high=2.9, paper_ratio=2.0, rtol=0.5, what="e").outcome == HOLDS


def test_match_all_names_the_worst_point() -> None:
    v = match_all(CLAIM, [("a", 1.0, 1.0), ("b", 3.0, 2.0)], rtol=0.1, what="t")
    assert v.outcome == MAGNITUDE
    assert "worst b" in v.measured
    assert "1/2" in v.measured
    with pytest.raises(ValueError, match="empty"):
        match_all(CLAIM, [], rtol=0.1, what="t")


def test_lines_count_outcomes_and_records_carry_everything() -> None:
    verdicts = [
        match(CLAIM, measured=10.0, paper=10.0, rtol=0.01, what="x"),
        better(CLAIM, low=2.0, high=1.0, what="e", reason="reversed"),
    ]
    lines = verdict_lines(verdicts)
    assert lines[0] == "claims: 1 holds, 0 holds with different magnitude, 1 does not hold"
    assert lines[2].startswith("DOES NOT HOLD: A et al., Fig. 1")
    record = verdicts[1].record()
    assert record["verdict"] == NOT_HOLD
    assert record["reason"] == "reversed"
    assert set(record) == {
        "paper",
        "section",
        "claim",
        "verdict",
        "measured",
        "tolerance",
        "reason",
        "paper_value",
        "crowdhide_value",
    }


def test_each_judge_states_the_paper_number_and_crowdhides() -> None:
    from crowdhide.experiments.claims import all_of

    v = match(CLAIM, measured=10.26, paper=10.0, rtol=0.05, what="x")
    assert (v.paper_value, v.value) == ("10", "10.26")
    v = match_all(CLAIM, [("n=1", 1.0, 1.0), ("n=2", 3.0, 2.0)], rtol=0.1, what="c")
    assert (v.paper_value, v.value) == ("n=2: 2", "3 (1/2 points within ±10%)")
    v = better(CLAIM, low=1.0, high=4.0, what="e", paper_ratio=2.0)
    assert (v.paper_value, v.value) == ("ratio 2", "ratio 4 (1 vs 4)")
    assert better(CLAIM, low=1.0, high=4.0, what="e").paper_value == "ratio > 1"
    v = all_of(CLAIM, [("a", True), ("b", False)], what="w")
    assert (v.paper_value, v.value) == ("every point", "1/2 points")
