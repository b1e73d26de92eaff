"""s31-rounds: the profile's ``feldman2021`` member is evaluated only where its proven lower
bound (the one-round FMT21 floor, ``_fmt21_floor``) does not already put it above the least
of the other values (docs/proofs/profile-pair.md §15b): every profile value is the float it
was with the member evaluated everywhere."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _profile_batch as pb
from crowdhide.accounting.shuffle import _profile_grid as pg

CELLS = [(0.5, 1000), (4.0, 10_000), (8.0, 10**6)]


@pytest.fixture(autouse=True)
def _fresh_profiles() -> Iterator[None]:
    """The profiles these tests build with a member or the floor replaced must not stay in
    the caches for the tests that follow in the same process."""
    yield
    pg.certified_profile.cache_clear()
    pg._certified_values.cache_clear()
    pg._member_at.cache_clear()


def _profile(eps0: float, n: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    pg.certified_profile.cache_clear()
    pg._certified_values.cache_clear()
    pg._member_at.cache_clear()
    return pg.certified_profile(eps0, n)


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The points where the member is evaluated, recorded."""
    asked: list[int] = []
    member = pg._member_at

    def counted(eps0: float, n: int, index: int, name: str) -> float:
        if name == pg.FMT21:
            asked.append(index)
        return member(eps0, n, index, name)

    monkeypatch.setattr(pg, "_member_at", counted)
    monkeypatch.setattr(counted, "cache_clear", member.cache_clear, raising=False)
    return asked


@pytest.mark.parametrize(("eps0", "n"), CELLS)
def test_profiles_are_the_floats_with_the_member_everywhere(
    eps0: float, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _asked(monkeypatch)
    skipping = _profile(eps0, n)
    spared = len(skipping[0]) - 1 - len(asked)  # the top point (δ = 0) asks no member
    monkeypatch.setattr(pg, "_fmt21_floor_at", lambda *_: 0.0)  # nothing proven: always asked
    asked.clear()
    everywhere = _profile(eps0, n)
    assert skipping == everywhere
    assert spared >= len(skipping[0]) // 2  # measured: all points but ε = 0 spared


def test_the_floor_is_below_the_member_at_every_point() -> None:
    for eps0, n in CELLS:
        for index in pg.certified_profile(eps0, n)[0][:-1]:
            member = pg._member_at(eps0, n, index, pg.FMT21)
            assert pg._fmt21_floor_at(eps0, n, index) <= member


def test_where_the_member_decides_it_is_still_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # with the variation-ratio member out of the way (vr = 1), the FMT21 member is the least
    # at some points: the rule must evaluate it there
    eps0, n = 4.0, 10_000
    monkeypatch.setattr(
        pb, "variation_ratio_log_deltas", lambda _n, _e, at, _t: np.zeros(np.size(at))
    )
    monkeypatch.setattr(
        pg, "variation_ratio_log_deltas", pb.variation_ratio_log_deltas, raising=False
    )
    skipping = _profile(eps0, n)
    floor = pg._fmt21_floor_at
    monkeypatch.setattr(pg, "_fmt21_floor_at", lambda *_: 0.0)
    everywhere = _profile(eps0, n)
    assert skipping == everywhere
    decided = [
        i
        for i, v in zip(*everywhere, strict=True)
        if i and 0.0 < v < 1.0 and v == pg._member_at(eps0, n, i, pg.FMT21)
    ]
    assert decided  # the member is the least somewhere
    # a floor that is not below the member (one that claims everything) changes the values
    # there: the comparison sees the member where it decides
    monkeypatch.setattr(pg, "_fmt21_floor_at", lambda *_: math.inf)
    assert _profile(eps0, n) != everywhere
    # the real floor at those points is below the member, by 1-40 % (not a tie)
    assert all(floor(eps0, n, i) < pg._member_at(eps0, n, i, pg.FMT21) for i in decided)
