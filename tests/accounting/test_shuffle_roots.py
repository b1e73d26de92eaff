"""The secant searches of issue 32 (``secant_bracket``): fewer evaluations, same answers.

Each ε they return must pass its own curve (the certificate holds at it) and sit within
a few 1e-6 of the root a plain bracketed search finds to 1e-10; a lower bound's ε must
fail its curve (the truth needs at least that ε).
"""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import curves, generic
from crowdhide.accounting.shuffle._member_curve import upper_root


def test_secant_bracket_finds_the_root_of_a_smooth_curve_from_the_passing_side() -> None:
    def curve(x: float) -> float:
        return -40.0 * x * x - x

    target = -10.0
    root = (-1.0 + math.sqrt(1.0 + 160.0 * 10.0)) / 80.0
    start = (0.1, curve(0.1))
    lo, g_lo, hi, done = curves.secant_bracket(curve, target, start, 5.0, -9.0, steps=12)
    assert done
    assert curve(hi) <= target < g_lo
    assert root <= hi <= root * (1.0 + 3.0 * curves.BRACKET_RTOL)
    assert lo < root


@pytest.mark.parametrize(("eps0", "n", "delta"), [(1.0, 1000, 1e-6), (4.0, 10**5, 1e-10)])
def test_upper_root_passes_and_matches_a_plain_search(eps0: float, n: int, delta: float) -> None:
    from crowdhide.accounting.logmath import kappa_up
    from crowdhide.accounting.shuffle._krr_fast import clone_noise_log_delta

    def curve(eps: float) -> float:
        if eps >= eps0:
            return -math.inf
        return min(clone_noise_log_delta(n, kappa_up(eps0), 0.5, 0.3, eps, -60.0), 0.0)

    target = math.log(delta)
    got = upper_root(curve, target, 0.0, eps0, 1e-10 * eps0)
    plain = safe_root(curve, target, 0.0, eps0, xtol=1e-10 * eps0)
    assert curve(got) <= target
    assert plain * (1.0 - 1e-9) <= got <= plain * (1.0 + 4e-6)


@pytest.mark.parametrize("k", [4, 10])
def test_lower_root_fails_and_matches_a_plain_search(k: int) -> None:
    curve = curves._krr_lower_curve(2.0, 2000, k)
    target = math.log(1e-8)
    got = curves._lower_root(curve.log_delta, target, 2.0, 2e-10)
    plain = safe_root(curve.log_delta, target, 0.0, 2.0, xtol=2e-10, lower_side=True)
    assert curve.log_delta(got) > target
    assert plain * (1.0 - 4e-6) <= got <= plain * (1.0 + 1e-9)


def test_bracketed_curve_answers_like_before_within_its_tolerance() -> None:
    r = generic.shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, bound="variation_ratio")
    curve = generic.shuffle_bound_curve(bound="variation_ratio", eps0=1.0, n=10_000)
    assert r.is_certificate
    assert curve.delta(r.epsilon) <= 1.01e-6  # a fresh curve refines its own cells


def _floor_then_cliff(top: float, target: float, sliver: float) -> tuple[list[float], object]:
    """A certificate member's curve as at δ = 1e-300 near ε0 (oue, ε0 = 1, n = 1e3): falling
    towards a floor 15 above the target, passing only on ``[top (1 − sliver), top)`` (none
    for sliver 0) and at ε0; the evaluations are recorded."""
    seen: list[float] = []

    def curve(eps: float) -> float:
        seen.append(eps)
        if eps >= top:
            return -math.inf
        if sliver > 0.0 and eps >= top * (1.0 - sliver):
            return target - 1.0
        return target + 15.0 + 100.0 * (top - eps) / top

    return seen, curve


@pytest.mark.parametrize("sliver", [0.0, 2e-4, 4e-4])
def test_upper_root_answers_eps0_within_the_top_gap(
    sliver: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the secant steps find nothing passing and end within TOP_GAP of ε0, the answer
    is ε0 (always valid): what the full search gives where nothing passes below ε0, and at
    most TOP_GAP above it otherwise; the sliver's search is no longer paid. (From 0.5 the
    ten bisecting steps end 4.9e-4 below ε0: slivers up to that are not seen by them.)"""
    from crowdhide.accounting.shuffle import _member_curve

    top, target, gap = 1.0, math.log(1e-300), _member_curve.TOP_GAP
    seen, curve = _floor_then_cliff(top, target, sliver)
    got = upper_root(curve, target, 0.5, top, 1e-10)  # type: ignore[arg-type]
    fast = len(seen)
    monkeypatch.setattr(_member_curve, "TOP_GAP", 0.0)
    seen.clear()
    full = upper_root(curve, target, 0.5, top, 1e-10)  # type: ignore[arg-type]
    assert got == top
    assert full <= got <= full * (1.0 + gap / (1.0 - gap))
    if sliver == 0.0:
        assert full == top  # nothing passes below ε0: the same answer
    else:
        assert top * (1.0 - sliver) <= full < top  # the full search finds the sliver
    assert fast + 8 <= len(seen)  # the sliver's search: 8 or more evaluations


def test_upper_root_searches_where_the_secant_steps_end_far_below_eps0() -> None:
    """A flat curve stops the secant steps at once, far below ε0: the rule does not apply
    and the passing sliver 1 % below ε0 is found (answering ε0 there would be 1 % up). At
    δ = 1e-6: at a tiny δ a flat curve is a rounding floor (``at_floor``), answered ε0."""
    top, target = 2.0, math.log(1e-6)
    seen, _ = _floor_then_cliff(top, target, 0.0)

    def flat(eps: float) -> float:
        seen.append(eps)
        if eps >= top:
            return -math.inf
        return target - 1.0 if eps >= 0.99 * top else target + 15.0

    got = upper_root(flat, target, 0.5, top, 1e-10)
    assert 0.99 * top <= got <= 0.99 * top * (1.0 + 2.0 * curves.BRACKET_RTOL)


#: The documented TOP_GAP (docs/proofs/mechanism-certificates.md, sections 1k and 1m).
DOCUMENTED_GAP = 1e-3


def _probe_case(sliver: float) -> tuple[float, float, int, int]:
    """(answer, full answer, evaluations, full evaluations) of ``upper_root`` on a floor
    whose passing sliver is ``[top (1 − sliver), top)``; the full search has no probe and
    no TOP_GAP rule (TOP_GAP = 0)."""
    from crowdhide.accounting.shuffle import _member_curve

    top, target = 1.0, math.log(1e-300)
    seen, curve = _floor_then_cliff(top, target, sliver)
    got = upper_root(curve, target, 0.5, top, 1e-10)  # type: ignore[arg-type]
    fast = len(seen)
    gap = _member_curve.TOP_GAP
    _member_curve.TOP_GAP = 0.0
    try:
        seen.clear()
        full = upper_root(curve, target, 0.5, top, 1e-10)  # type: ignore[arg-type]
    finally:
        _member_curve.TOP_GAP = gap
    return got, full, fast, len(seen)


@pytest.mark.parametrize("sliver", [0.5 * DOCUMENTED_GAP, 0.999 * DOCUMENTED_GAP])
def test_probe_next_to_eps0_answers_eps0_within_the_gap(sliver: float) -> None:
    """Section 1m: where the secant's first estimate lies beyond ``(1 − TOP_GAP) ε0`` and
    the member fails there, ε0 at once (three evaluations), at most
    ``TOP_GAP/(1 − TOP_GAP)`` above the full search's answer (the sliver's)."""
    got, full, fast, slow = _probe_case(sliver)
    assert got == 1.0
    assert 1.0 - sliver <= full < 1.0
    assert got <= full * (1.0 + DOCUMENTED_GAP / (1.0 - DOCUMENTED_GAP))
    assert fast == 3
    assert slow >= fast + 8


def test_probe_that_passes_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A passing probe (sliver 2 % wide, estimate beyond ε0) costs one evaluation and the
    search goes on as without it: the same float."""
    from crowdhide.accounting.shuffle import _member_curve

    top, target = 1.0, math.log(1e-300)
    seen, curve = _floor_then_cliff(top, target, 0.02)
    got = upper_root(curve, target, 0.5, top, 1e-10)  # type: ignore[arg-type]
    with_probe = len(seen)
    monkeypatch.setattr(_member_curve, "_fails_near_top", lambda *args: False)
    # (and the same probe asked later in the steps, section 1w)
    monkeypatch.setattr(_member_curve._NearTop, "__call__", lambda self, root: False)
    seen.clear()
    assert upper_root(curve, target, 0.5, top, 1e-10) == got  # type: ignore[arg-type]
    assert with_probe == len(seen) + 1
    assert 0.98 <= got < 0.98 * (1.0 + 3.0 * curves.BRACKET_RTOL)


def test_probe_one_percent_lower_breaks_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the probe (and rule) at 1.01 TOP_GAP, a sliver 1.005 TOP_GAP wide is missed and
    ε0 is more than TOP_GAP/(1 − TOP_GAP) above the sliver: the bound above is tight."""
    from crowdhide.accounting.shuffle import _member_curve

    monkeypatch.setattr(_member_curve, "TOP_GAP", 1.01 * DOCUMENTED_GAP)
    got, full, _, _ = _probe_case(1.005 * DOCUMENTED_GAP)
    assert got == 1.0
    assert got > full * (1.0 + DOCUMENTED_GAP / (1.0 - DOCUMENTED_GAP))
