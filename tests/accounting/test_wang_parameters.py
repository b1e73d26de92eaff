"""Wang et al.'s (VLDB 2024) variation-ratio parameters of six mechanisms, checked exactly.

For OUE, RAPPOR, k-subset, local hashing, the piecewise mechanism and Laplace:

* the premise holds: ``p`` is the largest likelihood ratio between two inputs, ``β`` at least
  the largest total variation (equal except local hashing, whose tabled β omits the factor
  ``1 − 1/g`` of colliding hash values), ``q`` the largest ratio to a third input — read
  off the report matrices (densities on a fine grid for the two continuous ones);
* the bound does not follow: the exact δ of the shuffled reports of one explicit dataset
  (enumerated at n <= 6; continuous outputs binned, which can only lower δ) exceeds δ of
  the pair the parameters feed (:func:`~crowdhide.accounting.shuffle.randomizers.wang_pair_delta`),
  so none of the six bounds is a certificate (docs/proofs/mechanism-certificates.md);
* the same comparison with the generic parameters ``β = (p − 1)/(p + 1)`` (the FMT23 pair,
  which is sound) stays above the truth: the implementation of the pair is not the culprit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle.randomizers import wang_pair_delta
from tests.accounting import _mechanism_matrices as mm


def wang_beta(name: str, eps0: float, d: int = 0, k: int = 0) -> float:
    """β of Wang et al.'s table (README of wangsw/PrivacyAmplification); OUE, not in the
    table, takes the β of Hadamard response with s = K/2 (its total variation)."""
    e, t = math.exp(eps0), math.exp(eps0 / 2.0)
    if name == "oue":
        return (e - 1.0) / (2.0 * (e + 1.0))
    if name == "rappor":
        return (t - 1.0) / (t + 1.0)
    if name == "subset":
        top = math.comb(d - 1, k - 1) - math.comb(d - 2, k - 2)
        return (e - 1.0) * top / (e * math.comb(d - 1, k - 1) + math.comb(d - 1, k))
    if name == "olh":  # local hash of length l = g
        return (e - 1.0) / (e + d - 1.0)
    if name == "piecewise":
        return (e - 1.0) / (e + t)
    return 1.0 - math.exp(-eps0 / 2.0)  # laplace


def premise(r: mm.Matrix) -> tuple[float, float, float]:
    """(largest likelihood ratio, largest total variation, largest ratio to any input)."""
    ratio = float((r[:, None, :] / r[None, :, :]).max())
    pairs = itertools.combinations(range(len(r)), 2)
    tv = max(0.5 * float(abs(r[a] - r[b]).sum()) for a, b in pairs)
    return ratio, tv, ratio


@pytest.mark.parametrize("eps0", [0.5, 2.0, 4.0])
def test_premises_hold_for_the_finite_mechanisms(eps0: float) -> None:
    e = math.exp(eps0)
    for name, r, d, k in [
        ("oue", mm.oue(eps0, 4), 4, 0),
        ("rappor", mm.rappor(eps0, 4), 4, 0),
        ("subset", mm.subset(eps0, 5, 2), 5, 2),
        ("olh", mm.olh(eps0, 3), 3, 0),
    ]:
        p, tv, q = premise(r)
        beta = wang_beta(name, eps0, d, k)
        assert p == pytest.approx(e, rel=1e-9), name
        assert q == pytest.approx(e, rel=1e-9), name
        assert tv <= beta * (1 + 1e-9), name
        if name == "olh":  # colliding hash values carry no information
            assert tv == pytest.approx(beta * (1.0 - 1.0 / d), rel=1e-9)
        else:
            assert tv == pytest.approx(beta, rel=1e-9), name


@pytest.mark.parametrize("eps0", [0.5, 2.0, 4.0])
def test_premises_hold_for_the_continuous_mechanisms(eps0: float) -> None:
    e, t = math.exp(eps0), math.exp(eps0 / 2.0)
    inputs = np.linspace(-1.0, 1.0, 9)
    b = 2.0 / eps0
    y = np.linspace(-1.0 - 40.0 * b, 1.0 + 40.0 * b, 200_001)
    laplace = np.exp(-np.abs(y[None, :] - inputs[:, None]) / b) / (2.0 * b)
    big_c = (t + 1.0) / (t - 1.0)
    high = t * (t - 1.0) / (2.0 * (t + 1.0))
    yp = np.linspace(-big_c, big_c, 200_001)
    left = ((big_c + 1.0) * inputs / 2.0 - (big_c - 1.0) / 2.0)[:, None]
    piecewise = np.where((yp >= left) & (yp <= left + big_c - 1.0), high, high / e)
    for name, dens, grid in [("laplace", laplace, y), ("piecewise", piecewise, yp)]:
        ratio = float((dens[:, None, :] / dens[None, :, :]).max())
        step = grid[1] - grid[0]
        tv = 0.5 * float(abs(dens[0] - dens[-1]).sum()) * step  # the pair (−1, 1)
        assert ratio <= e * (1 + 1e-9), name
        assert ratio == pytest.approx(e, rel=1e-3), name
        assert tv == pytest.approx(wang_beta(name, eps0), rel=1e-3), name


#: (mechanism, report matrix or its post-processing, β options, ε0, n, ε): one explicit
#: dataset each — the target's pair (input 0, input 1) and all others on input 1.
COUNTEREXAMPLES = [
    ("oue", lambda: mm.oue(4.0, 3), (), 4.0, 6, 3.2),
    ("rappor", lambda: mm.rappor(4.0, 3), (), 4.0, 4, 3.6),
    ("subset", lambda: mm.subset(2.0, 4, 2), (4, 2), 2.0, 5, 1.8),
    ("olh", lambda: mm.olh_marks(2.0, 3), (3, 0), 2.0, 5, 1.9),
    ("laplace", lambda: mm.laplace_binned(2.0, [-1.0, 1.0], [-1.0, 0.0, 1.0]), (), 2.0, 5, 1.8),
    ("piecewise", lambda: mm.piecewise_binned(1.0, [-1.0, 1.0], [-1.0, 0.0, 1.0]), (), 1.0, 5, 0.9),
]


@pytest.mark.parametrize(("name", "matrix", "options", "eps0", "n", "eps"), COUNTEREXAMPLES)
def test_wang_pair_falls_below_the_exact_delta(
    name: str, matrix: object, options: tuple[int, ...], eps0: float, n: int, eps: float
) -> None:
    r = matrix()  # type: ignore[operator]
    truth = mm.pair_delta(r, 0, 1, (1,) * (n - 1), eps)
    e = math.exp(eps0)
    wang = wang_pair_delta(eps, e, wang_beta(name, eps0, *options), e, n)
    generic = wang_pair_delta(eps, e, math.tanh(eps0 / 2.0), e, n)
    assert truth > 1.5 * wang  # not a rounding matter: the bound is below the truth
    assert truth <= generic


def test_wang_pair_reproduces_the_published_values() -> None:
    """General ε0-LDP (the FMT23 pair), ε0 = 4, n = 1e5, δ = 1e-6: 0.11816 (Wang's code);
    4-RR at ε0 = ln 13, n = 1000, δ = 1e-4: 0.38887 — δ at those ε straddles the target."""
    e = math.exp(4.0)
    kappa = (e - 1.0) / (e + 1.0)
    assert wang_pair_delta(0.11816, e, kappa, e, 10**5) <= 1e-6
    assert wang_pair_delta(0.11813, e, kappa, e, 10**5) > 1e-6
    assert wang_pair_delta(0.38887, 13.0, 12.0 / 16.0, 13.0, 1000) <= 1e-4
    assert wang_pair_delta(0.38884, 13.0, 12.0 / 16.0, 13.0, 1000) > 1e-4
