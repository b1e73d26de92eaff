"""Network-DP guarantees of Cyffers & Bellet (2022), corrected, with validity conditions.

Every function returns a :class:`NetworkGuarantee` that says which theorem and which form
(``"corrected"`` — the default — or ``"published"``, kept only to reproduce figures and to show
the defects) produced it, and which of the theorem's conditions hold (``valid``; ``violations``
lists the failed ones, the numbers are still returned so that figures can be drawn).

Corrections (technical notes §9):

* advanced composition is ``√(2k ln(1/δ')) ε_c + k ε_c (e^{ε_c} − 1)`` (the published
  Thm 3/Thm 6 second term ``√k ε (e^{ε_c} − 1)`` is mis-transcribed; Lemma 2 lacks the 2);
* the number of cycles ``k = N_v + T/n`` is rounded up (``⌈N_v⌉ − 1 + ⌊T/n⌋ + 1``);
* Theorem 2's γ uses ε0 = ε√(n/ln(1/δ))/12 (the printed γ is inverted);
* Theorem 6's per-cycle constant 21 relies on ``e^x − 1 <= x`` (false); the corrected constant
  is 14(e − 1) ≈ 24.05 (with ``1 − (1 − 1/n)^m <= m/n`` and ``e^x − 1 <= (e − 1)x``);
* the Chernoff bound ``N_v = T/n + √(3 (T/n) ln(1/δ̂))`` needs ``T >= 3 n ln(1/δ̂)``; outside it
  the exact binomial quantile is used (``visits="auto"``);
* Theorem 4 / Lemma 1: the geometric return time has pmf ``(1/n)(1 − 1/n)^{t−1}`` so the
  per-contribution RDP is ``4αL² ln n / (σ² (n − 1))``; the closed form needs ``α > 2``, i.e.
  ``ε' < 2 ln(1/δ)``; the numerical calibration (App. F, Remark 5) minimises over admissible α.

Collusions (Section 4.3): the complete-graph guarantees with c colluders (Definition 2) are
those of ``n/c`` users; the ring protocols have none (``colluders > 1`` raises).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from scipy import optimize, stats

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.errors import UnmetTargetError
from crowdhide.netdp._noise import classic_gaussian_sigma

__all__ = [
    "NetworkGuarantee",
    "central_sum_std",
    "code_sigmas",
    "compose_advanced",
    "ldp_baseline",
    "lemma1_rdp",
    "lemma2",
    "proposition1",
    "sgd_calibrate_sigma",
    "sgd_network_epsilon",
    "theorem1",
    "theorem2",
    "theorem3",
    "theorem4",
    "theorem6",
    "visit_bound",
]

Form = Literal["corrected", "published"]


@dataclass(frozen=True)
class NetworkGuarantee:
    """An (ε, δ)-network-DP statement produced by one theorem.

    Attributes
    ----------
    epsilon, delta
        The guarantee (for every ordered pair u ≠ v, or every coalition of ``colluders``).
    theorem
        Which result (``"theorem3"``, ``"ldp"``, …).
    form
        ``"corrected"`` or ``"published"``.
    valid
        Whether every condition of the theorem holds (and the form is the corrected one).
    violations
        Conditions that fail.
    details
        Intermediate quantities (per-cycle ε, number of cycles, γ, …).
    """

    epsilon: float
    delta: float
    theorem: str
    form: str
    valid: bool
    violations: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready record."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "theorem": self.theorem,
            "form": self.form,
            "valid": self.valid,
            "violations": list(self.violations),
            **self.details,
        }


def _check_form(form: str) -> Form:
    if form not in ("corrected", "published"):
        raise ValueError(f"form must be 'corrected' or 'published', got {form!r}")
    return "corrected" if form == "corrected" else "published"


def compose_advanced(*, epsilon: float, count: float, delta_slack: float) -> float:
    """``min(k ε, √(2k ln(1/δ')) ε + k ε (e^ε − 1))`` for a real count k (Dwork et al. 2010).

    Examples
    --------
    >>> round(compose_advanced(epsilon=0.1, count=100, delta_slack=1e-6), 4)
    6.3082
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    k = check_real("count", count, low=0.0)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    adv = math.sqrt(2.0 * k * math.log(1.0 / slack)) * eps + k * eps * math.expm1(eps)
    return min(adv, k * eps)


def visit_bound(
    *,
    steps: int,
    n: float,
    delta_hat: float,
    method: Literal["auto", "chernoff", "binomial", "code"] = "auto",
) -> tuple[float, str]:
    """High-probability bound N with ``P(T_v >= N) <= δ̂``, ``T_v ~ B(T, 1/n)``.

    ``"chernoff"``: ``T/n + √(3 (T/n) ln(1/δ̂))`` (App. D), valid only if
    ``T >= 3 n ln(1/δ̂)`` (raises otherwise); ``"binomial"``: ``1 + `` the exact
    (1 − δ̂)-quantile; ``"auto"``: Chernoff when valid, else binomial; ``"code"``: the authors'
    Fig. 1a code ``T/n + √(3T/2 ln(1/δ̂))`` (not a bound of the paper; reproduction only).
    ``n`` may be real (``n/c`` for c colluders).

    Examples
    --------
    >>> round(visit_bound(steps=10**6, n=10**4, delta_hat=1e-7)[0], 2)
    169.54
    >>> visit_bound(steps=20000, n=2000, delta_hat=1e-6)[1]
    'binomial'
    """
    t = check_int("steps", steps, low=1)
    nn = check_real("n", n, low=1.0)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    mean = t / nn
    log_inv = math.log(1.0 / dh)
    chernoff_ok = t >= 3.0 * nn * log_inv
    if method == "code":
        return mean + math.sqrt(1.5 * t * log_inv), "code"
    if method == "chernoff" or (method == "auto" and chernoff_ok):
        if not chernoff_ok:
            raise ValueError(
                f"steps must be >= 3 n ln(1/delta_hat) = {3 * nn * log_inv:.6g} for the Chernoff "
                f"bound (alpha <= 1), got {t}"
            )
        return mean + math.sqrt(3.0 * mean * log_inv), "chernoff"
    if method not in ("auto", "binomial"):
        raise ValueError(f"method must be 'auto', 'chernoff', 'binomial' or 'code', got {method!r}")
    quantile = float(stats.binom.isf(dh, t, 1.0 / nn))  # smallest q with P(T_v > q) <= δ̂
    return quantile + 1.0, "binomial"


def _check_colluders(colluders: int, n: int) -> int:
    c = check_int("colluders", colluders, low=1)
    if c >= n:
        raise ValueError(f"colluders must be < n = {n}, got {c}")
    return c


def theorem1(
    *, n: int, rounds: int, eps0: float, delta0: float, delta_slack: float, colluders: int = 1
) -> NetworkGuarantee:
    """Theorem 1 (ring, real summation, Alg. 1).

    Each of v's K receipts is (ε0, δ0)-DP w.r.t. u (one contribution of u, at least one noise
    of std σ_loc from another user); advanced composition over K receipts.
    Utility: std ``√⌈Kn/(n−1)⌉ σ_loc`` (``details["noise_additions"]``).

    Examples
    --------
    >>> g = theorem1(n=100, rounds=10, eps0=0.5, delta0=1e-6, delta_slack=1e-6)
    >>> round(g.epsilon, 4), g.delta, g.details["noise_additions"]  # basic composition wins
    (5.0, 1.1e-05, 11)
    >>> g = theorem1(n=100, rounds=100, eps0=0.1, delta0=1e-6, delta_slack=1e-6)
    >>> round(g.epsilon, 4)
    6.3082
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d0 = check_probability("delta0", delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    if _check_colluders(colluders, n) > 1:
        raise ValueError(
            f"colluders must be 1 on the ring: Alg. 1 is not robust to collusion, got {colluders}"
        )
    eps = compose_advanced(epsilon=e0, count=k, delta_slack=slack)
    adds = -(-(k * n) // (n - 1))
    return NetworkGuarantee(
        epsilon=eps,
        delta=min(1.0, k * d0 + slack),
        theorem="theorem1",
        form="corrected",
        valid=True,
        details={
            "noise_additions": adds,
            "std_over_sigma": math.sqrt(adds),
            "ldp_std_over_sigma": math.sqrt(k * n),
        },
    )


def theorem2(
    *,
    n: int,
    rounds: int,
    epsilon: float,
    delta: float,
    delta_slack: float,
    domain_size: int,
    form: Form = "corrected",
) -> NetworkGuarantee:
    """Theorem 2 (ring, histogram, Alg. 2) with γ corrected.

    Target per-receipt level ``ε`` (< 1/2). Corrected: the randomizer is ε0-LDP with
    ``ε0 = ε √(n/ln(1/δ)) / 12`` so that Erlingsson et al.'s Cor. 9 gives ε per receipt;
    requires ``ε0 < 1/2`` (i.e. ``ε < 6√(ln(1/δ)/n)``), ``δ < 1/100``, ``n > 1000``. Published:
    ``ε0 = 12 ε √(ln(1/δ)/n)`` (inverted; γ → 1). ``details["gamma"]`` is
    ``L/(e^{ε0} + L − 1)`` and the expected number of random responses is ``γ n (K + 1)``.

    Examples
    --------
    >>> g = theorem2(n=10**4, rounds=10, epsilon=0.1, delta=1e-6, delta_slack=1e-6,
    ...              domain_size=10)
    >>> round(g.details["eps0"], 4), round(g.details["gamma"], 5), g.valid
    (0.2242, 0.97548, True)
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    size = check_int("domain_size", domain_size, low=2)
    form = _check_form(form)
    log_inv = math.log(1.0 / d)
    if form == "corrected":
        eps0 = eps * math.sqrt(n / log_inv) / 12.0
    else:
        eps0 = 12.0 * eps * math.sqrt(log_inv / n)
    gamma = size / (math.exp(min(eps0, 700.0)) + size - 1)
    violations = []
    if not eps < 0.5:
        violations.append("epsilon < 1/2")
    if form == "corrected" and not eps0 < 0.5:
        violations.append("eps0 < 1/2 (Erlingsson Cor. 9)")
    if not d < 0.01:
        violations.append("delta < 1/100")
    if not n > 1000:
        violations.append("n > 1000")
    return NetworkGuarantee(
        epsilon=compose_advanced(epsilon=eps, count=k, delta_slack=slack),
        delta=min(1.0, k * d + slack),
        theorem="theorem2",
        form=form,
        valid=not violations and form == "corrected",
        violations=tuple(violations),
        details={"eps0": eps0, "gamma": gamma, "random_responses": gamma * n * (k + 1)},
    )


def _compose_cycles(
    *, eps_cycle: float, cycles: float, slack: float, eps0: float, form: Form
) -> float:
    """Advanced composition of the per-cycle ε over ``cycles`` cycles (Theorems 3 and 6).

    ``corrected``: :func:`compose_advanced`. ``published``: the paper's mis-transcribed drift
    term ``√k ε0 (e^{ε_c} − 1)`` in place of ``k ε_c (e^{ε_c} − 1)`` (kept to reproduce it).
    """
    if form == "corrected":
        return compose_advanced(epsilon=eps_cycle, count=cycles, delta_slack=slack)
    first = math.sqrt(2.0 * cycles * math.log(1.0 / slack)) * eps_cycle
    return first + math.sqrt(cycles) * eps0 * math.expm1(eps_cycle)


def _cycles(visits: float, steps: int, n_eff: float, integer: bool) -> float:
    if integer:
        return float(math.ceil(visits - 1e-12) - 1 + math.floor(steps / n_eff) + 1)
    return visits + steps / n_eff


def theorem3(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta0: float,
    delta_slack: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    per_cycle: Literal["paper", "sharp"] = "paper",
    visits: Literal["auto", "chernoff", "binomial", "code"] = "auto",
    integer_cycles: bool = True,
) -> NetworkGuarantee:
    """Theorem 3 (complete graph, Gaussian real summation, Alg. 3), full formula of App. D.

    Per cycle ``ε_c = 3 ε0/√n`` (``per_cycle="paper"``) or ``(e − 1) ε0/√n`` (``"sharp"``,
    Bernoulli + ``e^x − 1 <= (e − 1)x``); ``k = N_v + T/n`` cycles; corrected advanced
    composition ``√(2k ln(1/δ')) ε_c + k ε_c (e^{ε_c} − 1)``. Published form: second term
    ``√k ε0 (e^{ε_c} − 1)``. δ = ``k δ0 + δ' + δ̂``. Requires ε0 < 1 (Gaussian mechanism).
    With c colluders n is replaced by n/c.

    Caveat (notes §9.10): the paper's per-cycle δ (``δ_cycle <= δ0``, Eq. 10) ignores the
    group-privacy terms of Balle et al.'s with-replacement theorem; the empirical accountant
    (:mod:`crowdhide.netdp.audit`) accounts for them exactly.

    Examples
    --------
    >>> g = theorem3(n=100, steps=10**4, eps0=0.5, delta0=1e-7, delta_slack=1e-7,
    ...              delta_hat=1e-7, integer_cycles=False)
    >>> round(g.epsilon, 3)
    20.525
    >>> round(theorem3(n=100, steps=10**4, eps0=0.5, delta0=1e-7, delta_slack=1e-7,
    ...                delta_hat=1e-7, integer_cycles=False, form="published").epsilon, 3)
    15.311
    """
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d0 = check_probability("delta0", delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    c = _check_colluders(colluders, n)
    form = _check_form(form)
    n_eff = n / c
    nv, method = visit_bound(steps=t, n=n_eff, delta_hat=dh, method=visits)
    k = _cycles(nv, t, n_eff, integer_cycles)
    const = 3.0 if per_cycle == "paper" else math.e - 1.0
    if per_cycle not in ("paper", "sharp"):
        raise ValueError(f"per_cycle must be 'paper' or 'sharp', got {per_cycle!r}")
    eps_c = const * e0 / math.sqrt(n_eff)
    eps = _compose_cycles(eps_cycle=eps_c, cycles=k, slack=slack, eps0=e0, form=form)
    violations = [] if e0 < 1.0 else ["eps0 < 1"]
    if method == "code":
        violations.append("visit bound from the authors' code is not a valid bound")
    return NetworkGuarantee(
        epsilon=eps,
        delta=min(1.0, k * d0 + slack + dh),
        theorem="theorem3",
        form=form,
        valid=not violations and form == "corrected",
        violations=tuple(violations),
        details={
            "eps_cycle": eps_c,
            "cycles": k,
            "visit_bound": nv,
            "visit_method": method,
            "n_effective": n_eff,
            "std_over_sigma": math.sqrt(t),
        },
    )


#: 14 (e − 1): valid per-cycle constant of Theorem 6 (notes §9.4).
THEOREM6_CONSTANT = 14.0 * (math.e - 1.0)


def theorem6(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta0: float,
    delta_slack: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    visits: Literal["auto", "chernoff", "binomial", "code"] = "auto",
    integer_cycles: bool = True,
) -> NetworkGuarantee:
    """Theorem 6 (complete graph, histogram, Alg. 5 with γ = L/(e^{ε0} + L − 1)).

    Per cycle ``ε_c = C √(ln(4/δ0)/n) ε0`` with the corrected ``C = 14(e − 1) ≈ 24.05``
    (published: 21, derived with the false ``e^x − 1 <= x``); requires ``ε0 <= 1`` and
    ``n >= 196 ln(4/δ0)``. Composition as in :func:`theorem3`.

    Examples
    --------
    >>> g = theorem6(n=10**5, steps=10**7, eps0=0.5, delta0=1e-6, delta_slack=1e-6,
    ...              delta_hat=1e-6, form="published", integer_cycles=False)
    >>> round(g.details["eps_cycle"], 4), round(g.epsilon, 2)
    (0.1295, 12.19)
    """
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d0 = check_probability("delta0", delta0, allow_zero=False, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    c = _check_colluders(colluders, n)
    form = _check_form(form)
    n_eff = n / c
    nv, method = visit_bound(steps=t, n=n_eff, delta_hat=dh, method=visits)
    k = _cycles(nv, t, n_eff, integer_cycles)
    const = THEOREM6_CONSTANT if form == "corrected" else 21.0
    eps_c = const * math.sqrt(math.log(4.0 / d0) / n_eff) * e0
    eps = _compose_cycles(eps_cycle=eps_c, cycles=k, slack=slack, eps0=e0, form=form)
    violations = []
    if not e0 <= 1.0:
        violations.append("eps0 <= 1")
    if not n_eff >= 196.0 * math.log(4.0 / d0):
        violations.append(f"n >= 196 ln(4/delta) = {196.0 * math.log(4.0 / d0):.6g}")
    if method == "code":
        violations.append("visit bound from the authors' code is not a valid bound")
    return NetworkGuarantee(
        epsilon=eps,
        delta=min(1.0, k * d0 + slack + dh),
        theorem="theorem6",
        form=form,
        valid=not violations and form == "corrected",
        violations=tuple(violations),
        details={
            "eps_cycle": eps_c,
            "cycles": k,
            "visit_bound": nv,
            "visit_method": method,
            "n_effective": n_eff,
            "constant": const,
        },
    )


def lemma1_rdp(
    *,
    alpha: float,
    contributions: float,
    n: float,
    lipschitz: float,
    sigma: float,
    form: Form = "corrected",
) -> float:
    """Lemma 1: network RDP ``4 T_u α L² ln n / (σ² (n − 1))`` of Alg. 4 at order α.

    Published: denominator ``σ² n`` (pmf exponent t instead of t − 1). Requires
    ``σ >= L √(2α(α − 1))`` (weak convexity with c = 1), checked here.

    Examples
    --------
    >>> round(lemma1_rdp(alpha=2.0, contributions=10, n=100, lipschitz=1.0, sigma=10.0), 5)
    0.03721
    """
    a = check_real("alpha", alpha, low=1.0, low_open=True)
    tu = check_real("contributions", contributions, low=0.0)
    nn = check_real("n", n, low=1.0, low_open=True)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    if s < lip * math.sqrt(2.0 * a * (a - 1.0)) * (1 - 1e-12):
        raise ValueError(
            f"sigma must be >= L sqrt(2 alpha (alpha - 1)) = "
            f"{lip * math.sqrt(2 * a * (a - 1)):.6g} (Lemma 1), got {s}"
        )
    denom = nn - 1.0 if _check_form(form) == "corrected" else nn
    return 4.0 * tu * a * lip**2 * math.log(nn) / (s**2 * denom)


def _alpha_max(sigma: float, lipschitz: float) -> float:
    # largest α with σ >= L √(2α(α−1))
    return 0.5 * (1.0 + math.sqrt(1.0 + 2.0 * (sigma / lipschitz) ** 2))


def sgd_network_epsilon(
    *,
    n: float,
    contributions: float,
    sigma: float,
    lipschitz: float,
    delta: float,
    form: Form = "corrected",
) -> tuple[float, float]:
    """Numerical network ε of Alg. 4 (App. F, Remark 5): min over admissible α of
    ``lemma1_rdp(α) + ln(1/δ)/(α − 1)``. Returns ``(ε, α*)``.

    Examples
    --------
    >>> eps, alpha = sgd_network_epsilon(n=2000, contributions=12, sigma=20.36, lipschitz=1.0,
    ...                                  delta=1e-6, form="published")
    >>> round(eps, 2)
    1.0
    """
    nn = check_real("n", n, low=1.0, low_open=True)
    tu = check_real("contributions", contributions, low=0.0)
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    denom = nn - 1.0 if _check_form(form) == "corrected" else nn
    rate = 4.0 * tu * lip**2 * math.log(nn) / (s**2 * denom)
    log_inv = math.log(1.0 / d)
    a_max = _alpha_max(s, lip)
    a_star = 1.0 + math.sqrt(log_inv / rate) if rate > 0 else math.inf
    alpha = min(a_star, a_max)
    return rate * alpha + log_inv / (alpha - 1.0), alpha


def sgd_calibrate_sigma(
    *,
    n: float,
    contributions: float,
    epsilon: float,
    delta: float,
    lipschitz: float = 1.0,
    form: Form = "corrected",
) -> float:
    """Smallest σ with :func:`sgd_network_epsilon` ``<= epsilon`` (root-finding, not ×1.15 steps).

    Examples
    --------
    >>> round(sgd_calibrate_sigma(n=2000, contributions=12, epsilon=10.0, delta=1e-6,
    ...                           form="published"), 3)
    2.579
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)

    def gap(log_sigma: float) -> float:
        value, _ = sgd_network_epsilon(
            n=n,
            contributions=contributions,
            sigma=math.exp(log_sigma),
            lipschitz=lip,
            delta=delta,
            form=form,
        )
        return value - target

    lo, hi = math.log(lip * 1e-3), math.log(lip * 1e3)
    while gap(hi) > 0:
        hi += math.log(10.0)
        if hi > 700:
            raise UnmetTargetError(
                f"epsilon={target} is unreachable: even sigma = 1e300 L certifies more"
            )
    if gap(lo) <= 0:
        return math.exp(lo)
    root = float(optimize.brentq(gap, lo, hi, xtol=1e-12))
    while gap(root) > 0:
        root += 1e-12
    return math.exp(root)


def theorem4(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    visits: Literal["auto", "chernoff", "binomial"] = "auto",
) -> NetworkGuarantee:
    """Theorem 4 closed form (Eq. 7): ``ε' = √(2 q ln(1/δ)) ε0 / √(ln(1.25/δ))``.

    ``q = max(2 N_u ln n / n', 2 ln(1/δ))`` with ``n' = n − 1`` (corrected) or n (published),
    σ² = 8 L² ln(1.25/δ)/ε0². Conditions: ε0 < 1, δ < 1/2, η <= 2/β (caller's duty), and
    α > 2 ⇔ ``ε' < 2 ln(1/δ)`` (unstated in the paper). δ_total = δ + δ̂.

    Examples
    --------
    >>> g = theorem4(n=2000, steps=20000, eps0=1.0, delta=1e-6, delta_hat=1e-6,
    ...              form="published")
    >>> round(g.epsilon, 4), g.valid
    (7.3745, False)
    """
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    c = _check_colluders(colluders, n)
    form = _check_form(form)
    n_eff = n / c
    nu, method = visit_bound(steps=t, n=n_eff, delta_hat=dh, method=visits)
    denom = n_eff - 1.0 if form == "corrected" else n_eff
    log_inv = math.log(1.0 / d)
    q = max(2.0 * nu * math.log(n_eff) / denom, 2.0 * log_inv) if denom > 0 else math.inf
    eps = math.sqrt(2.0 * q * log_inv) * e0 / math.sqrt(math.log(1.25 / d))
    violations = []
    if not e0 < 1.0:
        violations.append("eps0 < 1")
    if not d < 0.5:
        violations.append("delta < 1/2")
    if not eps < 2.0 * log_inv:
        violations.append("epsilon' < 2 ln(1/delta) (alpha > 2)")
    return NetworkGuarantee(
        epsilon=eps,
        delta=min(1.0, d + dh),
        theorem="theorem4",
        form=form,
        valid=not violations and form == "corrected",
        violations=tuple(violations),
        details={
            "q": q,
            "visit_bound": nu,
            "visit_method": method,
            "sigma_over_L": math.sqrt(8.0 * math.log(1.25 / d)) / e0,
            "n_effective": n_eff,
        },
    )


def lemma2(
    *,
    n: int,
    contributions: float,
    eps0: float,
    delta_slack: float,
    delta_tilde: float,
    form: Form = "corrected",
) -> NetworkGuarantee:
    """Lemma 2: extra loss from *spotted* contributions when peers are known (App. G).

    ``k_s`` bounds ``B(N_u, 2/n)`` with probability 1 − δ̃ (Chernoff
    ``2N_u/n + √(6 (N_u/n) ln(1/δ̃))``); each spotted contribution costs ε0; corrected
    ``ε_s = min(k_s ε0, √(2 k_s ln(1/δ')) ε0 + k_s ε0 (e^{ε0} − 1))`` (published: no 2).

    Examples
    --------
    >>> g = lemma2(n=2000, contributions=30.36, eps0=0.1, delta_slack=1e-6, delta_tilde=1e-6)
    >>> round(g.details["spotted_bound"], 3), round(g.epsilon, 4)
    (1.152, 0.1152)
    """
    n = check_int("n", n, low=2)
    nu = check_real("contributions", contributions, low=0.0)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    dt = check_probability("delta_tilde", delta_tilde, allow_zero=False, allow_one=False)
    form = _check_form(form)
    ks = 2.0 * nu / n + math.sqrt(6.0 * (nu / n) * math.log(1.0 / dt))
    factor = 2.0 if form == "corrected" else 1.0
    adv = math.sqrt(factor * ks * math.log(1.0 / slack)) * e0 + ks * e0 * math.expm1(e0)
    eps = min(adv, ks * e0) if form == "corrected" else adv
    return NetworkGuarantee(
        epsilon=eps,
        delta=slack + dt,
        theorem="lemma2",
        form=form,
        valid=form == "corrected",
        details={"spotted_bound": ks, "advanced": adv, "simple": ks * e0},
    )


def proposition1(
    *, dim: int, lipschitz: float, diameter: float, steps: int, eps0: float, delta: float
) -> dict[str, float]:
    """Proposition 1 (Shamir & Zhang): ``E[F(τ) − F(w*)] <= 2DG(2 + ln T)/√T``.

    ``G² = L² + 8 d L² ln(1.25/δ)/ε0²``; step sizes ``η_t = D/(G√t)``; W must be bounded.

    Examples
    --------
    >>> r = proposition1(dim=9, lipschitz=1.0, diameter=10.0, steps=20000, eps0=1.0,
    ...                  delta=1e-6)
    >>> round(r["G"], 2), round(r["bound"], 2)
    (31.81, 53.55)
    """
    d = check_int("dim", dim, low=1)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    diam = check_real("diameter", diameter, low=0.0, low_open=True)
    t = check_int("steps", steps, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    g = math.sqrt(lip**2 + 8.0 * d * lip**2 * math.log(1.25 / dl) / e0**2)
    return {"G": g, "bound": 2.0 * diam * g * (2.0 + math.log(t)) / math.sqrt(t), "eta1": diam / g}


def ldp_baseline(
    *, contributions: float, eps0: float, delta0: float, delta_slack: float
) -> NetworkGuarantee:
    """Local DP of N contributions: advanced composition of (ε0, δ0) (the paper's LDP curves).

    Examples
    --------
    >>> round(ldp_baseline(contributions=100, eps0=0.1, delta0=0.0, delta_slack=1e-7).epsilon, 3)
    6.729
    """
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    nv = check_real("contributions", contributions, low=0.0)
    d0 = check_probability("delta0", delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    return NetworkGuarantee(
        epsilon=compose_advanced(epsilon=e0, count=nv, delta_slack=slack),
        delta=min(1.0, nv * d0 + slack),
        theorem="ldp",
        form="corrected",
        valid=True,
        details={"contributions": nv},
    )


def central_sum_std(
    *, n: int, rounds: int, eps0: float, delta0: float, sensitivity: float = 1.0
) -> dict[str, float]:
    """Noise std of the sum under local DP, a trusted curator and the ring (per unit σ_loc).

    Trusted curator: one Gaussian noise per round (K noises), the same trade-off as Alg. 1;
    LDP: one noise per contribution (Kn noises).
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    sigma = classic_gaussian_sigma(epsilon=eps0, delta=delta0, sensitivity=sensitivity)
    return {
        "sigma_loc": sigma,
        "central_std": sigma * math.sqrt(k),
        "ring_std": sigma * math.sqrt(-(-(k * n) // (n - 1))),
        "ldp_std": sigma * math.sqrt(k * n),
    }


def code_sigmas(
    *,
    n: int,
    steps: int,
    epsilon: float,
    delta: float,
    lipschitz: float = 1.0,
    conf: float = 1.2,
) -> dict[str, float]:
    """σ of local / network / centralized DP-SGD as computed by the authors' ``findSigma``.

    Reproduction only (notes §6, §9.11): sensitivity L instead of 2L, RDP constant 2 instead of
    4, ×1.15 search steps. Local: advanced composition over ``K = ⌈conf T/n⌉`` with
    ``δ_K = δ/K``; central: Bassily et al.; network: budget split between spotted contributions
    (local-style) and the rest (numeric RDP), balanced within 5%.

    Examples
    --------
    >>> s = code_sigmas(n=1000, steps=10**4, epsilon=1.0, delta=1e-6)
    >>> round(s["local"], 1), round(s["central"], 2), round(s["network"], 2)
    (117.2, 24.64, 33.44)
    """
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    eps_tot = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    k = math.ceil(conf * t / n)
    d_k = d / k

    def local_eps0(budget: float, count: int) -> float:
        def f(e: float) -> float:
            adv = math.sqrt(2 * count * math.log(1 / d_k)) * e + count * e * math.expm1(e)
            return min(adv, count * e) - budget

        def f_local(e: float) -> float:
            return math.sqrt(2 * count * math.log(1 / d_k)) * e + count * e * math.expm1(e) - budget

        func = f_local if count == k else f
        return float(optimize.bisect(func, 0.0, budget / math.sqrt(count)))

    local = math.sqrt(2 * math.log(1.25 / d_k)) * lip / local_eps0(eps_tot, k)
    central = (
        16 * lip * math.sqrt(t * math.log(2 / d) * math.log(1.25 * t / (d * n))) / (n * eps_tot)
    )
    k_spot = math.ceil(k * 2 / n + math.sqrt(6 * k * math.log(1 / d) / n))
    beta = 0.5
    for _ in range(100000):
        eps_spot = beta * eps_tot
        sigma_spot = math.sqrt(2 * math.log(1.25 / d_k)) * lip / local_eps0(eps_spot, k_spot)
        eps_other = eps_tot - eps_spot
        if k < n * math.log(1 / d) / (2 * math.log(n)):
            cand = math.sqrt(2 * math.log(1.25 / d)) * lip / eps_other
            while True:
                alpha = float(
                    optimize.bisect(
                        lambda a, s=cand: lip * math.sqrt(2 * a * (a - 1)) - s,
                        1 + 1e-5,
                        (cand + 10) / lip,
                    )
                )
                value = 2 * k * lip**2 * alpha * math.log(n) / (cand**2 * n) + math.log(1 / d) / (
                    alpha - 1
                )
                if value < eps_other:
                    break
                cand *= 1.15
        else:
            cand = 4 * lip * math.sqrt(2 * k * math.log(n) * math.log(1 / d) / n) / eps_other
        if sigma_spot / cand > 1.05:
            beta *= 1.01
        elif cand / sigma_spot > 1.05:
            beta *= 0.99
        else:
            return {
                "local": local,
                "central": central,
                "network": max(cand, sigma_spot),
                "contributions": float(k),
                "spotted": float(k_spot),
                "beta": beta,
            }
    raise RuntimeError("code_sigmas did not converge")  # pragma: no cover
