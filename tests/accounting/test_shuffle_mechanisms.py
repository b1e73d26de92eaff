"""Mechanism-specific shuffle certificates against exact enumeration on small domains.

Every mechanism is written out as an explicit row-stochastic matrix (inputs x reports); the
shuffled output is the multiset of reports, whose exact law is enumerated for every
neighbouring pair and every dataset of the other users (n <= 3). The certificate must
dominate the worst case, the lower bound must stay below it, and a deliberately too-large
clone probability must be caught.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting import DiscretePairCurve
from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle.mechanisms import (
    mechanism_curve,
    mechanism_epsilon,
    mechanism_lower_curve,
)
from crowdhide.accounting.shuffle.randomizers import MECHANISMS

Matrix = npt.NDArray[np.float64]


def krr_matrix(eps0: float, d: int) -> Matrix:
    e = math.exp(eps0)
    return (np.full((d, d), 1.0) + np.eye(d) * (e - 1.0)) / (e + d - 1.0)


def unary_matrix(d: int, p_on: float, p_off: float) -> Matrix:
    rows = []
    for x in range(d):
        row = []
        for bits in itertools.product((0, 1), repeat=d):
            prob = 1.0
            for j, b in enumerate(bits):
                pj = p_on if j == x else p_off
                prob *= pj if b else 1.0 - pj
            row.append(prob)
        rows.append(row)
    return np.array(rows)


def subset_matrix(eps0: float, d: int, k: int) -> Matrix:
    sets = list(itertools.combinations(range(d), k))
    r = np.array([[math.exp(eps0) if x in s else 1.0 for s in sets] for x in range(d)])
    return np.asarray(r / r.sum(axis=1, keepdims=True), dtype=np.float64)


def olh_matrix(eps0: float, g: int, inputs: int = 3) -> Matrix:
    e = math.exp(eps0)
    hashes = list(itertools.product(range(g), repeat=inputs))  # every function: collision 1/g
    rows = []
    for x in range(inputs):
        rows.append(
            [
                (e if y == h[x] else 1.0) / (e + g - 1.0) / len(hashes)
                for h in hashes
                for y in range(g)
            ]
        )
    return np.array(rows)


def matrix_for(name: str, eps0: float, d: int, k: int) -> Matrix:
    q = 1.0 / (math.exp(eps0) + 1.0)
    t = math.exp(eps0 / 2.0)
    return {
        "krr": lambda: krr_matrix(eps0, d),
        "oue": lambda: unary_matrix(d, 0.5, q),
        "rappor": lambda: unary_matrix(d, t / (t + 1.0), 1.0 / (t + 1.0)),
        "subset": lambda: subset_matrix(eps0, d, k),
        "olh": lambda: olh_matrix(eps0, d),
    }[name]()


def multiset_law(r: Matrix, values: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    law: dict[tuple[int, ...], float] = defaultdict(float)
    m = r.shape[1]
    for reports in itertools.product(range(m), repeat=len(values)):
        prob = 1.0
        for v, y in zip(values, reports, strict=True):
            prob *= r[v, y]
        if prob > 0.0:
            law[tuple(sorted(reports))] += prob
    return law


def worst_delta(r: Matrix, n: int, eps: float) -> float:
    d = r.shape[0]
    worst = 0.0
    for x, x2 in itertools.combinations(range(d), 2):
        for others in itertools.combinations_with_replacement(range(d), n - 1):
            a, b = multiset_law(r, (*others, x)), multiset_law(r, (*others, x2))
            keys = sorted(set(a) | set(b))
            curve = DiscretePairCurve.from_probabilities(
                [a.get(key, 0.0) for key in keys], [b.get(key, 0.0) for key in keys]
            )
            worst = max(worst, curve.delta(eps))
    return worst


CASES = [("krr", 3, 1), ("oue", 3, 1), ("rappor", 3, 1), ("subset", 4, 2), ("olh", 2, 1)]


@pytest.mark.parametrize(("name", "d", "k"), CASES)
@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_certificate_and_lower_bound_bracket_the_truth(
    name: str, d: int, k: int, eps0: float
) -> None:
    r = matrix_for(name, eps0, d, k)
    assert np.allclose(r.sum(axis=1), 1.0)
    assert math.log(float((r[:, None, :] / r[None, :, :]).max())) <= eps0 + 1e-12
    assert r.shape[0] >= 3  # a third input exists for the blanket ratio
    kk = k if MECHANISMS[name].needs_k else None
    for n in (2, 3):
        cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=kk)
        low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=d, k=kk)
        for frac in (0.0, 0.2, 0.5):
            eps = frac * eps0
            truth = worst_delta(r, n, eps)
            assert truth <= cert.delta(eps) * (1 + 1e-9)
            assert low.delta(eps) <= truth * (1 + 1e-9)


def test_a_too_large_clone_probability_is_caught() -> None:
    """The same check fails when OUE's blanket ratio is taken as 1/(e+1) (the ratio without
    the bit of the other user's own value), i.e. rho = 2/(e+1)."""
    eps0, d = 2.0, 3
    r = matrix_for("oue", eps0, d, 1)
    kappa, mu2, _, *_ = MECHANISMS["oue"].params(eps0, d, 1)
    wrong_rho = 2.0 / (math.exp(eps0) + 1.0) * 2.5
    caught = False
    for eps in (0.0, 0.3, 0.8):
        truth = worst_delta(r, 3, eps)
        wrong = math.exp(fast.clone_noise_log_delta(3, kappa, mu2, min(wrong_rho, 1.0), eps, -60))
        caught |= truth > wrong * (1 + 1e-9)
    assert caught


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_mechanism_certificate_beats_generic_at_scale(name: str) -> None:
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    kk = 4 if MECHANISMS[name].needs_k else None
    d = 16 if MECHANISMS[name].needs_d else None
    cert = mechanism_curve(mechanism=name, eps0=2.0, n=10**6, d=d, k=kk).epsilon(1e-6)
    low = mechanism_lower_curve(mechanism=name, eps0=2.0, n=10**6, d=d, k=kk).epsilon(1e-6)
    generic = shuffle_epsilon(eps0=2.0, n=10**6, delta=1e-6, lower=False).epsilon
    assert low <= cert
    # Laplace keeps the one-rate system (its pairs differ), which the generic
    # variation-ratio certificate (split clones) can beat; the answer takes the smaller.
    # Piecewise has the generic one restricted to its μ, so it is never above it.
    m = MECHANISMS[name]
    if m.split is not None or m.variation_capped:
        assert cert <= generic * (1 + 1e-6)
    assert low <= generic


@pytest.mark.parametrize(("eps0", "n", "most"), [(1.0, 10**5, 1.2), (4.0, 10**5, 1.01)])
def test_piecewise_restricted_certificate_is_tight(eps0: float, n: int, most: float) -> None:
    """The variation-ratio certificate restricted to the piecewise mechanism's μ: within
    ``most`` of the lower bound (1.01 at ε0 = 4), and at least 5 % below its one-rate system."""
    cert = mechanism_curve(mechanism="piecewise", eps0=eps0, n=n).epsilon(1e-6)
    low = mechanism_lower_curve(mechanism="piecewise", eps0=eps0, n=n).epsilon(1e-6)
    kappa, mu2, rho, *_ = MECHANISMS["piecewise"].params(eps0, 0, 1)
    lo, hi = 0.0, eps0  # bisection for the one-rate system's ε at δ = 1e-6
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        above = fast.clone_noise_log_delta(n, kappa, mu2, rho, mid, -60.0) > math.log(1e-6)
        lo, hi = (mid, hi) if above else (lo, mid)
    one_rate = lo
    assert low <= cert <= most * low
    assert cert < one_rate / 1.05


def test_cli_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_helpers import run_cli

    args = ("shuffle", "epsilon", "--eps0", "2", "--n", "100000", "--delta", "1e-6")
    result = run_cli(capsys, *args, "--mechanism", "rappor", "--d", "32", "--json")
    assert result.code == 0, result.err
    row = result.json()
    assert row["source"] == "mechanism:rappor"
    assert row["delta"] == 1e-6
    assert 0.0 < row["lower"]["epsilon"] <= row["epsilon"]
    bad = run_cli(capsys, *args, "--mechanism", "rappor")
    assert bad.code == 2
    assert "--d" in bad.err
    for name in ("laplace", "piecewise"):
        good = run_cli(capsys, *args, "--mechanism", name, "--json")
        assert good.code == 0, good.err
        assert good.json()["source"] in (f"mechanism:{name}", "variation_ratio")
        wrong = run_cli(capsys, *args, "--mechanism", name, "--d", "4")
        assert wrong.code == 2
        assert wrong.err.count("\n") == 1
        assert "--d" in wrong.err
    assert run_cli(capsys, *args, "--mechanism", "hadamard", "--d", "8").code == 0


# --------------------------------------------------------------------------------------
# Hadamard response, piecewise mechanism, Laplace: the three-point reduction


def hadamard_matrix(eps0: float, d: int) -> Matrix:
    """Hadamard response on d inputs: rows 1..d of the K x K Sylvester matrix (K > d)."""
    big_k = 1 << d.bit_length()  # smallest power of 2 above d
    e = math.exp(eps0)
    rows = []
    for x in range(1, d + 1):
        signs = [1 - 2 * (bin(x & y).count("1") % 2) for y in range(big_k)]
        rows.append([(2.0 * e if s > 0 else 2.0) / ((e + 1.0) * big_k) for s in signs])
    return np.array(rows)


def piecewise_matrix(eps0: float, inputs: npt.NDArray[np.float64]) -> Matrix:
    """The piecewise mechanism on the given inputs, reports reduced to the cells between all
    their interval ends: every density is constant on a cell, so the cell is a sufficient
    statistic of every dataset drawn from ``inputs`` (the reduction is exact)."""
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    dens = t * (t - 1.0) / (2.0 * (t + 1.0))
    left = (big_c + 1.0) / 2.0 * inputs - (big_c - 1.0) / 2.0
    edges = np.unique(np.concatenate([[-big_c, big_c], left, left + big_c - 1.0]))
    mid = (edges[:-1] + edges[1:]) / 2.0
    high = (mid[None, :] >= left[:, None]) & (mid[None, :] <= left[:, None] + big_c - 1.0)
    return np.where(high, dens, dens / (t * t)) * np.diff(edges)[None, :]


def laplace_matrix(eps0: float, inputs: npt.NDArray[np.float64], bins: int) -> Matrix:
    """Laplace reports (scale 2/eps0) binned: a post-processing, so every δ computed from
    it is at most the true δ of the same dataset."""
    b = 2.0 / eps0
    edges = np.concatenate([[-np.inf], np.linspace(-1.0 - 3 * b, 1.0 + 3 * b, bins - 1), [np.inf]])

    def cdf(y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        z = (y[None, :] - inputs[:, None]) / b
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))

    return np.diff(cdf(edges), axis=1)


def symmetric_law(r: Matrix, values: tuple[int, ...]) -> npt.NDArray[np.float64]:
    """Law of the reports of ``values`` in a uniformly random order (n <= 3): in one-to-one
    correspondence with the multiset, with the same factor for both datasets of a pair, so
    its hockey-stick divergence is that of the shuffled output."""
    n = len(values)
    out = r[values[0]]
    for v in values[1:]:
        out = np.multiply.outer(out, r[v])
    perms = list(itertools.permutations(range(n)))
    total = np.zeros(out.size)
    for p in perms:
        total += np.transpose(out, p).ravel()
    return total / len(perms)


def worst_delta_fast(r: Matrix, n: int, eps_grid: list[float]) -> npt.NDArray[np.float64]:
    """Max over ordered pairs and every dataset of the others of δ(ε), for each ε."""
    worst = np.zeros(len(eps_grid))
    big = np.exp(np.array(eps_grid))[:, None]
    for x, x2 in itertools.permutations(range(r.shape[0]), 2):
        for others in itertools.combinations_with_replacement(range(r.shape[0]), n - 1):
            a, b = symmetric_law(r, (*others, x)), symmetric_law(r, (*others, x2))
            worst = np.maximum(worst, np.maximum(a[None, :] - big * b[None, :], 0).sum(axis=1))
    return worst


def three_point_delta(eps0: float, beta: float, eps: float) -> float:
    """δ(ε) of the three-point pair with total variation β (module docstring)."""
    kappa = math.tanh(eps0 / 2.0)
    mu = beta / kappa
    return max(0.0, mu / 2.0 * ((1 + kappa) - math.exp(eps) * (1 - kappa)))


def check_bracket(name: str, r: Matrix, eps0: float, d: int | None, *, exact: bool) -> None:
    fracs = [0.0, 0.1, 0.2, 0.4]
    for n in (2, 3):
        cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d)
        truth = worst_delta_fast(r, n, [f * eps0 for f in fracs])
        for f, value in zip(fracs, truth, strict=True):
            assert value <= cert.delta(f * eps0) * (1 + 1e-9), (name, eps0, n, f)
        if exact:
            low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=d)
            for f, value in zip(fracs, truth, strict=True):
                assert low.delta(f * eps0) <= value * (1 + 1e-9) + 1e-15, (name, eps0, n, f)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_hadamard_bracket_the_truth(d: int, eps0: float) -> None:
    r = hadamard_matrix(eps0, d)
    assert np.allclose(r.sum(axis=1), 1.0)
    assert math.log(float((r[:, None, :] / r[None, :, :]).max())) <= eps0 + 1e-12
    check_bracket("hadamard", r, eps0, d, exact=d >= 3)


def test_hadamard_parameters_from_the_matrix() -> None:
    """mu2 = TV/κ and rho = 2 min R(v)/(P0 + P1), read off the matrix."""
    for d in (3, 4, 6):
        for eps0 in (0.5, 2.0):
            r = hadamard_matrix(eps0, d)
            kappa, mu2, rho, *_ = MECHANISMS["hadamard"].params(eps0, d, 1)
            pairs = list(itertools.combinations(range(d), 2))
            tv = max(0.5 * np.abs(r[x] - r[y]).sum() for x, y in pairs)
            blanket = min((r / (r[x] + r[y])[None, :]).min() for x, y in pairs)
            assert math.isclose(tv / kappa, mu2, rel_tol=1e-12)
            assert math.isclose(2.0 * blanket, rho, rel_tol=1e-12)


@pytest.mark.parametrize("eps0", [0.7, 2.0, 4.0])
def test_piecewise_bracket_the_truth(eps0: float) -> None:
    grid = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    r = piecewise_matrix(eps0, grid)
    assert np.allclose(r.sum(axis=1), 1.0)
    check_bracket("piecewise", r, eps0, None, exact=False)
    # the lower-bound datasets (pairs (−a, a), others on 0) are on this grid for a = 1/2, 1
    for n in (2, 3):
        low = mechanism_lower_curve(mechanism="piecewise", eps0=eps0, n=n)
        truth = worst_delta_fast(
            piecewise_matrix(eps0, np.array([-1.0, -0.25, 0.0, 0.25, 0.75, -0.75, -0.5, 0.5, 1.0])),
            n,
            [0.0, 0.2 * eps0],
        )
        assert low.delta(0.0) <= truth[0] * (1 + 1e-9)
        assert low.delta(0.2 * eps0) <= truth[1] * (1 + 1e-9)


@pytest.mark.parametrize("eps0", [0.7, 2.0, 4.0])
def test_laplace_certificate_above_a_binned_lower_estimate(eps0: float) -> None:
    grid = np.array([-1.0, 0.0, 1.0])
    check_bracket("laplace", laplace_matrix(eps0, grid, 24), eps0, None, exact=False)


def _caught(r: Matrix, eps0: float, mu2: float, rho: float) -> bool:
    """Whether the clone-system δ with a (deliberately wrong) ``(mu2, rho)`` falls below the
    exact worst case somewhere at n = 3."""
    kappa = math.tanh(eps0 / 2.0)
    grid = [0.0, 0.1 * eps0, 0.2 * eps0, 0.4 * eps0]
    truth = worst_delta_fast(r, 3, grid)
    wrong = [math.exp(fast.clone_noise_log_delta(3, kappa, mu2, rho, e, -60.0)) for e in grid]
    return any(t > w * (1 + 1e-9) for t, w in zip(truth, wrong, strict=True))


def test_wrong_parameters_of_the_new_mechanisms_are_caught() -> None:
    """Hadamard with half the total variation (mu2 = 1/4), the piecewise mechanism with the
    total variation of inputs 1 apart instead of 2, Laplace with 1.5 times its largest clone
    probability: each falls below the exact (or binned) worst case."""
    eps0, e = 0.7, math.exp(0.7)
    assert _caught(hadamard_matrix(eps0, 4), eps0, 0.25, 1.0 / e)
    t = math.exp(eps0 / 2.0)
    big_c, dens = (t + 1.0) / (t - 1.0), t * (t - 1.0) / (2.0 * (t + 1.0))
    mu2_one_apart = (dens - dens / e) * min(big_c - 1.0, (big_c + 1.0) / 2.0) / math.tanh(eps0 / 2)
    assert _caught(
        piecewise_matrix(eps0, np.array([-1.0, -0.5, 0.0, 0.5, 1.0])), eps0, mu2_one_apart, 1.0 / e
    )
    mu2_laplace = -math.expm1(-eps0 / 2.0) / math.tanh(eps0 / 2.0)
    r = laplace_matrix(eps0, np.array([-1.0, 0.0, 1.0]), 24)
    assert _caught(r, eps0, mu2_laplace, 1.5 * 2.0 / (e + 1.0))


@pytest.mark.parametrize("name", ["krr", "oue", "rappor"])
def test_domain_of_two_has_no_third_value_lower_bound(name: str) -> None:
    """d = 2: the "others on a third value" dataset does not exist (it put the lower bound
    above the truth before); the "others on x'" datasets stand in (binary RR's for k-RR)."""
    eps0 = 0.7
    r = matrix_for(name, eps0, 2, 1)
    for n in (2, 3):
        truth = worst_delta_fast(r, n, [0.0, 0.3 * eps0])
        cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=2)
        assert truth[1] <= cert.delta(0.3 * eps0) * (1 + 1e-9)
        low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=2)
        assert low.delta(0.0) <= truth[0] * (1 + 1e-9)
        assert low.delta(0.3 * eps0) <= truth[1] * (1 + 1e-9)
        assert low.delta(0.0) > 0.0
    with pytest.raises(ValueError, match="d >= 3"):
        mechanism_lower_curve(mechanism="hadamard", eps0=eps0, n=3, d=2)


def laplace_pair_delta(eps0: float, gap: float, eps: float) -> float:
    """Exact δ(ε) of Laplace laws (scale 2/eps0) ``gap`` apart: ``1 − e^{(ε − gap/b)/2}``."""
    b = 2.0 / eps0
    return max(0.0, -math.expm1((eps - gap / b) / 2.0))


@pytest.mark.parametrize("eps0", [0.3, 1.0, 4.0])
def test_single_pairs_are_dominated_by_the_three_point_pair(eps0: float) -> None:
    """Blackwell dominance behind the reduction, per pair and over a grid of ε: the Laplace
    pair Δ apart against the three-point pair with β(Δ), and the piecewise pair (a three-
    valued loss: its δ is exactly the three-point one). A three-point pair with a smaller β
    would not dominate (checked too)."""
    for gap in (0.1, 0.5, 1.0, 2.0):
        beta = -math.expm1(-gap * eps0 / 4.0)
        assert math.isclose(laplace_pair_delta(eps0, gap, 0.0), beta, rel_tol=1e-12)
        for eps in np.linspace(0.0, eps0, 41):
            assert laplace_pair_delta(eps0, gap, eps) <= three_point_delta(eps0, beta, eps) + 1e-15
        assert laplace_pair_delta(eps0, gap, 0.0) > three_point_delta(eps0, 0.99 * beta, 0.0)
    for a, b in ((-1.0, 1.0), (-0.5, 0.5), (0.0, 1.0)):
        r = piecewise_matrix(eps0, np.array([a, b]))
        tv = 0.5 * float(np.abs(r[0] - r[1]).sum())
        for eps in np.linspace(0.0, eps0, 21):
            exact = float(np.maximum(r[0] - math.exp(eps) * r[1], 0.0).sum())
            assert math.isclose(
                exact, three_point_delta(eps0, tv, eps), rel_tol=1e-9, abs_tol=1e-15
            )
    kappa, mu2, *_ = MECHANISMS["piecewise"].params(eps0, 0, 1)
    worst = piecewise_matrix(eps0, np.array([-1.0, 1.0]))
    assert math.isclose(0.5 * float(np.abs(worst[0] - worst[1]).sum()), kappa * mu2, rel_tol=1e-12)


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_blanket_ratios_on_a_grid(eps0: float) -> None:
    """min over reports y and other inputs v of R(v)(y)/(P0(y) + P1(y)) on fine grids: at
    least the certificate's r for every pair (Laplace: r(Δ) of the cell; piecewise: 1/(2e)),
    and close to it (the value is reached, not just bounded)."""
    b = 2.0 / eps0
    y = np.linspace(-1.0 - 12 * b, 1.0 + 12 * b, 4001)
    inputs = np.linspace(-1.0, 1.0, 21)
    dens = np.exp(-np.abs(y[None, :] - inputs[:, None]) / b) / (2 * b)
    floor = dens.min(axis=0)
    for i, j in itertools.combinations(range(inputs.size), 2):
        gap = inputs[j] - inputs[i]
        ratio = float((floor / (dens[i] + dens[j])).min())
        r_gap = math.exp(-eps0) / (1.0 + math.exp(-gap * eps0 / 2.0))
        assert ratio >= r_gap * (1 - 1e-9)
        if inputs[j] == 1.0:
            assert ratio <= r_gap * (1 + 1e-3)
    cells = MECHANISMS["laplace"].cells
    assert cells is not None
    assert min(rho for _, rho in cells(eps0)) == pytest.approx(math.exp(-eps0) * 2 / 2, rel=1e-12)
    grid = np.linspace(-1.0, 1.0, 9)
    r = piecewise_matrix(eps0, grid)
    blanket = min(
        (r.min(axis=0) / (r[i] + r[j])).min() for i, j in itertools.combinations(range(9), 2)
    )
    assert math.isclose(2.0 * blanket, MECHANISMS["piecewise"].params(eps0, 0, 1)[2], rel_tol=1e-9)


@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_laplace_lower_bound_configurations_are_exact_datasets(eps0: float) -> None:
    """Each Laplace lower-bound member is at most the exact δ of its dataset's region counts
    (pair (−1, 1), others on 0, regions y < −c, |y| <= c, y > c), enumerated for n <= 3."""
    from crowdhide.accounting.shuffle.randomizers import lower_members

    b = 2.0 / eps0
    members = lower_members(MECHANISMS["laplace"], eps0, 0, 1)
    thresholds = (0.25, 0.5, 1.0, 1.0 + b / 2.0, 1.0 + b, 1.0 + 2.0 * b)
    same = MECHANISMS["laplace"].same_regions
    assert same is not None
    # then the two-count "others on +1" member (test_laplace_two_count.py) and "others on x'"
    assert len(members) == len(thresholds) + 1 + len(same(eps0, 0, 1))
    for c, member in zip(thresholds, members, strict=False):
        edges = np.array([-np.inf, -c, c, np.inf])

        def cdf(y: npt.NDArray[np.float64], x: float) -> npt.NDArray[np.float64]:
            z = (y - x) / b
            return np.where(
                z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0))
            )

        r = np.array([np.diff(cdf(edges, x)) for x in (-1.0, 1.0, 0.0)])
        for n in (1, 2, 3):
            for eps in (0.0, 0.2 * eps0, 0.5 * eps0):
                law_x = symmetric_law(r, (*([2] * (n - 1)), 0))
                law_y = symmetric_law(r, (*([2] * (n - 1)), 1))
                exact = float(np.maximum(law_x - math.exp(eps) * law_y, 0.0).sum())
                assert math.exp(member(n, eps)) <= exact * (1 + 1e-9) + 1e-300


def region_count_delta(n: int, p: float, q: float, eps: float) -> float:
    """Exact δ(ε) of the count of region reports: ``Bern(p) + Bin(n − 1, q)`` against
    ``Bin(n, q)``, both directions, summed term by term (an independent computation)."""
    from scipy.stats import binom

    rest = binom.pmf(np.arange(n), n - 1, q)
    law_x = np.concatenate([(1 - p) * rest, [0.0]]) + np.concatenate([[0.0], p * rest])
    law_y = binom.pmf(np.arange(n + 1), n, q)
    big = math.exp(eps)
    forward = float(np.maximum(law_x - big * law_y, 0.0).sum())
    return max(forward, float(np.maximum(law_y - big * law_x, 0.0).sum()))


@pytest.mark.parametrize("name", ["oue", "rappor", "subset", "olh", "laplace"])
@pytest.mark.parametrize("eps0", [0.5, 4.0])
def test_others_on_x_prime_regions_are_exact(name: str, eps0: float) -> None:
    """Each "others on x'" member equals the exact δ of its region count (to 1e-9), for n
    from 1 to 300; the region probabilities are read off the matrices in the small-domain
    checks above (oue, rappor, subset, olh) and the Laplace CDF."""
    from crowdhide.accounting.shuffle._krr_fast import same_value_lower_log_delta

    d, k = {"subset": (6, 3), "olh": (5, 1), "laplace": (0, 1)}.get(name, (6, 1))
    regions = MECHANISMS[name].same_regions
    assert regions is not None
    for p, q, rest in regions(eps0, d, k):
        assert 0.0 < q < p <= 1.0
        assert math.isclose(rest, 1.0 - p, rel_tol=1e-12)
        for n in (1, 2, 7, 300):
            for frac in (0.0, 0.1, 0.5):
                exact = region_count_delta(n, p, q, frac * eps0)
                got = math.exp(same_value_lower_log_delta(n, p, q, frac * eps0))
                assert got <= exact * (1 + 1e-9) + 1e-300
                assert got >= exact * (1 - 1e-7) - 1e-300


def laplace_region_check(eps0: float, inflate: float) -> None:
    """Every Laplace "others on x'" member (pair (−1, 1), all others on +1, the count of
    reports below −c) against an independent computation: its region probabilities from
    scipy's Laplace CDF, the count's exact δ summed term by term (n <= 40), and the member
    times ``inflate`` must not exceed it."""
    from scipy.stats import laplace

    from crowdhide.accounting.shuffle.randomizers import (
        LAPLACE_SAME_THRESHOLDS,
        _laplace_proxy_threshold,
        lower_members,
    )

    b = 2.0 / eps0
    cs = sorted({*LAPLACE_SAME_THRESHOLDS, _laplace_proxy_threshold(eps0)})
    members = lower_members(MECHANISMS["laplace"], eps0, 0, 1)[-len(cs) :]
    assert len(members) == len(cs)
    for c, member in zip(cs, members, strict=True):
        p, q = laplace.cdf(-c, loc=-1.0, scale=b), laplace.cdf(-c, loc=1.0, scale=b)
        for n in (1, 3, 40):
            for frac in (0.0, 0.1, 0.4):
                exact = region_count_delta(n, float(p), float(q), frac * eps0)
                got = math.exp(member(n, frac * eps0)) * inflate
                assert got <= exact * (1 + 1e-9) + 1e-300, (c, n, frac)


@pytest.mark.parametrize("eps0", [0.5, 4.0, 8.0])
def test_laplace_others_on_x_prime_members_against_the_cdf(eps0: float) -> None:
    """The Laplace "others on x'" members (fixed thresholds and the proxy's best c) are at
    most the exact δ of their datasets' region counts, and the check catches a lower
    bound inflated by 1 %."""
    laplace_region_check(eps0, 1.0)
    with pytest.raises(AssertionError):
        laplace_region_check(eps0, 1.01)


def test_region_count_edge_cases() -> None:
    """A region less likely under x is its complement read backwards (same δ); a region
    equally likely says nothing; probabilities outside [0, 1] are refused."""
    from crowdhide.accounting.shuffle._krr_fast import same_value_lower_log_delta as same

    assert math.isclose(same(100, 0.2, 0.6, 0.1), same(100, 0.8, 0.4, 0.1), rel_tol=1e-12)
    assert math.isclose(math.exp(same(100, 0.2, 0.6, 0.1)), region_count_delta(100, 0.8, 0.4, 0.1))
    assert same(100, 0.5, 0.5, 0.0) == -math.inf
    for p, q in ((0.5, 0.0), (0.5, 1.0), (1.5, 0.5), (math.nan, 0.5)):
        with pytest.raises(ValueError, match="p_target"):
            same(10, p, q, 0.0)


@pytest.mark.parametrize(("name", "d", "k"), [("oue", 3, 1), ("rappor", 3, 1), ("subset", 4, 2)])
def test_others_on_x_prime_region_probabilities_from_the_matrix(name: str, d: int, k: int) -> None:
    """The region's probabilities ``(P_x(R), P_x'(R))`` are those of an actual set of
    reports of the matrix: the best region of the pair (0, 1) reaches them, and a region
    with a larger ``P_x(R)`` at the same ``P_x'(R)`` does not exist among single reports."""
    eps0 = 1.3
    r = matrix_for(name, eps0, d, k)
    regions = MECHANISMS[name].same_regions
    assert regions is not None
    (p, q, rest), *_ = regions(eps0, d, k)
    ratio = r[0] / r[1]
    chosen = ratio >= ratio.max() * (1 - 1e-12)  # the reports of the largest ratio
    assert math.isclose(float(r[0][~chosen].sum()), rest, rel_tol=1e-12)
    assert math.isclose(float(r[0][chosen].sum()), p, rel_tol=1e-12)
    assert math.isclose(float(r[1][chosen].sum()), q, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("name", "d", "k"), [("oue", 3, 1), ("rappor", 4, 1), ("subset", 5, 2), ("olh", 3, 1)]
)
def test_refined_third_value_regions_from_the_matrix(name: str, d: int, k: int) -> None:
    """The refined "others on z" member's ``(P_x(+), P_x(−), ν)`` are those of the regions
    "x's mark, not x''s, not z's" read off the mechanism's matrix (x, x', z = 0, 1, 2), and
    its value is the exact δ of those regions' counts at n = 2 and 3 (enumerated)."""
    from crowdhide.accounting.shuffle._krr_fast import third_marginal_lower_log_delta

    eps0 = 1.7
    r = matrix_for(name, eps0, d, k)
    if name == "subset":
        outputs = list(itertools.combinations(range(d), k))
        marks = [[j in out for j in range(3)] for out in outputs]
    elif name == "olh":  # reports (h, y) in the order of olh_matrix; the mark of j: y = h(j)
        hashes = list(itertools.product(range(d), repeat=3))
        marks = [[y == h[j] for j in range(3)] for h in hashes for y in range(d)]
    else:
        outputs = list(itertools.product((0, 1), repeat=d))
        marks = [[bool(out[j]) for j in range(3)] for out in outputs]
    plus = np.array([m[0] and not m[1] and not m[2] for m in marks])
    minus = np.array([m[1] and not m[0] and not m[2] for m in marks])
    lowers = MECHANISMS[name].lowers
    assert lowers is not None
    refined = lowers(eps0, d, k)[1]  # after the plain regions (k-subset, OLH: then Jensen)
    p_plus, p_minus = float(r[0][plus].sum()), float(r[0][minus].sum())
    nu = float(r[2][plus].sum() + r[2][minus].sum())
    assert math.isclose(float(r[2][plus].sum()), float(r[2][minus].sum()), rel_tol=1e-12)
    assert math.isclose(float(r[1][plus].sum()), p_minus, rel_tol=1e-12)
    for n in (2, 3, 400):
        for eps in (0.0, 0.3):
            ours = refined(n, eps)
            direct = third_marginal_lower_log_delta(n, p_plus, p_minus, nu, eps0, eps)
            assert math.isclose(ours, direct, rel_tol=1e-9, abs_tol=1e-12)
    # exact region counts (target + others on z) at n = 3: three outcomes per report
    law_r = np.stack([r[:, plus].sum(axis=1), r[:, minus].sum(axis=1)], axis=1)
    law_r = np.concatenate([law_r, 1.0 - law_r.sum(axis=1, keepdims=True)], axis=1)
    for n in (2, 3):
        a = symmetric_law(law_r, (*([2] * (n - 1)), 0))
        b = symmetric_law(law_r, (*([2] * (n - 1)), 1))
        for eps in (0.0, 0.3):
            exact = max(
                float(np.maximum(a - math.exp(eps) * b, 0.0).sum()),
                float(np.maximum(b - math.exp(eps) * a, 0.0).sum()),
            )
            assert math.exp(refined(n, eps)) <= exact * (1 + 1e-9) + 1e-300
            assert math.exp(refined(n, eps)) >= exact * (1 - 1e-6)


def test_generic_parameters_give_the_feldman2021_pair() -> None:
    """mu2 = 1, rho = e^{−ε0} (every ε0-LDP randomizer): the three-point clone system is the
    clone pair of Feldman, McMillan, Talwar (FOCS 2021) — the same δ, no generic gain."""
    from crowdhide.accounting.shuffle import _pairs as pairs

    for eps0 in (0.5, 1.0, 4.0):
        for n in (2, 10, 200):
            for eps in (0.0, 0.05, 0.3):
                ours = fast.clone_noise_log_delta(  # every clone count, unblocked
                    n, math.tanh(eps0 / 2), 1.0, math.exp(-eps0), eps, -60, c_points=10**6
                )
                theirs = pairs.clone_pair_log_delta(n, eps0, math.exp(-eps0), eps, -60)
                assert math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)


# --------------------------------------------------------------------------------------
# The split clone system (informative and uninformative clones at separate rates)


def split_reference_delta(
    n: int, kappa: float, mu: float, c_inf: float, c_zero: float, eps: float
) -> float:
    """Unblocked sum of the split clone system, written independently from its definition:
    C clones, I ~ Bin(C, μ') informative ones, T ~ Ber(μ), the s = T + I informative reports
    an α-pair whose target is informative with probability P(T = 1 | s, C)."""
    from scipy.stats import binom

    mu_c = c_inf / (c_inf + c_zero)
    total = 0.0
    for clones in range(n):
        weight = float(binom.pmf(clones, n - 1, c_inf + c_zero))
        s = np.arange(1, clones + 2)
        with_t = mu * binom.pmf(s - 1, clones, mu_c)
        without = (1.0 - mu) * binom.pmf(s, clones, mu_c)
        both = with_t + without
        keep = both > 0.0
        lam = kappa * with_t[keep] / both[keep]
        h = fast.alpha_pair_h(s[keep].astype(np.float64), lam, eps, upper=False)
        total += weight * float((both[keep] * h).sum())
    return total


def test_split_clone_evaluator_against_an_unblocked_sum() -> None:
    from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta

    for eps0 in (0.7, 4.0):
        kappa, e = math.tanh(eps0 / 2.0), math.exp(eps0)
        for mu, c_inf, c_zero in ((0.5, 1 / (e + 1), 1 / (2 * e)), (0.3, 0.05, 0.4)):
            for n in (1, 2, 3, 40, 300):
                for eps in (0.0, 0.2 * eps0):
                    ref = split_reference_delta(n, kappa, mu, c_inf, c_zero, eps)
                    got = math.exp(split_clone_log_delta(n, kappa, mu, c_inf, c_zero, eps, -60))
                    assert ref * (1 - 1e-12) <= got <= ref * 1.1 + 1e-15, (eps0, mu, n, eps)
    # equal shares of informative reports: the one-rate clone system
    e = math.exp(1.0)
    one = fast.clone_noise_log_delta(30, math.tanh(0.5), 0.5, 1 / e, 0.1, -60)
    split = split_clone_log_delta(30, math.tanh(0.5), 0.5, 0.5 / e, 0.5 / e, 0.1, -60)
    assert math.isclose(one, split, rel_tol=1e-9)


@pytest.mark.parametrize(("name", "d", "k"), [*CASES, ("hadamard", 4, 1), ("hadamard", 3, 1)])
def test_split_rates_read_off_the_matrix(name: str, d: int, k: int) -> None:
    """c_inf = 2β · min R(v)(y)/|P0(y) − P1(y)| over informative reports and c_zero =
    (1 − μ) · min R(v)(y)/π(y) over uninformative ones, v over every input: the mechanism's
    split rates are at most these (equal where the minimum is reached)."""
    eps0 = 1.3
    r = hadamard_matrix(eps0, d) if name == "hadamard" else matrix_for(name, eps0, d, k)
    mech = MECHANISMS[name]
    assert mech.split is not None
    kappa, mu2, *_ = mech.params(eps0, d, k)
    c_inf, c_zero = mech.split(eps0, d, k)
    floor = r.min(axis=0)
    best_inf, best_zero = math.inf, math.inf
    for x, y in itertools.combinations(range(r.shape[0]), 2):
        gap = np.abs(r[x] - r[y])
        informative = gap > 1e-12 * (r[x] + r[y])
        beta = 0.5 * float(gap.sum())
        assert beta <= kappa * mu2 * (1 + 1e-9)
        best_inf = min(best_inf, 2 * beta * float((floor[informative] / gap[informative]).min()))
        pi = (r[x] + r[y]) / 2
        if (~informative).any():
            best_zero = min(best_zero, (1 - mu2) * float((floor / pi)[~informative].min()))
    assert c_inf <= best_inf * (1 + 1e-9)
    assert c_zero <= best_zero * (1 + 1e-9)
    assert c_inf == pytest.approx(best_inf, rel=1e-9)


def test_a_too_large_informative_clone_rate_is_caught() -> None:
    """Hadamard response (d = 4) with 1.5 times its informative clone rate falls below the
    exact worst case at n = 3."""
    from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta

    eps0 = 0.7
    kappa, mu2, *_ = MECHANISMS["hadamard"].params(eps0, 4, 1)
    c_inf, c_zero = MECHANISMS["hadamard"].split(eps0, 4, 1)  # type: ignore[misc]
    grid = [0.0, 0.1 * eps0, 0.2 * eps0]
    truth = worst_delta_fast(hadamard_matrix(eps0, 4), 3, grid)
    right = [math.exp(split_clone_log_delta(3, kappa, mu2, c_inf, c_zero, e, -60)) for e in grid]
    wrong = [
        math.exp(split_clone_log_delta(3, kappa, mu2, 1.5 * c_inf, c_zero, e, -60)) for e in grid
    ]
    assert all(t <= g * (1 + 1e-9) for t, g in zip(truth, right, strict=True))
    assert any(t > w * (1 + 1e-9) for t, w in zip(truth, wrong, strict=True))


def test_split_rates_dominate_the_one_rate_decomposition() -> None:
    """The one-rate decomposition is one feasible split (rho·mu2 informative, rho·(1 − mu2)
    uninformative clones), so the split rates, the largest feasible ones, are at least it."""
    for name, mech in MECHANISMS.items():
        if mech.split is None:
            continue
        for eps0 in (0.3, 1.0, 4.0, 10.0):
            for d, k in ((3, 1), (4, 2), (16, 4), (100, 3)):
                _, mu2, rho, *_ = mech.params(eps0, d, k)
                c_inf, c_zero = mech.split(eps0, d, k)
                assert c_inf >= rho * mu2 * (1 - 1e-12), (name, eps0, d, k)
                assert c_zero >= rho * (1 - mu2) * (1 - 1e-12), (name, eps0, d, k)


@pytest.mark.parametrize("eps0", [37.0, 45.0])
def test_subset_of_three_where_the_third_value_rate_rounds_to_one(eps0: float) -> None:
    # d = 3, k = 2: a third value's report is informative w.p. 2e/(2e + 1), 1.0 in floats
    r = mechanism_epsilon(mechanism="subset", eps0=eps0, n=1000, delta=1e-9, d=3, k=2)
    assert math.isfinite(r.epsilon)
    assert r.lower is None or r.lower.epsilon <= r.epsilon
    assert fast.third_marginal_lower_log_delta(1000, 0.5, 1e-17, 1.0, eps0, 0.5) == -math.inf
