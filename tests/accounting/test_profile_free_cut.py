"""Far atoms left out *first* in the profile pair's tilted ε search (``profile_pair._free_cut``,
docs/proofs/profile-pair.md §12), against an independent composition.

A toy pair (``test_tilted_pld``'s) with a far, tiny atom 50 times beyond the bulk's highest
loss is composed by the profile pair's tilted search (``_TiltedCurve``, its grid substituted
for a key no real query uses). The reference composes the whole pair, far atom included, one
round at a time by shifted sums of non-negative products (``test_tilted_pld._reference``,
exact to ~1e-12 relative). The answer must be at or above the reference's ε, close to it,
made from the short composition alone (the far atom left out, ``R a`` added to δ); and with
``R a`` lowered by 1 % it falls below the reference (the comparison is sharp).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.shuffle import _tilted_pld
from crowdhide.accounting.shuffle import profile_pair as pp
from tests.accounting.test_tilted_pld import STEP, _epsilon, _reference, _toy_masses

KEY = (99.0, 7, 20)  # (ε0, n, R) of no real query: the grid below stands in for its pair
FAR = 1000  # loss 50: 50 times the bulk's highest loss (index 20)


def _far_toy(p_far: float) -> dict[int, float]:
    masses = _toy_masses()
    masses[FAR], masses[-FAR] = p_far, p_far * math.exp(-FAR * STEP)
    masses[0] -= masses[FAR] + masses[-FAR]
    return masses


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Substitutes the far toy's grid for ``KEY``'s and records the atoms of every tilted
    composition made (their number: with or without the far atom)."""
    made: list[int] = []

    def composed(masses: dict[int, float], *args: float) -> _tilted_pld.TiltedPld:
        made.append(len(masses))
        return _tilted_pld.tilted_composition(masses, *args)

    monkeypatch.setattr(pp, "tilted_composition", composed)
    pp._tilted.cache_clear()
    yield made
    pp._tilted.cache_clear()


def _curve(masses: dict[int, float], monkeypatch: pytest.MonkeyPatch) -> pp._TiltedCurve:
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution

    monkeypatch.setattr(pp, "_composed_grid", lambda *key: (dict(masses), STEP))
    pmf = pld_pmf.create_pmf(masses, STEP, 0.0, pessimistic_estimate=True)
    plain = PldCurve(privacy_loss_distribution.PrivacyLossDistribution(pmf)).self_compose(KEY[2])
    return pp._TiltedCurve(plain, KEY[2] * 1.5, (), KEY)


def test_the_far_atom_is_left_out_first_and_the_answer_is_the_reference_from_above(
    toy: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    delta, masses = 1e-12, _far_toy(1e-16)  # R a = 2e-15: 0.2 % of δ (FREE_SHARE: 1 %)
    curve = _curve(masses, monkeypatch)
    assert curve._material(delta)  # the plain composition's allowance counts: the tilt answers
    assert pp._free_cut(KEY, delta) == 1
    eps = curve.epsilon(delta)
    ref = _epsilon(*_reference(masses, KEY[2]), STEP, delta)
    assert ref <= eps <= ref * (1.0 + 1e-6), (eps, ref)
    assert toy
    assert all(size == len(masses) - 1 for size in toy)  # never the long one
    # at 100 times the δ the far atom is not free (R a = 2e-5 δ is, but the ratio rule
    # holds: still left out first); at 1e-3 δ it is over FREE_SHARE: all atoms first
    assert pp._free_cut(KEY, 1e-10) == 1
    assert pp._free_cut(KEY, 1e-16) == 0


def test_a_near_atom_is_not_left_out_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within :data:`FAR_RATIO` times the bulk's reach the order is main's: all atoms first."""
    masses = _toy_masses()
    near = pp.FAR_RATIO * 20 - 1
    masses[near], masses[-near] = 1e-16, 1e-16 * math.exp(-near * STEP)
    masses[0] -= masses[near] + masses[-near]
    monkeypatch.setattr(pp, "_composed_grid", lambda *key: (dict(masses), STEP))
    assert pp._cut(KEY, pp.FREE_SHARE * 1e-12) == 1
    assert pp._free_cut(KEY, 1e-12) == 0


def test_the_far_atoms_union_bound_lowered_by_one_percent_is_caught(
    toy: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``R a`` = 20 % of δ (FREE_SHARE raised to 0.5 here: the share only orders the
    search, any share is sound): from above, and below the reference with ``R a`` 1 %
    lower."""
    delta, masses = 1e-12, _far_toy(1e-14)
    monkeypatch.setattr(pp, "FREE_SHARE", 0.5)
    curve = _curve(masses, monkeypatch)
    ref = _epsilon(*_reference(masses, KEY[2]), STEP, delta)
    eps = curve.epsilon(delta)
    assert ref <= eps <= ref * (1.0 + 1e-6), (eps, ref)
    assert toy
    assert all(size == len(masses) - 1 for size in toy)
    pp._tilted.cache_clear()
    lowered = pp.without_top

    def less(*args: int) -> tuple[dict[int, float], float]:
        kept, dropped = lowered(*args)  # type: ignore[arg-type]
        return kept, 0.99 * dropped

    monkeypatch.setattr(pp, "without_top", less)
    assert _curve(masses, monkeypatch).epsilon(delta) < ref
