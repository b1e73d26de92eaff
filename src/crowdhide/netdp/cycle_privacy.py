"""Privacy of one cycle of a hidden token walk on the complete graph (Cyffers & Bellet 2022).

Cut a walk at the receipts of an observer v: a cycle with ``r`` intermediate contributions by
other users hides user u's participation, each intermediate holder being u with probability
``p = 1/(n − c)``. What v learns about u from one cycle is the cycle aggregate, u appearing
``J ~ B(r, p)`` times.

Per-cycle certificate (subsampling with replacement, Balle, Barthe, Gaboardi 2018, Thm 10,
*including* the group-privacy terms the paper drops): with ``η = 1 − (1 − p)^r`` and
``e^{ε'} = 1 + η (e^ε − 1)``, ``δ_cycle(ε') <= Σ_{j>=1} P(J = j) δ_{M,j}(ε)``, where
``δ_{M,j}`` is the exact privacy profile of the cycle aggregate with j of u's records changed:
for Gaussian sums the Gaussian profile (:mod:`crowdhide.accounting.gaussian`) with sensitivity
``jΔ`` and noise ``σ √r``; for k-RR histograms the exact profile of j independent k-RR outputs
(shuffling inside the cycle is not credited — a valid but looser bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.accounting.binomial_tails import betainc_error, trusted_tail
from crowdhide.accounting.gaussian import gaussian_epsilon, gaussian_log_delta
from crowdhide.accounting.logmath import log1mexp, log_terms_error
from crowdhide.accounting.roots import safe_root
from crowdhide.errors import InvalidParameterError

__all__ = [
    "CycleMechanism",
    "cycle_epsilons",
    "cycle_log_delta",
    "cycle_profile",
    "krr_group_log_delta",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def krr_group_log_delta(epsilon: float, *, eps0: float, domain_size: int, group: int) -> float:
    """Exact log δ(ε) of ``group`` independent k-RR outputs, inputs all changed (a → b).

    The privacy loss is ``ε0 (A − B)`` with ``(A, B, rest)`` multinomial with probabilities
    ``(p, q, 1 − p − q)`` (p = keep, q = other), so δ is a finite sum (exact, log space).

    Examples
    --------
    >>> round(math.exp(krr_group_log_delta(0.0, eps0=math.log(3), domain_size=2, group=1)), 6)
    0.5
    """
    j = check_int("group", group, low=0)
    if j == 0:
        return -math.inf
    e0 = float(eps0)
    size = int(domain_size)
    log_norm = math.log(math.exp(e0) + size - 1)
    lp, lq = e0 - log_norm, -log_norm
    lrest = math.log(max(size - 2, 0)) - log_norm if size > 2 else -math.inf
    a = np.arange(j + 1)[:, None]
    b = np.arange(j + 1)[None, :]
    valid = a + b <= j
    rest = np.where(valid, j - a - b, 0)
    with np.errstate(invalid="ignore"):
        log_mult = (
            special.gammaln(j + 1)
            - special.gammaln(a + 1)
            - special.gammaln(b + 1)
            - special.gammaln(rest + 1)
        )
        log_p = log_mult + a * lp + b * lq + np.where(rest > 0, rest * lrest, 0.0)
    loss = e0 * (a - b)
    active = valid & (loss > epsilon)
    if not np.any(active):
        return -math.inf
    terms = log_p[active] + log1mexp(epsilon - loss[active])
    return float(special.logsumexp(terms))


def _krr_cycle_profile(
    eps_base: FloatArray, mechanism: CycleMechanism, j: IntArray, logw: FloatArray, tail: float
) -> FloatArray:
    """Σ_j w_j δ_{M,j}(ε) for k-RR, via the pmf of D = #a − #b (loss ε0 D) mixed over j."""
    e0, size = mechanism.eps0, mechanism.domain_size
    norm = math.exp(e0) + size - 1
    p_a, p_b = math.exp(e0) / norm, 1.0 / norm
    p_rest = 1.0 - p_a - p_b
    jmax = int(j.max()) if j.size else 0
    weights = np.zeros(jmax + 1)
    weights[j] = np.exp(logw)
    pmf = np.zeros(2 * jmax + 1)  # D in [−jmax, jmax], index D + jmax
    pmf[jmax] = 1.0
    mix = np.zeros_like(pmf)
    for count in range(1, jmax + 1):
        nxt = pmf * p_rest
        nxt[1:] += pmf[:-1] * p_a
        nxt[:-1] += pmf[1:] * p_b
        pmf = nxt
        if weights[count] > 0:
            mix += weights[count] * pmf
    loss = e0 * np.arange(-jmax, jmax + 1)
    act = loss[None, :] > eps_base[:, None]
    terms = mix[None, :] * -np.expm1(np.minimum(eps_base[:, None] - loss[None, :], 0.0))
    value = np.sum(np.where(act, terms, 0.0), axis=1) + tail
    return np.asarray(np.minimum(value, 1.0), dtype=np.float64)


@dataclass(frozen=True)
class CycleMechanism:
    """What one contribution is, for per-cycle accounting.

    Attributes
    ----------
    kind
        ``"gaussian"`` (real sum, Alg. 3) or ``"krr"`` (histogram, Alg. 5).
    noise_multiplier
        Gaussian: σ/Δ (noise std per contribution over the sensitivity).
    eps0
        k-RR: local ε0.
    domain_size
        k-RR: L.
    """

    kind: Literal["gaussian", "krr"]
    noise_multiplier: float = 0.0
    eps0: float = 0.0
    domain_size: int = 2

    def __post_init__(self) -> None:
        if self.kind == "gaussian":
            check_real("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
        elif self.kind == "krr":
            check_real("eps0", self.eps0, low=0.0, low_open=True)
            check_int("domain_size", self.domain_size, low=2)
        else:
            raise InvalidParameterError(f"kind must be 'gaussian' or 'krr', got {self.kind!r}")

    def local_epsilon(self, *, contributions: int, delta: float) -> float:
        """Exact local-DP ε of ``contributions`` contributions of one user at δ."""
        c = check_int("contributions", contributions, low=0)
        if c == 0:
            return 0.0
        if self.kind == "gaussian":
            return gaussian_epsilon(mu=math.sqrt(c) / self.noise_multiplier, delta=delta)
        return _krr_composed_epsilon(self.eps0, self.domain_size, c, delta)


def _krr_composed_epsilon(eps0: float, size: int, count: int, delta: float) -> float:
    p = math.exp(eps0) / (math.exp(eps0) + size - 1)
    q = 1.0 / (math.exp(eps0) + size - 1)
    rest = 1.0 - p - q
    probs_p = [p, q] + ([rest] if size > 2 else [])
    probs_q = [q, p] + ([rest] if size > 2 else [])
    curve = DiscretePairCurve.from_probabilities(probs_p, probs_q)
    # Basic composition (count·ε0 at δ = 0, one ulp up for the product's rounding) holds
    # where the composed PLD cannot answer: δ at or below its FFT rounding allowance.
    basic = math.nextafter(count * eps0, math.inf)
    return min(compose_curves([(curve, count)]).epsilon(delta), basic)


def _binomial_weights(r: int, p: float) -> tuple[IntArray, FloatArray, float]:
    """j >= 1 with (an upper bound on) log P(J = j) for J ~ B(r, p); terms below e^{-75} and
    the upper tail are dropped and their total mass returned (it is added to δ,
    conservatively)."""
    mean = r * p
    jmax = int(min(r, math.ceil(mean + 10.0 * math.sqrt(mean) + 20.0)))
    j = np.arange(1, jmax + 1)
    # log-pmf by gammaln (much cheaper per call than scipy.stats). gammaln(r + 1) and
    # gammaln(r − j + 1) cancel, so the rounding error follows r ln r (1.8e-9 at r = 10^6,
    # 5e-6 at r = 10^9): each weight is raised by the bound on it.
    terms = (
        special.gammaln(r + 1.0),
        special.gammaln(j + 1.0),
        special.gammaln(r - j + 1.0),
        j * math.log(p),
        (r - j) * math.log1p(-p),
    )
    logw = terms[0] - terms[1] - terms[2] + terms[3] + terms[4] + log_terms_error(*terms)
    # P(J > jmax) = I_p(jmax + 1, r − jmax), raised by the incomplete beta's error bound
    if jmax < r:
        upper = special.betainc(jmax + 1.0, r - jmax, p)
        # below BETAINC_TRUSTED SciPy may have underflowed (docs/proofs/betainc-underflow.md)
        raised = np.atleast_1d(upper + betainc_error(upper, float(r)))
        tail = float(
            trusted_tail(raised, np.array([float(r)]), p, np.array([jmax + 1.0]), upper=True)[0]
        )
    else:
        tail = 0.0
    small = logw < -75.0
    if small.any():
        tail += float(np.exp(logw[small]).sum())  # each term < e^-75: no overflow
    return j[~small], logw[~small], tail


def _log_keep_weight(hidden: int, p: float) -> float:
    """An upper bound on log P(J = 0) = hidden · log(1 − p)."""
    value = hidden * math.log1p(-p)
    return value + float(log_terms_error(value))


def cycle_log_delta(
    epsilon: float, *, intermediates: int, p: float, mechanism: CycleMechanism
) -> float:
    """log δ_cycle(ε') of one cycle with ``intermediates`` other contributions (Thm 10 form).

    ``p`` is the probability that a given intermediate holder is u (``1/(n − c)``).
    """
    r = int(intermediates)
    if r <= 0:
        return -math.inf
    log_keep = r * math.log1p(-p)
    log_eta = float(log1mexp(log_keep))
    # base ε with e^{ε'} = 1 + η (e^ε − 1)
    eps_base = float(np.log1p(np.expm1(epsilon) / math.exp(log_eta)))
    j, logw, tail = _binomial_weights(r, p)
    if mechanism.kind == "gaussian":
        mu = j / (mechanism.noise_multiplier * math.sqrt(r))
        group = gaussian_log_delta(eps_base, mu=mu)
    else:
        group = np.array(
            [
                krr_group_log_delta(
                    eps_base, eps0=mechanism.eps0, domain_size=mechanism.domain_size, group=int(g)
                )
                for g in j
            ]
        )
    value = float(special.logsumexp(logw + group)) if j.size else -math.inf
    if tail > 0:
        value = float(np.logaddexp(value, math.log(tail)))
    return value


def cycle_epsilons(
    intermediates: npt.ArrayLike, *, p: float, mechanism: CycleMechanism, cycle_delta: float
) -> FloatArray:
    """Per-cycle ε' (smallest with δ_cycle(ε') <= ``cycle_delta``) for each distinct length.

    Examples
    --------
    >>> mech = CycleMechanism(kind="gaussian", noise_multiplier=10.0)
    >>> e = cycle_epsilons([0, 5, 50], p=1 / 99, mechanism=mech, cycle_delta=1e-9)
    >>> float(e[0]), bool(0 < e[1] < e[2] < 1)
    (0.0, True)
    """
    r_all = np.asarray(intermediates, dtype=np.int64)
    d = check_probability("cycle_delta", cycle_delta, allow_zero=False, allow_one=False)
    target = math.log(d)
    out = np.zeros(r_all.shape, dtype=np.float64)
    for idx, r_value in np.ndenumerate(r_all):
        r = int(r_value)

        def log_delta(e: float, r: int = r) -> float:
            return cycle_log_delta(e, intermediates=r, p=p, mechanism=mechanism)

        if r <= 0 or log_delta(0.0) <= target:
            continue
        hi = 0.01
        while log_delta(hi) > target and hi <= 1e4:
            hi *= 2.0
        if hi > 1e4:
            out[idx] = math.inf
            continue
        out[idx] = safe_root(log_delta, target, 0.0, hi, xtol=1e-12)
    return out


def cycle_profile(
    epsilons: npt.ArrayLike,
    *,
    intermediates: int,
    p: float,
    mechanism: CycleMechanism,
    hidden: int | None = None,
    certain: int = 0,
    noise_terms: int | None = None,
) -> FloatArray:
    """δ_cycle(ε') at many ε' >= 0 for one cycle (vectorized :func:`cycle_log_delta`).

    ``intermediates`` r other contributions (all adding noise); ``hidden`` of them (default
    r) are by users unknown to the observer, each u with probability p; ``certain`` positions
    are known to be u's (known peers, App. G). With ``certain = 0`` the subsampling bound
    (Thm 10) applies; otherwise u participates surely and the bound is the mixture
    ``Σ_j P(B(hidden, p) = j) δ_{M, certain + j}(ε)`` (joint convexity).

    ``noise_terms`` (default r, Gaussian only) sets the noise of the cycle sum to
    ``σ √noise_terms``. With ``noise_terms = r_min`` and ``intermediates = r_max`` the result
    bounds the profile of *every* cycle length r in ``[r_min, r_max]``: the Gaussian profile
    grows as the noise shrinks; ``η = 1 − (1 − p)^r`` grows with r, which lowers the base ε of
    Thm 10 where the profile is larger; and ``B(r, p)`` grows stochastically with r while
    ``δ_{M,j}`` grows with j (group privacy) and vanishes at j = 0 — so all three changes only
    raise the bound (tested against the per-length profiles).
    """
    e = np.asarray(epsilons, dtype=np.float64)
    r = int(intermediates)
    h = r if hidden is None else int(hidden)
    f = int(certain)
    noise = r if noise_terms is None else int(noise_terms)
    if r <= 0 or (h <= 0 and f == 0):
        return np.zeros_like(e)
    if not 1 <= noise <= r:
        raise InvalidParameterError(
            f"noise_terms must be in [1, intermediates={r}], got {noise_terms!r}"
        )
    if f == 0:
        log_eta = float(log1mexp(h * math.log1p(-p)))
        eps_base = np.log1p(np.expm1(e) / math.exp(log_eta))
        j, logw, tail = _binomial_weights(h, p)
    else:
        eps_base = e
        j, logw, tail = (
            _binomial_weights(h, p) if h > 0 else (np.zeros(0, dtype=np.int64), np.zeros(0), 0.0)
        )
        j = np.r_[0, j] + f
        logw = np.r_[_log_keep_weight(h, p), logw]
    if mechanism.kind == "gaussian":
        mu = j / (mechanism.noise_multiplier * math.sqrt(noise))
        group = gaussian_log_delta(eps_base[:, None], mu=mu[None, :])
    else:
        return _krr_cycle_profile(eps_base, mechanism, j, logw, tail)
    # linear-space sum: terms below ~1e-300 underflow to 0, far below what the lattice uses
    value = np.exp(logw[None, :] + group).sum(axis=1)
    return np.asarray(np.minimum(value + tail, 1.0), dtype=np.float64)
