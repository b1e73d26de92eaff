"""The split clone system: informative and uninformative clones at separate rates (internal).

Setting (see :mod:`crowdhide.accounting.shuffle.mechanisms`): in the three-point space
{+, 0, −} the target reports ``+`` / ``−`` with probabilities ``(μ/2)(1 ± κ)`` (signs
swapped for x') and ``0`` otherwise; each of the other n − 1 users is, independently, an
*informative clone* (a fair ± coin) with probability ``c_inf``, an *uninformative clone*
(``0``) with probability ``c_zero``, and otherwise reports something independent of the
target's value. The adversary is told the number C of clones, not their kinds. Given C, let
``s`` be the number of ``±`` reports among the target and the clones: ``s = T + I`` with
``T ~ Ber(μ)`` (the target informative) and ``I ~ Bin(C, μ')``, ``μ' = c_inf/(c_inf +
c_zero)``; s has the same law under x and x', and given s the target is informative with
probability

    post(s) = μ s (1 − μ') / (μ s (1 − μ') + (1 − μ)(C − s + 1) μ'),

so the s informative reports are the α-pair of :mod:`crowdhide.accounting.shuffle._krr_fast` with
``λ = κ post(s)``. Writing ``g(s) = κ s/λ = a s + b_C`` (linear in s: ``a = 1 − ρ``,
``b_C = ρ (C + 1)``, ``ρ = (1 − μ) μ' / (μ (1 − μ'))``; ``μ = μ'`` gives g = C + 1, the
one-rate clone system),

    H = (2κ(1 + E)/g) · E[(A_s − s/2 − g (E − 1)/(2κ(1 + E)))_+],   A_s ~ Bin(s, 1/2).

Both factors decrease in g and the expectation is non-decreasing in s at a fixed offset, so a
block of s is bounded by (its largest s, its smallest g); δ given C is non-increasing in C
(one more clone is simulated by the adversary), so a block of C is bounded by its smallest C.
Windows drop tails whose mass (H <= 1) is added back.

**Rounding.** The parameters arrive rounded by the few operations of their formulas, and
the system is evaluated at floating-point values; it stays an upper bound because

* μ is raised by :data:`PARAMETER_ULPS` ulps: with the others' laws fixed, δ is
  non-decreasing in the target's μ (the pair at a smaller μ is a mixture of the pair at the
  larger one and a report independent of the target's value);
* the clone rates are replaced by ``(c μ', c (1 − μ'))`` with μ' the rounded ratio and the
  total c lowered until *both* are at most the given rates less :data:`PARAMETER_ULPS`
  ulps (:func:`effective_rates`). Lowering only the sum is not enough: where
  ``c_zero << c_inf``, ``1 − fl(μ')`` is off by ``ε c_inf/c_zero`` relative and claims
  uninformative clones that do not exist;
* g is computed as ``s + ρ (C + 1 − s)`` (no cancellation, unlike ``(1 − ρ) s + ρ (C + 1)``
  when ρ >> 1) and lowered by the rounding of ρ (:func:`g_lower`): H decreases in g.

Callers compute the uninformative rate from ``1 − μ`` with μ raised the same way
(:func:`uninformative_share`), since ``1 − μ`` near μ = 1 magnifies μ's rounding.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.binomial_tails import (
    _log_tail_vec,
    binom_cdf,
    binom_sf,
    masses_from_tails,
    window_blocks,
)
from crowdhide.accounting.logmath import MACHINE_EPSILON, rate_down, rate_up
from crowdhide.accounting.shuffle._krr_fast import (
    _ETA,
    CLONE_EXACT,
    LIGHT_MARGIN,
    FloatArray,
    _split,
    _window_edges,
    clone_blocks_log_delta,
    clone_noise_log_delta,
)
from crowdhide.errors import InvalidParameterError

__all__ = [
    "PARAMETER_ULPS",
    "effective_rates",
    "g_lower",
    "split_clone_log_delta",
    "uninformative_share",
]

#: How far (in ulps) the split system's inputs may be off the exact values their formulas
#: stand for: a handful of correctly rounded operations each (exp/expm1, tanh raised by
#: ``kappa_up``, sums, products, one quotient) — 32 leaves a factor of about 2.
PARAMETER_ULPS = 32

#: Most blocks of clone counts and of s per clone count (g varies across an s block, unlike
#: the one-rate system). 64 x 192: k-RR (d = 16, ε0 = 4, n = 1e3) 1.387 vs 1.448 with 64 x 96;
#: about 0.2-0.6 s per ε query at n = 1e3 ... 1e5, under 0.1 s at n = 1e9.
SPLIT_C_POINTS = 64
SPLIT_S_POINTS = 192


def uninformative_share(mu: float) -> float:
    """``1 − μ`` for a μ rounded by up to :data:`PARAMETER_ULPS` ulps, never above the
    exact value's ``1 − μ`` (μ raised first; the difference is exact for μ >= 1/2).

    Examples
    --------
    >>> 0.0 < uninformative_share(0.999) < 1.0 - 0.999
    True
    """
    return max(0.0, 1.0 - rate_up(mu, ulps=PARAMETER_ULPS))


def effective_rates(c_inf: float, c_zero: float) -> tuple[float, float]:
    """``(c, μ')``: a clone total and informative share whose rates ``c μ'`` and
    ``c (1 − μ')``, in exact arithmetic on these floats, are at most ``c_inf`` and
    ``c_zero`` lowered by :data:`PARAMETER_ULPS` ulps (module docstring).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> c, mu_c = effective_rates(0.3, 1e-9)
    >>> F(c) * F(mu_c) < F(0.3) and F(c) * (1 - F(mu_c)) < F(1e-9)
    True
    """
    mu_c = c_inf / (c_inf + c_zero)
    # each quotient and 1 − μ' are rounded once (1 − μ' exactly when μ' >= 1/2)
    total = min(c_inf / mu_c, c_zero / (1.0 - mu_c))
    return rate_down(total, ulps=2 * PARAMETER_ULPS), mu_c


def g_lower(s: FloatArray, counts: FloatArray, rho: float) -> FloatArray:
    """``g = s + ρ (C + 1 − s)`` rounded down: ρ carries at most 8 roundings (its formula
    and μ, μ' near 1), the sum and product two more. Exact for integer counts below 2^53.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> rho = 1e6 / 3.0
    >>> g = g_lower(np.array([4.0]), np.array([5.0]), rho)
    >>> F(float(g[0])) <= 4 + F(rho) * 2
    True
    """
    g = s + rho * (counts + 1.0 - s)
    return np.asarray(g * (1.0 - 16.0 * MACHINE_EPSILON), dtype=np.float64)


def _edge_masses(
    counts: FloatArray,
    p: float,
    s_start: FloatArray,
    s_end: FloatArray,
    live: npt.NDArray[np.bool_],
    shift: float,
) -> FloatArray:
    """``block_masses(counts, p, s_start − shift, s_end − shift, upper=True)`` on the
    ``live`` blocks (0 elsewhere), the same floats for a quarter of the incomplete betas.

    A row's live blocks are contiguous (:func:`_split`: each one's end + 1 is the next one's
    start), so its tails are those at the edges ``E = (first start, every end + 1)``: block
    j's upper tails ``P(X >= E_j − shift)``, ``P(X >= E_{j+1} − shift)`` or lower tails
    ``P(X <= E_{j+1} − 1 − shift)``, ``P(X <= E_j − 1 − shift)``, one evaluation per edge
    and kind that some live block asks for instead of two per block (tests check the floats
    against :func:`block_masses`)."""
    lo, hi = s_start - shift, s_end - shift
    use_sf = lo > counts * p
    edges = np.concatenate([s_start[:, :1], s_end + 1.0], axis=1) - shift
    rows = np.concatenate([counts[:, :1], counts], axis=1)
    tails = []
    for kind, fn, at in ((True, binom_sf, edges), (False, binom_cdf, edges - 1.0)):
        wanted = live & (use_sf == kind)
        need = np.zeros(edges.shape, dtype=bool)
        need[:, :-1] |= wanted  # block j's left edge
        need[:, 1:] |= wanted  # and its right edge
        table = np.zeros(edges.shape)
        table[need] = fn(at[need], rows[need], p)
        tails.append(table)
    sf, cdf = tails
    # Only the live blocks (often a few per cent of the grid: the rest are light or empty)
    # go through the error model; every step is elementwise, so their floats are those of
    # the whole grid's.
    at_live = np.nonzero(live)
    by_sf = use_sf[at_live]
    first = np.where(by_sf, sf[:, :-1][at_live], cdf[:, 1:][at_live])
    second = np.where(by_sf, sf[:, 1:][at_live], cdf[:, :-1][at_live])
    cells = counts[at_live], lo[at_live], hi[at_live]
    out = np.zeros(live.shape)
    out[at_live] = masses_from_tails(
        first, second, cells[0], p, cells[1], cells[2], ~by_sf, upper=True
    )
    return out


#: Relative allowance on a Chernoff exponent ``n KL``: its few roundings (``xlogy``,
#: ``xlog1py``, a product by n <= 1e9) are below 1e-12 of it where it prunes (n KL >= 10).
CHERNOFF_RTOL = 1e-9


def _chernoff_light(
    counts: FloatArray,
    p: float,
    s_start: FloatArray,
    s_end: FloatArray,
    log_w: FloatArray,
    log_tail: float,
    live: npt.NDArray[np.bool_] | None = None,
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """``(light, log_bound)``: blocks of ``s = T + I`` (T in {0, 1}, ``I ~ Bin(count, p)``)
    whose joint log mass with their row is at most ``log_tail − LIGHT_MARGIN`` by a
    Chernoff bound, and that bound on the block's log mass. A block ``[a, b]`` above the
    mean has mass at most ``P(I >= a − 1)`` (both shifts), below it at most ``P(I <= b)``;
    the bound is raised by :data:`CHERNOFF_RTOL`. :func:`clone_blocks_log_delta` then takes
    them as light blocks (2 per unit of mass) without their exact masses: an upper bound,
    and below ``e^{log_tail}`` in all, as the light blocks were before. Only ``live``
    blocks are bounded (elementwise: the same floats there); the others are not light."""
    counts = np.broadcast_to(counts, s_start.shape)
    live = np.ones(s_start.shape, dtype=bool) if live is None else live
    up = s_start - 1.0 > counts * p  # else the upper tail's bound is 1: only the lower one
    log_bound = np.zeros(s_start.shape)
    upper, lower = live & up, live & ~up
    with np.errstate(invalid="ignore"):
        log_bound[upper] = _log_tail_vec(counts[upper], p, s_start[upper] - 1.0, upper=True)
        log_bound[lower] = _log_tail_vec(counts[lower], p, s_end[lower], upper=False)
    log_bound = np.minimum(log_bound * (1.0 - CHERNOFF_RTOL), 0.0)
    light = live & (log_w[:, None] + log_bound <= log_tail - LIGHT_MARGIN)
    return np.asarray(light), np.asarray(log_bound, dtype=np.float64)


# One variation-ratio evaluation uses up to ~60 cell evaluations at three resolutions, and an ε
# search three evaluations at one tail level: 64 entries thrashed (4.1 s -> 1.7 s for
# ε0 = 16.4, n = 1e9, δ = 1e-9 at 128). A full layout is ~0.3 MB.
@functools.lru_cache(maxsize=256)
def _layout(
    n: int,
    mu: float,
    c_inf: float,
    c_zero: float,
    log_tail: float,
    c_points: int,
    s_points: int,
    eta: float = _ETA,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, float]:
    """ε-independent part (cached): per C block its log weight, per s block its largest s,
    smallest g and log mass (rounded up), the log mass outside each s window, the C tail."""
    big_l = -log_tail

    def width_of(lo: int, size: int) -> int:
        # Blocks only as fine as needed (as in the one-rate evaluator): a relative change η/L
        # of the count, or of g, across a block moves log h by about η. Small windows: every
        # count. A block is taken at its smallest count: δ is non-increasing in C.
        points = min(c_points, max(math.ceil(size / max(1.0, eta * lo / big_l)), 1))
        return -(-size // points) if size > max(points, CLONE_EXACT) else 1

    # fewer clones of either kind is always a valid system
    total, mu_c = effective_rates(c_inf, c_zero)
    counts, log_w, c_tail = window_blocks(n - 1, total, log_tail, width_of)
    rho = (1.0 - mu) * mu_c / (mu * (1.0 - mu_c))
    lo, hi = _window_edges(counts, mu_c, big_l)  # window of I ~ Bin(C, μ')
    first, last = np.maximum(lo, 1.0), hi + 1.0
    g_min = np.minimum((1.0 - rho) * first, (1.0 - rho) * last) + rho * (counts + 1.0)
    spread = (last - first + 1.0) * max(abs(1.0 - rho), 1.0) * big_l
    needed = int(np.ceil(spread / np.maximum(eta * np.minimum(g_min, first), 1e-300)).max())
    s_start, s_end = _split(first, last, min(s_points, max(needed, 1)))
    cc = np.broadcast_to(counts[:, None], s_start.shape)
    live = s_start <= s_end
    # Blocks certainly light (:func:`_chernoff_light`) keep a Chernoff bound on their mass
    # instead of the incomplete betas: a third to two thirds of them.
    light, log_bound = _chernoff_light(cc, mu_c, s_start, s_end, log_w, log_tail, live=live)
    exact = live & ~light
    # s = T + I: I's blocks shifted by one (T = 1) and in place (T = 0)
    mass = mu * _edge_masses(cc, mu_c, s_start, s_end, exact, 1.0)
    mass = mass + (1.0 - mu) * _edge_masses(cc, mu_c, s_start, s_end, exact, 0.0)
    with np.errstate(divide="ignore"):
        log_mass = np.where(exact, np.log(np.minimum(mass, 1.0)), -np.inf)
    log_mass = np.where(light, log_bound, log_mass)
    g_low = np.minimum(g_lower(s_start, cc, rho), g_lower(s_end, cc, rho))
    g_low = np.where(live, g_low, 1.0)
    log_out = np.logaddexp(
        _log_tail_vec(counts, mu_c, lo - 1.0, upper=False),
        _log_tail_vec(counts, mu_c, hi + 1.0, upper=True),
    )
    return log_w, s_end, g_low, log_mass, log_out, c_tail


def split_clone_log_delta(
    n: int,
    kappa: float,
    mu: float,
    c_inf: float,
    c_zero: float,
    eps: float,
    log_tail: float,
    *,
    c_points: int = SPLIT_C_POINTS,
    s_points: int = SPLIT_S_POINTS,
    eta: float = _ETA,
) -> float:
    """Upper bound on ``log δ(ε)`` of the split clone system (module docstring), blocked:
    O(c_points · s_points) incomplete-beta calls whatever n; ``eta`` is the relative change
    of a count (times the tail level) a block may span: a smaller one is tighter where the
    windows are wide (a block is bounded at its worst corner whatever its width). Needs
    ``0 < μ < 1`` and ``c_inf > 0`` (the one-rate system covers the other cases); μ and the
    rates may each be up to :data:`PARAMETER_ULPS` ulps off the values their formulas stand
    for.

    Examples
    --------
    >>> import math
    >>> e = math.exp(1.0)   # Hadamard response / OUE at ε0 = 1 (d >= 4), n = 1000
    >>> log_d = split_clone_log_delta(1000, math.tanh(0.5), 0.5, 1 / (e + 1), 1 / (2 * e), 0.1, -60)
    >>> 1e-7 < math.exp(log_d) < 1e-5
    True
    """
    if not (0.0 < mu < 1.0 and c_inf > 0.0 and c_zero >= 0.0 and c_inf + c_zero <= 1.0):
        raise InvalidParameterError(
            "split clone system needs 0 < mu < 1, c_inf > 0, c_zero >= 0 and "
            f"c_inf + c_zero <= 1, got mu={mu!r}, c_inf={c_inf!r}, c_zero={c_zero!r}",
            parameter="mu" if not 0.0 < mu < 1.0 else "c_inf, c_zero",
            value=mu if not 0.0 < mu < 1.0 else (c_inf, c_zero),
        )
    if kappa < 1.0 and eps >= 2.0 * math.atanh(kappa):  # κ = 1: a fully revealing target
        return -math.inf
    mu = rate_up(mu, ulps=PARAMETER_ULPS)  # module docstring: δ is non-decreasing in μ
    if mu >= 1.0 or c_inf / (c_inf + c_zero) >= 1.0:
        # μ or μ' within rounding of 1 (no room for ρ): the target always informative and
        # the informative clones alone, a valid and slightly looser system
        c_inf = rate_down(c_inf, ulps=2 * PARAMETER_ULPS)
        return clone_noise_log_delta(n, kappa, 1.0, c_inf, eps, log_tail)
    log_w, s_end, g_low, log_mass, log_out, c_tail = _layout(
        n, mu, c_inf, c_zero, log_tail, c_points, s_points, eta
    )
    return clone_blocks_log_delta(
        log_w, log_mass, s_end, g_low, log_out, c_tail, kappa, eps, log_tail
    )
