"""The exact 4-RR worst case at small n (``_krr4_small``, issue 32 item 4): against brute
force over every dataset (the full 4-bin histogram law of every multiset of the other
users' values), the unpruned class enumeration, and each blanket bound against its region's
classes — with mutations showing each check can fail."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

from crowdhide.accounting.curves import DiscretePairCurve
from crowdhide.accounting.shuffle import _krr4_small
from crowdhide.accounting.shuffle.generic import shuffle_bound_curve, shuffle_epsilon
from tests.oracles.shuffle import all_datasets, pair_curve

FloatArray = _krr4_small.FloatArray
EPS_FRACTIONS = (0.0, 0.05, 0.2, 0.5, 0.8)
DELTAS = (1e-2, 1e-6)


@functools.cache
def _truths(n: int, eps0: float) -> list[DiscretePairCurve]:
    """Every dataset's exact curve (brute force, independent of crowdhide's shuffle code)."""
    return [pair_curve(o, 4, eps0) for o in all_datasets(n, 4)]


class _Perturbed(_krr4_small.SmallKrr4Exact):
    """Mutation: the report probability p of every user moved by ``scale``."""

    def __init__(self, *, eps0: float, n: int, scale: float) -> None:
        super().__init__(eps0=eps0, n=n)
        w = [list(x) for x in self._weights]
        for i in range(4):
            w[i][i] *= scale
        self._weights = tuple(tuple(x) for x in w)


@functools.cache
def _worst(n: int, eps0: float) -> tuple[list[float], list[float]]:
    """The worst case over every dataset: δ at ``EPS_FRACTIONS`` of ε0, ε at ``DELTAS``."""
    truths = _truths(n, eps0)
    deltas = [max(t.delta(frac * eps0) for t in truths) for frac in EPS_FRACTIONS]
    return deltas, [max(t.epsilon(d) for t in truths) for d in DELTAS]


def _matches_brute_force(ex: _krr4_small.SmallKrr4Exact, n: int, eps0: float) -> bool:
    """Whether δ(ε) and ε(δ) equal the worst case over every dataset (to rounding)."""
    deltas, epsilons = _worst(n, eps0)
    for frac, truth in zip(EPS_FRACTIONS, deltas, strict=True):
        if not math.isclose(ex.delta(frac * eps0), truth, rel_tol=1e-11, abs_tol=1e-300):
            return False
    return all(
        abs(ex.epsilon(d, 1e-13) - truth) <= 1e-10
        for d, truth in zip(DELTAS, epsilons, strict=True)
    )


@pytest.mark.parametrize(
    ("n", "eps0"), [(2, 0.4), (3, 3.0), (5, 0.4), (5, 1.5), (6, 3.0), (8, 1.5)]
)
def test_equals_brute_force_over_every_dataset(n: int, eps0: float) -> None:
    assert _matches_brute_force(_krr4_small.SmallKrr4Exact(eps0=eps0, n=n), n, eps0)
    # The check can fail: p moved by 1 %.
    assert not _matches_brute_force(_Perturbed(eps0=eps0, n=n, scale=0.99), n, eps0)
    assert not _matches_brute_force(_Perturbed(eps0=eps0, n=n, scale=1.01), n, eps0)


@pytest.mark.parametrize(("n", "eps0"), [(4, 0.7), (7, 2.0)])
def test_registry_curve_is_above_the_truth_by_its_allowances_only(n: int, eps0: float) -> None:
    curve = shuffle_bound_curve(bound="exact", eps0=eps0, n=n, k=4)
    for frac, worst in zip(EPS_FRACTIONS, _worst(n, eps0)[0], strict=True):
        assert worst <= curve.delta(frac * eps0) <= worst * (1.0 + 2e-9) + 1e-280


def _full_delta(ex: _krr4_small.SmallKrr4Exact, eps: float) -> float:
    """The worst case over every class of :meth:`classes` (no pruning)."""
    return max(ex.class_delta(p, q, eps) for _, p, q in ex.classes())


def test_classes_are_every_class_up_to_symmetry() -> None:
    n = 9
    ex = _krr4_small.SmallKrr4Exact(eps0=1.0, n=n)
    got = [cls for cls, _, _ in ex.classes()]
    want = [
        c
        for c in itertools.product(range(n), repeat=4)
        if sum(c) == n - 1 and c[1] <= c[0] and c[3] <= c[2]
    ]
    assert sorted(got) == sorted(want)  # each exactly once (disjoint regions)


@pytest.mark.parametrize(("n", "eps0"), [(14, 0.5), (14, 4.0), (18, 1.0)])
def test_pruned_search_equals_the_full_enumeration(n: int, eps0: float) -> None:
    ex = _krr4_small.SmallKrr4Exact(eps0=eps0, n=n)
    count = sum(1 for _ in ex.classes())
    for frac in (0.0, 0.3, 0.9):
        eps = frac * eps0
        assert ex.delta(eps) == pytest.approx(_full_delta(ex, eps), rel=1e-12)
        assert ex.evaluated < count  # the search did skip classes
    for delta in (1e-3, 1e-8):
        got = ex.epsilon(delta, 1e-13)
        assert _full_delta(ex, got) <= delta * (1 + 1e-12)
        assert got == 0.0 or _full_delta(ex, got - 1e-11) > delta


@functools.cache
def _brute_delta(cls: tuple[int, ...], eps0: float, eps: float) -> float:
    others = [v for v, count in enumerate(cls) for _ in range(count)]
    return pair_curve(others, 4, eps0).delta(eps)


def _blanket_ratio(n: int, eps0: float, scale: float) -> tuple[float, float]:
    """Smallest (ancestor δ) resp. (blanket bound) over (largest brute-force δ of the
    region's classes), over every ancestor, every number of extra users and a few ε
    (``scale``: the mutation of 4q)."""
    ex = _krr4_small.SmallKrr4Exact(eps0=eps0, n=n)
    ex._uniform_scale = scale
    ratio = (math.inf, math.inf)
    for extra in range(1, n):
        for anc in itertools.product(range(n - extra), repeat=4):
            if sum(anc) != n - 1 - extra:
                continue
            arr = ex._root()
            for axis in range(4):
                arr = ex._chain(arr, sum(anc[:axis]), ex._weights[axis], anc[axis], 0).copy()
            for frac in (0.0, 0.1, 0.3, 0.6):
                got = _region_ratio(ex, arr, anc, extra, frac * eps0)
                ratio = (min(ratio[0], got[0]), min(ratio[1], got[1]))
    return ratio


def _region_ratio(
    ex: _krr4_small.SmallKrr4Exact, arr: FloatArray, anc: tuple[int, ...], extra: int, eps: float
) -> tuple[float, float]:
    big = math.exp(eps)

    def measure(p: FloatArray, q: FloatArray) -> float:
        return ex._class_delta(p, q, big)

    reports = sum(anc)
    d0 = measure(*ex._targets(arr, reports))
    bounds = list(ex._blanket_bounds(arr, reports, extra, 1, d0, measure))
    truth = max(
        _brute_delta(tuple(a + d for a, d in zip(anc, add, strict=True)), ex.eps0, eps)
        for add in itertools.product(range(extra + 1), repeat=4)
        if sum(add) == extra
    )
    if truth <= 0.0:
        return math.inf, math.inf
    return d0 / truth, min(bounds, default=math.inf) / truth


@pytest.mark.parametrize(("n", "eps0"), [(6, 0.8), (6, 1.5)])
def test_blanket_and_ancestor_bounds_dominate_every_class_of_their_region(
    n: int, eps0: float
) -> None:
    ancestor, blanket = _blanket_ratio(n, eps0, 1.0)
    assert ancestor >= 1.0 - 1e-9
    assert 1.0 - 1e-9 <= blanket <= 1.1  # sound, and not vacuous
    # The check can fail: 20 % more uniform reports than 4-RR has (as for k = 3, 1 % is
    # inside the bound's own slack; a 1 % error in an answer is caught above).
    assert _blanket_ratio(n, eps0, 1.2)[1] < 1.0


def test_rounding_budget_holds_against_50_digits() -> None:
    mpmath = pytest.importorskip("mpmath")
    n, eps0 = 7, 2.0
    ex = _krr4_small.SmallKrr4Exact(eps0=eps0, n=n)
    found = {cls: (p, q) for cls, p, q in ex.classes()}
    r, tiny = _krr4_small.rounding_budget(n), 7.0 * (n + 1) * 2.0**-1074
    with mpmath.workdps(50):
        e = mpmath.exp(mpmath.mpf(eps0))
        p, q = e / (e + 3), 1 / (e + 3)
        for cls in ((6, 0, 0, 0), (0, 0, 6, 0), (2, 1, 2, 1)):
            laws = {(0, 0, 0): mpmath.mpf(1)}
            users = [v for v, c in enumerate(cls) for _ in range(c)]
            for v in users:
                laws = _mp_step(laws, [p if i == v else q for i in range(4)])
            for got, target in zip(found[cls], (0, 1), strict=True):
                exact = _mp_step(laws, [p if i == target else q for i in range(4)])
                for idx, value in exact.items():
                    assert abs(mpmath.mpf(float(got[idx])) - value) <= r * value + tiny
                assert float(np.sum(got)) == pytest.approx(1.0, rel=1e-12)


def _mp_step(law: dict[tuple[int, int, int], object], w: list[object]) -> dict:  # type: ignore[type-arg]
    out: dict[tuple[int, int, int], object] = {}
    for (a, b, c), v in law.items():
        for key, weight in (
            ((a + 1, b, c), w[0]),
            ((a, b + 1, c), w[1]),
            ((a, b, c + 1), w[2]),
            ((a, b, c), w[3]),
        ):
            out[key] = out.get(key, 0) + weight * v  # type: ignore[operator]
    return out


def test_registry_reports_exact_for_k4_up_to_the_limit() -> None:
    limit = _krr4_small.SMALL4_EXACT_MAX_N
    inside = shuffle_epsilon(eps0=2.0, n=20, delta=1e-6, k=4, bound="exact")
    assert inside.conditions_met
    assert inside.kind == "exact"
    assert inside.lower is not None
    assert inside.lower.epsilon <= inside.epsilon
    beyond = shuffle_epsilon(eps0=2.0, n=limit + 1, delta=1e-6, k=4, bound="exact")
    assert not beyond.conditions_met
    assert str(limit) in " ".join(beyond.notes)
    best_limit = _krr4_small.SMALL4_EXACT_BEST_MAX_N
    assert shuffle_epsilon(eps0=2.0, n=best_limit, delta=1e-6, k=4).source == "exact"
    assert shuffle_epsilon(eps0=2.0, n=best_limit + 1, delta=1e-6, k=4).source != "exact"
    # other k >= 5 keep the n <= 14 enumeration
    assert not shuffle_epsilon(eps0=2.0, n=15, delta=1e-6, k=5, bound="exact").conditions_met
