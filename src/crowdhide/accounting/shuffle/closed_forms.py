"""The closed-form and blanket shuffle bounds, as ``log δ`` functions of ε (internal).

Erlingsson et al. (SODA 2019), the privacy blanket of Balle, Bell, Gascón, Nissim (CRYPTO
2019) with Hoeffding or Bennett concentration, and the closed form of Feldman, McMillan,
Talwar (FOCS 2021); :mod:`crowdhide.accounting.shuffle.generic` lists them as bounds.
"""

from __future__ import annotations

import math

import numpy as np

from crowdhide.accounting.roots import calibrate


def _one_report_log_delta(eps: float, eps0: float) -> float:
    """:func:`~crowdhide.accounting.shuffle.variation_ratio.one_report_log_delta`, imported
    only where a blanket is empty (a k-RR query at start-up does not need that module)."""
    from crowdhide.accounting.shuffle.variation_ratio import one_report_log_delta

    return one_report_log_delta(eps, eps0)


class _NotApplicableError(ValueError):
    """Raised while evaluating a curve whose condition depends on the queried δ
    (``erlingsson2019``: δ <= 0.01; ``feldman2021_closed``: ε0 <= ln(n/(16 ln(4/δ))));
    conditions on the parameters alone are answered by :meth:`ShuffleBound.applies`."""


def _erlingsson_log_delta(eps: float, eps0: float, n: int) -> float:
    """δ = exp(−n (ε / (12 ε0))²), Erlingsson et al. (SODA 2019), inverted."""
    if eps >= eps0:
        return -math.inf
    log_delta = -n * (eps / (12.0 * eps0)) ** 2
    if log_delta > math.log(0.01):
        raise _NotApplicableError("needs delta <= 0.01")
    return log_delta


def _erlingsson_epsilon(delta: float, eps0: float, n: int) -> float:
    if delta > 0.01:
        raise _NotApplicableError("needs delta <= 0.01")
    return min(12.0 * eps0 * math.sqrt(-math.log(delta) / n), eps0)


def _blanket_params(eps: float, eps0: float, k: int | None) -> tuple[float, float, float, float]:
    """(γ, b₊, b, c): blanket probability, max, range and variance bound of the privacy
    amplification random variable (Balle et al. 2019; generic or k-RR)."""
    big = math.exp(eps)
    if k is None:
        gamma = math.exp(-eps0)
        b_plus = math.exp(eps0) * -math.expm1(eps - 2.0 * eps0)
        b_range = (big + 1.0) * 2.0 * math.sinh(eps0)
        var = math.exp(eps0) * (big * big + 1.0) - 2.0 * gamma * math.exp(eps - 2.0 * eps0)
    else:
        # 1 − γ and b₊ = k (e^{ε0} − e^ε)/(e^{ε0} + k − 1) in closed form: as differences
        # they cancel for small ε0 or large k (1 − γ ~ ε0/k), down to a negative b₊
        em1, spread = math.expm1(eps0), big * math.expm1(eps0 - eps)
        gamma, rest = k / (em1 + k), em1 / (em1 + k)
        b_plus = k * spread / (em1 + k)
        b_range = rest * k * (big + 1.0)
        var = gamma * (2.0 - gamma) * math.expm1(eps) ** 2 + rest**2 * k * (big * big + 1.0)
    return gamma, b_plus, b_range, var


def _hoeffding_log_delta(eps: float, eps0: float, n: int, k: int | None) -> float:
    """Balle et al. (2019), Hoeffding: δ = b²/(4aγn) (1 − γ(1 − e^{−2a²/b²}))^n, a = e^ε − 1."""
    if eps >= eps0:
        return -math.inf
    if eps <= 0.0:
        return 0.0
    gamma, _, b_range, _ = _blanket_params(eps, eps0, k)
    a = math.expm1(eps)
    if b_range * b_range == 0.0:
        return _one_report_log_delta(eps, eps0)
    inner = -gamma * -math.expm1(-2.0 * a * a / (b_range * b_range))
    value = (
        2.0 * math.log(b_range) - math.log(4.0 * a) - math.log(gamma * n) + n * math.log1p(inner)
    )
    return min(value, 0.0)


def _bennett_log_delta(eps: float, eps0: float, n: int, k: int | None) -> float:
    """Balle et al. (2019), Bennett: δ = b₊/(γ n ln(1+β)) Σ_{m>=1} Bin(m; n, γ) e^{−m α φ(β)},
    α = c/b₊², β = a b₊/c, φ(u) = (1+u)ln(1+u) − u. The binomial sum equals
    ``(1 − γ(1 − e^{−αφ}))^n − (1 − γ)^n`` (evaluated in log space)."""
    if eps >= eps0:
        return -math.inf
    if eps <= 0.0:
        return 0.0
    gamma, b_plus, _, var = _blanket_params(eps, eps0, k)
    a = math.expm1(eps)
    if b_plus * b_plus == 0.0 or var == 0.0:
        return _one_report_log_delta(eps, eps0)
    alpha, beta = var / b_plus**2, a * b_plus / var
    phi = (1.0 + beta) * math.log1p(beta) - beta
    if phi <= 0.0:  # rounding for tiny β: φ(β) ≈ β²/2 > 0
        phi = beta * beta / 2.0 * (1.0 - beta / 3.0)
    kappa = alpha * phi
    log_all = n * math.log1p(-gamma * -math.expm1(-kappa))
    log_zero = n * math.log1p(-gamma) if gamma < 1.0 else -math.inf
    log_sum = log_all + float(np.log(-np.expm1(min(log_zero - log_all, 0.0)) + 0.0))
    value = math.log(b_plus) - math.log(gamma * n) - math.log(math.log1p(beta)) + log_sum
    return min(value, 0.0)


def _fmt21_closed_epsilon(
    delta: float, eps0: float, n: int, *, log_delta: float | None = None
) -> float:
    """FMT21 closed form with ln(4/δ) (authors' code form); ``log_delta`` overrides δ."""
    log4d = math.log(4.0) - (math.log(delta) if log_delta is None else log_delta)
    if eps0 > math.log(n / (16.0 * log4d)):
        raise _NotApplicableError(
            f"needs eps0 <= ln(n/(16 ln(4/delta))) = {math.log(n / (16.0 * log4d)):.4g}"
        )
    a = 8.0 * math.sqrt(math.exp(eps0) * log4d / n)
    c = 8.0 * math.exp(eps0) / n
    e = math.log1p(a + c)
    b = -math.expm1(-eps0)
    d = 1.0 + math.exp(-eps0 - e)
    return min(math.log1p(b / d * (a + c)), eps0)


def _fmt21_closed_log_delta(eps: float, eps0: float, n: int) -> float:
    """Smallest δ (log) whose closed-form ε is <= eps and for which the validity holds."""
    if eps >= eps0:
        return -math.inf
    # Validity: ln(4/δ) <= n e^{-ε0}/16  <=>  log δ >= ln 4 − n e^{−ε0}/16.
    log_min = math.log(4.0) - n * math.exp(-eps0) / 16.0
    if log_min >= 0.0:
        raise _NotApplicableError("needs n > 16 e^eps0 ln 4")

    def eps_at(log_delta: float) -> float:
        return _fmt21_closed_epsilon(0.0, eps0, n, log_delta=log_delta)

    lo, hi = max(log_min, -800.0), -1e-12
    if eps_at(hi) > eps:
        return 0.0  # even δ → 1 does not reach ε: trivial
    # ε(log δ) is non-increasing: the smallest passing log δ, from the passing side.
    return calibrate(lambda x: eps_at(x) <= eps, low=lo, high=hi, increasing=True, rtol=1e-12)
