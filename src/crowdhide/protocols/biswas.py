"""Biswas, Jung, Palamidessi's δ̂(ε) for shuffled k-RR, as published and corrected.

The paper's Theorem IV.1 / eq. (6) gives, for n users of k-RR (local level ε0), a target user
holding x0 versus x1 ≠ x0 and ``n_x0`` *other* users holding x0,

    δ̂(ε) = Σ_{s=0}^{n} 1{v_s > ε} (1 − e^{ε − v_s}) · κ3(s)/(n − n_x0) · Σ_{r=0}^{s} μ(s, r) τ_r,
    μ(s, r) = C(n_x0, r) C(n − n_x0, s − r) κ1^r,   τ_r = κ2 (n − n_x0) + (e^{ε0} − κ2)(s − r),
    κ1 = e^{ε0}(e^{ε0} + k − 2)/(k − 1),  κ2 = (k − 1)/(e^{ε0} + k − 2),
    κ3(s) = (k − 1)^{n_x0} (e^{ε0} + k − 2)^{n − n_x0 − s} / (e^{ε0} + k − 1)^n.

Two versions are provided:

* :func:`biswas_delta_published` — **exactly as published**, with the privacy loss ``v'_s``
  as printed in Theorem IV.1, which carries an extra factor ``(s − r)/(n − n_x0)`` inside the
  sum. This reproduces the paper's Tables II and IV. ``v'_s <= v_s``, so the published δ̂ is
  far too small: it is **not a privacy guarantee and must never be used as a certificate**.
* :func:`biswas_x0_count_delta` — the corrected formula (true ``v_s``), which equals the
  exact hockey-stick divergence of the *count of x0* in the report histogram for that one
  dataset pair and direction. Even corrected it is only a **lower bound** on the DP δ of
  shuffled k-RR for k >= 3 (the full histogram leaks more, and DP needs the worst dataset
  and both directions); for k = 2 its maximum over ``n_x0`` (both directions) is exact.

The certificate crowdhide uses for shuffled k-RR is the exact worst-case curve of the
shared shuffle accountant (``crowdhide.accounting.shuffle.generic.krr_shuffle_curve``).

Everything is evaluated in log space (``gammaln`` binomials, ``logsumexp`` over r,
``expm1`` for ``1 − e^{ε − v}``), so values far below 1e-308 are returned as finite
``log δ``. Cost O(n · n_x0) time and memory: n is limited to 20,000.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide._validation import check_int, check_real
from crowdhide.accounting.logmath import log1mexp, logsumexp
from crowdhide.errors import InvalidParameterError

__all__ = [
    "biswas_community_delta",
    "biswas_delta_published",
    "biswas_log_delta",
    "biswas_x0_count_delta",
]

_MAX_N = 20_000


def _log_binom(n: int, j: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    out = np.full(j.shape, -np.inf)
    ok = (j >= 0) & (j <= n)
    jj = j[ok].astype(np.float64)
    out[ok] = gammaln(n + 1.0) - gammaln(jj + 1.0) - gammaln(n - jj + 1.0)
    return out


@lru_cache(maxsize=64)
def _terms(
    eps0: float, k: int, n: int, n_x0: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``log P0(s)``, correct ``v_s`` and printed ``v'_s`` for s = 0 … n (ε-independent, so
    cached across ε; the returned arrays are read-only)."""
    log_e0k2 = float(np.logaddexp(eps0, math.log(k - 2))) if k > 2 else eps0  # log(e^ε0+k−2)
    log_e0k1 = float(np.logaddexp(eps0, math.log(k - 1)))  # log(e^ε0 + k − 1)
    log_k1 = eps0 + log_e0k2 - math.log(k - 1)  # log κ1
    log_k2 = math.log(k - 1) - log_e0k2  # log κ2
    m = n - n_x0  # >= 1
    s = np.arange(n + 1, dtype=np.int64)[:, None]
    r = np.arange(n_x0 + 1, dtype=np.int64)[None, :]
    log_c_x0 = _log_binom(n_x0, r)  # C(n_x0, r)
    log_mu = log_c_x0 + _log_binom(m, s - r) + r * log_k1  # log μ(s, r)
    log_t = logsumexp(log_mu, axis=1)  # log T_s = log Σ_r μ
    # B_s = Σ_r C(n_x0, r) C(m − 1, s − 1 − r) κ1^r (the correct second sum, eq. (15)).
    log_b_terms = log_c_x0 + _log_binom(m - 1, s - 1 - r) + r * log_k1
    log_b = logsumexp(log_b_terms, axis=1)
    # Printed v'_s: the same sum with an extra factor (s − r)/(n − n_x0).
    with np.errstate(divide="ignore"):
        log_extra = np.log(np.maximum(s - r, 0).astype(np.float64)) - math.log(m)
    log_b_printed = logsumexp(log_b_terms + log_extra, axis=1)
    # e^{ε0} − κ2 > 0 since e^{ε0} > 1 > κ2.
    log_gap = eps0 + float(log1mexp(log_k2 - eps0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(log_t > -np.inf, log_b - log_t, -np.inf)
        ratio_printed = np.where(log_t > -np.inf, log_b_printed - log_t, -np.inf)
    v = np.logaddexp(log_k2, log_gap + ratio)
    v_printed = np.logaddexp(log_k2, log_gap + ratio_printed)
    # log P0(s) = log κ3(s) + log(κ2 T_s + (e^{ε0} − κ2) B_s)   (eq. (12)).
    s_flat = s[:, 0].astype(np.float64)
    log_k3 = n_x0 * math.log(k - 1) + (n - n_x0 - s_flat) * log_e0k2 - n * log_e0k1
    log_p0 = log_k3 + np.logaddexp(log_k2 + log_t, log_gap + log_b)
    for arr in (log_p0, v, v_printed):
        arr.flags.writeable = False
    return log_p0, v, v_printed


def biswas_log_delta(
    *, epsilon: float, eps0: float, k: int, n: int, n_x0: int, published: bool
) -> float:
    """``log δ̂(ε)`` of eq. (6); ``published=True`` uses the printed (wrong) ``v'_s``.

    See :func:`biswas_delta_published` and :func:`biswas_x0_count_delta`. Returns ``-inf``
    when δ̂ = 0 (always for ε >= ε0).
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    kk = check_int("k", k, low=2)
    nn = check_int("n", n, low=1, high=_MAX_N)
    nx = check_int("n_x0", n_x0, low=0, high=nn - 1)
    log_p0, v, v_printed = _terms(e0, kk, nn, nx)
    loss = v_printed if published else v
    active = (loss > eps) & (log_p0 > -np.inf)
    if not active.any():
        return -math.inf
    return float(logsumexp(log_p0[active] + log1mexp(eps - loss[active])))


def biswas_delta_published(*, epsilon: float, eps0: float, k: int, n: int, n_x0: int) -> float:
    """Biswas et al.'s δ̂(ε), eq. (6) with ``v'_s`` exactly as printed in Theorem IV.1.

    **Not a privacy guarantee.** The printed ``v'_s`` is smaller than the true privacy loss,
    so this value is far below the true δ (e.g. n = 100, k = 10, n_x0 = 80, ε0 = 2, ε = 0.1:
    2.49e-15 published vs 6.15e-3 corrected), and even the corrected formula is only a lower
    bound for k >= 3. Kept to reproduce the paper's tables; never use it as a certificate.

    Examples
    --------
    Table II of the paper, n = 100, ε0 = 0.49, ε = 0.1 (k = 10, n_x0 = 80):

    >>> f"{biswas_delta_published(epsilon=0.1, eps0=0.49, k=10, n=100, n_x0=80):.2e}"
    '1.27e-28'
    """
    return math.exp(
        biswas_log_delta(epsilon=epsilon, eps0=eps0, k=k, n=n, n_x0=n_x0, published=True)
    )


def biswas_x0_count_delta(*, epsilon: float, eps0: float, k: int, n: int, n_x0: int) -> float:
    """Corrected eq. (6): the exact divergence ``H_{e^ε}`` of the x0-count, one direction.

    It is the hockey-stick divergence between the laws of the number of reports equal to x0
    when the target user holds x0 versus x1, with ``n_x0`` of the other users holding x0 and
    the rest holding values ≠ x0. It is a **lower bound** on the DP δ of shuffled k-RR (the
    full histogram, the worst dataset and both directions can only be larger); for k = 2
    ``max over n_x0`` equals the exact DP δ.

    Examples
    --------
    >>> round(biswas_x0_count_delta(epsilon=0.1, eps0=2.0, k=10, n=100, n_x0=80), 5)
    0.00615
    """
    return math.exp(
        biswas_log_delta(epsilon=epsilon, eps0=eps0, k=k, n=n, n_x0=n_x0, published=False)
    )


def biswas_community_delta(
    *, epsilon: float, eps0: float, counts: npt.ArrayLike, published: bool
) -> tuple[float, int]:
    """Biswas et al.'s community-level δ̂, eq. (10): ``max over present values x`` of
    δ̂(ε; n_x0 = N_x − 1). Returns ``(log δ̂, argmax x)``.

    Data-dependent and, with ``published=True``, based on the wrong ``v'_s``: a description
    of the paper's procedure, not a guarantee.
    """
    c = np.asarray(counts)
    if c.ndim != 1 or c.size < 2 or c.dtype.kind not in "iu" or (c < 0).any():
        raise InvalidParameterError(
            f"counts must be a vector of >= 2 non-negative integers, got {c!r}"
        )
    n = int(c.sum())
    best, arg = -math.inf, -1
    for x in np.flatnonzero(c).tolist():
        value = biswas_log_delta(
            epsilon=epsilon,
            eps0=eps0,
            k=int(c.size),
            n=n,
            n_x0=int(c[x]) - 1,
            published=published,
        )
        if value > best or arg < 0:
            best, arg = value, int(x)
    return best, arg
