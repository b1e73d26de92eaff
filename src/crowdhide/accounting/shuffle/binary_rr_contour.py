"""Shuffled binary RR at any n: the block cores of :mod:`crowdhide.accounting.shuffle.binary_rr`
evaluated by tilted contour integrals, in O(rows · nodes) with nodes independent of n.

A core ``(a, b)`` (a of the others on x, b on x') releases ``C = R + T`` with
``R = Bin(a, p) + Bin(b, q)`` and ``T`` the target's report. Its probability generating
function is ``(q + p z) Ψ(z)`` under x and ``(p + q z) Ψ(z)`` under x', with
``Ψ(z) = (q + p z)^a (p + q z)^b``. The likelihood ratio is increasing in the count (``R`` is
log-concave), so the forward δ is ``max_c g(c)`` with ``g(c) = Σ_{t >= c} d_t`` and
``d_t = P_x(t) − e^ε P_x'(t)``: a suffix sum, reached at the first ``c*`` with ``d_{c*} > 0``.

Contour integrals. For ``|z| = r = e^s > 1``,

    d_t  = (1/2π) ∫ D(z) Ψ(z) z^{−t} dθ,               D(z) = (q − E p) + (p − E q) z,
    g(c) = (1/2π) ∫ D(z) Ψ(z) z^{−c} / (1 − 1/z) dθ,   z = r e^{iθ},  E = e^ε.

The trapezoid rule with ``M`` points returns the wanted coefficient plus the aliased
coefficients ``k M`` away, weighted ``r^{kM}``; they are bounded by Chernoff's inequality
(``k >= 1``, with ``r²``) and by ``r^{−M}`` times the total mass (``k <= −1``) — see
:func:`_log_alias`. The tilt ``s`` is the saddle point of the threshold (the tilted law of
``R`` is centred there), so the integrand is concentrated on ``|θ| <~ 1/σ``: only the nodes
with ``|θ| <= θ_0`` are evaluated and the others are bounded by ``|Ψ(r e^{iθ_0})|``
(``|Ψ(r e^{iθ})|`` decreases in ``|θ|`` on ``[0, π]``). Rounding is bounded per node (the
logarithms are formed from ``log1p`` and ``atan2`` of exact closed forms, phases are reduced
in integers) and added. Every error bound is added to ``g`` and used to certify the sign of
``d``, so the result is an upper bound; the nodes per core are ``O(√L · (L + z²)/z)`` for
tail level ``e^{-L}`` and a threshold ``z`` standard deviations out — about a hundred,
whatever n.

The threshold ``c*`` of each core is bracketed by two bisections whose ends are *certified*
(``d < 0`` resp. ``d > 0`` with the error bounds), and ``g`` is evaluated at every ``c`` in
the final bracket (at most :data:`MAX_CANDIDATES`; a core whose bracket stays wider is given
δ = 1, never less).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from crowdhide.accounting.shuffle._krr_fast import binary_core_rows

__all__ = [
    "LEVEL",
    "MAX_CANDIDATES",
    "MAX_NODES",
    "TiltedCores",
    "tilted_cores",
    "tilted_worst_log_delta",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Unit roundoff.
_U = 2.0**-53
#: Largest bracket of thresholds evaluated exhaustively per core.
MAX_CANDIDATES = 16
#: Tilts are capped here (``r = e^s`` stays far from overflow).
_S_MAX = 40.0
#: Target tail level: aliasing and node truncation are made below ``e^{-LEVEL} σ^{-2}``
#: relative to the normalized value (they are bounded and added whatever it is).
LEVEL = 40.0
#: Largest node count per core; beyond it (a threshold in an extreme tail of a core with
#: little noise, e.g. ε close to ε0 at n·p·q of a few units) the bound is not evaluated and
#: δ = 1 is returned — valid, and other bounds (FMT23) are the ones to use there.
MAX_NODES = 1024


def _log_psi(a: FloatArray, b: FloatArray, p: float, q: float, s: FloatArray) -> FloatArray:
    """``log Ψ(e^s) = a log(q + p e^s) + b log(p + q e^s)``."""
    lp, lq = math.log(p), math.log(q)
    return np.asarray(a * np.logaddexp(lq, lp + s) + b * np.logaddexp(lp, lq + s))


def _tilted_mean(a: FloatArray, b: FloatArray, p: float, q: float, s: FloatArray) -> FloatArray:
    """Mean of ``R`` tilted by ``e^{s R}``: ``a p e^s/(q + p e^s) + b q e^s/(p + q e^s)``."""
    odds = math.log(p) - math.log(q)
    return np.asarray(a * expit(s + odds) + b * expit(s - odds))


def _solve_tilt(a: FloatArray, b: FloatArray, p: float, q: float, target: FloatArray) -> FloatArray:
    """``s >= 0`` whose tilted mean is ``target`` (bisection; any ``s`` keeps the bounds
    rigorous, the saddle point only makes them small)."""
    lo, hi = np.zeros_like(a), np.full_like(a, _S_MAX)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        above = _tilted_mean(a, b, p, q, mid) > target
        hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
    return np.asarray(hi)


def _node_logs(
    a: FloatArray, b: FloatArray, p: float, q: float, s: FloatArray, theta: FloatArray
) -> tuple[npt.NDArray[np.complex128], FloatArray]:
    """``log Ψ(r e^{iθ})/Ψ(r)`` (rows x nodes) and a bound on its absolute rounding error.

    With ``u = p r/(q + p r)``: ``(q + p r e^{iθ})/(q + p r) = 1 − 2u sin²(θ/2) + i u sin θ``,
    of squared modulus ``1 − 4u(1 − u) sin²(θ/2)`` — both formed without cancellation."""
    odds = math.log(p) - math.log(q)
    half = np.sin(theta / 2.0) ** 2
    sin = np.sin(theta)
    total = np.zeros(np.broadcast_shapes(a[:, None].shape, theta.shape), dtype=np.complex128)
    size = np.zeros(total.shape)
    for count, u in ((a, expit(s + odds)), (b, expit(s - odds))):
        uu = u[:, None]
        with np.errstate(divide="ignore"):
            re = 0.5 * np.log1p(-4.0 * uu * (1.0 - uu) * half)
        im = np.arctan2(uu * sin, 1.0 - 2.0 * uu * half)
        cnt = count[:, None]
        re = np.where(cnt > 0, re, 0.0)  # no 0 · (−inf) where nobody is of this kind
        total += cnt * re + 1j * cnt * im
        size += cnt * (np.abs(re) + np.abs(im))
    err = 8.0 * _U * (size + np.abs(total.imag) + 8.0)
    return total, np.where(np.isfinite(err), err, 0.0)


@dataclass(frozen=True, slots=True)
class TiltedCores:
    """Per core (row): tilt, trapezoid size and the evaluated nodes (ε-independent)."""

    p: float
    q: float
    a: FloatArray
    b: FloatArray
    s: FloatArray
    m: IntArray  # trapezoid points M per row
    j: IntArray  # node indices (rows x nodes); masked entries are ignored
    mask: npt.NDArray[np.bool_]
    weight: npt.NDArray[np.complex128]  # Ψ(z_j)/Ψ(r), 0 where masked
    rel_err: FloatArray  # bound on its relative rounding error (and the phase's)
    z: npt.NDArray[np.complex128]  # z_j = r e^{iθ_j}
    inv_1mz: npt.NDArray[np.complex128]  # 1/(1 − 1/z_j)
    log_psi_r: FloatArray
    log_psi_r2: FloatArray
    log_trunc: FloatArray  # log |Ψ/Ψ(r)| bound over the omitted nodes (-inf: none)
    omitted: FloatArray  # fraction of the M nodes omitted
    scale_err: FloatArray  # absolute rounding bound of log Ψ(r), per unit of s·t added

    @property
    def rows(self) -> int:
        return int(self.a.size)

    @property
    def theta(self) -> FloatArray:
        return np.asarray(2.0 * np.pi * self.j / self.m[:, None])


def _node_layout(
    a: FloatArray, b: FloatArray, p: float, q: float, s: FloatArray, m: IntArray, level: FloatArray
) -> tuple[IntArray, npt.NDArray[np.bool_], FloatArray] | None:
    """Node indices ``|j| <= J`` per row with ``|Ψ/Ψ(r)| <= e^{-level}`` beyond ``J``, from
    ``log1p(−x) <= −x``: ``log|Ψ(r e^{iθ})/Ψ(r)| <= −κ sin²(θ/2)``, ``κ = 2 Σ count u(1 − u)``;
    ``None`` beyond :data:`MAX_NODES` nodes."""
    odds = math.log(p) - math.log(q)
    u1, u2 = expit(s + odds), expit(s - odds)
    kappa = 2.0 * (a * u1 * (1.0 - u1) + b * u2 * (1.0 - u2))
    ratio = np.clip(level / np.maximum(kappa, 1e-300), 0.0, 1.0)
    theta0 = 2.0 * np.arcsin(np.sqrt(ratio))
    big_j = np.ceil(theta0 * m / (2.0 * np.pi)).astype(np.int64)
    full = 2 * big_j + 1 >= m
    if int(np.where(full, m, 2 * big_j + 1).max()) > MAX_NODES:
        return None
    lo = np.where(full, -((m - 1) // 2), -big_j)
    hi = np.where(full, m - 1 - (m - 1) // 2, big_j)
    width = int((hi - lo).max()) + 1
    j = lo[:, None] + np.arange(width, dtype=np.int64)[None, :]
    mask = j <= hi[:, None]
    # Omitted nodes: |θ| >= 2π(J + 1)/M; the bound there (rows without omissions: -inf).
    theta_t = 2.0 * np.pi * np.minimum(big_j + 1, m // 2) / m
    log_t, _ = _node_logs(a, b, p, q, s, theta_t[:, None])
    trunc = np.where(full, -np.inf, log_t.real[:, 0])
    return np.where(mask, j, 0), mask, np.asarray(trunc, dtype=np.float64)


@functools.lru_cache(maxsize=16)
def tilted_cores(n: int, eps0: float, width: int, s_star: float) -> TiltedCores | None:
    """The cores of :func:`binary_core_rows` tilted for the threshold of likelihood ratio
    ``e^{s_star}`` (cached; any tilt gives rigorous bounds, this one makes them tight);
    ``None`` when a core would need more than :data:`MAX_NODES` nodes."""
    e = math.exp(eps0)
    p, q = e / (e + 1.0), 1.0 / (e + 1.0)
    rows = np.array(binary_core_rows(n, width), dtype=np.float64)
    a, b = rows[:, 0], rows[:, 1]
    sigma = np.sqrt((a + b) * p * q)
    s_min = np.minimum(1.0 / np.maximum(sigma, 1e-300), 1.0)
    s = np.clip(np.full_like(a, s_star), s_min, _S_MAX)
    centre = _tilted_mean(a, b, p, q, s)
    log_psi_r = _log_psi(a, b, p, q, s)
    log_psi_r2 = _log_psi(a, b, p, q, 2.0 * s)
    rate = s * centre - log_psi_r  # Chernoff exponent at the centre (>= 0)
    log_w2 = np.logaddexp(math.log(q), math.log(p) + 2.0 * s)
    far = log_w2 + log_psi_r2 - 2.0 * s * centre + rate
    level = LEVEL + 2.0 * np.log(2.0 + sigma)
    m = np.ceil((level + 12.0 + np.maximum(rate, far) + 2.0 * s * np.sqrt(1.0 + sigma)) / s)
    m = np.maximum(m, 8.0).astype(np.int64)
    layout = _node_layout(a, b, p, q, s, m, level + 8.0 + np.log1p(1.0 / s))
    if layout is None:
        return None
    j, mask, trunc = layout
    theta = 2.0 * np.pi * j / m[:, None]
    log_rel, log_err = _node_logs(a, b, p, q, s, theta)
    weight = np.asarray(np.where(mask, np.exp(log_rel), 0.0), dtype=np.complex128)
    # exp and the products add a few ulps; the phase angle (<= 2π) a few more.
    rel_err = np.where(mask, np.expm1(log_err + 4.0 * _U * (2.0 * np.pi + 4.0)) + 24.0 * _U, 0.0)
    z = np.asarray(np.exp(s[:, None] + 1j * theta), dtype=np.complex128)
    inv_1mz = np.asarray(1.0 / (1.0 - np.exp(-s[:, None] - 1j * theta)), dtype=np.complex128)
    scale_err = 8.0 * _U * (np.abs(log_psi_r) + a * s + b * s + 1.0)
    return TiltedCores(
        p, q, a, b, s, m, j, mask, weight, rel_err, z, inv_1mz,
        log_psi_r, log_psi_r2, trunc, 1.0 - mask.sum(axis=1) / m, scale_err,
    )  # fmt: skip


def _log_alias(c: TiltedCores, t: FloatArray, big: float) -> FloatArray:
    """Log of a bound on the aliased coefficients (normalized by ``Ψ(r) r^{−t}``), valid for
    both ``d_t`` and ``g(t)``: ``k <= −1`` terms are at most ``(1 + E) r^{−M}/(1 − r^{−M})``
    (total mass), ``k >= 1`` terms at most ``(1 + E)(q + p r²)Ψ(r²) r^{−2t} r^{−M}/(1 − r^{−M})``
    (Chernoff with ``r²``; ``q + p r² >= p + q r²``)."""
    s, sm = c.s[:, None], (c.s * c.m)[:, None]
    base = math.log1p(big) - sm - np.log(-np.expm1(-sm))
    below = s * t - c.log_psi_r[:, None]
    log_w2 = np.logaddexp(math.log(c.q), math.log(c.p) + 2.0 * s)
    above = log_w2 + c.log_psi_r2[:, None] - s * t - c.log_psi_r[:, None]
    return np.asarray(base + np.logaddexp(below, above))


def _contour(
    c: TiltedCores, t: FloatArray, eps: float, *, suffix: bool
) -> tuple[FloatArray, FloatArray]:
    """``d_t`` (``suffix=False``) or ``g(t)`` for integer ``t`` (rows x K), normalized by
    ``Ψ(r) r^{−t}``: (value, bound on its absolute error)."""
    big = math.exp(eps)
    p, q = c.p, c.q
    # D(z) = (q − E p) + (p − E q) r e^{iθ}; for g also divided by (1 − e^{−s − iθ}).
    factor = (q - big * p) + (p - big * q) * c.z
    bound = abs(q - big * p) + abs(p - big * q) * np.exp(c.s)
    if suffix:
        factor = factor * c.inv_1mz
        bound = bound / -np.expm1(-c.s)
    w = factor * c.weight  # rows x nodes (0 where masked)
    m3 = c.m[:, None, None]
    # e^{−iθ_j t} with the angle reduced exactly in integers.
    angle = np.mod(c.j[:, None, :] * t.astype(np.int64)[:, :, None], m3) * (2.0 * np.pi) / m3
    value = np.einsum("rkn,rn->rk", np.cos(angle), w.real)
    value += np.einsum("rkn,rn->rk", np.sin(angle), w.imag)
    m2 = c.m[:, None].astype(np.float64)
    mags = np.abs(w)
    nodes = c.mask.sum(axis=1)
    err = (mags * c.rel_err).sum(axis=1) + mags.sum(axis=1) * (4.0 * nodes + 8.0) * _U
    trunc = c.omitted * bound * np.exp(c.log_trunc)
    with np.errstate(over="ignore"):  # an infinite bound only leaves the sign undecided
        alias = np.exp(_log_alias(c, t, big))
    return value / m2, ((err / c.m) + trunc)[:, None] + alias * (1.0 + 1e-12)


def _signs(c: TiltedCores, eps: float, t: FloatArray) -> tuple[npt.NDArray[np.bool_], ...]:
    """Certified ``d_t < 0`` and certified ``d_t > 0`` (with the error bounds), rows x K."""
    value, err = _contour(c, t, eps, suffix=False)
    return value + err < 0.0, value - err > 0.0


def _certified_ends(
    c: TiltedCores, eps: float, guess: FloatArray, top: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The nearest points below ``guess`` (offsets 0, 1, 3, 7, …) certified with ``d < 0``
    and from ``guess`` up (same offsets, plus one) certified with ``d > 0``; else the
    analytic ends ``d_0 = (q − E p) R(0) < 0`` and ``d_{N+1} = (p − E q) R(N) > 0``."""
    lo, hi = np.zeros_like(guess), top.copy()
    found_lo = np.zeros(guess.shape, dtype=bool)
    found_hi = found_lo.copy()
    offsets = 2.0 ** np.arange(int(math.log2(max(float(top.max()), 2.0))) + 2) - 1.0
    rows = np.arange(guess.size)
    for batch in (offsets[:2], offsets[2:6], offsets[6:]):
        if batch.size == 0 or (found_lo.all() and found_hi.all()):
            break
        below = np.clip(guess[:, None] - 1.0 - batch[None, :], 0.0, top[:, None])
        above = np.clip(guess[:, None] + batch[None, :], 0.0, top[:, None])
        neg, pos = _signs(c, eps, np.concatenate([below, above], axis=1))
        neg, pos = neg[:, : batch.size], pos[:, batch.size :]
        new_lo = neg.any(axis=1) & ~found_lo
        new_hi = pos.any(axis=1) & ~found_hi
        lo = np.where(new_lo, below[rows, neg.argmax(axis=1)], lo)
        hi = np.where(new_hi, above[rows, pos.argmax(axis=1)], hi)
        found_lo |= new_lo
        found_hi |= new_hi
    return lo, hi


def _bracket(
    c: TiltedCores, eps: float, lo: FloatArray, hi: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Shrink ``(lo, hi]`` around ``c*`` keeping both ends certified (``d_lo < 0``,
    ``d_hi > 0``); a row stops at its first midpoint of undecided sign."""
    active = hi - lo > 1.0
    for _ in range(math.ceil(math.log2(max(float((hi - lo).max()), 2.0))) + 1):
        if not active.any():
            break
        mid = np.floor(0.5 * (lo + hi))
        neg, pos = (x[:, 0] for x in _signs(c, eps, mid[:, None]))
        lo = np.where(active & neg, mid, lo)
        hi = np.where(active & pos, mid, hi)
        active &= (neg | pos) & (hi - lo > 1.0)
    return lo, hi


def tilted_worst_log_delta(n: int, eps0: float, eps: float, width: int) -> float:
    """Upper bound on ``log max over cores of δ_core(ε)`` (forward; the rows include each
    core's mirror, so both directions of every dataset are covered)."""
    if eps >= eps0:
        return -math.inf
    e, big = math.exp(eps0), math.exp(eps)
    p, q = e / (e + 1.0), 1.0 / (e + 1.0)
    if p - big * q <= 0.0 or p <= q:  # ε0 below what doubles resolve: decline (δ = 1)
        return 0.0
    rho = (big * p - q) / (p - big * q)  # d_t > 0 iff R(t−1)/R(t) > rho
    s_star = math.log(rho) if rho > 1.0 else 0.0
    # Tilts rounded to 2 % share one cached node layout (any tilt keeps the bounds valid).
    s_key = float(f"{max(s_star, 1e-300):.2g}") if s_star > 0 else 0.0
    c = tilted_cores(n, eps0, width, s_key)
    if c is None:
        return 0.0
    top = c.a + c.b + 1.0
    guess = np.clip(np.round(_tilted_mean(c.a, c.b, p, q, np.full_like(c.a, s_star)) + 0.5), 0, top)
    # c* lies in (lo, hi] (both ends certified); shrink, then evaluate g on all of it.
    lo, hi = _bracket(c, eps, *_certified_ends(c, eps, guess, top))
    span = hi - lo
    k = np.arange(1, min(float(span.max()), MAX_CANDIDATES) + 1, dtype=np.float64)[None, :]
    cand = np.minimum(lo[:, None] + k, hi[:, None])
    value, err = _contour(c, cand, eps, suffix=True)
    with np.errstate(divide="ignore"):
        log_g = np.log(np.maximum(value + err, 0.0))
    log_g = log_g + c.log_psi_r[:, None] - c.s[:, None] * cand
    log_g = log_g + (c.scale_err[:, None] + 8.0 * _U * c.s[:, None] * cand)
    per_row = np.where(span > MAX_CANDIDATES, 0.0, log_g.max(axis=1))
    return float(min(per_row.max(), 0.0))
