"""The revealed-class split system of the mechanism certificates, brute-forced.

(docs/proofs/mechanism-certificates.md.) Three checks:

* its constants ``(w, gamma)`` are read off each mechanism's report matrix for every
  neighbouring pair: ``w`` covers the uninformative reports some input makes less likely than
  π, and ``gamma`` is the rest of the uninformative mass at ratio ``R(v)/π >= 1`` — exactly,
  so a rate 1 % larger fails;
* the system's δ is at least the exact δ of the shuffled reports (multisets enumerated) for
  every dataset at n <= 3 and for the single-value datasets at n = 6;
* the certificate's measured gains (δ = 1e-6).

Hiding the target's uninformative reports among *all* non-clones instead (Wang et al.'s
pair) falls below the exact δ: tests/accounting/test_wang_parameters.py.
"""

from __future__ import annotations

import itertools
import math

import pytest

from crowdhide.accounting.shuffle.mechanisms import _reveal_member, mechanism_curve
from crowdhide.accounting.shuffle.randomizers import MECHANISMS
from tests.accounting import _mechanism_matrices as mm

#: (mechanism, d, k, the report matrix at ε0) of the checked cases. Local hashing (g = d
#: buckets, 3 inputs) is seen through the mark set of its report (which inputs hash to the
#: reported bucket): every input's likelihood of a report depends on nothing else, so the
#: ratios, masses and δ are those of the full reports.
CASES = [
    ("oue", 3, 1, lambda e0: mm.oue(e0, 3)),
    ("oue", 4, 1, lambda e0: mm.oue(e0, 4)),
    ("rappor", 3, 1, lambda e0: mm.rappor(e0, 3)),
    ("subset", 4, 2, lambda e0: mm.subset(e0, 4, 2)),
    ("subset", 5, 2, lambda e0: mm.subset(e0, 5, 2)),
    ("subset", 5, 3, lambda e0: mm.subset(e0, 5, 3)),
    ("olh", 2, 1, lambda e0: mm.olh_marks(e0, 2)),
    ("olh", 3, 1, lambda e0: mm.olh_marks(e0, 3)),
    ("hadamard", 4, 1, lambda e0: mm.hadamard(e0, 4)),
    ("hadamard", 6, 1, lambda e0: mm.hadamard(e0, 6)),
]


def read_off(r: mm.Matrix) -> list[tuple[float, float, float]]:
    """``(w_min, u, g)`` of every neighbouring pair of the matrix: the mass under π of the
    uninformative reports some input makes less likely than π (they must be revealed), of all
    uninformative reports, and the smallest ratio ``R(v)/π`` on the rest."""
    floor = r.min(axis=0)
    out = []
    for x, x2 in itertools.combinations(range(r.shape[0]), 2):
        pi = (r[x] + r[x2]) / 2.0
        zero = abs(r[x] - r[x2]) <= 1e-12 * pi
        ratio = floor / pi
        hidden = zero & (ratio >= 1.0 - 1e-12)
        revealed = zero & ~hidden
        out.append((float(pi[revealed].sum()), float(pi[zero].sum()), float(ratio[hidden].min())))
    return out


@pytest.mark.parametrize(("name", "d", "k", "matrix"), CASES)
@pytest.mark.parametrize("eps0", [0.7, 3.0])
def test_reveal_constants_read_off_the_matrix(
    name: str, d: int, k: int, matrix: object, eps0: float
) -> None:
    """The revealed mass covers every report that must be revealed (a report's π-mass may be
    split between the two kinds), and the hidden rate is the rest of the uninformative mass
    times ratio 1 — exactly, so a rate 1 % larger fails."""
    reveal = MECHANISMS[name].reveal
    assert reveal is not None
    constants = reveal(eps0, d, k)
    assert constants is not None
    w, gamma = constants
    for w_min, uninformative, ratio in read_off(matrix(eps0)):  # type: ignore[operator]
        assert ratio == pytest.approx(1.0, rel=1e-12)
        assert w >= w_min * (1 - 1e-9)
        assert gamma == pytest.approx(uninformative - w, rel=1e-9)
        assert 1.01 * gamma > (uninformative - w) * (1 + 1e-9)  # a 1 % larger rate fails


def test_reveal_is_absent_where_nothing_is_gained() -> None:
    subset = MECHANISMS["subset"].reveal
    hadamard = MECHANISMS["hadamard"].reveal
    assert subset is not None
    assert hadamard is not None
    assert subset(1.0, 5, 1) is None  # k = 1: no set holds both x and x'
    assert subset(1.0, 3, 2) is None  # d = 3, k = 2: no set holds neither
    assert hadamard(1.0, 3, 1) is None  # d <= 3: the uninformative ratio is already 1
    assert MECHANISMS["krr"].reveal is None
    assert MECHANISMS["laplace"].reveal is None


def reveal_delta(name: str, eps0: float, d: int, k: int, n: int, eps: float) -> float:
    mech = MECHANISMS[name]
    kappa, mu2, *_ = mech.params(eps0, d, k)
    assert mech.split is not None
    assert mech.reveal is not None
    c_inf, _ = mech.split(eps0, d, k)
    constants = mech.reveal(eps0, d, k)
    assert constants is not None
    return math.exp(_reveal_member(n, kappa, mu2, c_inf, constants, eps, -60.0))


@pytest.mark.parametrize(("name", "d", "k", "matrix"), [c for c in CASES if c[1] <= 4])
@pytest.mark.parametrize("eps0", [0.7, 3.0, 6.0])
def test_reveal_system_dominates_every_small_dataset(
    name: str, d: int, k: int, matrix: object, eps0: float
) -> None:
    r = matrix(eps0)  # type: ignore[operator]
    grid = [frac * eps0 for frac in (0.0, 0.3, 0.6, 0.9)]
    for n in (2, 3):
        for eps, truth in zip(grid, mm.worst_deltas(r, n, grid), strict=True):
            assert truth <= reveal_delta(name, eps0, d, k, n, eps) * (1 + 1e-9), (n, eps)


#: Single-value cases; local hashing through the mark set of its report (which inputs hash to
#: the reported bucket: the likelihoods of a report depend on nothing else, so δ is unchanged).
SINGLE = [
    ("oue", 3, 1, lambda e0: mm.oue(e0, 3)),
    ("rappor", 3, 1, lambda e0: mm.rappor(e0, 3)),
    ("subset", 4, 2, lambda e0: mm.subset(e0, 4, 2)),
    ("olh", 3, 1, lambda e0: mm.olh_marks(e0, 3)),
    ("hadamard", 4, 1, lambda e0: mm.hadamard(e0, 4)),
]


@pytest.mark.parametrize(("name", "d", "k", "matrix"), SINGLE)
@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_reveal_system_dominates_single_value_datasets(
    name: str, d: int, k: int, matrix: object, eps0: float
) -> None:
    r = matrix(eps0)  # type: ignore[operator]
    n = 6
    grid = [frac * eps0 for frac in (0.2, 0.5, 0.8, 0.95)]
    for z in range(1, r.shape[0]):  # all others on x' or on a third value
        truths = mm.pair_deltas(r, 0, 1, (z,) * (n - 1), grid)
        for eps, truth in zip(grid, truths, strict=True):
            assert truth <= reveal_delta(name, eps0, d, k, n, eps) * (1 + 1e-9), (z, eps)


@pytest.mark.parametrize(
    ("name", "d", "k", "eps0", "n", "before", "after"),
    [
        ("oue", 16, None, 4.0, 1000, 1.3495, 0.9467),
        ("oue", 16, None, 8.0, 10_000, 7.9999, 1.8438),
        ("rappor", 16, None, 8.0, 10_000, 7.9999, 5.2705),
        ("olh", 8, None, 8.0, 10_000, 7.9999, 7.2216),
    ],
)
def test_reveal_tightens_the_certificate(
    name: str, d: int, k: int | None, eps0: float, n: int, before: float, after: float
) -> None:
    """Measured values (δ = 1e-6; the split system alone gave ``before``)."""
    eps = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(1e-6)
    assert eps == pytest.approx(after, rel=1e-3)
    assert eps < before
