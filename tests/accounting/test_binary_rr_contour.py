"""Binary RR block cores by tilted contour integrals (accounting.shuffle.binary_rr_contour):
soundness against exhaustive enumeration, against the exact worst case over every dataset
and against the direct (convolution) evaluation of the same blocks; a variant with the
aliasing and truncation bounds dropped that the same comparison catches; tightness against
the exact lower bound up to n = 1e9; numerics at δ = 1e-300.

Run time: about 20 s in the fast tier, 30 s more with ``--slow``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle import binary_rr_contour as bc
from crowdhide.accounting.shuffle.binary_rr import (
    binary_rr_tilted_curve,
    binary_rr_worst_curve,
    block_width,
)
from crowdhide.accounting.shuffle.generic import shuffle_delta, shuffle_epsilon
from tests.oracles.shuffle import worst_case_delta

EPS0S = (0.1, 0.5, 1.0, 4.0, 8.0)


@pytest.fixture
def coarse_level() -> Iterator[None]:
    """Tail level e^{-1}: few nodes and a small trapezoid, so the aliasing and truncation
    bounds carry real weight (they must still keep the result an upper bound)."""
    saved = bc.LEVEL
    bc.LEVEL = 1.0
    bc.tilted_cores.cache_clear()
    yield
    bc.LEVEL = saved
    bc.tilted_cores.cache_clear()


def _contour_delta(n: int, eps0: float, eps: float, width: int) -> float:
    return math.exp(bc.tilted_worst_log_delta(n, eps0, eps, width))


@pytest.mark.parametrize("n", [2, 3, 5, 8, 11])
@pytest.mark.parametrize("eps0", EPS0S)
def test_never_below_exhaustive_enumeration(n: int, eps0: float) -> None:
    for width in sorted({1, block_width(n, 2)}):
        for frac in (0.0, 0.05, 0.3, 0.7):
            truth, _ = worst_case_delta(n, 2, eps0, frac * eps0)
            got = _contour_delta(n, eps0, frac * eps0, width)
            assert truth <= got
            if width == 1 and truth > 1e-12:  # every dataset: exact up to the error bounds
                assert got <= truth * (1.0 + 1e-8)


def _exact_grid(n: int) -> Iterator[tuple[float, float, float]]:
    """(eps0, eps, exact worst-case δ over every dataset) where that δ >= 1e-60 (below, the
    windows of the exact evaluation, not the truth, set its value)."""
    for eps0 in EPS0S:
        for frac in (0.0, 0.02, 0.1, 0.3, 0.6):
            eps = frac * eps0
            log_exact = fast.binary_rr_worst_log_delta(n, eps0, eps, -200.0, width=1)
            if log_exact > math.log(1e-60):
                yield eps0, eps, math.exp(log_exact)


@pytest.mark.parametrize("n", [40, 301])
def test_every_dataset_matches_the_exact_worst_case(n: int) -> None:
    """width = 1: every dataset is a core; the exact evaluation (tested against enumeration
    in test_shuffle_tight.py) pads each δ by ~1e-9 relative for its rounding."""
    for eps0, eps, exact in _exact_grid(n):
        got = _contour_delta(n, eps0, eps, 1)
        assert exact * (1.0 - 1e-7) <= got <= exact * (1.0 + 1e-7), (eps0, eps)


@pytest.mark.parametrize("n", [40, 301])
def test_blocks_never_below_the_exact_worst_case(n: int) -> None:
    for blocks in (3, 16):
        width = block_width(n, blocks)
        for eps0, eps, exact in _exact_grid(n):
            assert _contour_delta(n, eps0, eps, width) >= exact * (1.0 - 1e-7), (eps0, eps)


def _full_vs_contour(n: int, *, variant: bool = False) -> list[tuple[float, float, float]]:
    """(ε0, δ, contour ε / full ε) over the grid: the same blocks evaluated directly
    (:func:`binary_rr_worst_curve`, convolutions of binomial windows with the tails added)
    and by contour integrals."""
    out = []
    for eps0 in EPS0S:
        full = binary_rr_worst_curve(eps0=eps0, n=n)
        contour = binary_rr_tilted_curve(eps0=eps0, n=n)
        assert contour.width == full.width
        for delta in (1e-4, 1e-8, 1e-12):
            eps_full = full.epsilon(delta)
            eps_contour = contour.epsilon(delta)
            out.append((eps0, delta, eps_contour / eps_full if eps_full > 0 else 1.0))
            if not variant and 0.0 < eps_full < eps0:
                # δ at the full evaluation's ε: the contour's δ must not be below it, up to
                # the full evaluation's own rounding pad (1e-10 … 3e-9 per probability,
                # amplified by the cancellation in the hockey stick: ~1e-6 at ε0 = 0.1).
                assert contour.delta(eps_full) >= full.delta(eps_full) * (1.0 - 1e-5)
    return out


@pytest.mark.parametrize("n", [3000, 20_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_contour_never_below_the_full_evaluation(n: int) -> None:
    ratios = _full_vs_contour(n)
    # The full evaluation's rounding pad (above) moves its ε by up to ~2e-6 at ε0 = 0.1.
    assert all(r >= 1.0 - 1e-5 for _, _, r in ratios), ratios
    # ... and equal to it up to the root finders' tolerances (both bound the same blocks)
    # where the count has some noise (n p q >= 64; below, a core whose threshold sits in
    # an extreme tail may be given δ = 1, and best keeps FMT23 there).
    noisy = [r for eps0, _, r in ratios if n / (4.0 * math.cosh(eps0 / 2.0) ** 2) >= 64]
    assert noisy
    assert all(r <= 1.0 + 1e-4 for r in noisy), ratios


@pytest.mark.usefixtures("coarse_level")
def test_coarse_layout_stays_sound() -> None:
    """With e^{-1} tails the error bounds dominate, and the result stays above the truth."""
    for n in (40, 301):
        for blocks in (3, 64):
            width = block_width(n, blocks) if blocks < n else 1
            for eps0, eps, exact in _exact_grid(n):
                assert _contour_delta(n, eps0, eps, width) >= exact * (1.0 - 1e-7)
    assert all(r >= 1.0 - 1e-5 for _, _, r in _full_vs_contour(3000))


@pytest.mark.usefixtures("coarse_level")
def test_dropping_the_tail_bounds_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same coarse layout without the aliasing and truncation bounds falls below the
    exact worst case: the comparisons above can fail."""
    layout = bc.tilted_cores

    def no_truncation(*args: float) -> bc.TiltedCores:
        cores = layout(*args)
        assert cores is not None
        return dataclasses.replace(cores, log_trunc=np.full(cores.rows, -np.inf))

    monkeypatch.setattr(bc, "tilted_cores", no_truncation)
    monkeypatch.setattr(bc, "_log_alias", lambda c, t, big: np.full(t.shape, -np.inf))
    below = [
        (n, eps0, eps)
        for n in (40, 301)
        for eps0, eps, exact in _exact_grid(n)
        if _contour_delta(n, eps0, eps, 1) < exact * (1.0 - 1e-7)
    ]
    assert below
    with pytest.raises(AssertionError):  # ... and so does the comparison with the full one
        _full_vs_contour(3000)


@pytest.mark.parametrize("n", [3000, 10**5, 10**6, 10**9])
@pytest.mark.parametrize("eps0", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-10])
def test_best_within_one_percent_of_the_lower_bound(n: int, eps0: float, delta: float) -> None:
    r = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=2)
    assert r.source == "binary_rr_blocks"
    assert r.lower is not None
    assert r.lower.source == "krr_lower"
    assert r.lower.epsilon <= r.epsilon <= 1.01 * r.lower.epsilon
    d = shuffle_delta(eps0=eps0, n=n, epsilon=r.epsilon, k=2)
    assert d.source == "binary_rr_blocks"
    assert d.delta <= delta
    assert d.lower is not None
    assert d.lower.delta <= d.delta


def test_delta_just_below_the_total_variation_needs_finer_blocks() -> None:
    """Known limit: at ε0 = 0.1, n = 1e9, δ = 1e-6 (δ(0) ≈ 1.3e-6, so ε is tiny and moves a
    lot with the cores' dropped users) 64 blocks give about 1.02x the lower bound; 256
    blocks (4x the work) are back within 1.01x."""
    r = shuffle_epsilon(eps0=0.1, n=10**9, delta=1e-6, k=2)
    assert r.lower is not None
    assert 1.01 * r.lower.epsilon < r.epsilon < 1.03 * r.lower.epsilon
    finer = binary_rr_tilted_curve(eps0=0.1, n=10**9, blocks=256).epsilon(1e-6)
    assert r.lower.epsilon <= finer <= 1.01 * r.lower.epsilon


@pytest.mark.parametrize("n", [3000, 10**9])
@pytest.mark.parametrize("eps0", [0.01, 1.0, 8.0])
def test_extreme_delta_is_finite_and_ordered(n: int, eps0: float) -> None:
    curve = binary_rr_tilted_curve(eps0=eps0, n=n)
    previous = 0.0
    for delta in (1e-3, 1e-30, 1e-300):
        eps = curve.epsilon(delta)
        assert math.isfinite(eps)
        assert previous <= eps <= eps0
        assert 0.0 <= curve.delta(eps) <= delta
        previous = eps


@pytest.mark.parametrize("n", [3000, 10**9])
def test_vanishing_eps0(n: int) -> None:
    """ε0 below what doubles resolve (p = q in floating point): δ = 1 is returned, never an
    error or a δ below the truth; small but resolved ε0 still gives a certificate."""
    assert bc.tilted_worst_log_delta(n, 1e-300, 0.0, block_width(n, 64)) == 0.0
    r = shuffle_epsilon(eps0=1e-300, n=n, delta=1e-6, k=2)
    assert 0.0 <= r.epsilon <= 1e-300
    curve = binary_rr_tilted_curve(eps0=1e-9, n=n)
    assert 0.0 <= curve.epsilon(1e-12) <= 1e-9


def test_limits_and_errors() -> None:
    with pytest.raises(ValueError, match="n"):
        binary_rr_tilted_curve(eps0=1.0, n=10**9 + 1)
    with pytest.raises(ValueError, match="eps0"):
        binary_rr_tilted_curve(eps0=0.0, n=10)
    with pytest.raises(ValueError, match="blocks"):
        binary_rr_tilted_curve(eps0=1.0, n=10**6, blocks=20_000)
    assert binary_rr_tilted_curve(eps0=1.0, n=10**6, blocks=10_000).width == 50
    assert bc.tilted_worst_log_delta(1000, 1.0, 1.0, 8) == -math.inf
