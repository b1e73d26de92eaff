"""Exact single-target vulnerability: closed forms and fast methods vs explicit channels."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as Fr

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdhide.qif.channels import (
    krr_dataset_channel,
    reduced_shuffle_channel,
    shuffled_krr_channel,
)
from crowdhide.qif.combinatorics import histograms, log_multinomial
from crowdhide.qif.core import Channel, Gain, Prior, posterior_vulnerability
from crowdhide.qif.shuffle import (
    asymptotic_shuffle_vulnerability,
    asymptotic_vulnerability,
    binary_shuffle_vulnerability,
    expected_max_load,
    gaussian_shuffle_vulnerability,
    informed_vulnerability,
    shuffle_vulnerability,
    uninformed_vulnerability,
)
from crowdhide.qif.shuffle_capacity import shuffled_krr_capacity


def brute_uninformed(channel: Channel) -> Fr | float:
    """Uniform prior on all datasets, single-target gain (Def. 13), explicit matrices."""
    labels = channel.inputs
    return posterior_vulnerability(
        Prior.uniform(labels, exact=channel.exact), channel, Gain.single_target(labels)
    )


def brute_informed(channel: Channel, others: tuple[int, ...], k: int) -> Fr | float:
    """All-but-one prior: uniform on the k datasets (v, others...)."""
    support = [(v, *others) for v in range(k)]
    rows = [channel.inputs.index(x) for x in support]
    sub = Channel(channel.matrix[rows], inputs=support, outputs=channel.outputs, atol=1e-7)
    return posterior_vulnerability(
        Prior.uniform(support, exact=channel.exact), sub, Gain.single_target(support)
    )


EXACT_CASES = [(n, 2) for n in range(1, 5)] + [(n, 3) for n in range(1, 4)] + [(2, 4)]
PS = [Fr(1), Fr(3, 4), Fr(2, 3), Fr(9, 10), Fr(1, 2)]


@pytest.mark.parametrize(("n", "k"), EXACT_CASES)
@pytest.mark.parametrize("p", PS)
def test_uninformed_closed_forms_match_explicit_channels_exactly(n: int, k: int, p: Fr) -> None:
    if p < Fr(1, k):
        pytest.skip("p below 1/k")
    ns = shuffled_krr_channel(n=n, k=k, keep_probability=p, reduced=True)
    v = uninformed_vulnerability(n=n, k=k, channel="krr+shuffle", keep_probability=p, exact=True)
    assert v.vulnerability == brute_uninformed(ns)
    assert v.prior_vulnerability == Fr(1, k)
    assert v.multiplicative_leakage == k * v.vulnerability
    s = reduced_shuffle_channel(n=n, k=k, exact=True)
    assert shuffle_vulnerability(n=n, k=k, exact=True) == brute_uninformed(s)
    n_only = krr_dataset_channel(n=n, k=k, keep_probability=p)
    v_n = uninformed_vulnerability(n=n, k=k, channel="krr", keep_probability=p, exact=True)
    assert v_n.vulnerability == brute_uninformed(n_only) == p
    # The float fast path agrees.
    fast = uninformed_vulnerability(n=n, k=k, keep_probability=float(p)).vulnerability
    assert fast == pytest.approx(float(v.vulnerability), abs=1e-13)


def test_a_wrong_formula_fails_the_same_check() -> None:
    # The brute-force check can fail: "V[NS] = p·V[S]" (noise scales the shuffle's
    # vulnerability) is a natural but wrong guess.
    p = Fr(3, 4)
    ns = shuffled_krr_channel(n=3, k=2, keep_probability=p, reduced=True)
    wrong = p * shuffle_vulnerability(n=3, k=2, exact=True)
    assert wrong != brute_uninformed(ns)


@pytest.mark.parametrize(
    ("n", "k"), [(3, 2), (4, 2), (2, 3), (3, 3), pytest.param(3, 4, marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("p", [Fr(1), Fr(3, 4), Fr(3, 5)])
def test_informed_matches_explicit_channels_exactly(n: int, k: int, p: Fr) -> None:
    ns = shuffled_krr_channel(n=n, k=k, keep_probability=p, reduced=True)
    others_list = {tuple([0] * (n - 1)), tuple(range(n - 1)), tuple([k - 1] * (n - 1))}
    for others in others_list:
        others = tuple(v % k for v in others)
        hist = tuple(others.count(v) for v in range(k))
        expected = brute_informed(ns, others, k)
        exact = informed_vulnerability(n=n, k=k, keep_probability=p, others=hist)
        assert exact.vulnerability == expected
        fast = informed_vulnerability(n=n, k=k, keep_probability=float(p), others=hist)
        assert fast.vulnerability == pytest.approx(float(expected), abs=1e-12)
    assert informed_vulnerability(n=n, k=k, channel="shuffle", others_value=1).vulnerability == 1
    assert informed_vulnerability(n=n, k=k, channel="krr", keep_probability=p).vulnerability == p


def test_informed_fast_paths_agree() -> None:
    # all-equal max-load path vs dense grid vs the k = 2 convolution.
    from crowdhide.qif import shuffle as sh

    for k in (3, 4, 5):
        for n in (2, 6, 11):
            hist = tuple([n - 1] + [0] * (k - 1))
            a = sh._sum_all_equal(k, 0.55, n - 1, 3)
            g = sh._sum_grid(k, 0.55, hist, 3)
            assert a == pytest.approx(g, abs=1e-11)
    assert sh._sum_binary(0.7, (9, 0), 2) == pytest.approx(sh._sum_all_equal(2, 0.7, 9, 2))


def test_note_exact_values_binary() -> None:
    # Brute-force reference values: V[S] for n = 1..10 and V[NS] at p = 3/4 for n = 1..8.
    v_s = [
        1,
        Fr(3, 4),
        Fr(3, 4),
        Fr(11, 16),
        Fr(11, 16),
        Fr(21, 32),
        Fr(21, 32),
        Fr(163, 256),
        Fr(163, 256),
        Fr(319, 512),
    ]
    assert [binary_shuffle_vulnerability(n=n, exact=True) for n in range(1, 11)] == v_s
    v_ns = [
        Fr(3, 4),
        Fr(5, 8),
        Fr(5, 8),
        Fr(19, 32),
        Fr(19, 32),
        Fr(37, 64),
        Fr(37, 64),
        Fr(291, 512),
    ]
    got = [
        uninformed_vulnerability(n=n, k=2, keep_probability=Fr(3, 4), exact=True).vulnerability
        for n in range(1, 9)
    ]
    assert got == v_ns


def test_note_exact_values_general_k() -> None:
    table = {
        3: [1, Fr(2, 3), Fr(17, 27), Fr(16, 27), Fr(5, 9), Fr(131, 243), Fr(383, 729)],
        4: [1, Fr(5, 8), Fr(9, 16), Fr(17, 32), Fr(127, 256), Fr(481, 1024), Fr(233, 512)],
        5: [1, Fr(3, 5), Fr(13, 25), Fr(61, 125), Fr(1429, 3125), Fr(1341, 3125), Fr(1281, 3125)],
    }
    for k, values in table.items():
        exact = [shuffle_vulnerability(n=n, k=k, exact=True) for n in range(1, 8)]
        assert exact == values
        fast = [shuffle_vulnerability(n=n, k=k) for n in range(1, 8)]
        assert fast == pytest.approx([float(v) for v in values], abs=1e-14)
    ns3 = [Fr(3, 4), Fr(13, 24), Fr(14, 27), Fr(107, 216), Fr(17, 36), Fr(449, 972)]
    got = [
        uninformed_vulnerability(n=n, k=3, keep_probability=Fr(3, 4), exact=True).vulnerability
        for n in range(1, 7)
    ]
    assert got == ns3
    eps3 = [Fr(3, 5), Fr(7, 15), Fr(61, 135), Fr(59, 135), Fr(19, 45), Fr(101, 243)]
    got = [
        uninformed_vulnerability(n=n, k=3, keep_probability=Fr(3, 5), exact=True).vulnerability
        for n in range(1, 7)
    ]
    assert got == eps3


def test_small_n_closed_forms() -> None:
    for k in range(2, 9):
        assert shuffle_vulnerability(n=2, k=k, exact=True) == Fr(k + 1, 2 * k)
        assert shuffle_vulnerability(n=3, k=k, exact=True) == Fr(k * k + 3 * k - 1, 3 * k * k)


FLOAT_VS = {  # general-k V[S], brute-force reference values
    (10, 3): 0.492659,
    (100, 3): 0.382634,
    (1000, 3): 0.348829,
    (100, 5): 0.253245,
    (1000, 5): 0.216577,
    (50, 10): 0.173805,
    (1000, 10): 0.115664,
    (200, 20): 0.081622,
    (1000, 50): 0.030724,
    (20, 100): 0.098564,
    (1000, 100): 0.018762,
    (500, 2): 0.517832,
}


@pytest.mark.parametrize(("nk", "value"), list(FLOAT_VS.items()))
def test_note_float_table(nk: tuple[int, int], value: float) -> None:
    n, k = nk
    assert shuffle_vulnerability(n=n, k=k) == pytest.approx(value, abs=1e-6)


def test_note_float_ns_values() -> None:
    for k, row in {
        3: (0.375239, 0.364146, 0.345658),
        5: (0.246589, 0.236606, 0.219967),
        10: (0.145551, 0.137010, 0.122776),
    }.items():
        for p, value in zip((0.9, 0.75, 0.5), row, strict=True):
            v = uninformed_vulnerability(n=100, k=k, keep_probability=p).vulnerability
            assert v == pytest.approx(value, abs=1e-6)


def test_histogram_sum_formula_agrees_with_max_load() -> None:
    # Prop. 20, eq. (11): explicit multinomial sum over histograms (log space).
    for n, k in [(30, 3), (12, 5), (40, 2)]:
        h = histograms(n=n, k=k)
        weights = np.exp(log_multinomial(n, h) - n * math.log(k))
        direct = float(np.sum(weights * h.max(axis=1)) / n)
        assert shuffle_vulnerability(n=n, k=k) == pytest.approx(direct, abs=1e-13)


def test_binary_huge_n_against_mpmath() -> None:
    mpmath.mp.dps = 40
    for n in (10**6, 10**9 - 1, 10**9, 10**12):
        m = n - 1
        exact = mpmath.mpf(1) / 2 + mpmath.binomial(m, m // 2) / mpmath.mpf(2) ** n
        v = binary_shuffle_vulnerability(n=n)
        assert math.isfinite(v)
        assert v - 0.5 == pytest.approx(float(exact - mpmath.mpf(1) / 2), rel=1e-12)
        ns = uninformed_vulnerability(n=n, k=2, eps0=1.0).vulnerability
        assert 0.5 < ns < v


def test_monotonicity_and_bounds() -> None:
    for k in (2, 3, 7):
        vals = [shuffle_vulnerability(n=n, k=k) for n in range(1, 60)]
        assert all(b <= a + 1e-15 for a, b in itertools.pairwise(vals))
        assert all(v >= 1 / k for v in vals)
    # Binary steps: V(2m) = V(2m + 1).
    for m in range(1, 20):
        assert binary_shuffle_vulnerability(n=2 * m, exact=True) == binary_shuffle_vulnerability(
            n=2 * m + 1, exact=True
        )
    # V[NS] <= min(V[N], V[S]); epsilon 0 gives 1/k; n = 1 gives p.
    for k in (2, 5):
        r = uninformed_vulnerability(n=50, k=k, eps0=1.0)
        assert r.vulnerability <= min(r.keep_probability, shuffle_vulnerability(n=50, k=k))
        assert uninformed_vulnerability(n=50, k=k, eps0=0.0).vulnerability == pytest.approx(1 / k)
        assert uninformed_vulnerability(n=1, k=k, eps0=1.0).vulnerability == pytest.approx(
            float(r.keep_probability)
        )


def test_fig3_strong_adversary_values() -> None:
    # The paper's surviving numbers: n = 201, p = 0.8: 0.52111 (others all b) and 0.52116
    # (100 a / 100 b).
    v0 = informed_vulnerability(n=201, k=2, keep_probability=0.8, others_value=1)
    v100 = informed_vulnerability(n=201, k=2, keep_probability=0.8, others=(100, 100))
    assert round(v0.vulnerability, 5) == 0.52111
    assert round(v100.vulnerability, 5) == 0.52116
    assert v0.vulnerability == pytest.approx(0.521111, abs=1e-6)
    assert v100.vulnerability == pytest.approx(0.521161, abs=1e-6)
    table = {
        0.6: (0.505751, 0.505752),
        0.7: (0.512292, 0.512302),
        0.9: (0.537455, 0.537737),
        0.99: (0.633296, 0.651316),
    }
    for p, (a, b) in table.items():
        assert informed_vulnerability(n=201, k=2, keep_probability=p).vulnerability == (
            pytest.approx(a, abs=1e-6)
        )
        assert informed_vulnerability(
            n=201, k=2, keep_probability=p, others=(100, 100)
        ).vulnerability == pytest.approx(b, abs=1e-6)


def test_binary_informed_closed_form_of_the_note() -> None:
    # V = 1/2 + (p − 1/2) max_i P(R = i), R ~ Bin(j, p) + Bin(n−1−j, 1−p).
    from scipy.stats import binom

    n, p = 41, 0.7
    for j in (0, 7, 20, 40):
        r = np.convolve(
            binom.pmf(np.arange(j + 1), j, p), binom.pmf(np.arange(n - j), n - 1 - j, 1 - p)
        )
        closed = 0.5 + (p - 0.5) * r.max()
        v = informed_vulnerability(n=n, k=2, keep_probability=p, others=(j, n - 1 - j))
        assert v.vulnerability == pytest.approx(closed, abs=1e-14)


def test_note_exact_informed_n3() -> None:
    values = {
        Fr(3, 5): Fr(137, 250),
        Fr(2, 3): Fr(31, 54),
        Fr(3, 4): Fr(41, 64),
        Fr(4, 5): Fr(173, 250),
        Fr(9, 10): Fr(103, 125),
    }
    for p, v in values.items():
        assert informed_vulnerability(n=3, k=2, keep_probability=p).vulnerability == v


def test_informed_general_k_large_is_fast_and_sane() -> None:
    r = informed_vulnerability(n=2000, k=10, eps0=1.0)
    p = r.keep_probability
    assert 0.1 < r.vulnerability < p
    assert r.method.startswith("max-load")


def test_asymptotics_for_comparison() -> None:
    exact = shuffle_vulnerability(n=1000, k=10)
    assert asymptotic_shuffle_vulnerability(n=1000, k=10) - exact == pytest.approx(
        -0.0005, abs=2e-4
    )
    assert gaussian_shuffle_vulnerability(n=1000, k=2) == pytest.approx(
        0.5 + 1 / math.sqrt(2 * math.pi * 1000), abs=1e-9
    )
    for k in (2, 5, 20, 100):
        assert (
            abs(gaussian_shuffle_vulnerability(n=1000, k=k) - shuffle_vulnerability(n=1000, k=k))
            < 1e-3
        )
    a = asymptotic_vulnerability(n=100, k=5, keep_probability=0.6)
    assert 0.2 < a < asymptotic_shuffle_vulnerability(n=100, k=5)


def test_expected_max_load() -> None:
    assert expected_max_load(n=3, k=3, exact=True) == Fr(17, 9)
    assert expected_max_load(n=0, k=3) == 0.0
    assert expected_max_load(n=10**4, k=10) == pytest.approx(1048.9419515, abs=1e-5)


def test_capacity_function() -> None:
    r = shuffled_krr_capacity(n=3, k=2, eps0=math.log(3))
    assert r.capacity == pytest.approx(1.875)
    assert r.unshuffled_capacity == pytest.approx(3.375)
    assert shuffled_krr_capacity(n=2, k=3, eps0=math.log(3)).capacity == pytest.approx(2.28)
    exact = shuffled_krr_capacity(n=3, k=3, keep_probability=Fr(3, 4))
    assert exact.capacity == Fr(563, 128)
    assert shuffled_krr_capacity(n=10, k=3, channel="shuffle").capacity == math.comb(12, 2)
    huge = shuffled_krr_capacity(n=10**9, k=2, channel="krr", eps0=1.0)
    assert huge.capacity == math.inf
    assert math.isfinite(huge.log_capacity)
    big = shuffled_krr_capacity(n=800, k=2, eps0=1.0)
    assert 1.0 < big.capacity < 801


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n": 0, "k": 2, "eps0": 1.0}, ValueError, "n must be >= 1"),
        ({"n": 5, "k": 1, "eps0": 1.0}, ValueError, "k must be >= 2"),
        ({"n": 5, "k": 2.5, "eps0": 1.0}, TypeError, "k must be an integer"),
        ({"n": 5, "k": 2, "eps0": -1.0}, ValueError, "eps0 must be >= 0"),
        ({"n": 5, "k": 2, "eps0": float("nan")}, ValueError, "NaN"),
        ({"n": 5, "k": 2}, ValueError, "eps0 is required"),
        ({"n": 5, "k": 2, "eps0": 1.0, "channel": "bogus"}, ValueError, "channel must be"),
        ({"n": 5, "k": 2, "eps0": 1.0, "exact": True}, ValueError, "Fraction"),
    ],
)
def test_invalid_inputs(kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        uninformed_vulnerability(**kwargs)  # type: ignore[arg-type]


def test_invalid_informed_inputs() -> None:
    with pytest.raises(ValueError, match="others must be a histogram"):
        informed_vulnerability(n=5, k=3, eps0=1.0, others=(1, 1, 1))
    with pytest.raises(ValueError, match="others_value must be <= 2"):
        informed_vulnerability(n=5, k=3, eps0=1.0, others_value=3)
    with pytest.raises(ValueError, match="others must be >= 0"):
        informed_vulnerability(n=3, k=2, eps0=1.0, others=(3, -1))
    with pytest.raises(ValueError, match="limit"):
        informed_vulnerability(n=4000, k=4, eps0=1.0, others=(1000, 1000, 1000, 999))


def test_shuffle_alone_ignores_eps0_with_a_note() -> None:
    r = uninformed_vulnerability(n=10, k=2, channel="shuffle", eps0=1.0)
    assert r.eps0 is None
    assert "ignored" in r.note
    assert r.vulnerability == binary_shuffle_vulnerability(n=10)
    assert uninformed_vulnerability(n=10, k=2, channel="shuffle+krr", eps0=1.0).vulnerability == (
        uninformed_vulnerability(n=10, k=2, channel="krr+shuffle", eps0=1.0).vulnerability
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "k"), [(5, 2), (6, 2), (7, 2), (4, 3), (5, 3), (3, 4), (4, 4), (3, 5)]
)
def test_float_brute_force_grid(n: int, k: int) -> None:
    # Full NS matrix vs closed forms, several p, uninformed and informed.
    for p in (1.0, 0.9, 0.75, 0.6, 1.0 / k + 0.01):
        ns = shuffled_krr_channel(n=n, k=k, keep_probability=p)
        v = uninformed_vulnerability(n=n, k=k, keep_probability=p).vulnerability
        assert v == pytest.approx(brute_uninformed(ns), abs=1e-13)
        for others in ((0,) * (n - 1), tuple(i % k for i in range(n - 1))):
            hist = tuple(others.count(u) for u in range(k))
            fast = informed_vulnerability(n=n, k=k, keep_probability=p, others=hist).vulnerability
            assert fast == pytest.approx(brute_informed(ns, others, k), abs=1e-12)


def test_general_k_huge_n_is_refused_not_hung() -> None:
    with pytest.raises(ValueError, match="too large for the exact max-load"):
        shuffle_vulnerability(n=10**9, k=3)
    assert 1 / 3 < gaussian_shuffle_vulnerability(n=10**9, k=3) < 0.34


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 4),
    k=st.integers(2, 3),
    p_num=st.integers(0, 6),
    others_seed=st.integers(0, 10**6),
)
def test_property_fast_equals_explicit(n: int, k: int, p_num: int, others_seed: int) -> None:
    p = Fr(1, k) + (1 - Fr(1, k)) * Fr(p_num, 6)
    ns = shuffled_krr_channel(n=n, k=k, keep_probability=p, reduced=True)
    assert uninformed_vulnerability(n=n, k=k, keep_probability=float(p)).vulnerability == (
        pytest.approx(float(brute_uninformed(ns)), abs=1e-12)
    )
    rng = np.random.default_rng(others_seed)
    others = tuple(int(v) for v in rng.integers(0, k, size=n - 1))
    hist = tuple(others.count(u) for u in range(k))
    fast = informed_vulnerability(n=n, k=k, keep_probability=float(p), others=hist)
    assert fast.vulnerability == pytest.approx(float(brute_informed(ns, others, k)), abs=1e-12)


def test_capacity_size_guard() -> None:
    with pytest.raises(ValueError, match="limit"):
        shuffled_krr_capacity(n=150, k=3, eps0=1.0)
    with pytest.raises(ValueError, match="limit"):
        shuffled_krr_capacity(n=40, k=3, keep_probability=Fr(1, 2))
    with pytest.raises(ValueError, match="limit"):
        shuffled_krr_capacity(n=20_000, k=2, eps0=1.0)


def test_general_capacity_dp_matches_exact_reduced_channel() -> None:
    for n, k, p in [(3, 3, Fr(3, 4)), (6, 4, Fr(1, 2)), (4, 5, Fr(1, 3)), (5, 3, Fr(9, 10))]:
        exact = shuffled_krr_capacity(n=n, k=k, keep_probability=p).capacity
        fast = shuffled_krr_capacity(n=n, k=k, keep_probability=float(p)).capacity
        assert fast == pytest.approx(float(exact), abs=1e-12)


def test_capacity_extremes() -> None:
    # No noise: the shuffle's capacity (number of histograms); pure noise: no leakage.
    assert shuffled_krr_capacity(n=3, k=2, eps0=math.inf).capacity == pytest.approx(4.0)
    assert shuffled_krr_capacity(n=3, k=2, eps0=0.0).capacity == pytest.approx(1.0)
    assert shuffled_krr_capacity(n=4, k=3, eps0=math.inf).capacity == pytest.approx(15.0)
    assert shuffled_krr_capacity(n=4, k=3, eps0=0.0).capacity == pytest.approx(1.0)


def test_exact_informed_size_guard() -> None:
    with pytest.raises(ValueError, match="exact"):
        informed_vulnerability(n=2000, k=3, keep_probability=Fr(1, 2))
