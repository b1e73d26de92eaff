"""The tilted composition (``accounting.shuffle._tilted_pld``) against an independent one.

The reference composes the same PLD one round at a time by shifted sums of non-negative
terms (no FFT): every composed mass then carries a *relative* error of at most
``R · atoms · u``, so its δ(ε) is exact to ~1e-12 relative down to δ = 1e-300, where the
FFT composition's absolute allowance (``PldCurve``) stops at ~1e-10. The tilted bound must
be at least the reference everywhere (soundness), within 1e-6 of it where it is used
(tightness), and masses lowered by 1 % must be caught.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle._tilted_pld import (
    TiltedPld,
    chernoff_lambda,
    split_top,
    tilted_composition,
)
from crowdhide.accounting.shuffle.composition import ComposedShuffleParams, composed_shuffle
from crowdhide.errors import InvalidParameterError

#: A symmetric pair with losses ±0.1, ±0.25, ±1 (grid 0.05) and the rest at loss 0.
STEP = 0.05
_Q = {2: 0.05, 5: 0.01, 20: 1e-4}


def _toy_masses() -> dict[int, float]:
    masses = {j: q * math.exp(j * STEP) for j, q in _Q.items()} | {-j: q for j, q in _Q.items()}
    masses[0] = 1.0 - sum(masses.values())
    return masses


def _reference(masses: dict[int, float], rounds: int) -> tuple[int, np.ndarray]:
    """(lowest index, masses) of the ``rounds``-fold composition, one round at a time by
    shifted sums of non-negative products (relative error per mass <= rounds·atoms·u)."""
    lo, hi = min(masses), max(masses)
    out = np.ones(1)
    for r in range(1, rounds + 1):
        new = np.zeros(r * (hi - lo) + 1)
        for j, p in masses.items():
            new[j - lo : j - lo + out.size] += p * out
        out = new
    return rounds * lo, out


def _log_delta(start: int, probs: np.ndarray, step: float, eps: float) -> float:
    loss = (start + np.arange(probs.size)) * step
    keep = (loss > eps) & (probs > 0.0)
    terms = np.log(probs[keep]) + np.log(-np.expm1(eps - loss[keep]))
    if not terms.size:
        return -math.inf
    top = float(terms.max())
    return top + math.log(float(np.exp(terms - top).sum()))


def _compare(tilted: TiltedPld, start: int, probs: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``log δ_tilted − log δ_reference`` at each ε where the reference is above 1e-290."""
    out = []
    for e in eps:
        ref = _log_delta(start, probs, tilted.step, float(e))
        if ref > math.log(1e-290):
            out.append(tilted.log_delta(float(e)) - ref)
    return np.asarray(out)


@pytest.mark.parametrize("delta", [1e-10, 1e-30, 1e-100, 1e-250])
def test_the_tilted_composition_is_the_reference_composition_from_above(delta: float) -> None:
    masses, rounds = _toy_masses(), 100
    start, probs = _reference(masses, rounds)
    lam = chernoff_lambda(masses, STEP, rounds, delta=delta)
    tilted = tilted_composition(masses, STEP, rounds, lam)
    eps_ref = _epsilon(start, probs, STEP, delta)
    # sound (never below) over a wide range, tight (within 1e-6 relative) near the answer,
    # where λ puts the error term (it grows as e^{λ (ε* − ε)} below the answer ε*)
    gaps = _compare(tilted, start, probs, np.linspace(0.5 * eps_ref, 1.5 * eps_ref, 41))
    assert gaps.size > 20
    assert gaps.min() >= 0.0
    near = _compare(tilted, start, probs, np.linspace(0.98 * eps_ref, 1.02 * eps_ref, 9))
    assert near.size == 9
    assert near.max() < 1e-6
    eps = tilted.epsilon(delta, rounds * 1.0)
    assert eps_ref <= eps <= eps_ref * (1.0 + 1e-6)


def _epsilon(start: int, probs: np.ndarray, step: float, delta: float) -> float:
    """The reference's ε(δ) by bisection (δ(ε) is continuous and non-increasing)."""
    lo, hi = 0.0, (start + probs.size) * step
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _log_delta(start, probs, step, mid) > math.log(delta) else (lo, mid)
    return hi


def test_masses_lowered_by_one_percent_are_caught() -> None:
    masses, rounds = _toy_masses(), 100
    start, probs = _reference(masses, rounds)
    lam = chernoff_lambda(masses, STEP, rounds, delta=1e-30)
    tilted = tilted_composition(masses, STEP, rounds, lam)
    eps = np.linspace(2.0, 6.0, 41)
    assert _compare(tilted, start, probs, eps).min() >= 0.0
    lowered = replace(tilted, log_mass=tilted.log_mass + math.log(0.99), margin=0.0)
    assert _compare(lowered, start, probs, eps).min() < 0.0
    # the untilt's exponent λ 1 % off moves the masses by e^{0.01 λ l}: caught too
    off = replace(tilted, log_mass=tilted.log_mass - 0.01 * tilted.lam * tilted.index * STEP)
    assert _compare(off, start, probs, eps).min() < 0.0


def test_the_error_term_is_relative_near_the_saddle_and_absolute_at_no_tilt() -> None:
    """At λ = 0 the bound's error term is the FFT allowance itself (absolute); at the
    saddle of a tiny δ it is far below that δ."""
    masses, rounds = _toy_masses(), 100
    flat = tilted_composition(masses, STEP, rounds, 0.0)
    assert flat.log_error(3.0) == pytest.approx(math.log(flat.error), abs=1e-9)
    lam = chernoff_lambda(masses, STEP, rounds, epsilon=5.0)
    tilted = tilted_composition(masses, STEP, rounds, lam)
    assert tilted.log_error(5.0) < tilted.log_delta(5.0) - 15.0


def test_composed_profile_pair_at_small_delta_is_the_reference_from_above() -> None:
    """ε0 = 4, n = 1e3, 100 rounds: the FFT allowance (~1e-10) used to leave δ = 1e-12
    at the cap R·ε0; the tilted composition answers, at or above the one-round-at-a-time
    reference of the same pair and within 1e-6 of it."""
    eps0, n, rounds = 4.0, 1000, 100
    grid, step = pp._composed_grid(eps0, n, rounds)
    start, probs = _reference(grid, rounds)
    params = ComposedShuffleParams(eps0=eps0, n=n, rounds=rounds)
    curve = pp.ProfilePairBound().curve(params)
    assert curve.pld is not None
    assert curve.pld.composition_error > 1e-12
    for delta in (1e-12, 1e-30):
        eps = curve.epsilon(delta)
        ref = _epsilon(start, probs, step, delta)
        assert ref <= eps <= ref * (1.0 + 1e-6), (delta, eps, ref)
        assert curve.delta(eps) <= delta
    tight = 0
    for e in np.linspace(15.0, 60.0, 10):
        ref = _log_delta(start, probs, step, float(e))
        got = curve.log_delta(float(e))
        assert ref <= got
        if ref < math.log(1e-11):  # the FFT allowance is material: the tilt answers
            assert got <= ref + 1e-6
            tight += 1
    assert tight >= 5


def test_composed_shuffle_answers_small_delta_from_the_profile_pair() -> None:
    """δ = 1e-10 at 100 rounds (ε0 = 1, n = 1e4): no fallback to FMT21's pair."""
    result = composed_shuffle(eps0=1.0, n=10_000, delta=1e-10, rounds=100, pair="profile_pair")
    assert result.source == "profile_pair"
    assert result.epsilon is not None
    assert result.epsilon < 1.0


def test_a_far_atom_left_out_is_paid_by_the_union_bound_and_caught_when_lowered() -> None:
    """The toy pair plus a far, tiny atom (loss 20, P-mass 4.9e-16): no single tilt serves
    both it and the bulk; left out (:func:`split_top`), ``R a`` is added to δ. Against the
    reference, which keeps the atom: never below, within 1e-3 (the union bound's slack and
    the weight ``1 − e^{ε − 20}``), and ``R a`` lowered by 1 % falls below."""
    masses = _toy_masses()
    masses[400], masses[-400] = 1e-24 * math.exp(400 * STEP), 1e-24
    masses[0] -= masses[400] + masses[-400]
    rounds = 100
    start, probs = _reference(masses, rounds)
    kept, dropped = split_top(masses, rounds, 1e-13)
    assert set(masses) - set(kept) == {400}
    assert dropped == pytest.approx(rounds * masses[400], rel=1e-12)
    lam = chernoff_lambda(kept, STEP, rounds, epsilon=10.0)
    tilted = tilted_composition(kept, STEP, rounds, lam, dropped)
    eps = np.linspace(9.0, 12.0, 13)
    gaps = _compare(tilted, start, probs, eps)
    assert gaps.min() >= 0.0
    assert gaps.max() < 1e-3
    lowered = replace(tilted, dropped=0.99 * dropped)
    assert _compare(lowered, start, probs, eps).min() < 0.0
    # with the atom composed, the tilt for the bulk cannot see below the FFT allowance
    whole = tilted_composition(
        masses, STEP, rounds, chernoff_lambda(masses, STEP, rounds, epsilon=10.0)
    )
    assert _compare(whole, start, probs, eps).min() >= 0.0


@pytest.mark.slow  # ~20 s: the fine profile at n = 1e9 and FMT21's attempt
def test_a_billion_users_get_the_profile_pair_where_fmt21_is_too_large() -> None:
    """n = 1e9, 10 rounds: FMT21's pair exceeds its size limit (it raised through ``best``);
    the profile pair answers, with a note saying why FMT21 is missing."""
    result = composed_shuffle(eps0=1.0, n=10**9, delta=1e-10, rounds=10)
    assert result.source == "profile_pair"
    assert "feldman2021 not composed" in result.notes[-1]
    assert result.epsilon is not None
    assert result.epsilon < 0.1


def _masked_log_delta(tilted: TiltedPld, epsilon: float) -> float:
    """:meth:`TiltedPld.log_delta` as it was before s24-comp (the losses above ε selected
    by a mask over all of them): the slice must give the same floats."""
    at = max(epsilon - 4.0 * (1.0 + epsilon) * MACHINE_EPSILON, 0.0)
    loss = tilted.index * tilted.step
    keep = loss > at
    with np.errstate(divide="ignore"):
        terms = tilted.log_mass[keep] + np.log(-np.expm1(at - loss[keep]))
    terms = terms[np.isfinite(terms)]
    parts = [tilted.log_error(at), math.log(tilted.dropped) if tilted.dropped else -math.inf]
    if terms.size:
        top = float(terms.max())
        spread = 8.0 * MACHINE_EPSILON * (float(np.abs(terms).max()) + 40.0)
        rounding = tilted.margin + (terms.size + 4.0) * MACHINE_EPSILON + spread
        parts.append(top + math.log(float(np.exp(terms - top).sum())) + 2.0 * math.log1p(rounding))
    value = functools.reduce(np.logaddexp, parts, -math.inf)
    return float(min(value + 4.0 * MACHINE_EPSILON * (abs(value) + 1.0), 0.0))


@pytest.mark.parametrize(("key", "delta"), [((4.0, 1000, 100), 1e-30), ((1.0, 10_000, 100), 1e-10)])
def test_log_delta_reads_the_losses_above_epsilon_as_the_mask_did(
    key: tuple[float, int, int], delta: float
) -> None:
    tilted = pp._tilted(*key, pp._lambda(key, 0, delta=delta), 0)
    picks = tilted.loss[:: max(1, tilted.loss.size // 150)]
    # at the losses themselves (a loss equal to ε is not above it) and just below them
    eps = np.concatenate([picks, np.nextafter(picks, 0.0), np.linspace(0.0, picks[-1], 50)])
    for e in eps:
        assert tilted.log_delta(float(e)) == _masked_log_delta(tilted, float(e))
    shuffled = tilted.index[::-1].copy()
    with pytest.raises(InvalidParameterError, match="increasing"):
        replace(tilted, index=shuffled, log_mass=tilted.log_mass[::-1].copy())


def test_log_delta_in_one_buffer_keeps_the_floats_with_empty_masses() -> None:
    # masses of −inf (an underflowed composed mass) in the suffix: dropped as the mask did;
    # s27-rounds computes the terms in one buffer (_suffix_terms), the same floats
    rng = np.random.default_rng(7)
    index = np.arange(1, 20_001, dtype=np.int64)
    log_mass = -0.5 * ((index - 6e3) / 2e3) ** 2 - 30.0 + rng.normal(0.0, 1e-3, index.size)
    for holes in (None, slice(None, None, 97)):
        masses = log_mass.copy()
        if holes is not None:
            masses[holes] = -np.inf
        tilted = TiltedPld(1e-3, index, masses, 3.0, 0.7, 1e-12, 1e-10, 1e-20)
        for e in np.linspace(0.0, 21.0, 43):
            assert tilted.log_delta(float(e)) == _masked_log_delta(tilted, float(e))
