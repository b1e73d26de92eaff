"""Exact single-target vulnerability of k-RR and shuffling, computed from the symmetry.

Jurado, Gonze, Alvim, Palamidessi, Sections IV–V, with every closed form checked against
brute-force channels in the test suite. The secret is the value of one
target user among ``n``, each holding one of ``k`` values; the gain is the single-target
Bayes gain (Def. 13). ``p = e^ε0/(e^ε0+k−1)`` and ``q = (1−p)/(k−1)``.

**Uninformed adversary** (uniform prior on all ``k^n`` datasets):

* prior vulnerability ``1/k`` (Prop. 14); k-RR alone ``p`` (Prop. 15);
* shuffle alone ``V[S] = E[max load]/n`` for ``n`` balls in ``k`` bins (Prop. 20, eq. 13);
  for ``k = 2`` the closed form ``1/2 + C(n−1, ⌊(n−1)/2⌋)/2^n`` (Thm 17, eq. 7);
* k-RR then shuffle ``V[NS] = q + (p−q)·V[S]`` (eq. 17; Thm 19 for ``k = 2``).

**Informed (all-but-one, "strong") adversary**, who knows the ``n−1`` other values (only their
histogram matters, the channel being symmetric): shuffle alone gives ``V = 1``, k-RR alone
``p``, and for k-RR then shuffle (derivation in ``docs/qif.md``; the paper only computes it
numerically with eq. 10)

    V = q + (p − q)/k · Σ_h max_v P(Z = h − e_v),

where ``Z`` is the histogram of the others' noisy reports. ``k = 2`` reduces to the notes'
closed form ``1/2 + (p − 1/2)·max_i P(R = i)`` (§4.6); when the others all hold the same value
the sum reduces to max-load laws of ``m`` balls in ``k − 1`` bins (one FFT batch); otherwise it
runs on the dense histogram grid (size-guarded). The same functions take ``dummies`` uniform
extra messages, which is what the scrambler countermeasure adds (:mod:`crowdhide.qif.scrambler`).

No function here builds a ``k^n`` matrix; :mod:`crowdhide.qif.channels` builds them for tests.
The Bayes capacity of the same channels on whole datasets is in
:mod:`crowdhide.qif.shuffle_capacity`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import signal
from scipy.special import beta, gammaln
from scipy.stats import binom

from crowdhide._validation import check_int, check_real
from crowdhide.errors import InvalidParameterError
from crowdhide.qif._maxload import expected_max_load_float, max_load_cdf_table
from crowdhide.qif.channels import krr_keep_probability
from crowdhide.qif.combinatorics import check_power_size, check_size

__all__ = [
    "ADVERSARIES",
    "CHANNELS",
    "VulnerabilityResult",
    "asymptotic_shuffle_vulnerability",
    "asymptotic_vulnerability",
    "binary_shuffle_vulnerability",
    "expected_max_load",
    "gaussian_shuffle_vulnerability",
    "informed_sum",
    "informed_vulnerability",
    "others_histogram",
    "shuffle_vulnerability",
    "uninformed_vulnerability",
]

#: Channels of the CLI: k-RR alone, shuffle alone, k-RR then shuffle (= shuffle then k-RR).
CHANNELS = ("krr", "shuffle", "krr+shuffle", "shuffle+krr")
#: Adversaries: uniform prior on all datasets, or knowing every other user's value.
ADVERSARIES = ("uninformed", "informed")

#: Largest dense histogram grid (cells) used by the general informed computation.
MAX_GRID = 1 << 24

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class VulnerabilityResult:
    """Single-target vulnerability of one channel against one adversary.

    Parameters
    ----------
    vulnerability
        Posterior single-target Bayes vulnerability ``V[π ▷ C]`` (exact up to float
        round-off, or a ``Fraction`` in exact mode).
    prior_vulnerability
        ``V(π)``: ``1/k`` for both adversaries (the informed one knows everything but the
        target, whose value is uniform).
    multiplicative_leakage, additive_leakage
        ``V[π ▷ C]/V(π)`` and ``V[π ▷ C] − V(π)``.
    n, k, channel, adversary, eps0, keep_probability
        Inputs (``eps0``/``keep_probability`` are ``None``/1 for the shuffle alone).
    others
        The others' histogram assumed by the informed adversary (``None`` if uninformed).
    method
        How it was computed (closed form, max-load FFT, dense grid, ...).
    dummies
        Dummies added (scramblers; 0 for the shuffle).
    note
        A remark on the computation, or empty.

    See Also
    --------
    uninformed_vulnerability, informed_vulnerability : Produce it.
    """

    vulnerability: float | Fraction
    prior_vulnerability: float | Fraction
    multiplicative_leakage: float | Fraction
    additive_leakage: float | Fraction
    n: int
    k: int
    channel: str
    adversary: str
    eps0: float | None
    keep_probability: float | Fraction
    others: tuple[int, ...] | None = None
    dummies: int = 0
    method: str = ""
    note: str = ""

    @property
    def leakage(self) -> dict[str, float]:
        """``{"multiplicative": …, "additive": …}`` as floats."""
        return {
            "multiplicative": float(self.multiplicative_leakage),
            "additive": float(self.additive_leakage),
        }

    def as_record(self) -> dict[str, Any]:
        """JSON-ready record (inputs echoed; exact values as floats)."""
        return {
            "vulnerability": float(self.vulnerability),
            "prior_vulnerability": float(self.prior_vulnerability),
            "leakage": self.leakage,
            "n": self.n,
            "k": self.k,
            "eps0": self.eps0,
            "keep_probability": float(self.keep_probability),
            "channel": self.channel,
            "adversary": self.adversary,
            "others": list(self.others) if self.others is not None else None,
            "dummies": self.dummies,
            "method": self.method,
            "note": self.note,
        }


# --------------------------------------------------------------------------- uninformed


def _central_binomial_ratio(m: int) -> float:
    """``C(m, ⌊m/2⌋)/2^m`` for any ``m >= 0`` without overflow.

    With ``r(a) = C(2a, a)/4^a = B(a+1/2, 1/2)/π`` (scipy's ``beta`` is accurate for huge
    ``a``): even ``m = 2a`` gives ``r(a)``; odd ``m = 2a+1`` gives ``r(a)(2a+1)/(2a+2)``.
    """
    a = m // 2
    ratio = float(beta(a + 0.5, 0.5)) / math.pi
    return ratio if m % 2 == 0 else ratio * (2 * a + 1) / (2 * a + 2)


def binary_shuffle_vulnerability(*, n: int, exact: bool = False) -> float | Fraction:
    """``V[S] = 1/2 + C(n−1, ⌊(n−1)/2⌋)/2^n`` for binary data (Thm 17, eq. 7).

    Float mode is O(1) and works for any ``n`` (tested at ``n = 1e9`` against mpmath);
    exact mode returns a Fraction (big integers: keep ``n`` below ~1e6).

    Examples
    --------
    >>> binary_shuffle_vulnerability(n=4, exact=True)
    Fraction(11, 16)
    >>> round(binary_shuffle_vulnerability(n=10**9), 12)
    0.500012615663
    """
    n = check_int("n", n, low=1)
    if exact:
        return Fraction(1, 2) + Fraction(math.comb(n - 1, (n - 1) // 2), 2**n)
    return 0.5 + 0.5 * _central_binomial_ratio(n - 1)


def _exact_expected_max_load(n: int, k: int) -> Fraction:
    """``E[max load]`` as a Fraction: integer DP over bins of the counts with max ≤ m."""
    check_size(f"the exact max-load DP (n={n}, k={k})", n * n * n * k, limit=1 << 27)
    binoms = [[math.comb(r, i) for i in range(r + 1)] for r in range(n + 1)]
    total = k**n
    expected = Fraction(0)
    for m in range(n):
        counts = [1] + [0] * n  # zero bins: only the empty assignment
        for _ in range(k):
            counts = [
                sum(binoms[r][i] * counts[r - i] for i in range(min(m, r) + 1))
                for r in range(n + 1)
            ]
        expected += 1 - Fraction(counts[n], total)
    return expected


def expected_max_load(*, n: int, k: int, exact: bool = False) -> float | Fraction:
    """Expected maximum load of ``n`` balls thrown uniformly into ``k`` bins.

    Float mode: Poissonized FFT method (module ``_maxload``), relative error ~1e-13, time
    about ``O(√(kn) log)`` per load level and ``O(√(n/k))`` levels. Exact mode: integer DP
    (small ``n`` only).

    Examples
    --------
    >>> expected_max_load(n=3, k=3, exact=True)
    Fraction(17, 9)
    """
    n = check_int("n", n, low=0)
    k = check_int("k", k, low=1)
    if exact:
        return _exact_expected_max_load(n, k) if n else Fraction(0)
    return expected_max_load_float(n, k)


def shuffle_vulnerability(*, n: int, k: int, exact: bool = False) -> float | Fraction:
    """Uninformed single-target vulnerability of the shuffle alone, ``E[max load]/n``.

    Eq. (11)/(13) of Jurado et al.; binary data use the closed form of Thm 17.

    Parameters
    ----------
    n, k
        Users and values.
    exact
        A Fraction instead of a float.

    Returns
    -------
    float or Fraction
        ``E[max load]/n``.

    See Also
    --------
    uninformed_vulnerability : Any channel of :data:`CHANNELS`, with the leakages.

    Examples
    --------
    >>> shuffle_vulnerability(n=3, k=3, exact=True)
    Fraction(17, 27)
    >>> round(shuffle_vulnerability(n=1000, k=10), 6)
    0.115664
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    if k == 2:
        return binary_shuffle_vulnerability(n=n, exact=exact)
    if exact:
        return Fraction(_exact_expected_max_load(n, k), n)
    return expected_max_load_float(n, k) / n


def _channel_name(channel: str) -> str:
    if channel not in CHANNELS:
        raise InvalidParameterError(f"channel must be one of {CHANNELS}, got {channel!r}")
    return channel


def _noise(
    channel: str, k: int, eps0: float | None, keep_probability: Any
) -> tuple[float | Fraction, float | None, str]:
    """(p, eps0 echoed, note) for a channel: the shuffle alone has no noise (p = 1)."""
    if channel == "shuffle":
        note = "eps0 ignored: the shuffle alone adds no noise" if eps0 is not None else ""
        return 1.0 if not isinstance(keep_probability, Fraction) else Fraction(1), None, note
    if eps0 is None and keep_probability is None:
        raise InvalidParameterError(f"eps0 is required for channel {channel!r}")
    p = krr_keep_probability(k=k, eps0=eps0, keep_probability=keep_probability)
    echoed = None if eps0 is None else check_real("eps0", eps0, low=0.0, allow_inf=True)
    return p, echoed, ""


def _result(
    value: float | Fraction,
    *,
    n: int,
    k: int,
    channel: str,
    adversary: str,
    eps0: float | None,
    p: float | Fraction,
    others: tuple[int, ...] | None,
    method: str,
    note: str,
    dummies: int = 0,
) -> VulnerabilityResult:
    prior: float | Fraction = Fraction(1, k) if isinstance(value, Fraction) else 1.0 / k
    return VulnerabilityResult(
        vulnerability=value,
        prior_vulnerability=prior,
        multiplicative_leakage=value * k,
        additive_leakage=value - prior,
        n=n,
        k=k,
        channel=channel,
        adversary=adversary,
        eps0=eps0,
        keep_probability=p,
        others=others,
        dummies=dummies,
        method=method,
        note=note,
    )


def uninformed_vulnerability(
    *,
    n: int,
    k: int,
    channel: str = "krr+shuffle",
    eps0: float | None = None,
    keep_probability: Any = None,
    exact: bool = False,
) -> VulnerabilityResult:
    """Single-target vulnerability against the uninformed adversary (uniform prior).

    ``krr``: ``p`` (Prop. 15). ``shuffle``: ``E[max load]/n`` (Prop. 20). ``krr+shuffle`` (and
    ``shuffle+krr``, the same matrix by Prop. 11): ``q + (p−q)·V[S]`` (eq. 17).

    Parameters
    ----------
    n, k
        Users (``>= 1``) and values (``>= 2``).
    channel
        One of :data:`CHANNELS`.
    eps0, keep_probability
        The k-RR noise (one of them; not needed for ``shuffle``).
    exact
        Fractions throughout (needs ``keep_probability`` as a Fraction for k-RR; small ``n``
        for ``k > 2``).

    Returns
    -------
    VulnerabilityResult
        The vulnerability and leakages against this adversary.

    See Also
    --------
    informed_vulnerability : Against the adversary who knows everyone else.
    shuffle_vulnerability : The shuffle alone.

    Examples
    --------
    >>> r = uninformed_vulnerability(n=201, k=2, channel="krr+shuffle", eps0=math.log(4))
    >>> round(r.vulnerability, 6), r.prior_vulnerability
    (0.516905, 0.5)
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    channel = _channel_name(channel)
    p, echoed, note = _noise(channel, k, eps0, keep_probability)
    if exact and not isinstance(p, Fraction):
        raise InvalidParameterError("exact=True needs keep_probability as a fractions.Fraction")
    q = (1 - p) / (k - 1)
    if channel == "krr":
        return _result(
            p,
            n=n,
            k=k,
            channel=channel,
            adversary="uninformed",
            eps0=echoed,
            p=p,
            others=None,
            method="closed form p (Prop. 15)",
            note=note,
        )
    v_s = shuffle_vulnerability(n=n, k=k, exact=exact)
    method = "closed form (Thm 17/19)" if k == 2 else "max-load FFT (eq. 13/17)"
    if exact:
        method = "exact fractions"
    value = q + (p - q) * v_s
    return _result(
        value,
        n=n,
        k=k,
        channel=channel,
        adversary="uninformed",
        eps0=echoed,
        p=p,
        others=None,
        method=method,
        note=note,
    )


# ----------------------------------------------------------------------------- informed


def others_histogram(
    others: Sequence[int] | None, others_value: int, n: int, k: int
) -> tuple[int, ...]:
    """The informed adversary's knowledge as a histogram of the other ``n − 1`` values.

    ``others`` (``k`` counts summing to ``n − 1``) wins; otherwise all others hold
    ``others_value``.

    Examples
    --------
    >>> others_histogram(None, 2, 5, 3)
    (0, 0, 4)
    """
    if others is None:
        value = check_int("others_value", others_value, low=0, high=k - 1)
        hist = [0] * k
        hist[value] = n - 1
        return tuple(hist)
    hist_list = [check_int("others", v, low=0) for v in others]
    if len(hist_list) != k or sum(hist_list) != n - 1:
        raise InvalidParameterError(
            f"others must be a histogram of the other n-1={n - 1} users over k={k} values "
            f"(k non-negative counts summing to n-1), got {tuple(others)}"
        )
    return tuple(hist_list)


def _binomial_pmf(count: int, prob: float) -> FloatArray:
    return np.asarray(binom.pmf(np.arange(count + 1), count, prob), dtype=np.float64)


def _significant(pmf: FloatArray) -> tuple[int, int]:
    """Index range ``[lo, hi)`` of the entries at least ``1e-40`` times the largest."""
    keep = np.flatnonzero(pmf >= 1e-40 * pmf.max())
    return int(keep[0]), int(keep[-1]) + 1


def _convolve(a: FloatArray, b: FloatArray) -> FloatArray:
    """Convolution of two pmfs (length ``len(a) + len(b) − 1``).

    Each pmf is first cut to its entries of at least 1e-40 times its maximum (the mass cut
    is below 1e-30 for any size here). Without the cut, an FFT convolution spreads its
    round-off (about 1e-16 times the largest value, absolute) over the whole support,
    including far tails whose true probability is below 1e-300; callers that look for the
    window of "relevant" counts would then take those tails in (and the max-load table,
    which divides by Poisson weights of the window's counts, would overflow).
    """
    a_lo, a_hi = _significant(a)
    b_lo, b_hi = _significant(b)
    part = np.asarray(signal.convolve(a[a_lo:a_hi], b[b_lo:b_hi], method="auto"), np.float64)
    out = np.zeros(a.size + b.size - 1)
    out[a_lo + b_lo : a_lo + b_lo + part.size] = np.clip(part, 0.0, None)
    return out


def _sum_all_equal(k: int, p: float, n_others: int, dummies: int) -> float:
    """``Σ_h max_v P(Z = h − e_v)`` when all others hold one value ``a``.

    ``M`` = number of others' reports and dummies landing outside ``a``: a lie (prob.
    ``(k−1)q``) or a dummy outside ``a`` (prob. ``(k−1)/k``), uniformly spread over the
    ``k−1`` other values. With ``m = |h_{−a}|`` and ``ℓ`` the max load of ``h_{−a}``,
    ``P(Z = h − e_a) = P(M=m) μ_m(h_{−a})`` and
    ``P(Z = h − e_b) = P(M=m−1) μ_m(h_{−a}) (k−1) h_b / m``, so the sum is
    ``Σ_m E_ℓ[max(P(M=m), P(M=m−1)(k−1)ℓ/m)]`` over ``ℓ ~`` max load of ``m`` balls in
    ``k−1`` bins.
    """
    bins = k - 1
    q = (1.0 - p) / bins
    pmf = _convolve(_binomial_pmf(n_others, min(1.0, bins * q)), _binomial_pmf(dummies, bins / k))
    total = n_others + dummies
    a_terms = np.append(pmf, 0.0)  # P(M = m), m = 0..total+1
    b_prev = np.insert(pmf, 0, 0.0)  # P(M = m − 1)
    ms_all = np.arange(total + 2)
    relevant = np.flatnonzero(np.maximum(a_terms, b_prev) > 1e-300 + 1e-22 * a_terms.max())
    m_lo, m_hi = int(relevant[0]), int(relevant[-1])
    ms = ms_all[m_lo : m_hi + 1]
    a_win = a_terms[m_lo : m_hi + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        b_win = np.where(ms > 0, b_prev[m_lo : m_hi + 1] * bins / np.maximum(ms, 1), 0.0)
    ells, cdf = max_load_cdf_table(m_lo, m_hi, bins)
    pmf_ell = np.diff(np.vstack([np.zeros((1, ms.size)), cdf]), axis=0)
    values = np.maximum(a_win[None, :], b_win[None, :] * ells[:, None])
    return float(np.sum(pmf_ell * values))


def _sum_binary(p: float, others: tuple[int, ...], dummies: int) -> float:
    """``Σ_h max_v P(Z = h − e_v)`` for ``k = 2``: ``Z`` is the count of value 0."""
    z = _convolve(_binomial_pmf(others[0], p), _binomial_pmf(others[1], 1.0 - p))
    z = _convolve(z, _binomial_pmf(dummies, 0.5))
    # h_0 = i: v = 0 needs Z_0 = i − 1, v = 1 needs Z_0 = i.
    return float(np.sum(np.maximum(np.append(z, 0.0), np.insert(z, 0, 0.0))))


def _multinomial_grid(count: int, probs: FloatArray) -> FloatArray:
    """Dense pmf of ``Multinomial(count; probs)`` on the grid ``{0..count}^k``."""
    k = probs.size
    idx = np.indices((count + 1,) * k).reshape(k, -1)
    on = idx.sum(axis=0) == count
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.log(probs)
        terms = np.where(idx > 0, idx * logp[:, None], 0.0)
    log_pmf = gammaln(count + 1.0) - gammaln(idx + 1.0).sum(axis=0) + terms.sum(axis=0)
    grid = np.zeros(idx.shape[1])
    grid[on] = np.exp(log_pmf[on])  # off the simplex the "pmf" is meaningless (may overflow)
    return grid.reshape((count + 1,) * k)


def _sum_grid(k: int, p: float, others: tuple[int, ...], dummies: int) -> float:
    """``Σ_h max_v P(Z = h − e_v)`` on the dense ``(N+2)^k`` histogram grid."""
    total = sum(others) + dummies
    check_power_size(
        f"the informed-adversary histogram grid ({total + 2}^{k})", total + 2, k, limit=MAX_GRID
    )
    q = (1.0 - p) / (k - 1)
    dist: FloatArray = np.ones((1,) * k)
    for v, count in enumerate(others):
        if count:
            row = np.full(k, q)
            row[v] = p
            dist = np.clip(signal.convolve(dist, _multinomial_grid(count, row)), 0.0, None)
    if dummies:
        grid = _multinomial_grid(dummies, np.full(k, 1.0 / k))
        dist = np.clip(signal.convolve(dist, grid), 0.0, None)
    best = np.zeros((total + 2,) * k)
    for v in range(k):
        shifted = np.zeros_like(best)
        target = tuple(slice(1, None) if ax == v else slice(0, total + 1) for ax in range(k))
        shifted[target] = dist
        np.maximum(best, shifted, out=best)
    return float(best.sum())


def _exact_sum(k: int, p: Fraction, others: tuple[int, ...], dummies: int) -> Fraction:
    """Exact (Fraction) ``Σ_h max_v P(Z = h − e_v)`` by dynamic programming on histograms."""
    from crowdhide.qif.channels import output_histogram_distribution

    total = sum(others) + dummies
    check_size(
        f"the exact (Fraction) informed computation (n-1+d={total}, k={k})",
        math.comb(total + k - 1, k - 1) * max(total, 1) * k,
        limit=20_000_000,
    )
    q = (1 - p) / (k - 1)
    rows = [[p if u == v else q for u in range(k)] for v in range(k)]
    rows.append([Fraction(1, k)] * k)  # dummies: uniform
    local = np.array(rows, dtype=object)
    dist = output_histogram_distribution(local, [*others, dummies])
    best: dict[tuple[int, ...], Fraction] = {}
    for z, w in dist.items():
        for v in range(k):
            h = (*z[:v], z[v] + 1, *z[v + 1 :])
            if w > best.get(h, Fraction(0)):
                best[h] = w
    return sum(best.values(), Fraction(0))


def informed_sum(
    *, k: int, keep_probability: float | Fraction, others: tuple[int, ...], dummies: int = 0
) -> tuple[float | Fraction, str]:
    """``(Σ_h max_v P(Z = h − e_v), method)`` for the informed adversary (internal API).

    ``Z`` = histogram of the others' k-RR reports (keep probability ``p``) plus ``dummies``
    uniform messages. Fractions in, Fractions out (exact DP).
    """
    p = keep_probability
    if isinstance(p, Fraction):
        return _exact_sum(k, p, others, dummies), "exact fractions"
    # Dense pmfs over 0..n-1+d reports: refuse before allocating gigabytes.
    check_size(
        f"the informed adversary's report distribution (n-1+d = {sum(others) + dummies})",
        sum(others) + dummies + 1,
        limit=MAX_GRID,
    )
    nonzero = [c for c in others if c]
    if k == 2:
        return _sum_binary(float(p), others, dummies), "binomial convolution (k = 2)"
    if len(nonzero) <= 1:
        return (
            _sum_all_equal(k, float(p), sum(others), dummies),
            "max-load FFT (others all equal)",
        )
    return _sum_grid(k, float(p), others, dummies), "dense histogram grid"


def informed_vulnerability(
    *,
    n: int,
    k: int,
    channel: str = "krr+shuffle",
    eps0: float | None = None,
    keep_probability: Any = None,
    others: Sequence[int] | None = None,
    others_value: int = 0,
) -> VulnerabilityResult:
    """Single-target vulnerability against the informed (all-but-one) adversary.

    The adversary knows the other ``n−1`` users' values (their histogram ``others``; by
    default all equal to ``others_value``) and has a uniform prior on the target's value.
    ``shuffle`` alone: 1 (the histogram reveals the target). ``krr``: ``p``. ``krr+shuffle``:
    ``q + (p−q)/k · Σ_h max_v P(Z = h − e_v)`` (module docstring).

    Parameters
    ----------
    n, k
        Users (``>= 1``) and values (``>= 2``).
    channel
        One of :data:`CHANNELS`.
    eps0, keep_probability
        The k-RR noise (one of them; not needed for ``shuffle``).
    others, others_value
        The others' histogram (``k`` counts summing to ``n − 1``), by default all ``n − 1``
        others on ``others_value``.

    Returns
    -------
    VulnerabilityResult
        The vulnerability and leakages against this adversary.

    See Also
    --------
    uninformed_vulnerability : Against the adversary with a uniform prior on everyone.

    Examples
    --------
    >>> r = informed_vulnerability(n=201, k=2, eps0=math.log(4))
    >>> round(r.vulnerability, 6)
    0.521111
    >>> r = informed_vulnerability(n=201, k=2, eps0=math.log(4), others=(100, 100))
    >>> round(r.vulnerability, 6)
    0.521161
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    channel = _channel_name(channel)
    p, echoed, note = _noise(channel, k, eps0, keep_probability)
    hist = others_histogram(others, others_value, n, k)
    common = {
        "n": n,
        "k": k,
        "channel": channel,
        "adversary": "informed",
        "eps0": echoed,
        "p": p,
        "others": hist,
        "note": note,
    }
    if channel == "krr":
        return _result(p, method="closed form p", **common)  # type: ignore[arg-type]
    if channel == "shuffle":
        one = Fraction(1) if isinstance(p, Fraction) else 1.0
        return _result(one, method="the histogram reveals the target", **common)  # type: ignore[arg-type]
    total, method = informed_sum(k=k, keep_probability=p, others=hist)
    q = (1 - p) / (k - 1)
    value = q + (p - q) * total / k
    return _result(value, method=method, **common)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- asymptotics


def asymptotic_shuffle_vulnerability(*, n: int, k: int, c: float = 1.0) -> float:
    """The paper's asymptotic ``1/k + c·√(ln k/(k n))`` for ``V[S]`` (eq. 15, Fig. 6).

    ``Θ(·)`` in the paper hides the constant ``c``; this is an *approximation for comparison*,
    not a bound: with ``c = 1`` it is below the exact value for ``k >= 10`` at small ``n``
    and above it for small ``k``. Valid regime ``n >> k ln k``.
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    c = check_real("c", c, low=0.0)
    return 1.0 / k + c * math.sqrt(math.log(k) / (k * n))


def _expected_max_gaussian(k: int) -> float:
    """``μ_k = E[max of k i.i.d. N(0,1)]`` by quadrature of ``∫ x k φ(x) Φ(x)^{k−1} dx``."""
    from scipy.integrate import quad
    from scipy.special import log_ndtr

    def integrand(x: float) -> float:
        log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        return x * k * math.exp(log_pdf + (k - 1) * float(log_ndtr(x)))

    value, _ = quad(integrand, -12.0, 12.0, limit=200, epsabs=1e-13)
    return float(value)


def gaussian_shuffle_vulnerability(*, n: int, k: int) -> float:
    """Fixed-``k`` Gaussian-limit approximation ``1/k + μ_k/√(k n)`` of ``V[S]``.

    ``μ_k`` is the expected maximum of ``k`` standard normals (``μ_2 = 1/√π``). An
    approximation (error < 1e-3 at ``n = 1000`` for ``k <= 100``), not a bound.
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    return 1.0 / k + _expected_max_gaussian(k) / math.sqrt(k * n)


def asymptotic_vulnerability(
    *, n: int, k: int, eps0: float | None = None, keep_probability: Any = None, c: float = 1.0
) -> float:
    """Thm 22 (eq. 16): ``1/k + (p − q)·c·√(ln k/(k n))`` for k-RR then shuffle.

    An approximation for comparison (same caveats as
    :func:`asymptotic_shuffle_vulnerability`), obtained by putting eq. (15) into eq. (17).
    """
    p = float(krr_keep_probability(k=k, eps0=eps0, keep_probability=keep_probability))
    q = (1.0 - p) / (k - 1)
    excess = asymptotic_shuffle_vulnerability(n=n, k=k, c=c) - 1.0 / k
    return 1.0 / k + (p - q) * excess
