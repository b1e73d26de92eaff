"""Shuffled k-RR at any n up to 1e9 in milliseconds: blocked α-pair sums (internal).

Every k-RR quantity here reduces, conditional on a count ``s`` of "informative" units, to the
**α-pair with s units**: one target unit and ``s − 1`` clone units, each clone a fair coin
between two labels, the target on label 0 with probability ``α = (1 + λ)/2`` under x and
``1 − α`` under x'. With ``A`` the number of label-0 units, ``E = e^ε`` and
``θ = s/2 + s(E − 1)/(2λ(1 + E))``,

    H(λ, s) := H_E(P_s || Q_s) = (2λ(1 + E)/s) · E[(A − θ)_+],   A ~ Bin(s, 1/2),

(symmetric, so one direction suffices), evaluated with two regularized incomplete beta
functions. Two monotonicities make block sums rigorous:

* ``H`` is non-decreasing in λ (the pair at a smaller λ is the pair at a larger λ with each
  label flipped with a fixed probability — a post-processing), and
* ``H`` is non-increasing in ``s`` (one more clone unit is a post-processing of both sides).

So over a block of counts on which λ is monotone, ``H`` is bounded above by its value at
(largest λ, fewest units) and below by (smallest λ, most units). Summation windows have
rigorous Chernoff tails (:mod:`crowdhide.accounting.binomial_tails`); block masses come from
differences of binomial tails whose rounding error is bounded and added (upper bounds) or
subtracted (lower bounds).

Two reductions use it:

* :func:`krr_clone_fast_log_delta` — the ``krr_clone`` certificate (see
  :func:`crowdhide.accounting.shuffle._pairs.krr_clone_log_delta`): given C clones
  (``m = C + 1`` units with the target) and ``s`` of them reporting x or x',
  ``λ = κ s/m`` with ``κ = tanh(ε0/2)``. The conditional divergence is also non-increasing
  in ``C`` (adding a clone is a post-processing), so clone counts are blocked at their
  smallest value.
* :func:`krr_third_marginal_lower_log_delta` — a rigorous **lower bound**: the divergence of
  the counts ``(a, b)`` of x and x' when all other users hold one third value z (a
  post-processing of that dataset's histogram, hence at most its δ, hence at most the worst
  case). With ``s = a + b = D + T``, ``D ~ Bin(n − 1, 2q)``, ``T ~ Ber(p + q)``:
  ``λ_s = (p − q)/((p + q) + (1 − p − q) ρ_s)``, ``ρ_s = (n − s)/s · 2q/(1 − 2q)``,
  increasing in s.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide.accounting._half_memo import PairMemo
from crowdhide.accounting._pmf_lower import excess_floor
from crowdhide.accounting.binomial_rows import rowwise_logsumexp
from crowdhide.accounting.binomial_tails import (
    BETAINC_ATOL,
    BETAINC_TRUSTED,
    UNTRUSTED_ATOL,
    _log_tail_vec,
    betainc_error,
    binom_cdf,
    binom_cdf_rtol,
    binom_sf,
    block_masses,
    contiguous_block_masses,
    half_tails,
    on_blocks,
    trusted_tail,
    window_blocks,
)
from crowdhide.accounting.logmath import (
    kappa_up,
    logsumexp,
    rate_down,
    rate_up,
)

# the binary-RR worst case lives in its own module; its names stay reachable here (__all__)
from crowdhide.accounting.shuffle._binary_worst import (
    BINARY_EXACT_MAX_N,
    _pmf_rtol,
    binary_core_rows,
    binary_rr_worst_log_delta,
)
from crowdhide.accounting.shuffle._far_half import far_excess, far_mask, far_rule_holds
from crowdhide.errors import InvalidParameterError

__all__ = [
    "BINARY_EXACT_MAX_N",
    "alpha_pair_h",
    "binary_core_rows",
    "binary_rr_worst_log_delta",
    "clone_blocks_log_delta",
    "heavy_blocks",
    "krr_blanket_log_delta",
    "krr_clone_fast_log_delta",
    "krr_third_marginal_lower_log_delta",
]

FloatArray = npt.NDArray[np.float64]

#: Relative error assumed for a threshold θ handed to the excesses below: their thresholds
#: are a few correctly rounded operations on ε, e^ε and the parameters (about 18 ulp; no
#: difference of large exponentials is taken there). An excess ``E[(A − θ)_+]`` is
#: 1-Lipschitz in θ with slope ``P(A > θ)``, so ``_THETA_RTOL · θ`` times the mass at and
#: above the threshold bounds what θ's rounding can move it — most of all where θ sits next
#: to the top of A's range and the excess is a small difference.
_THETA_RTOL = 4e-15
#: Default number of clone-count blocks and of s-blocks per clone count.
CLONE_POINTS = 128
S_POINTS = 48
#: Target relative change of log h across a block (see :func:`_clone_layout`).
_ETA = 0.05
#: s-blocks of the blanket: at most this many per count, of relative width BLANKET_S_ETA.
BLANKET_S_POINTS = 160
BLANKET_S_ETA = 0.01
#: Most single values of s summed exactly in place of the blanket's heaviest blocks.
BLANKET_REFINE = 8_000
#: Windows up to this many clone counts are summed count by count (no blocking).
CLONE_EXACT = 256
#: Blocks whose joint mass is below ``e^{log_tail − LIGHT_MARGIN}`` are bounded as if outside
#: the windows (by their mass times the per-outcome bound): their incomplete betas are not
#: evaluated. With at most ~10^4 blocks they add at most about ``e^{log_tail}`` in all, the
#: size of the window tails already added, and they are a half to four fifths of the blocks.
LIGHT_MARGIN = 10.0


def alpha_pair_h(
    units: FloatArray, lam: FloatArray, eps: float, *, upper: bool, memo: PairMemo | None = None
) -> FloatArray:
    """``H(λ, s)`` of the module docstring, elementwise, as an upper (``upper=True``) or lower
    bound of the exact value (the rounding error of the tail difference is added/removed).

    Examples
    --------
    >>> import numpy as np
    >>> # one unit: the target alone is binary RR with keep probability (1+λ)/2
    >>> h = alpha_pair_h(np.array([1.0]), np.array([0.5]), 0.0, upper=True)
    >>> round(float(h[0]), 12)
    0.5
    """
    s = np.asarray(units, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    big = math.exp(eps)
    ok = (s >= 1.0) & (lam > 0.0)
    s_safe = np.where(ok, s, 1.0)
    lam_safe = np.where(ok, lam, 1.0)
    theta = s_safe / 2.0 + s_safe * math.expm1(eps) / (2.0 * lam_safe * (1.0 + big))
    value = _half_excess_terms(s_safe, theta, upper=upper, memo=memo)
    scale = 2.0 * lam_safe * (1.0 + big) / s_safe
    out = np.maximum(value, 0.0) * scale
    if not upper:
        out = np.minimum(out, 1.0)
    return np.asarray(np.where(ok, out, 0.0), dtype=np.float64)


def heavy_blocks(log_weight: FloatArray, log_tail: float) -> npt.NDArray[np.bool_]:
    """Blocks worth an incomplete-beta evaluation: joint log mass above
    ``log_tail − LIGHT_MARGIN`` (the others are bounded like outcomes outside a window)."""
    return np.asarray(log_weight > log_tail - LIGHT_MARGIN)


def excess_half(units: FloatArray, theta: FloatArray, *, upper: bool) -> FloatArray:
    """``E[(A − θ)_+]`` for ``A ~ Bin(units, 1/2)`` elementwise, rounded up (``upper``) or
    down by a bound on the error of the tail difference."""
    s = np.asarray(units, dtype=np.float64)
    value = _half_excess_terms(s, np.asarray(theta, dtype=np.float64), upper=upper)
    return np.asarray(np.where(s >= 1.0, np.maximum(value, 0.0), 0.0), dtype=np.float64)


def _half_excess_terms(
    s: FloatArray, theta: FloatArray, *, upper: bool, memo: PairMemo | None = None
) -> FloatArray:
    """``E[(A − θ)_+]`` for ``A ~ Bin(s, 1/2)`` as a difference of two tails, rounded up
    (``upper``) or down by a bound on its error: each tail's (:func:`betainc_error`),
    underflow, and θ's rounding (the excess is 1-Lipschitz in θ with slope ``P(A > θ)``);
    tails below ``BETAINC_TRUSTED`` by :func:`_deep_excess`. Rounded up, elements whose
    tails are far below it take their deep bound without incomplete betas (:mod:`._far_half`:
    the value the minimum of :func:`_deep_excess` gives them; issue 32, s28-tiny)."""
    # (the rule gives the former floats only while tails below 1e-240 count as untrusted)
    if not upper or not far_rule_holds(BETAINC_TRUSTED):
        return _half_excess_core(s, theta, upper=upper)
    s, theta = np.broadcast_arrays(s, theta)
    far = far_mask(s, theta)
    if not far.any():
        return _half_excess_core(s, theta, upper=True)
    out = np.empty(s.shape)
    out[far] = far_excess(s[far], theta[far], _THETA_RTOL, memo=memo)
    near = ~far
    if near.any():
        out[near] = _half_excess_core(s[near], theta[near], upper=True)
    return out


def _half_excess_core(s: FloatArray, theta: FloatArray, *, upper: bool) -> FloatArray:
    """:func:`_half_excess_terms` from the incomplete betas (every element)."""
    a_star = np.floor(theta) + 1.0
    # Σ_{a >= a*} a Bin(a; s, 1/2) = s/2 · upper_tail
    upper_tail, at_threshold, slope = half_tails(a_star, s)
    err = 0.5 * s * betainc_error(upper_tail, s) + np.abs(theta) * betainc_error(at_threshold, s)
    err = err + (s + 1.0) * BETAINC_ATOL
    shift = _THETA_RTOL * np.abs(theta)
    err = err + shift * slope
    tails, laws = (upper_tail, at_threshold), ((s - 1.0, 0.5, a_star - 1.0), (s, 0.5, a_star - 1.0))
    floor = None if upper else _floor_where_read(s, 0.5, theta, shift, tails, above=True)
    return _deep_excess(tails, (0.5 * s, theta), (err, shift), laws, upper=upper, floor=floor)


def _floor_where_read(
    n: FloatArray,
    p: float,
    theta: FloatArray,
    shift: FloatArray,
    tails: tuple[FloatArray, FloatArray],
    *,
    above: bool,
) -> FloatArray | None:
    """:func:`excess_floor` where :func:`_deep_excess` reads it, where either tail is
    untrusted (the same floats there; elsewhere 0, never read), or None where no tail is
    (no floor: the value as it is). Issue 32, s35-lower: computed on every element before."""
    untrusted = (tails[0] < BETAINC_TRUSTED) | (tails[1] < BETAINC_TRUSTED)
    if not untrusted.any():
        return None
    return excess_floor(n, p, theta, shift, above=above, where=untrusted)


def _deep_excess(
    tails: tuple[FloatArray, FloatArray],
    scales: tuple[FloatArray, FloatArray],
    errors: tuple[FloatArray, FloatArray],
    laws: tuple[tuple[FloatArray, float, FloatArray], tuple[FloatArray, float, FloatArray]],
    *,
    upper: bool,
    above: bool = True,
    floor: FloatArray | None = None,
) -> FloatArray:
    """``scale_1 · tail_1 − scale_2 · tail_2 ± err`` (``tail_2 <= tail_1``, both >= 0), where
    an incomplete beta may be wrong (below ``BETAINC_TRUSTED``: SciPy returns 0 for true
    tails up to 4e-243, docs/proofs/betainc-underflow.md): each such tail widens the error
    by ``UNTRUSTED_ATOL`` times its scale; upper, where ``tail_1`` is untrusted, the value
    is at most ``scale_1`` times the Chernoff bound of that tail plus θ's error ``shift``
    times that of the slope's tail (``laws``: their ``(n, p, t)``, ``P(X >= t)`` if
    ``above``, else ``P(X <= t)``). ``errors = (err, shift)``. Rounded down, where a tail
    is untrusted, the value is at least ``floor`` (a proven lower bound on the excess: its
    nearest term, :func:`excess_floor`)."""
    tail_1, tail_2 = tails
    scale_1, scale_2 = scales
    err, shift = errors
    untrusted_1, untrusted_2 = tail_1 < BETAINC_TRUSTED, tail_2 < BETAINC_TRUSTED
    err = err + UNTRUSTED_ATOL * (np.abs(scale_1) * untrusted_1 + np.abs(scale_2) * untrusted_2)
    value = scale_1 * tail_1 - scale_2 * tail_2 + (err if upper else -err)
    deep = untrusted_1
    if not upper:
        if floor is not None:
            value = np.where(untrusted_1 | untrusted_2, np.maximum(value, floor), value)
        return np.asarray(value, dtype=np.float64)
    marks = np.where(deep, 0.0, 1.0)  # 0 asks trusted_tail for the Chernoff bound
    bound = trusted_tail(marks, *laws[0], upper=above)
    slope = trusted_tail(marks, *laws[1], upper=above)
    deep_value = np.abs(scale_1) * bound + shift * slope
    return np.asarray(np.where(deep, np.minimum(deep_value, value), value), dtype=np.float64)


def _clone_shift(m: FloatArray, kappa: float, eps: float) -> FloatArray:
    """``c_m = m (E − 1)/(2κ(1 + E))``: the threshold's offset above ``s/2``."""
    return np.asarray(m * math.expm1(eps) / (2.0 * kappa * (1.0 + math.exp(eps))))


def _window_edges(
    n: FloatArray, p: float | FloatArray, big_l: float
) -> tuple[FloatArray, FloatArray]:
    """Per row, ``[lo, hi]`` around ``n p`` with Bernstein half-width for tail ``e^{-L}``."""
    var = n * p * (1.0 - p)
    half = np.ceil(big_l / 3.0 + np.sqrt(big_l**2 / 9.0 + 2.0 * var * big_l)) + 1.0
    lo = np.maximum(np.floor(n * p) - half, 0.0)
    hi = np.minimum(np.ceil(n * p) + half, n)
    return lo, hi


def _split(lo: FloatArray, hi: FloatArray, points: int) -> tuple[FloatArray, FloatArray]:
    """Split each row's integer range ``[lo, hi]`` into ``points`` blocks (rows x points;
    empty blocks have ``start > end``)."""
    width = np.maximum(np.ceil((hi - lo + 1.0) / points), 1.0)
    j = np.arange(points, dtype=np.float64)[None, :]
    start = lo[:, None] + j * width[:, None]
    end = np.minimum(start + width[:, None] - 1.0, hi[:, None])
    return start, end


def _relative_split(
    lo: FloatArray, hi: FloatArray, eta: float, points: int
) -> tuple[FloatArray, FloatArray]:
    """Split each row's integer range ``[lo, hi]`` into blocks ``[s, s + w − 1]`` of width
    ``w = max(1, ⌊η s⌋, ⌈(hi − lo + 1)/points⌉)``: single values where s is small (a block's
    bound moves most there), at most ``points`` blocks per row (rows x points; empty blocks
    have ``start > end``)."""
    floor_width = np.maximum(np.ceil((hi - lo + 1.0) / points), 1.0)
    start = np.empty((lo.size, points))
    end = np.empty((lo.size, points))
    at = lo.astype(np.float64).copy()
    for j in range(points):
        width = np.maximum(np.floor(eta * at), floor_width)
        start[:, j] = at
        end[:, j] = np.minimum(at + width - 1.0, hi)
        at = at + width
        if bool((at > hi).all()):  # every row done: drop the empty columns
            return start[:, : j + 1], end[:, : j + 1]
    return start, end


@functools.lru_cache(maxsize=32)
def _clone_layout(
    n: int,
    rho: float,
    mu2: float,
    log_tail: float,
    c_points: int,
    s_points: int,
    s_eta: float = 0.0,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, float]:
    """ε-independent part of :func:`clone_noise_log_delta` (cached). ``s_eta > 0``: s-blocks
    of relative width ``s_eta`` (:func:`_relative_split`) instead of the η rule."""

    def width_of(lo: int, size: int) -> int:
        # Blocks only as fine as needed: a relative change η/L of the count moves log h by
        # about η (h decays roughly like e^{-L} across the window), so wider blocks lose < 5 %
        # in δ. A block is taken at its smallest count: h is non-increasing in C.
        needed = math.ceil(size / max(1.0, _ETA * lo / -log_tail))
        points = min(c_points, max(needed, 1))
        if size > max(points, CLONE_EXACT if needed > CLONE_EXACT else 0):
            return -(-size // points)
        return 1

    # the rate rounded down: fewer clones (or blanket reports) is always a valid system
    counts, log_w, c_tail = window_blocks(n - 1, rate_down(rho), log_tail, width_of)
    m = counts + 1.0
    if mu2 >= 1.0:  # k = 2: every unit reports x or x'
        s_start = s_end = m[:, None]
        log_mass = np.zeros((m.size, 1))
        log_out = np.full(m.size, -np.inf)
    else:
        lo, hi = _window_edges(m, mu2, -log_tail)
        if s_eta > 0.0:
            s_start, s_end = _relative_split(lo, hi, s_eta, s_points)
        else:
            s_width = float((hi - lo).max()) + 1.0
            s_needed = math.ceil(s_width / max(1.0, _ETA * float(lo.min()) / -log_tail))
            s_start, s_end = _split(lo, hi, min(s_points, max(s_needed, 1)))
        mm = np.broadcast_to(m[:, None], s_start.shape)
        if s_eta > 0.0:
            mass = block_masses(mm, mu2, s_start, s_end, upper=True)
        else:  # _split: contiguous blocks (their edges' tails shared)
            mass = contiguous_block_masses(mm, mu2, s_start, s_end)
        mass = np.where(s_start <= s_end, mass, 0.0)
        with np.errstate(divide="ignore"):
            log_mass = np.log(mass)
        log_out = np.logaddexp(
            _log_tail_vec(m, mu2, lo - 1.0, upper=False),
            _log_tail_vec(m, mu2, hi + 1.0, upper=True),
        )
    return m, log_w, s_start, s_end, log_mass, log_out, c_tail


def krr_clone_fast_log_delta(
    n: int,
    k: int,
    eps0: float,
    eps: float,
    log_tail: float,
    *,
    c_points: int = CLONE_POINTS,
    s_points: int = S_POINTS,
) -> float:
    """Upper bound on ``log δ(ε)`` of the ``krr_clone`` pair with blocked sums (any n).

    k-RR is :func:`clone_noise_log_delta` with ``κ = tanh(ε0/2)``, informative-report
    probability ``(e+1)/(e+k−1)`` and clone probability ``2/(e+1)``.
    """
    e = math.exp(eps0)
    return clone_noise_log_delta(
        n,
        kappa_up(eps0),
        (e + 1.0) / (e + k - 1.0),
        2.0 / (e + 1.0),
        eps,
        log_tail,
        c_points=c_points,
        s_points=s_points,
    )


def clone_noise_log_delta(
    n: int,
    kappa: float,
    mu2: float,
    rho: float,
    eps: float,
    log_tail: float,
    *,
    c_points: int = CLONE_POINTS,
    s_points: int = S_POINTS,
) -> float:
    """Upper bound on ``log δ(ε)`` of the clone pair with noisy clones, blocked (any n).

    Each of the other n − 1 users is a clone with probability ``rho``; a clone reports from
    ``π = (P0 + P1)/2``, under which a report is informative (``D = (P0 − P1)/(P0 + P1) =
    ±κ``, each sign equally likely) with probability ``mu2`` and uninformative (``D = 0``)
    otherwise. With at most ``c_points`` clone counts and ``s_points`` blocks of informative
    counts the work is O(c_points · s_points) incomplete-beta calls, independent of n.
    """
    if kappa < 1.0 and eps >= 2.0 * math.atanh(kappa):  # κ = 1: a fully revealing target
        return -math.inf
    # δ does not decrease with mu2 (garbling every report alike is a post-processing): its
    # rounding is taken upwards, as the clone rate's downwards (inside the layout)
    m, log_w, _, s_end, log_mass, log_out, c_tail = _clone_layout(  # empty blocks: mass 0
        n, rho, rate_up(mu2), log_tail, c_points, s_points
    )
    # Given m units, H(κ s/m, s) = (2κ(1+E)/m) E[(A_s − s/2 − c_m)_+] with c_m free of s: the
    # expectation is non-decreasing in s (adding a fair ±1/2 step is a mean-zero spread), so a
    # block of s is bounded by its largest s.
    mm = np.broadcast_to(m[:, None], s_end.shape)
    return clone_blocks_log_delta(log_w, log_mass, s_end, mm, log_out, c_tail, kappa, eps, log_tail)


def clone_blocks_log_delta(
    log_w: FloatArray,
    log_mass: FloatArray,
    units: FloatArray,
    g: FloatArray,
    log_out: FloatArray,
    c_tail: float,
    kappa: float,
    eps: float,
    log_tail: float,
) -> float:
    """The blocked sum of the clone systems (one-rate here, split in
    :mod:`crowdhide.accounting.shuffle._split_clone`): per clone-count row ``log_w`` and per
    block its log mass, its largest count of informative units and its smallest ``g`` (``g = m`` for
    the one-rate system), bounded by ``H = (2κ(1+E)/g) E[(A − s/2 − c_g)_+]``; light blocks
    (:func:`heavy_blocks`) and every outcome outside an s-window (``log_out``) or the
    clone-count window (``c_tail``) at most 2 per unit of mass (``P(.|x) <= 2 Mult``). Empty
    blocks have log mass −inf."""
    h_of = functools.partial(clone_block_h, kappa=kappa, eps=eps)
    h = on_blocks(heavy_blocks(log_w[:, None] + log_mass, log_tail), 2.0, h_of, units, g)
    return blocks_total(log_w, log_mass, h, log_out, c_tail)


def clone_block_h(s: FloatArray, gg: FloatArray, *, kappa: float, eps: float) -> FloatArray:
    """``H = (2κ(1+E)/g) E[(A − s/2 − c_g)_+]`` of heavy blocks, elementwise (rounded up)."""
    excess = excess_half(s, s / 2.0 + _clone_shift(gg, kappa, eps), upper=True)
    return np.asarray(excess * (2.0 * kappa * (1.0 + math.exp(eps)) / gg))


def blocks_total(
    log_w: FloatArray, log_mass: FloatArray, h: FloatArray, log_out: FloatArray, c_tail: float
) -> float:
    """:func:`clone_blocks_log_delta`'s reductions from each block's bound ``h`` (light: 2)."""
    with np.errstate(divide="ignore"):
        return terms_total(log_w, log_mass + np.log(h), log_out, c_tail)


def terms_total(log_w: FloatArray, terms: FloatArray, log_out: FloatArray, c_tail: float) -> float:
    """:func:`blocks_total` from each block's ``log_mass + log h`` (``terms``)."""
    # numpy's log-sum-exp (SciPy's costs ~0.5 ms per call); both round to a few ulps of log δ
    rows = rowwise_logsumexp(terms)
    rows = np.logaddexp(rows, log_out + math.log(2.0))
    total = float(rowwise_logsumexp((log_w + rows)[None, :])[0])
    return float(np.logaddexp(total, c_tail + math.log(2.0)))


def krr_blanket_log_delta(
    n: int,
    k: int,
    eps0: float,
    eps: float,
    log_tail: float,
    *,
    c_points: int = CLONE_POINTS,
    s_points: int = BLANKET_S_POINTS,
    s_eta: float = BLANKET_S_ETA,
    refine: int = BLANKET_REFINE,
    memo: PairMemo | None = None,
) -> float:
    """Upper bound on ``log δ(ε)`` of shuffled k-RR from its privacy blanket, summed exactly
    (blocked: O(c_points · s_points) incomplete-beta calls, independent of n).

    Every other user's report law is ``K(v) = γ U + (1 − γ) δ_v`` with ``U`` uniform on the
    k values and ``γ = k q = k/(e + k − 1)`` (Balle et al., CRYPTO 2019). Revealing which
    users reported their own value (independent of the target's) helps the adversary, so δ
    is at most the average over ``m ~ Bin(n − 1, γ)`` of the divergence of the target's
    report shuffled with m uniform reports — computed here exactly rather than through a
    concentration inequality. With ``M = m + 1`` units, counts ``a, b`` of x, x' and
    ``s = a + b``:

        P(a, b | x) = (k/M) Mult_M(a, b) (q M + (p − q) a),   Mult_M on (1/k, 1/k, 1 − 2/k),

    so given s the pair is the α-pair with s units and ``λ = (p − q)s/(2qM + (p − q)s)``
    (module docstring), and s has law ``(k/(2M)) Bin(s; M, 2/k) (2qM + (p − q)s)`` under both
    values. λ grows with s, so an s-block is bounded by H at (its largest λ, its fewest
    units) times its mass with ``s`` at the block's end; the divergence given M does not
    increase with M (one more uniform report is a post-processing), so blocks of m are taken
    at their smallest m. Outside the windows a cell adds at most ``P(a, b | x) <= k p Mult``.
    For k = 2 this is the FMT23 pair (``λ = κ``).

    Examples
    --------
    >>> import math
    >>> # 100 users of 10-RR at ε0 = 4: ε = 3.58 holds at δ = 1e-6 (the clones need ≈ 4)
    >>> round(math.exp(krr_blanket_log_delta(100, 10, 4.0, 3.58, -60.0)) * 1e7, 2)
    9.36
    """
    if eps >= eps0:
        return -math.inf
    em1 = math.expm1(eps0)
    gamma = k / (em1 + k)  # k q
    m, log_w, s_start, s_end, log_mass, log_out, c_tail = _clone_layout(
        n, gamma, 2.0 / k, log_tail, c_points, s_points, s_eta
    )
    mm = np.broadcast_to(m[:, None], s_end.shape)
    weight = log_w[:, None] + log_mass
    # Light blocks: at most k p per unit of Bin(s; M, 2/k) mass, as outside the windows.
    light = np.where(s_start <= s_end, k * (1.0 + em1) / (em1 + k), 0.0)

    def h_of(units: FloatArray, start: FloatArray, end: FloatArray) -> FloatArray:
        return _blanket_h(units, start, end, gamma, em1, eps, memo)

    h = on_blocks(heavy_blocks(weight, log_tail), light, h_of, mm, s_start, s_end)
    with np.errstate(divide="ignore"):
        cells = weight + np.log(h)
    cells = _refine_blanket(cells, m, s_start, s_end, log_w, 2.0 / k, gamma, em1, eps, refine)
    outside = log_w + log_out + math.log(k * (1.0 + em1) / (em1 + k))
    total = float(np.logaddexp(logsumexp(cells), logsumexp(outside)))
    return float(np.logaddexp(total, c_tail + math.log(2.0)))


def _blanket_h(
    mm: FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    gamma: float,
    em1: float,
    eps: float,
    memo: PairMemo | None = None,
) -> FloatArray:
    """Per s-block of :func:`krr_blanket_log_delta`: an upper bound on its δ share per unit
    of its ``Bin(s; M, 2/k)`` mass — H at (largest λ, fewest units) times the law's factor
    ``γ (2M + (e−1)s)/(2M)`` at the block's end (γ = k/(e + k − 1))."""
    # λ = (e−1)s/((e−1)s + 2M): no difference of exponentials, a few ulps (covered by the
    # threshold allowance of alpha_pair_h).
    lam = em1 * s_end / (em1 * s_end + 2.0 * mm)
    h = alpha_pair_h(np.maximum(s_start, 1.0), lam, eps, upper=True, memo=memo)
    h = np.where((s_start <= s_end) & (s_end >= 1.0), h, 0.0)
    return np.asarray(h * gamma * (2.0 * mm + em1 * s_end) / (2.0 * mm) * (1.0 + 1e-14))


def _refine_blanket(
    cells: FloatArray,
    m: FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    log_w: FloatArray,
    mu2: float,
    gamma: float,
    em1: float,
    eps: float,
    budget: int,
) -> FloatArray:
    """The log bounds of the blanket's blocks, with the heaviest blocks (those holding all
    but 1e-3 of the total, at most ``budget`` values of s) replaced by exact sums over their
    single values of s. Every term stays an upper bound of its share, so the result does."""
    flat = cells.ravel()
    if budget <= 0 or not np.isfinite(flat).any():
        return flat
    order = np.argsort(flat)[::-1]
    share = np.exp(flat[order] - flat[order[0]])
    width = (s_end - s_start + 1.0).ravel()[order]
    need = np.searchsorted(np.cumsum(share), (1.0 - 1e-3) * share.sum()) + 1
    within = np.cumsum(np.where(width > 1.0, width, 0.0)) <= budget
    chosen = order[: np.count_nonzero(within[:need])]
    chosen = chosen[width[: chosen.size] > 1.0]
    if not chosen.size:
        return flat
    rows = np.repeat(np.arange(m.size), s_start.shape[1])[chosen]
    lo, hi = s_start.ravel()[chosen], s_end.ravel()[chosen]
    counts = (hi - lo + 1.0).astype(np.int64)
    which = np.repeat(np.arange(chosen.size), counts)
    s = lo[which] + (np.arange(which.size) - np.repeat(np.cumsum(counts) - counts, counts))
    mm = m[rows][which]
    # log Bin(s; M, μ2) from gammaln, rounded up by a bound on its error (_pmf_rtol).
    log_pmf = gammaln(mm + 1.0) - gammaln(s + 1.0) - gammaln(mm - s + 1.0)
    log_pmf = log_pmf + s * math.log(mu2) + (mm - s) * math.log1p(-mu2)
    log_pmf = log_pmf + np.log1p(_pmf_rtol(int(m.max()), min(mu2, 1.0 - mu2)))
    with np.errstate(divide="ignore"):
        single = log_w[rows][which] + log_pmf + np.log(_blanket_h(mm, s, s, gamma, em1, eps))
    kept = np.delete(flat, chosen)
    return np.concatenate([kept, single])


#: ``third_marginal_lower_log_delta`` gives no bound when ``1 − nu`` is below this.
_NU_ROOM = 1e-9


@functools.lru_cache(maxsize=32)
def _third_layout(
    n: int, p: float, q: float, nu: float, points: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """ε-independent part of :func:`third_marginal_lower_log_delta` (cached): block
    starts/ends of s, their masses (rounded down) and λ at each block's start."""
    nn = np.array([float(n - 1)])
    lo, hi = _window_edges(nn, nu, 40.0)  # dropping mass only lowers a lower bound
    start, end = _split(lo, hi + 1.0, points)  # s = D + T ranges one further
    start, end = start[0], end[0]
    keep = (start <= end) & (end >= 1.0)
    start, end = np.maximum(start[keep], 1.0), end[keep]
    # P(s in [a, b]) = (p+q) P(D in [a-1, b-1]) + (1-p-q) P(D in [a, b]), rounded down.
    n_arr = np.full(start.shape, float(n - 1))
    mass = (p + q) * block_masses(n_arr, nu, start - 1.0, end - 1.0, upper=False)
    mass = mass + (1.0 - p - q) * block_masses(n_arr, nu, start, end, upper=False)
    rho = (n - start) / start * (nu / (1.0 - nu))
    lam = (p - q) / ((p + q) + (1.0 - p - q) * rho)
    return start, end, mass * (1.0 - 1e-12), lam * (1.0 - 1e-12)


# Kept by value: a k-RR query asks it at the same ε from several searches (ε = 0 and the
# root's neighbourhood from krr_lower and from krr_blanket's start: 8 of 34 calls at
# k = 4, n = 1e3), and a memo of a deterministic function returns the same floats.
@functools.lru_cache(maxsize=1024)
def krr_third_marginal_lower_log_delta(
    n: int, k: int, eps0: float, eps: float, *, points: int = 256
) -> float:
    """Rigorous *lower* bound on ``log δ(ε)`` of shuffled k-RR (k >= 3): the divergence of
    the counts of x and x' when the other n − 1 users all hold one third value (module
    docstring). Blocks of s use (smallest λ, most units); windows only drop mass.

    Examples
    --------
    >>> import math
    >>> round(math.exp(krr_third_marginal_lower_log_delta(1000, 4, math.log(13), 0.39)), 6) <= 1e-4
    True
    """
    if k < 3:
        raise InvalidParameterError(
            f"k must be >= 3 for a third value, got {k!r}", parameter="k", value=k
        )
    e = math.exp(eps0)
    p, q = e / (e + k - 1.0), 1.0 / (e + k - 1.0)
    return third_marginal_lower_log_delta(n, p, q, 2.0 * q, eps0, eps, points=points)


def third_marginal_lower_log_delta(
    n: int, p: float, q: float, nu: float, eps0: float, eps: float, *, points: int = 256
) -> float:
    """Lower bound on ``log δ(ε)`` from the counts of informative reports (``D = +κ`` and
    ``D = −κ``) when the other users hold a value whose reports are informative with
    probability ``nu`` (each sign ``nu/2``) and the target's are ``+κ`` / ``−κ`` with
    probability ``p`` / ``q`` (k-RR: ``p, q`` keep/other probabilities, ``nu = 2q``)."""
    if eps >= eps0 or nu > 1.0 - _NU_ROOM:
        # nu within rounding of 1 (subset selection, d = 3, beyond ε0 ≈ 36): its complement,
        # which the layout divides by, is lost; no bound (−inf) is a valid lower bound
        return -math.inf
    _, end, mass, lam = _third_layout(n, p, q, nu, points)
    h = alpha_pair_h(end, lam, eps, upper=False)
    with np.errstate(divide="ignore"):
        return float(logsumexp(np.log(mass) + np.log(h)))


def binomial_excess(
    theta: FloatArray,
    n: FloatArray,
    p: float,
    *,
    above: bool,
    upper: bool,
    theta_err: FloatArray | float | None = None,
) -> FloatArray:
    """``E[(A − θ)_+]`` (``above``) or ``E[(θ − A)_+]`` for ``A ~ Bin(n, p)`` elementwise, from
    two incomplete-beta tails, rounded up (``upper``) or down by a bound on the error of
    their difference (:func:`betainc_error` per tail, underflow ``1e-307`` per unit) and by
    what an error of θ moves it: ``theta_err`` (absolute; default ``_THETA_RTOL · |θ|``)
    times the mass at the threshold and beyond.

    Examples
    --------
    >>> import numpy as np
    >>> up = binomial_excess(np.array([2.5]), np.array([10.0]), 0.3, above=True, upper=True)
    >>> lo = binomial_excess(np.array([2.5]), np.array([10.0]), 0.3, above=True, upper=False)
    >>> bool(lo[0] <= up[0]) and abs(float(up[0]) - 0.868947264) < 1e-9
    True
    """
    theta = np.asarray(theta, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    mean = n * p
    if above:
        a_star = np.floor(theta) + 1.0
        tail_1 = binom_sf(a_star - 1.0, n - 1.0, p)  # Σ_{a >= a*} a Bin(a; n, p) = mean · this
        tail_2 = binom_sf(a_star, n, p)
        slope = binom_sf(a_star - 1.0, n, p)
        scale_1, scale_2 = np.abs(mean), np.abs(theta)
        laws = ((n - 1.0, p, a_star - 1.0), (n, p, a_star - 1.0))  # tail_1's and slope's
        scales = (mean, theta)
    else:
        b_star = np.ceil(theta) - 1.0
        tail_1 = binom_cdf(b_star, n, p)
        tail_2 = binom_cdf(b_star - 1.0, n - 1.0, p)
        slope = binom_cdf(b_star + 1.0, n, p) * (1.0 + binom_cdf_rtol(b_star + 1.0, n, p))
        scale_1, scale_2 = np.abs(theta), np.abs(mean)
        laws = ((n, p, b_star), (n, p, b_star + 1.0))  # tail_1's and slope's
        scales = (theta, mean)
    shift = _THETA_RTOL * np.abs(theta) if theta_err is None else np.asarray(theta_err)
    error = scale_1 * betainc_error(tail_1, n) + scale_2 * betainc_error(tail_2, n)
    if not above:  # the lower tails' rounded complement (binom_cdf_rtol)
        error = error + np.abs(theta) * tail_1 * binom_cdf_rtol(b_star, n, p)
        error = error + np.abs(mean) * tail_2 * binom_cdf_rtol(b_star - 1.0, n - 1.0, p)
    error = error + (n + np.abs(theta) + 1.0) * 1e-307
    error = error + shift * slope
    tails = (tail_1, tail_2)
    floor = None if upper else _floor_where_read(n, p, theta, shift, tails, above=above)
    value = _deep_excess(tails, scales, (error, shift), laws, upper=upper, above=above, floor=floor)
    return np.asarray(np.maximum(value, 0.0), dtype=np.float64)


def binary_same_lower_log_delta(n: int, eps0: float, eps: float) -> float:
    """Rigorous *lower* bound on ``log δ(ε)`` of shuffled binary RR: the dataset "all other
    users hold x'" (both directions), exact up to rounding, O(1) at any n — the region
    count of :func:`same_value_lower_log_delta` with the region "reports x":
    ``P(c | x)/P(c | x') = 1/e + c (e − 1/e)/n``.

    Examples
    --------
    >>> import math
    >>> round(binary_same_lower_log_delta(10**9, 1.0, 0.0002), 3)   # δ ≈ 3.3e-15
    -33.331
    """
    e = math.exp(eps0)
    keep, flip = e / (e + 1.0), 1.0 / (e + 1.0)  # 1 − keep is flip, exactly
    return same_value_lower_log_delta(n, keep, flip, eps, p_rest=flip, q_rest=keep)


def same_value_lower_log_delta(
    n: int,
    p_target: float,
    q: float,
    eps: float,
    *,
    p_rest: float | None = None,
    q_rest: float | None = None,
) -> float:
    """Rigorous *lower* bound on ``log δ(ε)`` of n shuffled reports: the dataset "all other
    users hold x'", seen through the count of reports in one region R, with
    ``p_target = P_x(R)`` and ``q = P_x'(R)`` (both directions; ``p_target < q`` is read
    as the complement region), exact up to rounding, O(1) at any n. ``p_rest = 1 − p`` and
    ``q_rest = 1 − q`` may be passed when the caller has them without cancellation (p near
    1 at large ε0 would otherwise round to 1 and describe a more revealing randomizer).

    Under x' the count ``c`` of R-reports among all n is ``Bin(n, q)``, and the target is
    exchangeable with the others, so the posterior probability that the target's report
    is in R is ``c/n`` and ``P(c | x)/P(c | x') = a + s c`` with ``a = (1 − p)/(1 − q)``,
    ``s = (p/q − a)/n``. Hence ``δ_fwd = s E[(C − θ_f)_+]``, ``θ_f = (E − a)/s``, and
    ``δ_bwd = E s E[(θ_b − C)_+]``, ``θ_b = (1/E − a)/s``: two incomplete-beta pairs
    each, rounded down. The count is a post-processing of the shuffled reports, so this
    is at most the dataset's δ, which is at most the worst case.

    Examples
    --------
    >>> import math
    >>> e = math.exp(1.0)   # binary RR, region "reports x"
    >>> same_value_lower_log_delta(1000, e / (e + 1), 1 / (e + 1), 0.05) < -6.88
    True
    """
    if not (0.0 < q < 1.0 and 0.0 <= p_target <= 1.0):
        bad_q = not 0.0 < q < 1.0
        raise InvalidParameterError(
            f"need 0 < q < 1 and 0 <= p_target <= 1; got q={q!r}, p_target={p_target!r}",
            parameter="q" if bad_q else "p_target",
            value=q if bad_q else p_target,
        )
    p_rest = 1.0 - p_target if p_rest is None else p_rest
    q_rest = 1.0 - q if q_rest is None else q_rest
    if p_target < q:  # the complement region: the same count, read backwards
        p_target, q, p_rest, q_rest = p_rest, q_rest, p_target, q
    if p_target == q or q_rest <= 0.0:  # the region says nothing (e^ε0 rounds to 1)
        return -math.inf
    a = p_rest / q_rest
    slope = (p_target / q - a) / n
    big = math.exp(eps)
    # The ratio a + s c lies in [a, p/q]: beyond (up to rounding) a direction is exactly
    # zero, and a rounded threshold must not make it look positive.
    guard = 1.0 + 1e-12
    nn = np.array([float(n)])
    forward = backward = -math.inf
    shrink = math.log1p(-1e-12)  # the products below are exact to a few ulps
    with np.errstate(divide="ignore"):
        if big * guard < p_target / q:
            theta_f = np.array([(big - a) / slope])
            err_f = _THETA_RTOL * (big + a) / slope  # the difference is taken before dividing
            fwd = binomial_excess(theta_f, nn, q, above=True, upper=False, theta_err=err_f)
            forward = float(np.log(fwd[0])) + math.log(slope) + shrink
        if 1.0 / big > a * guard:
            theta_b = np.array([(1.0 / big - a) / slope])
            err_b = _THETA_RTOL * (1.0 / big + a) / slope
            bwd = binomial_excess(theta_b, nn, q, above=False, upper=False, theta_err=err_b)
            backward = float(np.log(bwd[0])) + math.log(slope) + eps + shrink
    return max(forward, backward)
