"""Where the conditional-mean lower member of k-subset and OLH jumps to −inf (issue 32,
docs/proofs/mechanism-certificates.md section 1o): the largest cell ratio ``A / B`` of its
window, found here by an independent enumeration in exact rationals; the member's
``edge_above`` (no layout) and ``cliff_below`` (the lower bound's search) against it, and
the lower bound's answer a failing point within 1e-10 of it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from crowdhide.accounting.shuffle import _mechanism_lower as ml
from crowdhide.accounting.shuffle._member_curve import lower_root
from crowdhide.accounting.shuffle.mechanisms import mechanism_lower_curve

#: (row, ε0, n): cells of the issue's table where the member's jump sets the lower bound
#: at δ = 1e-300 (OLH ε0 = 4 has a 3.9e5-cell window; k-subset ε0 = 4 is in the slow tier).
CELLS = [("olh", 8.0, 10**3), ("olh", 8.0, 10**4), ("subset", 8.0, 10**3), ("subset", 8.0, 10**4)]
SLOW_CELLS = [("olh", 4.0, 10**3), ("subset", 4.0, 10**3)]

TARGET = math.log(1e-300)


def _classes(row: str, eps0: float) -> ml.Classes:
    return ml.olh_classes(eps0, 8) if row == "olh" else ml.subset_classes(eps0, 16, 4)


def _window(n: int, p: float) -> tuple[int, int]:
    """A kept count's window as the module docstring states it: 12 standard deviations
    (of a Poisson count, sqrt(λ + 1)) and 30 either side of its mean, inside [0, n]."""
    lam = n * p
    half = 12.0 * math.sqrt(lam + 1.0) + 30.0
    return max(0, int(lam - half)), min(n, int(lam + half))


def _exact_cliff(row: str, eps0: float, n: int) -> Fraction:
    """The largest e^ε at which some window cell's E[W | F] is >= 0, in exact rationals of
    the float inputs: E[W | F] = Σ_kept N (g_x − e^ε g_x') + R (a − e^ε b), with a, b the
    rest's conditional means of g_x, g_x'. For fixed (N+, N−) the ratio is monotone in N±
    (linear-fractional), so only N±'s two ends are taken."""
    classes = _classes(row, eps0)
    gx = {(u, v): Fraction(math.exp(eps0 * u)) for _, u, v in classes}
    gy = {(u, v): Fraction(math.exp(eps0 * v)) for _, u, v in classes}
    keys = ((1, 0), (0, 1), (1, 1))
    kept = [sum((Fraction(p) for p, u, v in classes if (u, v) == key), Fraction(0)) for key in keys]
    rest = [(Fraction(p), (u, v)) for p, u, v in classes if (u, v) not in keys]
    mass = sum((p for p, _ in rest), Fraction(0))
    a = sum((p * gx[k] for p, k in rest), Fraction(0)) / mass
    b = sum((p * gy[k] for p, k in rest), Fraction(0)) / mass
    windows = [_window(n, float(p)) for p in kept]
    num = [float(gx[k]) for k in keys] + [float(a)]
    den = [float(gy[k]) for k in keys] + [float(b)]
    best: list[tuple[float, tuple[int, int, int, int]]] = []
    for plus in range(windows[0][0], windows[0][1] + 1):
        for minus in range(windows[1][0], windows[1][1] + 1):
            top = min(windows[2][1], n - plus - minus)
            for both in {windows[2][0], top}:
                if both < windows[2][0] or both > top:
                    continue
                cell = (plus, minus, both, n - plus - minus - both)
                ratio = sum(c * x for c, x in zip(cell, num, strict=True)) / sum(
                    c * y for c, y in zip(cell, den, strict=True)
                )
                best.append((ratio, cell))
    best.sort(reverse=True)
    exact = [gx[k] for k in keys] + [a], [gy[k] for k in keys] + [b]
    return max(
        sum((c * x for c, x in zip(cell, exact[0], strict=True)), Fraction(0))
        / sum((c * y for c, y in zip(cell, exact[1], strict=True)), Fraction(0))
        for _, cell in best[:20]
    )


def _check_cell(row: str, eps0: float, n: int) -> None:
    classes = _classes(row, eps0)
    exact = _exact_cliff(row, eps0, n)
    at = math.log(exact.numerator) - math.log(exact.denominator)
    cliff = ml.cliff_below(n, classes, eps0)
    # the search's point: within 1e-9 below the exact jump (a 1 % move is far outside)
    assert at - 1e-9 * at <= cliff <= at
    # the member fails there (finite, far above 1e-300) and is −inf just above the jump,
    # computed from its layout (edge_above is 1e-6 higher)
    value = ml.third_mean_log_delta(n, classes, eps0, cliff)
    assert math.isfinite(value)
    assert value > TARGET
    assert ml.third_mean_log_delta(n, classes, eps0, at * (1.0 + 1e-10)) == -math.inf
    # the layout-free edge: above the jump by its margin alone
    assert at < ml.edge_above(n, classes, eps0) <= at + 1.01 * ml.EDGE_MARGIN
    # the lower bound's answer at 1e-300: at least this member's failing point within
    # 1e-10 below the jump (k-subset ε0 = 4, n = 1e3: another member's, above it)
    lower = mechanism_lower_curve(
        mechanism=row,
        eps0=eps0,
        n=n,
        d=16 if row == "subset" else 8,
        k=4 if row == "subset" else None,
    ).epsilon(1e-300)
    assert lower >= at * (1.0 - 1e-10)
    if (row, eps0) != ("subset", 4.0):
        assert lower <= at


@pytest.mark.parametrize(("row", "eps0", "n"), CELLS)
def test_cliff_matches_an_exact_enumeration(row: str, eps0: float, n: int) -> None:
    _check_cell(row, eps0, n)


@pytest.mark.slow
@pytest.mark.parametrize(("row", "eps0", "n"), SLOW_CELLS)
def test_cliff_matches_an_exact_enumeration_slow(row: str, eps0: float, n: int) -> None:
    _check_cell(row, eps0, n)


@pytest.mark.parametrize("row", ["olh", "subset"])
@pytest.mark.parametrize("eps0", [2.0, 4.0, 8.0])
@pytest.mark.parametrize("n", [3, 10, 100, 10**3])
def test_edge_skip_changes_no_value(
    row: str, eps0: float, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The member's value with the layout-free edge equals its value from the layout alone,
    on a grid through and above the jump."""
    classes = _classes(row, eps0)
    edge = ml.edge_above(n, classes, eps0)
    top = min(eps0, edge + 0.05) if math.isfinite(edge) else eps0
    grid = [top * t for t in np.linspace(0.0, 1.0, 41)]
    if math.isfinite(edge):
        grid += [edge - 2 * ml.EDGE_MARGIN, edge - ml.EDGE_MARGIN, edge, edge + 1e-9]
    fast = [ml.third_mean_log_delta(n, classes, eps0, x) for x in grid]
    monkeypatch.setattr(ml, "edge_above", lambda *_: math.inf)
    slow = [ml.third_mean_log_delta(n, classes, eps0, x) for x in grid]
    assert fast == slow


def test_layout_equals_gammaln_of_every_cell() -> None:
    """The gathered layout is the former one (gammaln of every cell) to the bit."""
    for classes, n in ((ml.olh_classes(4.0, 8), 10**3), (ml.subset_classes(8.0, 16, 4), 10**4)):
        layout = ml._layout(n, classes)
        assert layout is not None
        logp, counts, _ = layout
        kept = [math.fsum(p for p, u, v in classes if (u, v) == key) for key in ml.KEPT]
        rest_p = math.fsum(p for p, u, v in classes if (u, v) not in ml.KEPT)
        r = counts[3]
        old = gammaln(n + 1.0) - gammaln(r + 1.0) + r * math.log(rest_p)
        for row, p in zip(counts[:3], kept, strict=True):
            old += row * math.log(p) - gammaln(row + 1.0)
        assert np.array_equal(old, logp)


def _cliff_curve(at: float, calls: list[float]) -> object:
    def curve(x: float) -> float:
        calls.append(x)
        return TARGET + 500.0 - 10.0 * x if x < at else -math.inf

    return curve


def test_lower_root_answers_the_cliff_point() -> None:
    """With the hint the search stops after three evaluations at a failing point; without it
    it bisects the jump; a hint above the jump (−inf there) falls back to the search."""
    at, xtol = 2.5, 4e-10
    calls: list[float] = []
    hinted = lower_root(_cliff_curve(at, calls), TARGET, 1.0, 4.0, xtol, cliff=lambda: at - 1e-12)  # type: ignore[arg-type]
    assert hinted == at - 1e-12
    assert len(calls) == 3
    plain_calls: list[float] = []
    plain = lower_root(_cliff_curve(at, plain_calls), TARGET, 1.0, 4.0, xtol)  # type: ignore[arg-type]
    assert at - 2 * xtol <= plain < at
    assert len(plain_calls) > 15
    late: list[float] = []
    wrong = lower_root(_cliff_curve(at, late), TARGET, 1.0, 4.0, xtol, cliff=lambda: at + 1e-12)  # type: ignore[arg-type]
    assert wrong == plain
    assert len(late) == len(plain_calls) + 1


def test_lower_root_skips_the_hint_at_a_smooth_crossing() -> None:
    """Where the secant aims below the cliff (a smooth crossing, δ = 1e-6) the hint costs
    no evaluation and the answer is the same float."""
    target = math.log(1e-6)

    def curve(x: float, calls: list[float]) -> float:
        calls.append(x)
        return target + 5.0 - 4.0 * x if x < 3.0 else -math.inf

    a: list[float] = []
    b: list[float] = []
    hinted = lower_root(lambda x: curve(x, a), target, 0.5, 4.0, 4e-10, cliff=lambda: 3.0 - 1e-12)
    plain = lower_root(lambda x: curve(x, b), target, 0.5, 4.0, 4e-10)
    assert hinted == plain
    assert a == b


def test_logsumexp_is_scipys() -> None:
    """The member's log-sum-exp is scipy's to the bit (ties of the largest term, −inf terms,
    one term, all −inf) and within 1e-12 of an exactly rounded sum (``math.fsum``)."""
    rng = np.random.default_rng(7)
    for trial in range(600):
        size = int(rng.integers(1, 3000))
        terms = rng.normal(size=size) * float(rng.choice([1e-3, 1.0, 30.0, 300.0]))
        if trial % 3 == 0:
            terms[rng.integers(0, size, size=max(1, size // 10))] = terms.max()
        if trial % 5 == 0:
            terms[rng.integers(0, size, size=max(1, size // 10))] = -np.inf
        got = ml._logsumexp(terms)
        assert got == float(logsumexp(terms))
        top = float(terms.max())
        exact = top + math.log(math.fsum(math.exp(t - top) for t in terms))
        assert abs(got - exact) <= 1e-12 * max(1.0, abs(exact))
    assert ml._logsumexp(np.array([-np.inf, -np.inf])) == float(logsumexp([-np.inf, -np.inf]))
