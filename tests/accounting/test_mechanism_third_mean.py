"""The conditional-mean ("Jensen") lower member of k-subset and local hashing (issue 32):
below the exact δ of its dataset (shuffled multiset law, brute force), equal to an
independent enumeration of its own formula, and stronger than the region counts."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _mechanism_lower as ml
from crowdhide.accounting.shuffle.mechanisms import mechanism_lower_curve
from tests.accounting import _mechanism_matrices as mm


def _compositions(n: int, parts: int) -> itertools.chain[tuple[int, ...]]:
    """Every tuple of ``parts`` non-negative integers summing to n."""
    if parts == 1:
        return itertools.chain([(n,)])
    return itertools.chain.from_iterable(
        ((first, *rest) for rest in _compositions(n - first, parts - 1)) for first in range(n + 1)
    )


def _jensen_by_enumeration(n: int, classes: ml.Classes, eps0: float, eps: float) -> float:
    """(1/n) E[(E[W | F])_+] with F the counts of the classes in ``KEPT``: every class count
    vector enumerated, the conditional mean taken by averaging W within each F."""
    big_e = math.exp(eps)
    probs = [p for p, _, _ in classes]
    w = [math.exp(eps0 * u) - big_e * math.exp(eps0 * v) for _, u, v in classes]
    key_of = [ml.KEPT.index((u, v)) if (u, v) in ml.KEPT else None for _, u, v in classes]
    mass: defaultdict[tuple[int, ...], float] = defaultdict(float)
    total: defaultdict[tuple[int, ...], float] = defaultdict(float)
    for counts in _compositions(n, len(classes)):
        logp = math.lgamma(n + 1.0) + sum(
            c * math.log(p) - math.lgamma(c + 1.0) for c, p in zip(counts, probs, strict=True)
        )
        f = [0, 0, 0]
        for c, key in zip(counts, key_of, strict=True):
            if key is not None:
                f[key] += c
        mass[tuple(f)] += math.exp(logp)
        total[tuple(f)] += math.exp(logp) * sum(c * x for c, x in zip(counts, w, strict=True))
    return sum(max(total[f], 0.0) for f in mass) / n


@pytest.mark.parametrize(
    ("name", "eps0", "eps"),
    [("olh", 2.0, 0.3), ("olh", 4.0, 1.0), ("subset", 2.0, 0.3), ("subset", 4.0, 1.2)],
)
def test_equals_independent_enumeration(name: str, eps0: float, eps: float) -> None:
    """Equal to the enumerated formula to 1e-8 (a 1 % change of a weight or a class
    probability moves it by far more, so such a perturbation fails here)."""
    n = 10
    classes = ml.olh_classes(eps0, 4) if name == "olh" else ml.subset_classes(eps0, 7, 3)
    got = math.exp(ml.third_mean_log_delta(n, classes, eps0, eps))
    want = _jensen_by_enumeration(n, classes, eps0, eps)
    assert want > 1e-6
    assert got <= want
    assert got == pytest.approx(want, rel=1e-8)


def _exact_third(r: np.ndarray, n: int, eps: float) -> float:
    """Exact δ(ε) of target x = 0 against x' = 1, every other user on z = 2 (brute force
    over the shuffled multiset)."""
    return mm.pair_delta(r, 0, 1, (2,) * (n - 1), eps)


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 4), (3.0, 4), (3.0, 5)])
def test_subset_below_brute_force(eps0: float, n: int) -> None:
    """k-subset (d = 5, k = 2): the member never exceeds the exact δ of its dataset."""
    r = mm.subset(eps0, 5, 2)
    classes = ml.subset_classes(eps0, 5, 2)
    for eps in np.linspace(0.05, eps0 - 0.05, 9):
        exact = _exact_third(r, n, float(eps))
        bound = math.exp(ml.third_mean_log_delta(n, classes, eps0, float(eps)))
        assert bound <= exact * (1.0 + 1e-12)


@pytest.mark.parametrize("eps0", [1.0, 3.0])
def test_olh_below_brute_force(eps0: float) -> None:
    """Local hashing (g = 2, every hash function of 3 inputs): never above the exact δ."""
    r = mm.olh(eps0, 2)
    classes = ml.olh_classes(eps0, 2)
    for n in (3, 4):
        for eps in np.linspace(0.05, eps0 - 0.05, 7):
            exact = _exact_third(r, n, float(eps))
            bound = math.exp(ml.third_mean_log_delta(n, classes, eps0, float(eps)))
            assert bound <= exact * (1.0 + 1e-12)


def test_class_probabilities_match_the_report_laws() -> None:
    """The closed-form class laws equal those read off the mechanisms' report matrices."""
    for eps0 in (0.5, 3.0):
        for r, classes in (
            (mm.subset(eps0, 6, 3), ml.subset_classes(eps0, 6, 3)),
            (mm.olh(eps0, 3), ml.olh_classes(eps0, 3)),
        ):
            gx, gx2 = np.log(r[0] / r[2]) / eps0, np.log(r[1] / r[2]) / eps0
            for key in {(u, v) for _, u, v in classes}:
                mask = np.isclose(gx, key[0]) & np.isclose(gx2, key[1])
                want = float(r[2][mask].sum())
                got = sum(p for p, u, v in classes if (u, v) == key)
                assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("name", "d", "k"), [("olh", 8, None), ("subset", 16, 4)])
def test_raises_the_lower_bound_at_eps0_8(name: str, d: int, k: int | None) -> None:
    """ε0 = 8, n = 1e4, δ = 1e-6: the mechanism's lower bound is now this member's (it
    was 2.670 for OLH, 2.182 for k-subset with the region counts)."""
    low = mechanism_lower_curve(mechanism=name, eps0=8.0, n=10_000, d=d, k=k).epsilon(1e-6)
    assert low > {"olh": 3.2, "subset": 2.7}[name]
