"""The tilted passes' ε search from a start near the root (``_tilted_pld.probed_root``,
docs/proofs/profile-pair.md §16).

The search may end anywhere within its tolerance, so the tests check what makes any end a
valid, tight certificate: the answer passes its own bound (``log δ(ε) <= log δ``), lies
within ``1e-9`` (relative) of the root, and is never above the former search's answer from
``[0, cap]`` by more than that; an answer 1 % off either way is caught. They also count the
evaluations (the point of the change) and check the ``cap`` rules the former search kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _far_mixture as fm
from crowdhide.accounting.shuffle._tilted_pld import (
    chernoff_lambda,
    probed_root,
    tilted_composition,
)
from tests.accounting.test_far_mixture import FAR, P_FAR, ROUNDS, _far_toy
from tests.accounting.test_tilted_pld import STEP, _epsilon, _reference, _toy_masses

TOL = 1e-9


class _Counted:
    """A ``log δ`` curve that counts its evaluations."""

    def __init__(self, curve: Callable[[float], float]) -> None:
        self.curve, self.calls = curve, 0
        self.points: list[float] = []

    def __call__(self, x: float) -> float:
        self.calls += 1
        self.points.append(x)
        return self.curve(x)


def _former(curve: Callable[[float], float], target: float, cap: float) -> float:
    """The former search (``TiltedPld.epsilon`` before §16): the bracket ``[0, cap]``."""
    if curve(cap) > target:
        return cap
    return safe_root(curve, target, 0.0, cap, xtol=TOL * max(cap, 1.0))


def _chernoff_like(root: float, lam: float) -> Callable[[float], float]:
    """``log δ(ε)`` falling like a Chernoff bound with a polynomial prefactor (slope about
    −λ, steeper near 0), equal to ``target = −30`` at ``root``."""

    def curve(x: float) -> float:
        return -30.0 - lam * (x - root) - 1.5 * math.log((x + 1.0) / (root + 1.0))

    return curve


def _check(
    curve: Callable[[float], float], target: float, found: float, root: float, scale: float
) -> None:
    """``found`` passes and is within the search's tolerance, ``1e-9`` of its passing end
    (at most ``scale``: the guess, or the cap), of the root; 1 % off either way is not."""
    within = root + 2.0 * TOL * max(scale, 1.0)
    assert curve(found) <= target  # a certificate by its own evaluation
    assert root <= found <= within
    for off in (0.99, 1.01):  # an answer 1 % off either way is caught
        moved = found * off
        assert not (curve(moved) <= target and moved <= within)


@pytest.mark.parametrize("root", [0.02, 1.9, 96.4, 6490.0])
@pytest.mark.parametrize("share", [0.0, 0.1, 0.6])  # the guess above the root by that share
def test_a_guess_above_the_root_gives_the_root_in_fewer_evaluations(
    root: float, share: float
) -> None:
    lam = 20.0 / root
    curve, target, cap = _chernoff_like(root, lam), -30.0, 1e4 * max(root, 1.0)
    old, new = _Counted(curve), _Counted(curve)
    former = _former(old, target, cap)
    guess = root * (1.0 + share) + 1e-12
    found = probed_root(new, target, cap, guess=guess, slope=lam)
    _check(curve, target, found, root, guess)
    assert found <= former + 2.0 * TOL * max(found, 1.0)  # never above the former answer
    assert cap not in new.points  # a passing guess spares the cap
    assert new.calls < old.calls
    assert len(set(new.points)) == new.calls  # each point evaluated once


@pytest.mark.parametrize("drop", [0.0, 1e-3, 1.1e-2, 0.2, 0.9])
def test_near_a_former_answer(drop: float) -> None:
    """A second pass: its cap is the first pass's answer, its root up to ``drop`` below."""
    cap = 182.6
    root = cap * (1.0 - drop)
    curve, target = _chernoff_like(root, 9.5), -30.0
    old, new = _Counted(curve), _Counted(curve)
    former = _former(old, target, cap)
    found = probed_root(new, target, cap, slope=9.5, near=True)
    _check(curve, target, found, root, cap)
    assert found <= former + 2.0 * TOL * max(found, 1.0)
    assert new.calls <= old.calls


def test_the_cap_rules_of_the_former_search() -> None:
    target = -30.0
    fails = _Counted(lambda x: -10.0)  # never meets the target: the cap is the answer
    assert probed_root(fails, target, 50.0, guess=3.0, slope=1.0) == 50.0
    assert probed_root(fails, target, 50.0, near=True) == 50.0
    at_zero = _Counted(lambda x: -40.0)  # met everywhere: the least point, 0
    assert probed_root(at_zero, target, 50.0, guess=3.0, slope=1.0) == 0.0
    # a guess that fails is a failing end; one at or beyond the cap is not used
    curve = _chernoff_like(7.0, 3.0)
    for guess in (2.0, 50.0, 80.0, None):
        found = probed_root(curve, target, 50.0, guess=guess, slope=3.0)
        _check(curve, target, found, 7.0, 50.0)


def test_a_stepped_curve_still_gives_a_passing_point() -> None:
    """``log δ`` with plateaus (a bound on a lattice): any end passes its own evaluation."""

    def curve(x: float) -> float:
        return -30.0 - 4.0 * (math.floor(x * 8.0) / 8.0 - 5.0)

    found = probed_root(curve, -30.0, 400.0, guess=5.3, slope=4.0)
    assert curve(found) <= -30.0
    assert 5.0 <= found <= 5.0 + 2.0 * TOL * 5.0


@pytest.mark.parametrize("delta", [1e-10, 1e-100])
def test_the_tilted_composition_answers_as_the_former_search(delta: float) -> None:
    masses, rounds = _toy_masses(), 100
    lam = chernoff_lambda(masses, STEP, rounds, delta=delta)
    tilted = tilted_composition(masses, STEP, rounds, lam)
    target, cap = math.log(delta), rounds * 1.0
    counted = _Counted(tilted.log_delta)
    former = _former(counted, target, cap)
    before, counted.calls = counted.calls, 0
    found = tilted.epsilon(delta, cap)
    assert tilted.log_delta(found) <= target
    root = safe_root(tilted.log_delta, target, 0.0, cap, xtol=1e-14)
    assert root <= found <= root + 2.0 * TOL * max(root, 1.0)
    assert found <= former + 2.0 * TOL * max(found, 1.0)
    assert former - found <= TOL * max(cap, 1.0) + 1e-12  # a move within the former tolerance
    probe = _Counted(tilted.log_delta)
    assert probed_root(probe, target, cap, guess=tilted.chernoff_epsilon(delta), slope=lam) == found
    assert probe.calls < before
    start, probs = _reference(masses, rounds)  # and the exact composition's ε is below it
    assert _epsilon(start, probs, STEP, delta) <= found


@pytest.mark.parametrize("delta", [1e-30, 1e-250])
def test_the_far_mixture_answers_as_the_former_search(delta: float) -> None:
    masses = _far_toy()
    rest, top, a = fm.far_split(masses)
    depth = fm.mixture_depth(rest, a, ROUNDS, delta)
    assert depth is not None
    assert a == P_FAR
    lam = chernoff_lambda(masses, STEP, ROUNDS, delta=delta)
    mixture = fm.far_mixture(rest, top, a, STEP, ROUNDS, lam, depth)
    target, cap = math.log(delta), ROUNDS * FAR * STEP
    old = _Counted(mixture.log_delta)
    former = _former(old, target, cap)
    found = mixture.epsilon(delta, cap)
    assert mixture.log_delta(found) <= target
    root = safe_root(mixture.log_delta, target, 0.0, cap, xtol=1e-14)
    assert root <= found <= root + 2.0 * TOL * max(root, 1.0)
    assert found <= former + 2.0 * TOL * max(found, 1.0)
    guess = mixture.chernoff_epsilon(delta)
    assert guess is not None
    assert found <= guess  # the start is above the root
    # a second pass from the first one's answer (near): within the tolerance, fewer calls
    again = _Counted(mixture.log_delta)
    second = probed_root(again, target, found, slope=lam, near=True)
    assert mixture.log_delta(second) <= target
    assert root <= second <= found
    assert again.calls < old.calls
