"""The mixture over a far atom's draws (``accounting.shuffle._far_mixture``,
docs/proofs/profile-pair.md §13) against an independent composition.

A toy pair (``test_tilted_pld``'s, losses ±0.1, ±0.25, ±1) gains a far, tiny atom at loss 50
(P-mass 1e-14, and its mirror), so that at δ = 1e-30 … 1e-250 the answer is made of its
draws. The reference composes the whole pair, far atom included, one round at a time by
shifted sums of non-negative products (``test_tilted_pld._reference``, exact to ~1e-12
relative at any δ). The mixture must be at or above the reference everywhere, within 1e-6
of it near the answer, and fall below it with the binomial coefficients or the far atom's
mass lowered by 1 %, or with the terms beyond its depth left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.shuffle import _far_mixture as fm
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle._tilted_pld import chernoff_lambda
from tests.accounting.test_tilted_pld import STEP, _epsilon, _log_delta, _reference, _toy_masses

ROUNDS = 40
FAR = 1000  # loss 50: 50 times the bulk's highest loss (index 20)
P_FAR = 1e-14
KEY = (99.0, 11, ROUNDS)  # (ε0, n, R) of no real query: the toy's grid stands in for its pair


def _far_toy(p_far: float = P_FAR) -> dict[int, float]:
    masses = _toy_masses()
    masses[FAR], masses[-FAR] = p_far, p_far * math.exp(-FAR * STEP)
    masses[0] -= masses[FAR] + masses[-FAR]
    return masses


@pytest.fixture(scope="module")
def reference() -> tuple[int, np.ndarray]:
    return _reference(_far_toy(), ROUNDS)


def _mixture(delta: float, a: float = P_FAR, at: float | None = None) -> fm.FarMixture:
    """The mixture at δ, tilted for the ε ``at`` (its dominant term's saddle, as the curve's
    second pass), or else for δ (the whole pair's Rényi λ, its first pass)."""
    masses = _far_toy()
    rest, top, _ = fm.far_split(masses)
    depth = fm.mixture_depth(rest, a, ROUNDS, delta)
    assert depth is not None
    if at is None:
        lam = chernoff_lambda(masses, STEP, ROUNDS, delta=delta)
    else:
        lam = fm.mixture_lambda(rest, a, STEP, top, ROUNDS, depth, at)
    return fm.far_mixture(rest, top, a, STEP, ROUNDS, lam, depth)


def _gaps(mixture: fm.FarMixture, reference: tuple[int, np.ndarray], eps: np.ndarray) -> np.ndarray:
    """``log δ_mixture − log δ_reference`` at each ε where the reference is above 1e-290."""
    start, probs = reference
    out = []
    for e in eps:
        ref = _log_delta(start, probs, STEP, float(e))
        if ref > math.log(1e-290):
            out.append(mixture.log_delta(float(e)) - ref)
    return np.asarray(out)


@pytest.mark.parametrize("delta", [1e-30, 1e-100, 1e-250])
def test_the_mixture_is_the_reference_composition_from_above(
    delta: float, reference: tuple[int, np.ndarray]
) -> None:
    eps_ref = _epsilon(*reference, STEP, delta)
    assert eps_ref > FAR * STEP  # the answer is made of the far atom's draws
    for first in (_mixture(delta), _mixture(delta, at=eps_ref)):  # sound under either tilt
        gaps = _gaps(first, reference, np.linspace(0.5 * eps_ref, 1.5 * eps_ref, 61))
        assert gaps.size > 30
        assert gaps.min() >= 0.0
    # tight where its tilt puts the error terms (the curve's second pass)
    mixture = _mixture(delta, at=eps_ref)
    near = _gaps(mixture, reference, np.linspace(0.998 * eps_ref, 1.002 * eps_ref, 9))
    assert near.size == 9
    assert near.max() < 1e-6
    eps = mixture.epsilon(delta, ROUNDS * FAR * STEP)
    assert eps_ref <= eps <= eps_ref * (1.0 + 1e-6), (eps, eps_ref)


def test_terms_at_negative_thresholds_read_the_losses_at_and_below_zero(
    reference: tuple[int, np.ndarray],
) -> None:
    """Below a multiple of the far loss the term reads ``ε − K L < 0``: every loss of the
    bulk counts there, those at or below 0 too (a TiltedPld of positive losses only would
    miss them and fall below the reference)."""
    mixture = _mixture(1e-100, at=353.5)
    eps = np.asarray([FAR * STEP * k - d for k in (1, 2, 3) for d in (0.05, 0.3, 2.0)])
    assert _gaps(mixture, reference, eps).min() >= 0.0
    positive = [
        replace(t, log_mass=np.where(t.index > 0, t.log_mass, -np.inf)) for t in mixture.terms
    ]
    assert _gaps(replace(mixture, terms=tuple(positive)), reference, eps).min() < 0.0


def test_coefficients_lowered_by_one_percent_are_caught(reference: tuple[int, np.ndarray]) -> None:
    eps_ref = _epsilon(*reference, STEP, 1e-100)
    mixture = _mixture(1e-100, at=eps_ref)
    eps = np.linspace(0.8 * eps_ref, 1.2 * eps_ref, 21)
    assert _gaps(mixture, reference, eps).min() >= 0.0
    lowered = replace(mixture, log_coef=tuple(c + math.log(0.99) for c in mixture.log_coef))
    assert _gaps(lowered, reference, eps).min() < 0.0


def test_the_far_mass_lowered_by_one_percent_is_caught(reference: tuple[int, np.ndarray]) -> None:
    eps_ref = _epsilon(*reference, STEP, 1e-100)
    eps = np.linspace(0.8 * eps_ref, 1.2 * eps_ref, 21)
    assert _gaps(_mixture(1e-100, at=eps_ref), reference, eps).min() >= 0.0
    assert _gaps(_mixture(1e-100, 0.99 * P_FAR, at=eps_ref), reference, eps).min() < 0.0


def test_the_terms_beyond_the_depth_are_needed(reference: tuple[int, np.ndarray]) -> None:
    """Left out (the tail bound −inf), the draws beyond a depth one too small are missed:
    the bound falls below the reference; with their bound it is above."""
    masses = _far_toy()
    rest, top, a = fm.far_split(masses)
    depth = fm.mixture_depth(rest, a, ROUNDS, 1e-100)
    assert depth is not None
    assert depth >= 2
    eps_ref = _epsilon(*reference, STEP, 1e-100)
    lam = fm.mixture_lambda(rest, a, STEP, top, ROUNDS, depth, eps_ref)
    short = fm.far_mixture(rest, top, a, STEP, ROUNDS, lam, depth - 2)
    eps = np.linspace(0.8 * eps_ref, 1.2 * eps_ref, 21)
    assert _gaps(short, reference, eps).min() >= 0.0
    cut = replace(short, log_tail=-math.inf)
    assert _gaps(cut, reference, eps).min() < 0.0


def test_far_split_raises_the_mirror_to_the_bulk() -> None:
    masses = _far_toy()
    rest, top, a = fm.far_split(masses)
    assert (top, a) == (FAR, P_FAR)
    assert min(rest) == -20  # the mirror moved up to the lowest bulk loss
    assert rest[-20] >= masses[-20] + masses[-FAR]
    assert set(rest) == set(masses) - {FAR, -FAR}


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Substitutes the far toy's grid for ``KEY``'s and records the compositions made."""
    log: list[str] = []
    compose, mix = pp.tilted_composition, pp.far_mixture

    def tilted(masses: dict[int, float], *args: float) -> object:
        log.append(f"tilted {len(masses)}")
        return compose(masses, *args)  # type: ignore[arg-type]

    def mixture(*args: object) -> fm.FarMixture:
        log.append("mixture")
        return mix(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pp, "tilted_composition", tilted)
    monkeypatch.setattr(pp, "far_mixture", mixture)
    monkeypatch.setattr(pp, "_composed_grid", lambda *key: (_far_toy(), STEP))
    pp._tilted.cache_clear()
    pp._mixture.cache_clear()
    yield log
    pp._tilted.cache_clear()
    pp._mixture.cache_clear()


def test_the_curve_answers_from_the_mixture_at_or_above_the_reference(
    made: list[str], reference: tuple[int, np.ndarray]
) -> None:
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution

    delta = 1e-100
    pmf = pld_pmf.create_pmf(_far_toy(), STEP, 0.0, pessimistic_estimate=True)
    plain = PldCurve(privacy_loss_distribution.PrivacyLossDistribution(pmf)).self_compose(ROUNDS)
    curve = pp._TiltedCurve(plain, ROUNDS * FAR * STEP, (), KEY)
    assert curve._material(delta)
    assert pp._free_cut(KEY, delta) == 0  # R a = 4e-13: far above δ, not left out
    eps = curve.epsilon(delta)
    eps_ref = _epsilon(*reference, STEP, delta)
    assert eps_ref <= eps <= eps_ref * (1.0 + 1e-6), (eps, eps_ref)
    assert made
    assert all(m == "mixture" for m in made), made  # never the long composition


@pytest.mark.parametrize(
    "key",
    [
        (1.0, 10_000, 3),
        pytest.param((4.0, 10**9, 3), marks=pytest.mark.slow),
        pytest.param((8.0, 10**9, 4), marks=pytest.mark.slow),
    ],
)
def test_a_real_pair_is_composed_from_above(key: tuple[float, int, int]) -> None:
    """The profile pair itself (its top atom at ε0 + h, its mirror raised), a few rounds,
    against the exact composition of its grid: never below over ``[0.5, 1.5]·ε*`` under
    either tilt, its ε within 1e-6 relative above the reference's."""
    grid, step = pp._composed_grid(*key)
    rounds = key[2]
    start, probs = _reference(grid, rounds)
    rest, top, a = fm.far_split(grid)
    for delta in (1e-20, 1e-40):
        depth = fm.mixture_depth(rest, a, rounds, delta)
        assert depth is not None
        eps_ref = _epsilon(start, probs, step, delta)
        for lam in (
            chernoff_lambda(grid, step, rounds, delta=delta),
            fm.mixture_lambda(rest, a, step, top, rounds, depth, eps_ref),
        ):
            mixture = fm.far_mixture(rest, top, a, step, rounds, lam, depth)
            for e in np.linspace(0.5 * eps_ref, 1.5 * eps_ref, 41):
                ref = _log_delta(start, probs, step, float(e))
                if ref > math.log(1e-290):
                    assert mixture.log_delta(float(e)) >= ref
            eps = mixture.epsilon(delta, rounds * top * step)
            assert eps_ref <= eps <= eps_ref * (1.0 + 1e-6), (eps, eps_ref)
