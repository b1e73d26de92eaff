"""Issue 32, the k-RR rows at δ = 1e-300: ``krr_lower``'s cheap cut member asked once at the
floor's root instead of searched where it cannot raise the maximum (it is non-increasing, so
where it passes at the floor's root its own root lies below): the same float as the full search."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import curves

TARGET = math.log(1e-300)


@pytest.mark.parametrize(
    ("k", "eps0", "n"), [(3, 0.5, 10_000), (16, 1.0, 10_000), (4, 0.5, 1000), (100, 2.0, 10_000)]
)
def test_cheap_member_skip_is_the_full_search(
    k: int, eps0: float, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lower bound with the cheap member asked once equals the one with its root
    searched (the maximum of both roots, the former code), to the bit."""
    got = curves._krr_lower_curve(eps0, n, k).epsilon(1e-300)
    searched: list[float] = []
    original = curves._member_lower_root

    def every(member: object, target: float, top: float, xtol: float) -> float:
        root = original(member, target, top, xtol)
        searched.append(root)
        return root

    monkeypatch.setattr(curves, "_member_lower_root", every)
    fresh = curves._krr_lower_curve(eps0, n, k)
    monkeypatch.setattr(fresh, "_epsilon_below_cut", _full_search(fresh))
    assert fresh.epsilon(1e-300) == got


def _full_search(curve: curves._LowerCurve) -> object:
    """The former ``_epsilon_below_cut``: every member's root searched."""

    def run(target: float, xtol: float) -> float:
        top = curve._eps0 - xtol
        for c in curve._adaptive:
            c.solving_for(curves._BELOW_CUT_LOG)
        assert curve._floor is not None
        best = curves._member_lower_root(curve._floor, target, top, xtol)
        cheap = curve._cut[0].curve.log_delta
        best = max(best, curves._member_lower_root(cheap, curves._LOWER_BOUND_FLOOR_LOG, top, xtol))
        for costly in curve._cut[1:]:
            above = min(top, best + max(xtol, 4.0 * curves.BRACKET_RTOL * best))
            raw = costly.curve.log_delta
            if best < top and raw(above) >= curves._LOWER_BOUND_FLOOR_LOG:
                best = max(best, curves._cut_member_root(raw, above, top, xtol))
        return best

    return run


def test_skip_needs_the_member_to_pass_at_the_floor_root() -> None:
    """Where the cheap member's root is above the floor's (k = 100, n = 1e4) it is still
    searched and decides the answer; where it is below (k = 3), the floor's root is it."""
    high = curves._krr_lower_curve(2.0, 10_000, 100)
    floor_root = curves._member_lower_root(high._floor, TARGET, 2.0 - 2e-10, 2e-10)
    assert high.epsilon(1e-300) > floor_root * 1.01
    low = curves._krr_lower_curve(0.5, 10_000, 3)
    floor_root = curves._member_lower_root(low._floor, TARGET, 0.5 - 5e-11, 5e-11)
    assert low.epsilon(1e-300) == floor_root
