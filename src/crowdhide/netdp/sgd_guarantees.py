"""Network DP-SGD guarantees of Cyffers & Bellet (2022): Lemma 1 RDP, Theorem 4, σ calibration.

The random-walk SGD half of the paper (Algorithm 4) — the walk sum and histogram bounds live
in :mod:`crowdhide.netdp.guarantees`, whose :class:`~crowdhide.netdp.guarantees.WalkBound`,
forms and corrections apply here too. Corrections to the paper (each one tested): the
geometric return time has pmf ``(1/n)(1 − 1/n)^{t−1}`` so the per-contribution RDP is
``4αL² ln n / (σ² (n − 1))``; the closed form needs ``α > 2``, i.e. ``ε' < 2 ln(1/δ)``; the
numerical calibration minimises over admissible α; the spotted-contributions lemma lacks the 2
of advanced composition. :func:`code_sigmas` reproduces the authors' ``findSigma`` (their
numbers, not a certificate).
"""

from __future__ import annotations

import math
from typing import Literal

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.roots import safe_root
from crowdhide.errors import InvalidParameterError, UnmetTargetError
from crowdhide.netdp.guarantees import (
    Form,
    WalkBound,
    _bound,
    _check_colluders,
    _check_form,
    visit_bound,
)

__all__ = [
    "code_sigmas",
    "complete_sgd_guarantee",
    "sgd_calibrate_sigma",
    "sgd_network_epsilon",
    "sgd_network_rdp",
    "sgd_utility_bound",
    "spotted_contributions_guarantee",
]


def sgd_network_rdp(
    *,
    alpha: float,
    contributions: float,
    n: float,
    lipschitz: float,
    sigma: float,
    form: Form = "corrected",
) -> float:
    """Network RDP ``4 T_u α L² ln n / (σ² (n − 1))`` of Alg. 4 at order α (Lemma 1 of
    Cyffers & Bellet).

    Published: denominator ``σ² n`` (pmf exponent t instead of t − 1). Requires
    ``σ >= L √(2α(α − 1))`` (weak convexity with c = 1), checked here.

    Examples
    --------
    >>> round(sgd_network_rdp(alpha=2.0, contributions=10, n=100, lipschitz=1.0, sigma=10.0), 5)
    0.03721
    """
    a = check_real("alpha", alpha, low=1.0, low_open=True)
    tu = check_real("contributions", contributions, low=0.0)
    nn = check_real("n", n, low=1.0, low_open=True)
    lip = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    if s < lip * math.sqrt(2.0 * a * (a - 1.0)) * (1 - 1e-12):
        raise InvalidParameterError(
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
    ``sgd_network_rdp(α) + ln(1/δ)/(α − 1)``. Returns ``(ε, α*)``.

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

    def network_epsilon(log_sigma: float) -> float:
        value, _ = sgd_network_epsilon(
            n=n,
            contributions=contributions,
            sigma=math.exp(log_sigma),
            lipschitz=lip,
            delta=delta,
            form=form,
        )
        return value

    lo, hi = math.log(lip * 1e-3), math.log(lip * 1e3)
    while network_epsilon(hi) > target:
        hi += math.log(10.0)
        if hi > 700:
            raise UnmetTargetError(
                f"epsilon={target} is unreachable: even sigma = 1e300 L certifies more"
            )
    # ε is non-increasing in σ: the safe side is the larger σ (ε <= target there).
    return math.exp(safe_root(network_epsilon, target, lo, hi, xtol=1e-12))


def complete_sgd_guarantee(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    visits: Literal["auto", "chernoff", "binomial"] = "auto",
) -> WalkBound:
    """Network DP-SGD on the complete graph, closed form (Theorem 4 / Eq. 7 of Cyffers &
    Bellet): ``ε' = √(2 q ln(1/δ)) ε0 / √(ln(1.25/δ))``.

    ``q = max(2 N_u ln n / n', 2 ln(1/δ))`` with ``n' = n − 1`` (corrected) or n (published),
    σ² = 8 L² ln(1.25/δ)/ε0². Conditions: ε0 < 1, δ < 1/2, η <= 2/β (caller's duty), and
    α > 2 ⇔ ``ε' < 2 ln(1/δ)`` (unstated in the paper). δ_total = δ + δ̂.

    Examples
    --------
    >>> g = complete_sgd_guarantee(n=2000, steps=20000, eps0=1.0, delta=1e-6, delta_hat=1e-6,
    ...                            form="published")
    >>> round(g.privacy.epsilon, 4), g.privacy.conditions_met
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
    return _bound(
        epsilon=eps,
        delta=min(1.0, d + dh),
        source="complete_sgd",
        theorem="theorem4",
        form=form,
        violations=violations,
        details={
            "q": q,
            "visit_bound": nu,
            "visit_method": method,
            "sigma_over_L": math.sqrt(8.0 * math.log(1.25 / d)) / e0,
            "n_effective": n_eff,
        },
    )


def spotted_contributions_guarantee(
    *,
    n: int,
    contributions: float,
    eps0: float,
    delta_slack: float,
    delta_tilde: float,
    form: Form = "corrected",
) -> WalkBound:
    """Extra loss from *spotted* contributions when peers are known (Lemma 2, App. G of
    Cyffers & Bellet).

    ``k_s`` bounds ``B(N_u, 2/n)`` with probability 1 − δ̃ (Chernoff
    ``2N_u/n + √(6 (N_u/n) ln(1/δ̃))``, valid only when ``2N_u/n >= 3 ln(1/δ̃)``: otherwise
    ``conditions_met`` is False — the exact quantile can be larger); each spotted
    contribution costs ε0; corrected
    ``ε_s = min(k_s ε0, √(2 k_s ln(1/δ')) ε0 + k_s ε0 (e^{ε0} − 1))`` (published: no 2).

    Examples
    --------
    >>> g = spotted_contributions_guarantee(n=2000, contributions=30.36, eps0=0.1,
    ...                                     delta_slack=1e-6, delta_tilde=1e-6)
    >>> round(g.details["spotted_bound"], 3), round(g.privacy.epsilon, 4)
    (1.152, 0.1152)
    """
    n = check_int("n", n, low=2)
    nu = check_real("contributions", contributions, low=0.0)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    dt = check_probability("delta_tilde", delta_tilde, allow_zero=False, allow_one=False)
    form = _check_form(form)
    mean = 2.0 * nu / n
    ks = mean + math.sqrt(3.0 * mean * math.log(1.0 / dt))
    # The multiplicative Chernoff bound behind k_s holds for deviations up to the mean only,
    # i.e. 2N_u/n >= 3 ln(1/δ̃) (unstated in the paper; below it the exact quantile is larger).
    chernoff_ok = mean >= 3.0 * math.log(1.0 / dt)
    violations = [] if chernoff_ok else ["2 N_u / n >= 3 ln(1/delta_tilde) (Chernoff)"]
    factor = 2.0 if form == "corrected" else 1.0
    adv = math.sqrt(factor * ks * math.log(1.0 / slack)) * e0 + ks * e0 * math.expm1(e0)
    eps = min(adv, ks * e0) if form == "corrected" else adv
    return _bound(
        epsilon=eps,
        delta=slack + dt,
        source="spotted_contributions",
        theorem="lemma2",
        form=form,
        violations=violations,
        details={"spotted_bound": ks, "advanced": adv, "simple": ks * e0},
    )


def sgd_utility_bound(
    *, dim: int, lipschitz: float, diameter: float, steps: int, eps0: float, delta: float
) -> dict[str, float]:
    """Utility of private SGD (Proposition 1 of Cyffers & Bellet, from Shamir & Zhang):
    ``E[F(τ) − F(w*)] <= 2DG(2 + ln T)/√T``.

    ``G² = L² + 8 d L² ln(1.25/δ)/ε0²``; step sizes ``η_t = D/(G√t)``; W must be bounded.

    Examples
    --------
    >>> r = sgd_utility_bound(dim=9, lipschitz=1.0, diameter=10.0, steps=20000, eps0=1.0,
    ...                       delta=1e-6)
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


def _authors_local_eps0(budget: float, count: int, *, log_inv: float, basic: bool) -> float:
    """Per-contribution ε0 whose advanced composition over ``count`` contributions (capped by
    basic composition when ``basic``) is ``budget`` (the authors' code, safe side: within it)."""
    root_term = math.sqrt(2 * count * log_inv)

    def spent(e: float) -> float:
        adv = root_term * e + count * e * math.expm1(e)
        return min(adv, count * e) if basic else adv

    # spent(ε0) increases with ε0; the root of budget − spent is taken from below.
    return safe_root(
        lambda e: budget - spent(e), 0.0, 0.0, budget / math.sqrt(count), lower_side=True
    )


def _authors_network_sigma(
    budget: float, *, n: int, k: int, delta: float, lipschitz: float
) -> float:
    """σ of the non-spotted contributions in the authors' ``findSigma``: numeric RDP (constant
    2, ×1.15 steps) for short walks, else their closed form."""
    log_inv = math.log(1 / delta)
    if k >= n * log_inv / (2 * math.log(n)):
        return 4 * lipschitz * math.sqrt(2 * k * math.log(n) * log_inv / n) / budget
    cand = math.sqrt(2 * math.log(1.25 / delta)) * lipschitz / budget
    for _ in range(100000):
        alpha = max(_alpha_max(cand, lipschitz), 1 + 1e-5)  # largest α with σ >= L√(2α(α−1))
        value = 2 * k * lipschitz**2 * alpha * math.log(n) / (cand**2 * n) + log_inv / (alpha - 1)
        if value < budget:
            return cand
        cand *= 1.15
    raise RuntimeError("the authors' sigma search did not converge")  # pragma: no cover


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

    Reproduction only (the authors' code, not the paper): sensitivity L instead of 2L, RDP
    constant 2 instead of 4, ×1.15 search steps. Local: advanced composition over
    ``K = ⌈conf T/n⌉`` with ``δ_K = δ/K``; central: Bassily et al.; network: budget split
    between spotted contributions (local-style) and the rest (numeric RDP), balanced within 5%.

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
    eps0 = _authors_local_eps0(eps_tot, k, log_inv=math.log(1 / d_k), basic=False)
    # ε0 rounds to 0 when the budget is tiny against K contributions: no finite σ does
    local = math.sqrt(2 * math.log(1.25 / d_k)) * lip / eps0 if eps0 > 0.0 else math.inf
    central = (
        16 * lip * math.sqrt(t * math.log(2 / d) * math.log(1.25 * t / (d * n))) / (n * eps_tot)
    )
    k_spot = math.ceil(k * 2 / n + math.sqrt(6 * k * math.log(1 / d) / n))
    if _authors_local_eps0(eps_tot, k_spot, log_inv=math.log(1 / d_k), basic=k_spot != k) == 0:
        # even the whole budget leaves the spotted contributions no finite σ
        return {"local": local, "central": central, "network": math.inf,
                "contributions": float(k), "spotted": float(k_spot), "beta": 1.0}  # fmt: skip
    beta = 0.5
    for _ in range(100000):
        eps_spot = beta * eps_tot
        spot_eps0 = _authors_local_eps0(
            eps_spot, k_spot, log_inv=math.log(1 / d_k), basic=k_spot != k
        )
        sigma_spot = math.sqrt(2 * math.log(1.25 / d_k)) * lip / spot_eps0
        cand = _authors_network_sigma(eps_tot - eps_spot, n=n, k=k, delta=d, lipschitz=lip)
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
