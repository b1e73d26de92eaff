"""The table of named randomizers behind the mechanism-specific shuffle certificates.

Each :class:`Mechanism` gives the three-point parameters of its neighbouring pairs (the
reduction of :mod:`crowdhide.accounting.shuffle.mechanisms`), the cells its certificate is
the largest over, and the explicit datasets of its lower bound: k-RR, OUE, RAPPOR, subset
selection, OLH, Hadamard response, the piecewise mechanism and Laplace.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle import _krr_fast, _mechanism_lower, _same_two_count
from crowdhide.accounting.shuffle._laplace_split import laplace_split_members
from crowdhide.accounting.shuffle._split_clone import uninformative_share
from crowdhide.accounting.shuffle.generic import (
    shuffle_bound_curve,
)

__all__ = [
    "MECHANISMS",
    "CurveLowerMember",
    "Mechanism",
    "certificate_cells",
    "lower_members",
    "piecewise_reveal_cell",
    "piecewise_reveal_cells",
    "wang_pair_delta",
]

FloatArray = npt.NDArray[np.float64]


#: ``(kappa, mu2, rho, p_plus, p_minus, nu)`` (see :class:`Mechanism`).
Params = tuple[float, float, float, float, float, float]
#: One lower-bound configuration: ``log δ(ε)`` of an explicit dataset, given (n, ε).
LowerMember = Callable[[int, float], float]
#: ``(mu_floor, cells)`` of a revealed-class cell certificate: each cell
#: ``(mu, c_inf, w, gamma)`` (:func:`piecewise_reveal_cells`).
RevealCells = tuple[float, tuple[tuple[float, float, float, float], ...]]


@dataclass(frozen=True, slots=True)
class Mechanism:
    """A randomizer with a three-point certificate (see the module docstring).

    ``params(eps0, d, k)`` returns ``(kappa, mu2, rho, p_plus, p_minus, nu)``: evidence,
    ``β/κ``, clone probability, the target's probabilities of a ``+`` / ``−`` report, and the
    probability that a report of a third-value user falls in ``+`` or ``−``. ``cells(eps0)``
    (optional) replaces the single ``(mu2, rho)`` by cells of pairs, the certificate being
    the largest over them; ``lowers(eps0, d, k)`` (optional) replaces the default lower
    bound (the third-value dataset of ``params``, d >= 3) by its own configurations.
    ``split(eps0, d, k)`` (optional) gives the rates ``(c_inf, c_zero)`` of informative and
    uninformative clones of the split clone system (module docstring); the certificate is
    then the smaller of the two systems. ``variation_capped``: the certificate is also the
    generic variation-ratio one restricted to ``μ <= mu2``
    (:func:`crowdhide.accounting.shuffle.variation_ratio.variation_ratio_log_delta`), for
    mechanisms whose pairs differ in μ; the smaller counts. ``uniform_blanket``: every
    report is uniform on the d values with probability ``d/(e^ε0 + d − 1)``, else the input
    (k-ary randomized response), so the exact blanket ``krr_blanket`` also certifies it
    (used up to n = ``KRR_BLANKET_BEST_MAX_N``, as in ``best``). ``same_regions(eps0, d, k)``
    (optional): regions ``(P_x(R), P_x'(R), P_x(not R))`` of the "all others on x'" lower bounds
    (module docstring), added to the others. ``needs_d``: whether the mechanism has a
    finite domain of size ``d``. ``reveal(eps0, d, k)`` (optional; None where it does not
    apply) gives ``(w, gamma)`` of the revealed-class split system (module docstring of
    :mod:`crowdhide.accounting.shuffle.mechanisms`): the target's probability ``w`` of an
    uninformative report some other input makes less likely (revealed), and the clone rate
    ``gamma`` of the remaining uninformative reports, which no input makes less likely.
    ``reveal_cells(eps0)`` (optional): the revealed-class system for mechanisms whose pairs
    differ (:func:`piecewise_reveal_cells`), the certificate being its largest cell.
    ``split_cells(n, eps0)`` (optional): the ``log δ`` members of a split clone cell
    certificate for mechanisms whose pairs differ (Laplace:
    :func:`crowdhide.accounting.shuffle._laplace_split.laplace_split_members`), the
    certificate being the largest member; empty where it is not evaluated.
    """

    name: str
    citation: str
    params: Callable[[float, int, int], Params]
    needs_k: bool = False
    needs_d: bool = True
    cells: Callable[[float], tuple[tuple[float, float], ...]] | None = None
    lowers: Callable[[float, int, int], tuple[LowerMember, ...]] | None = None
    split: Callable[[float, int, int], tuple[float, float]] | None = None
    variation_capped: bool = False
    uniform_blanket: bool = False
    same_regions: Callable[[float, int, int], tuple[tuple[float, float, float], ...]] | None = None
    reveal: Callable[[float, int, int], tuple[float, float] | None] | None = None
    reveal_cells: Callable[[float], RevealCells] | None = None
    #: the lower member solved first at δ >= 1e-250 (None: the last; section 1w)
    lower_first: int | None = None
    split_cells: Callable[[int, float], list[Callable[[float, float], float]]] | None = None


class CurveLowerMember:
    """A lower member backed by a whole lower-bound curve (``krr_lower`` of d-ary randomized
    response: the mechanism ``krr`` is that randomizer, so it gets the same lower bound, with
    the canonical datasets' exact curves up to n = 1000). Besides ``log δ(ε)`` it answers
    ε(δ) with the curve's own search, which starts from its O(1) member's root and keeps its
    windows at one tail level (issue 32: ε0 = 8, n = 1e3, δ = 1e-6 took 27 evaluations of
    the O(n) datasets, each at a new tail level, through a generic root search)."""

    def __init__(self, eps0: float, d: int) -> None:
        self.eps0, self.d = eps0, d

    def __call__(self, n: int, eps: float) -> float:
        return _krr_lower(self.eps0, self.d, n).log_delta(eps)

    def epsilon(self, n: int, delta: float) -> float:
        """An ε the true curve needs at least (the curve's ε(δ) is from the lower side)."""
        return _krr_lower(self.eps0, self.d, n).epsilon(delta)


@functools.lru_cache(maxsize=16)
def _krr_lower(eps0: float, d: int, n: int) -> PrivacyCurve:
    """The ``krr_lower`` curve, built once per query rather than once per evaluated ε."""
    return shuffle_bound_curve(bound="krr_lower", eps0=eps0, n=n, k=d)


def _third(p_plus: float, p_minus: float, nu: float, eps0: float) -> LowerMember:
    """The lower bound of one "all others on z" configuration (module docstring)."""

    def member(n: int, eps: float) -> float:
        return _krr_fast.third_marginal_lower_log_delta(n, p_plus, p_minus, nu, eps0, eps)

    return member


def _same(p_target: float, q: float, p_rest: float) -> LowerMember:
    """The lower bound of one "all others on x'" region (module docstring)."""

    def member(n: int, eps: float) -> float:
        return _krr_fast.same_value_lower_log_delta(n, p_target, q, eps, p_rest=p_rest)

    return member


def _two_count(nu: float, eps0: float, wins_below: float) -> LowerMember:
    """OUE's or RAPPOR's "all others on x'" through both informative counts (exact δ of
    that dataset; ``_same_two_count``, docs/proofs/mechanism-certificates.md section 1g).
    Beyond n = 1e4 it beat the third-value regions by more than 0.1 % in ε only at
    ε0 <= ``wins_below`` (measured: RAPPOR 1.25; OUE never, 0.0); elsewhere there it answers
    −inf (no bound, valid) so a query does not pay for its evaluations."""

    def member(n: int, eps: float) -> float:
        if n > 10**4 and eps0 > wins_below:
            return -math.inf
        return _same_two_count.two_count_same_lower_log_delta(n, nu, eps0, eps)

    return member


def _krr(eps0: float, d: int, k: int) -> Params:
    e = math.exp(eps0)
    p, q = e / (e + d - 1.0), 1.0 / (e + d - 1.0)
    return kappa_up(eps0), p + q, 2.0 / (e + 1.0), p, q, 2.0 * q


def _krr_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    if d >= 3:  # d-ary randomized response itself: krr_lower (it holds the third value)
        return (CurveLowerMember(eps0, d),)
    # d = 2 is binary RR: no third value; all others on x' is the canonical dataset
    return (lambda n, eps: _krr_fast.binary_same_lower_log_delta(n, eps0, eps),)


def _oue(eps0: float, d: int, k: int) -> Params:
    q = 1.0 / (math.exp(eps0) + 1.0)
    # target on x: bits (x, x') = (1, 0) w.p. (1−q)/2, (0, 1) w.p. q/2; third value: q(1−q) each
    rho = math.exp(-eps0)
    return kappa_up(eps0), 0.5, rho, 0.5 * (1.0 - q), 0.5 * q, 2.0 * q * (1.0 - q)


def _rappor(eps0: float, d: int, k: int) -> Params:
    t = math.exp(eps0 / 2.0)
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)
    mu2 = keep * keep + flip * flip
    rho = math.exp(-eps0)
    return kappa_up(eps0), mu2, rho, keep * keep, flip * flip, 2.0 * keep * flip


def _subset(eps0: float, d: int, k: int) -> Params:
    e = math.exp(eps0)
    z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
    one = math.comb(d - 2, k - 1)  # sets with x and not x'
    rho = 1.0 / e if k >= 2 else 2.0 / (e + 1.0)
    # third value v: sets with exactly one of x, x' have weight e if v in S else 1
    v_in, v_out = math.comb(d - 3, k - 2) if k >= 2 else 0, math.comb(d - 3, k - 1)
    nu = 2.0 * (v_in * e + v_out) / z
    return kappa_up(eps0), one * (e + 1.0) / z, rho, one * e / z, one / z, nu


def _oue_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    two = _two_count(0.5, eps0, 0.0)  # needs no third value
    if d < 3:
        return (two,)
    _, _, _, p_plus, p_minus, nu = _oue(eps0, d, k)
    f = 1.0 / (math.exp(eps0) + 1.0)  # refined: the bit of z unset as well
    refined = _third(0.5 * (1.0 - f) ** 2, 0.5 * f * (1.0 - f), f * (1.0 - f), eps0)
    return (_third(p_plus, p_minus, nu, eps0), refined, two)


def _rappor_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    two = _two_count(_same_two_count.rappor_same_nu(eps0), eps0, 1.25)  # no third value
    if d < 3:
        return (two,)
    _, _, _, p_plus, p_minus, nu = _rappor(eps0, d, k)
    t = math.exp(eps0 / 2.0)
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)  # refined: the bit of z unset as well
    refined = _third(keep**3, keep * flip * flip, 2.0 * keep * flip * flip, eps0)
    return (_third(p_plus, p_minus, nu, eps0), refined, two)


def _subset_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    if d < 3:
        return ()
    _, _, _, p_plus, p_minus, nu = _subset(eps0, d, k)
    members = [_third(p_plus, p_minus, nu, eps0)]
    if d - 3 >= k - 1:  # refined: S holds x, not x' and not z
        e = math.exp(eps0)
        z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
        c = math.comb(d - 3, k - 1)
        members.append(_third(c * e / z, c / z, 2.0 * c / z, eps0))
    members.append(_mechanism_lower.subset_third_mean(eps0, d, k))  # full weights, Jensen
    return tuple(members)


def _olh(eps0: float, d: int, k: int) -> Params:
    e, g = math.exp(eps0), float(d)
    p, q = e / (e + g - 1.0), 1.0 / (e + g - 1.0)
    apart = 1.0 - 1.0 / g  # P(h(x) != h(x'))
    # third value v: its reported bucket is h(x) or h(x') (apart) w.p. 2q, or p+q if h(v) hits
    nu = apart * ((1.0 - 2.0 / g) * 2.0 * q + (2.0 / g) * (p + q))
    return kappa_up(eps0), apart * (p + q), 1.0 / e, apart * p, apart * q, nu


def _olh_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    # the input domain has a third value whatever the number of buckets d
    _, _, _, p_plus, p_minus, nu = _olh(eps0, d, k)
    e, g = math.exp(eps0), float(d)
    # refined: the report y = h(x) with y != h(x') and y != h(z) (independent hash values)
    apart = (1.0 - 1.0 / g) ** 2
    p, q = e / (e + g - 1.0), 1.0 / (e + g - 1.0)
    refined = _third(apart * p, apart * q, 2.0 * apart * q, eps0)
    jensen = _mechanism_lower.olh_third_mean(eps0, d)  # full weights, Jensen
    return (_third(p_plus, p_minus, nu, eps0), refined, jensen)


def _hadamard(eps0: float, d: int, k: int) -> Params:
    e = math.exp(eps0)
    # d >= 4: some third row is independent of the pair's rows (blanket ratio 1/(2e))
    rho = 1.0 / e if d >= 4 else 2.0 / (e + 1.0)
    return kappa_up(eps0), 0.5, rho, e / (2.0 * (e + 1.0)), 1.0 / (2.0 * (e + 1.0)), 0.5


def _hadamard_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    # nu = 1/(e + 1) first (``lower_first=0``): it was the larger in all 60 cells of the
    # table, and solved second both members were root-searched (issue 32; section 1w)
    _, _, _, p_plus, p_minus, _ = _hadamard(eps0, d, k)
    nus = ([1.0 / (math.exp(eps0) + 1.0)] if d >= 3 else []) + ([0.5] if d >= 4 else [])
    return tuple(_third(p_plus, p_minus, nu, eps0) for nu in nus)


def _piecewise(eps0: float, d: int, k: int) -> Params:
    t = math.exp(eps0 / 2.0)
    mu2 = (t * t + 1.0) / (t * (t + 1.0))
    p_plus, p_minus = t / (t + 1.0), 1.0 / (t * (t + 1.0))
    return kappa_up(eps0), mu2, math.exp(-eps0), p_plus, p_minus, math.nan


def _piecewise_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    dens = t * (t - 1.0) / (2.0 * (t + 1.0))  # density on the high interval
    low = dens / (t * t)
    half = (big_c - 1.0) / 2.0  # the high interval of z = 0 is [−half, half]
    configs: dict[tuple[float, float, float], None] = {}  # ordered, without repeats
    for a in (0.25, 0.5, 0.75, 1.0):
        length = min(big_c - 1.0, (big_c + 1.0) * a)  # the informative set of (−a, a)
        start = -(big_c + 1.0) * a / 2.0 - half  # l(−a): it is [start, start + length)
        overlap = max(0.0, min(start + length, half) - max(start, -half))
        nu = 2.0 * (low * length + (dens - low) * overlap)
        # at large ε0 several pairs give the same counts (length capped at C − 1): one
        # member each (issue 32: the repeats cost a full root search apiece, 20-35
        # evaluations, and can only return the same crossing)
        configs[(dens * length, low * length, nu)] = None
    members = [_third(p_plus, p_minus, nu, eps0) for p_plus, p_minus, nu in configs]
    # refined (pair (−1, 1)): the informative set without z's high interval, where the
    # others' density is p/e too, so the count no longer merges likelihood weights e and 1
    # (1.158x -> 1.114x of the certificate at ε0 = 1, n = 1e6). Below ε0 = ln 4 only.
    clean = (big_c - 1.0) - max(0.0, half - 1.0)  # [−C, −1] minus [−half, half]
    if half > 1.0:
        members.append(_third(dens * clean, low * clean, 2.0 * low * clean, eps0))
    return tuple(members)


def _laplace(eps0: float, d: int, k: int) -> Params:
    beta = -math.expm1(-eps0 / 2.0)  # Δ = 2
    kappa = kappa_up(eps0)
    return kappa, beta / kappa, math.exp(-eps0), math.nan, math.nan, math.nan


#: Number of cells of the distance Δ between the pair's inputs (Laplace).
LAPLACE_CELLS = 12


def _laplace_cells(eps0: float) -> tuple[tuple[float, float], ...]:
    kappa = kappa_up(eps0)
    # finer towards Δ = 2, where the largest cell certificate lies
    edges = [2.0 * (1.0 - (1.0 - i / LAPLACE_CELLS) ** 2) for i in range(LAPLACE_CELLS + 1)]
    edges[-1] = 2.0
    cells = []
    for lo, hi in itertools.pairwise(edges):
        beta = -math.expm1(-hi * eps0 / 4.0)
        r = math.exp(-eps0) / (1.0 + math.exp(-lo * eps0 / 2.0))
        cells.append((min(beta / kappa, 1.0), 2.0 * r))
    return tuple(cells)


def _laplace_lowers(eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    b = 2.0 / eps0
    members = []
    for c in (0.25, 0.5, 1.0, 1.0 + b / 2.0, 1.0 + b, 1.0 + 2.0 * b):
        # pair (−1, 1), others on 0, regions y < −c ("+") and y > c ("−")
        inside = c < 1.0  # −c > −1: most of the target's mass under x = −1 lies below −c
        p_plus = 1.0 - 0.5 * math.exp((c - 1.0) / b) if inside else 0.5 * math.exp((1.0 - c) / b)
        p_minus = 0.5 * math.exp(-(c + 1.0) / b)
        members.append(_third(p_plus, p_minus, math.exp(-c / b), eps0))
    nu, log_ratio = laplace_two_region(laplace_two_count_threshold(eps0), b)
    members.append(_two_count(nu, log_ratio, math.inf))  # others on +1, both tails counted
    return tuple(members)


def laplace_two_region(c: float, b: float) -> tuple[float, float]:
    """``(ν, log r)`` of the regions ``y < −c`` and ``y > c`` (c >= 0) for the pair (−1, 1)
    with every other user on +1, Laplace noise of scale b (docs/proofs/mechanism-certificates.md,
    section 1h). By reflection ``P_{+1}(y > c) = P_{−1}(y < −c) = p`` and ``P_{+1}(y < −c) =
    P_{−1}(y > c) = q``, so a report's likelihood ratio seen through the regions is r = p/q,
    1/r and 1 (the middle has mass 1 − p − q under both): OUE's two-count law with e^{ε0}
    replaced by r, and ``ν = p + q`` the chance that a +1-user's report falls in either."""
    q = 0.5 * math.exp(-(1.0 + c) / b)
    if c < 1.0:  # −c > −1: most of P_{−1} lies below −c
        p = -0.5 * math.expm1((c - 1.0) / b) + 0.5
        log_p = math.log(p)
    else:
        p, log_p = 0.5 * math.exp((1.0 - c) / b), (1.0 - c) / b - math.log(2.0)
    return p + q, log_p + (1.0 + c) / b + math.log(2.0)


@functools.lru_cache(maxsize=64)  # a grid search of ε0 alone, asked per query
def laplace_two_count_threshold(eps0: float) -> float:
    """The c in ``[0, 3]`` (step 1/200) maximizing the two regions' large-n signal
    ``(p − q)²(1/p + 1/q)`` (the χ² of the counts against a +1-user's law; any c gives a valid
    lower bound). Measured 0.51, 0.55, 0.66, 0.80, 0.90 at ε0 = 0.5, 1, 2, 4, 8.

    Examples
    --------
    >>> laplace_two_count_threshold(4.0)
    0.8
    """
    b = 2.0 / eps0

    def signal(c: float) -> float:
        nu, log_ratio = laplace_two_region(c, b)
        q = nu / (1.0 + math.exp(log_ratio))
        p = nu - q
        return (p - q) ** 2 * (1.0 / p + 1.0 / q)

    return max((i / 200.0 for i in range(601)), key=signal)


def _oue_same(eps0: float, d: int, k: int) -> tuple[tuple[float, float, float], ...]:
    f = 1.0 / (math.exp(eps0) + 1.0)  # bit x set and bit x' unset
    return ((0.5 * (1.0 - f), 0.5 * f, 0.5 * (1.0 + f)),)


def _rappor_same(eps0: float, d: int, k: int) -> tuple[tuple[float, float, float], ...]:
    t = math.exp(eps0 / 2.0)  # bit x set and bit x' unset: both kept, or both flipped
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)
    return ((keep**2, flip**2, flip * (1.0 + keep)),)


def _subset_same(eps0: float, d: int, k: int) -> tuple[tuple[float, float, float], ...]:
    e = math.exp(eps0)  # S holds x but not x': weight e under x, 1 under x'
    z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
    one = math.comb(d - 2, k - 1)
    # not (x in S and x' not in S): S holds both (weight e) or not x (weight 1)
    both = math.comb(d - 2, k - 2) if k >= 2 else 0
    rest = (both * e + math.comb(d - 1, k)) / z
    return ((one * e / z, one / z, rest),)


def _olh_same(eps0: float, d: int, k: int) -> tuple[tuple[float, float, float], ...]:
    e, g = math.exp(eps0), float(d)  # h(x) != h(x') and the report is h(x)
    denom = e + g - 1.0
    return (((1.0 - 1.0 / g) * e / denom, (1.0 - 1.0 / g) / denom, (e / g + g - 1.0) / denom),)


#: Thresholds c of the Laplace "others on x'" regions ``y < −c`` (with the proxy's best c).
LAPLACE_SAME_THRESHOLDS = (0.25, 0.5, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)


def _laplace_region(c: float, b: float) -> tuple[float, float, float]:
    """``(P_{−1}(y < −c), P_{+1}(y < −c), P_{−1}(y >= −c))`` of Laplace noise of scale b,
    ``0 <= c <= 1`` (the last without cancellation)."""
    rest = 0.5 * math.exp((c - 1.0) / b)
    return 1.0 - rest, 0.5 * math.exp(-(1.0 + c) / b), rest


@functools.lru_cache(maxsize=64)  # a grid search of ε0 alone, asked per query
def _laplace_proxy_threshold(eps0: float) -> float:
    """The c in ``[0, 1]`` (a grid of step 1/200) maximizing the region count's
    large-n signal-to-noise ratio ``(p − q)²/(q(1 − q))``: the Gaussian limit of its δ is
    a function of that ratio alone. Any c gives a valid lower bound; this one is the
    measured best at n >= 1e6 (0.42 at ε0 = 1, 0.8 at ε0 = 4, 0.9 at ε0 = 8).

    Examples
    --------
    >>> _laplace_proxy_threshold(4.0)
    0.8
    """
    b = 2.0 / eps0

    def snr(c: float) -> float:
        p, q, _ = _laplace_region(c, b)
        return (p - q) ** 2 / (q * (1.0 - q))

    return max((i / 200.0 for i in range(201)), key=snr)


def _laplace_same(eps0: float, d: int, k: int) -> tuple[tuple[float, float, float], ...]:
    b = 2.0 / eps0  # pair (−1, 1), others on +1, region y < −c
    cs = sorted({*LAPLACE_SAME_THRESHOLDS, _laplace_proxy_threshold(eps0)})
    return tuple(_laplace_region(c, b) for c in cs)


def _split_rates(
    mu: float, beta: float, inf_ratio: float, zero_ratio: float
) -> tuple[float, float]:
    """``(c_inf, c_zero) = (2β · inf_inf, (1 − μ) · inf_zero)``: the informative blanket ratio
    ``inf R(v)(y)/|P0(y) − P1(y)|`` over informative y and the uninformative one
    ``inf R(v)(y)/π(y)`` over uninformative y (module docstring)."""
    return 2.0 * beta * inf_ratio, uninformative_share(mu) * zero_ratio


def _three_point_split(
    params: Callable[[float, int, int], Params], zero_ratio: Callable[[float, int, int], float]
) -> Callable[[float, int, int], tuple[float, float]]:
    """Split rates of a three-valued mechanism: at an informative report the densities are
    ``(e, 1)`` times a common factor and every other input's is at least that factor, so the
    informative ratio is ``1/(e − 1)``; ``zero_ratio`` is the mechanism's uninformative one."""

    def split(eps0: float, d: int, k: int) -> tuple[float, float]:
        kappa, mu2, *_ = params(eps0, d, k)
        return _split_rates(mu2, kappa * mu2, 1.0 / math.expm1(eps0), zero_ratio(eps0, d, k))

    return split


def _inv_e(eps0: float, d: int, k: int) -> float:
    return math.exp(-eps0)


def _one(eps0: float, d: int, k: int) -> float:
    return 1.0


def _subset_zero(eps0: float, d: int, k: int) -> float:
    # k >= 2: a set with x and x' but not v (ratio 1/e); k = 1: no set holds both
    return math.exp(-eps0) if k >= 2 else 1.0


def _hadamard_zero(eps0: float, d: int, k: int) -> float:
    # d >= 4: y in S_x and S_x' outside S_v; d <= 3 the third row is their sum (ratio 1)
    return math.exp(-eps0) if d >= 4 else 1.0


def _oue_reveal(eps0: float, d: int, k: int) -> tuple[float, float] | None:
    f = 1.0 / (math.exp(eps0) + 1.0)
    # bits (x, x') = (1, 1): w.p. f/2, ratio 1/e (bit of v unset); (0, 0): (1 − f)/2, ratio 1
    return 0.5 * f, 0.5 * (1.0 - f)


def _rappor_reveal(eps0: float, d: int, k: int) -> tuple[float, float] | None:
    t = math.exp(eps0 / 2.0)
    both = t / (t + 1.0) ** 2  # bits (1, 1) (ratio 1/e) and (0, 0) (ratio 1): keep · flip each
    return both, both


def _subset_reveal(eps0: float, d: int, k: int) -> tuple[float, float] | None:
    both, neither = math.comb(d - 2, k - 2) if k >= 2 else 0, math.comb(d - 2, k)
    if both == 0 or neither == 0:  # nothing to reveal (k = 1), or nothing left to hide
        return None
    e = math.exp(eps0)
    z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
    # S holds x and x' (weight e, ratio 1/e) or neither (weight 1 for every input, ratio 1)
    return both * e / z, neither / z


def _olh_reveal(eps0: float, d: int, k: int) -> tuple[float, float] | None:
    e, g = math.exp(eps0), float(d)
    # revealed: h(x) = h(x') = y (ratio 1/e); hidden, ratio 1: h(x) = h(x') != y, or
    # h(x) != h(x') and y is neither
    hidden = ((g - 1.0) / g + (1.0 - 1.0 / g) * (g - 2.0)) / (e + g - 1.0)
    return e / (g * (e + g - 1.0)), hidden


def _hadamard_reveal(eps0: float, d: int, k: int) -> tuple[float, float] | None:
    if d < 4:  # the uninformative ratio is already 1
        return None
    e = math.exp(eps0)
    # K/4 columns in S_x and S_x' (density 2e/((e+1)K), ratio 1/e), K/4 in neither (ratio 1)
    return e / (2.0 * (e + 1.0)), 1.0 / (2.0 * (e + 1.0))


#: Cells of the piecewise mechanism's informative length L (:func:`piecewise_reveal_cells`):
#: halvings of ``C − 1`` down to ``2^-PIECEWISE_HALVINGS (C − 1)``, then a geometric grid
#: of this ratio from ``(C − 1)/8`` up to ``C − 1`` (where the largest cell lies).
PIECEWISE_HALVINGS = 40
PIECEWISE_FINE_RATIO = 1.15


def piecewise_reveal_cells(eps0: float) -> RevealCells:
    """The revealed-class split system of the piecewise mechanism, one cell per range of the
    pair's informative length L (docs/proofs/mechanism-certificates.md, section 1b).

    A pair x < x' has ``L = min(C − 1, (C + 1)(x' − x)/2)`` on each side of its informative
    reports (density p under one input, p/e under the other, every input >= p/e there):
    ``μ = (p + p/e) L``, informative clones ``c_inf = 2β/(e − 1) = 2 (p/e) L``. Its
    uninformative reports are revealed where both intervals are high (``w = p (C − 1 − L)``,
    ratio 1/e to the lowest input) and hidden where both are low (``γ = (p/e)(C + 1 − L)``,
    ratio 1). In L, ``1 − w``, ``μ/(1 − w)`` and ``c_inf`` grow and γ falls, so a cell
    ``[L_lo, L_hi]`` is bounded by ``(μ(L_hi), c_inf(L_lo), w(L_hi), γ(L_hi))`` (δ_split is
    non-decreasing in μ, non-increasing in the rates). Returns ``(mu_floor, cells)``: pairs
    with ``L`` below the first cell have ``μ <= mu_floor`` (one report's δ bounds them).

    Examples
    --------
    >>> floor, cells = piecewise_reveal_cells(8.0)
    >>> floor < 1e-12 and all(0.0 < mu < 1.0 for mu, _, _, _ in cells)
    True
    """
    t = math.exp(eps0 / 2.0)
    full = (t + 1.0) / (t - 1.0) - 1.0  # C − 1, the largest L
    fracs = [2.0**-k for k in range(PIECEWISE_HALVINGS, 3, -1)]
    while fracs[-1] * PIECEWISE_FINE_RATIO < 1.0:
        fracs.append(fracs[-1] * PIECEWISE_FINE_RATIO)
    edges = [full * f for f in fracs] + [full]
    cells = tuple(piecewise_reveal_cell(eps0, lo, hi) for lo, hi in itertools.pairwise(edges))
    return piecewise_reveal_cell(eps0, 0.0, edges[0])[0], cells


def piecewise_reveal_cell(eps0: float, lo: float, hi: float) -> tuple[float, float, float, float]:
    """``(μ(hi), c_inf(lo), w(hi), γ(hi))`` of the piecewise pairs with informative length
    L in ``[lo, hi]`` (:func:`piecewise_reveal_cells`); ``lo = hi = L``: one pair's own."""
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    dens = t * (t - 1.0) / (2.0 * (t + 1.0))  # p; the low density is p/e
    low = dens / (t * t)
    return (dens + low) * hi, 2.0 * low * lo, dens * (big_c - 1.0 - hi), low * (big_c + 1.0 - hi)


_HR = "Hadamard response (Acharya, Sun, Zhang, AISTATS 2019)"
_PM = "piecewise mechanism (Wang et al., ICDE 2019)"
#: The mechanisms with a specific certificate (``--mechanism NAME``).
MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(
            "krr", "k-ary randomized response (Warner 1965; Kairouz et al. 2016)", _krr,
            lowers=_krr_lowers, split=_three_point_split(_krr, _one), uniform_blanket=True,
        ),
        Mechanism(
            "oue", "optimized unary encoding (Wang et al., USENIX Security 2017)", _oue,
            lowers=_oue_lowers, split=_three_point_split(_oue, _inv_e), same_regions=_oue_same,
            reveal=_oue_reveal,
        ),
        Mechanism(
            "rappor", "basic one-time RAPPOR (Erlingsson et al., CCS 2014)", _rappor,
            lowers=_rappor_lowers, split=_three_point_split(_rappor, _inv_e),
            same_regions=_rappor_same, reveal=_rappor_reveal,
        ),
        Mechanism(
            "subset", "k-subset selection (Ye & Barg 2018; Wang et al. 2016)", _subset, True,
            lowers=_subset_lowers, split=_three_point_split(_subset, _subset_zero),
            same_regions=_subset_same, reveal=_subset_reveal,
        ),
        Mechanism(
            "olh", "local hashing (Wang et al., USENIX Security 2017)", _olh,
            lowers=_olh_lowers, split=_three_point_split(_olh, _inv_e),
            same_regions=_olh_same, reveal=_olh_reveal,
        ),
        Mechanism(
            "hadamard", _HR, _hadamard, lowers=_hadamard_lowers, lower_first=0,
            split=_three_point_split(_hadamard, _hadamard_zero), reveal=_hadamard_reveal,
        ),
        Mechanism(
            "piecewise", _PM, _piecewise, needs_d=False, lowers=_piecewise_lowers,
            variation_capped=True, reveal_cells=piecewise_reveal_cells,
        ),
        Mechanism(
            "laplace", "Laplace noise of scale 2/eps0 on [-1, 1] (Dwork et al. 2006)", _laplace,
            needs_d=False, cells=_laplace_cells, lowers=_laplace_lowers,
            same_regions=_laplace_same, split_cells=laplace_split_members,
        ),
    )
}  # fmt: skip


def certificate_cells(
    mechanism: Mechanism, eps0: float, d: int, k: int
) -> tuple[tuple[float, float], ...]:
    """The ``(mu2, rho)`` cells whose largest clone-system δ is the certificate."""
    if mechanism.cells is not None:
        return mechanism.cells(eps0)
    _, mu2, rho, *_ = mechanism.params(eps0, d, k)
    return ((mu2, rho),)


def lower_members(mechanism: Mechanism, eps0: float, d: int, k: int) -> tuple[LowerMember, ...]:
    """The explicit-dataset lower bounds of a mechanism (empty: none applies): the "others
    on a third value" configurations and the "others on x'" regions."""
    regions = mechanism.same_regions(eps0, d, k) if mechanism.same_regions is not None else ()
    same = tuple(_same(p, q, rest) for p, q, rest in regions)
    if mechanism.lowers is not None:
        return mechanism.lowers(eps0, d, k) + same
    if d < 3:  # no third value z
        return same
    _, _, _, p_plus, p_minus, nu = mechanism.params(eps0, d, k)
    return (_third(p_plus, p_minus, nu, eps0), *same)


def wang_pair_delta(eps: float, p: float, beta: float, q: float, n: int) -> float:
    """δ(ε) of the pair Wang et al. (VLDB 2024) bound n shuffled reports with, from their
    variation-ratio parameters ``(p, β, q)`` — **for comparison only, not a certificate**.

    With ``α = β/(p − 1)`` and ``r = αp/q``, each of the n − 1 others is a ``+`` or ``−``
    clone with probability r each; the target adds a ``+`` with probability ``αp``, a
    ``−`` with ``α`` (swapped under x') and nothing otherwise; the observation is the two
    counts. For ``β < (p − 1)/(p + 1)`` the target's "nothing" is thereby hidden among
    *all* non-clone reports, which the actual reports do not allow: the exact shuffled δ of
    OUE, RAPPOR, k-subset, local hashing, the piecewise mechanism and Laplace exceeds this
    one (docs/proofs/mechanism-certificates.md; tests/accounting/test_wang_parameters.py).
    At ``β = (p − 1)/(p + 1)``, ``p = q = e^ε0`` it is the FMT23 clone pair. Floating point,
    tails below 1e-300 dropped.

    Examples
    --------
    >>> e = math.exp(4.0)   # OUE at eps0 = 4 (beta = kappa/2), n = 1000
    >>> 1e-6 < wang_pair_delta(0.93, e, (e - 1) / (2 * (e + 1)), e, 1000) < 1.1e-6
    True
    """
    from scipy import stats  # only the benchmark and the tests ask for it

    alpha = beta / (p - 1.0)
    r = alpha * p / q
    a_plus, a_minus, a_none = alpha * p, alpha, 1.0 - alpha - alpha * p
    e = math.exp(eps)
    c = np.arange(n)  # clones among the n − 1 others
    weight = stats.binom.pmf(c, n - 1, 2.0 * r)
    keep = weight > 1e-300
    c, weight = c[keep], weight[keep]

    def above(total: FloatArray, shift: int) -> FloatArray:
        # P(the output's + count A + shift lies where the likelihood ratio exceeds e^ε),
        # A ~ Bin(c, 1/2): the numerator minus e^ε times the denominator is linear in it
        rest = a_none * (n - total) / (1.0 - 2.0 * r)
        slope = (a_plus - a_minus) * (1.0 + e) / r
        offset = total * (a_minus - e * a_plus) / r + rest * (1.0 - e)
        first = np.floor(-offset / slope) + 1.0 - shift
        return np.asarray(stats.binom.sf(first - 1.0, c, 0.5), dtype=np.float64)

    plus, minus, none = above(c + 1.0, 1), above(c + 1.0, 0), above(c * 1.0, 0)
    d0 = a_plus * plus + a_minus * minus + a_none * none
    d1 = a_minus * plus + a_plus * minus + a_none * none
    return max(float(np.sum(weight * (d0 - e * d1))), 0.0)
