"""Where the profile pair's grid goes and the certificate's values there (issue 32).

:mod:`crowdhide.accounting.shuffle.profile_pair` builds a dominating pair from the
single-round certificate's privacy profile read on a finite grid of losses. This module is
the *reading*: it places the grid points on a cheap stand-in for the certificate (the FMT23
clone pair's one-rate system, :func:`_proxy_log_delta`) on a lattice of
:data:`PROFILE_STEP` multiples, then evaluates the certificate itself only there
(:func:`certified_profile`). It is kept apart from the pair and its composition (the hull,
the covering check, the PLD, the tilted composition) because the two only meet at
:func:`certified_profile`'s output, a tuple of grid indices and δ̄ values; where the points
go matters for tightness only, never for validity (docs/proofs/profile-pair.md).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import kappa_up, loss_allowance, rate_up
from crowdhide.accounting.shuffle._krr_fast import clone_noise_log_delta
from crowdhide.accounting.shuffle.variation_ratio import one_report_log_delta

if TYPE_CHECKING:
    from crowdhide.accounting.shuffle.certificate import ShuffleCertificate

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Loss grid of the pair: every profile point is an integer multiple of it.
PROFILE_STEP = 1e-4
#: δ below this is not refined further: a chord that stays under it costs a round at most
#: that much δ (a valid, looser bound for targets below about ``rounds · FLOOR``).
FLOOR = 1e-16
#: Certificate points of the coarse profile (all evaluated together, :func:`_certified_values`:
#: 0.3–1.1 s CPU cold per (ε0, n)), which many rounds use (:data:`PLACEMENT_WEIGHT`) ...
COARSE_EVALUATIONS = 10
#: ... and of the fine profile, which 2 to
#: :data:`~crowdhide.accounting.shuffle.profile_pair.FINE_BELOW_ROUNDS` − 1 rounds use (one
#: round is the single-round certificate itself): the coarse points and one where the
#: proxy crosses each of this many levels, evenly spaced in log δ from δ(0) to
#: :data:`FLOOR` (the tails a few rounds ask for).
FINE_LEVELS = 12
#: The coarse placement's weight (relative to the proxy's δ at 0): an excess of the chord
#: over the proxy counts relative to ``δ + τ δ(0)``, so it places the points where the
#: chord is far above in nearly absolute terms, which is what many composed rounds feel
#: (coarse grid: ε0 = 4, n = 1e3, 100 rounds: 21.5 at τ = 0.1, 23.2 at τ = 1; ε0 = 1,
#: n = 1e4, 10^4 rounds: 6.470 and 6.474; τ = 0.01: 21.2 and 6.605).
PLACEMENT_WEIGHT = 0.1
#: Candidate positions the placement scores (a uniform subset of the lattice).
CANDIDATES = 192
#: The lattice of grid points is as coarse as keeps at least this many of its points below
#: the loss where the proxy falls under :data:`FLOOR`: the pair's losses are lattice points,
#: so its PLD composes on that lattice with no loss rounding and a proportionally smaller FFT.
LATTICE_POINTS = 512
#: The certificate's summation windows are cut at tails ``e^{_LOG_LEVEL − 40}`` (their mass
#: is added to δ, a floor near 4e-18, below :data:`FLOOR`): deeper windows cost up to 3 s a
#: point at ε0 = 4, n = 1e4.
_LOG_LEVEL = 0.0
#: ... the window level (``L`` in tails ``e^{-L}``) those δ queries sum to (as
#: :class:`~crowdhide.accounting.shuffle.curves._AdaptiveCurve` does at that level).
_WINDOW_LEVEL = max(min(2000.0, -_LOG_LEVEL + 40.0), 40.0)
#: Clone-count blocks of the placement's proxy (:func:`_proxy_log_delta`): coarse, it only
#: places points.
_PROXY_C_POINTS = 128


def _certificate(eps0: float, n: int) -> ShuffleCertificate:
    from crowdhide.accounting.shuffle.certificate import shuffle_curve

    return shuffle_curve(eps0=eps0, n=n)


@functools.lru_cache(maxsize=64)
def certified_profile(
    eps0: float, n: int, fine: bool = True
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Grid indices ``i`` (losses ``i · PROFILE_STEP``) and the single-round certificate's
    δ̄ there, for n shuffled reports of any ε0-LDP randomizer (substitute relation). The
    last index is the first lattice point beyond ε0, where δ = 0 (every round is ε0-DP).

    Where the points go does not matter for validity (every grid gives a dominating pair,
    docs/proofs/profile-pair.md), only for tightness: they are placed on a cheap stand-in
    for the certificate (:func:`_proxy_log_delta`, 1 ms a point) by :func:`_placed`, on a
    lattice of :func:`_lattice` steps, and the certificate is evaluated only there:
    :data:`COARSE_EVALUATIONS` points (``fine=False``, for many rounds) or up to
    :data:`FINE_LEVELS` more (a superset). Cached per ``(eps0, n, fine)``, the certificate's
    values per point set (:func:`_certified_values`).

    Examples
    --------
    >>> idx, dlt = certified_profile(1.0, 10_000)
    >>> idx[0], dlt[0] > dlt[1] > 0.0, dlt[-1], idx[-1]
    (0, True, 0.0, 10001)
    >>> set(certified_profile(1.0, 10_000, fine=False)[0]) < set(idx)
    True
    """
    coarse, every, top = _placement(eps0, n)
    chosen = every if fine else coarse
    values = dict(zip(chosen, _certified_values(eps0, n, chosen), strict=True))
    values[top] = 0.0
    keys = sorted(values)
    return tuple(keys), tuple(values[k] for k in keys)


@functools.lru_cache(maxsize=128)
def _certified_values(eps0: float, n: int, indices: tuple[int, ...]) -> tuple[float, ...]:
    """A single-round certificate δ̄ at each ``index · PROFILE_STEP``: the least of the
    certificate's members, each summed to the tails of :data:`_LOG_LEVEL`, with the
    variation-ratio member evaluated at all points at once on one partition
    (:mod:`crowdhide.accounting.shuffle._profile_batch`: the same certificate, refined per
    (ε0, n) instead of per point: over the benchmark grid 8-23 % less CPU in all, up to
    half at ε0 = 4-8) and reported as
    its registry curve reports it (the loss allowance on ε, the relative margin on δ).
    A function of the arguments alone."""
    from crowdhide.accounting.shuffle._profile_batch import variation_ratio_log_deltas
    from crowdhide.accounting.shuffle.generic import _ROUNDING_MARGIN

    eps = [i * PROFILE_STEP for i in indices]
    certificate = _certificate(eps0, n)
    if "variation_ratio" not in certificate.members:
        return tuple(_others_at(eps0, n, i) for i in indices)
    # SafeSideCurve: read at ε − loss_allowance (δ = 0 from ε0 on), δ times 1 + margin
    at = np.maximum(np.asarray(eps) - loss_allowance(eps0), 0.0)
    log_delta = variation_ratio_log_deltas(n, eps0, at, -_WINDOW_LEVEL)
    out = []
    for j, (e, value) in enumerate(zip(eps, log_delta.tolist(), strict=True)):
        if e < eps0 and at[j] < eps0:
            vr = min(math.exp(min(value, 0.0)) * (1.0 + _ROUNDING_MARGIN), 1.0)
            # the other members' least, min with vr: the float min(others, vr) was (§15b)
            out.append(min(_others_at(eps0, n, indices[j], below=vr), vr))
        else:
            out.append(0.0)
    return tuple(out)


def _others_at(eps0: float, n: int, index: int, below: float = math.inf) -> float:
    """The least of 1 and the certificate's members other than variation_ratio at
    ``index · PROFILE_STEP``, each summed to the tails of :data:`_LOG_LEVEL` (one window
    level per point: no widening); or, where a proven lower bound on the ``feldman2021``
    member is above ``min(below, the others)``, the least without that member: then
    ``min(value, below)`` is the float it is with the member (the caller's ``below``: the
    variation-ratio value; docs/proofs/profile-pair.md §15b). Each member's value is
    cached per point: the coarse profile's points are among the fine one's."""
    names = [name for name in _certificate(eps0, n)._members if name != "variation_ratio"]
    rest = min([1.0, *(_member_at(eps0, n, index, name) for name in names if name != FMT21)])
    if FMT21 not in names or _fmt21_floor_at(eps0, n, index) > min(below, rest):
        return rest
    return min(rest, _member_at(eps0, n, index, FMT21))


#: The member whose proven lower bound may spare its evaluation (:func:`_others_at`).
FMT21 = "feldman2021"


@functools.lru_cache(maxsize=4096)
def _member_at(eps0: float, n: int, index: int, name: str) -> float:
    """One member's δ at ``index · PROFILE_STEP``, summed to the tails of :data:`_LOG_LEVEL`."""
    from crowdhide.accounting.shuffle.curves import _summed_like_epsilon_at

    curve = _certificate(eps0, n)._members[name]
    with _summed_like_epsilon_at(_LOG_LEVEL):
        return _member_delta(curve, index * PROFILE_STEP)


def _fmt21_floor_at(eps0: float, n: int, index: int) -> float:
    """A proven lower bound on the FMT21 clone pair's δ at ``index · PROFILE_STEP`` (one
    round, :mod:`._fmt21_floor` at its coarse layout), hence on the ``feldman2021`` member
    (an upper bound on that pair's δ): 4-18 ms for all points of a profile against 19-145
    ms for the member's 22 evaluations."""
    from crowdhide.accounting.shuffle._fmt21_floor import hockey_lower

    loss, mass = _fmt21_atoms(eps0, n)
    return hockey_lower(loss, mass, index * PROFILE_STEP)


@functools.lru_cache(maxsize=64)  # as certified_profile: the coarse profile after the fine
def _fmt21_atoms(eps0: float, n: int) -> tuple[FloatArray, FloatArray]:
    """The one-round floor's atoms (windows to tails of ``FLOOR / 10``), once per (ε0, n)."""
    from crowdhide.accounting.shuffle._fmt21_floor import COARSE, loss_atoms

    return loss_atoms(n, eps0, FLOOR / 10.0, COARSE)


def _member_delta(curve: PrivacyCurve, eps: float) -> float:
    """A certificate member's δ at ε, or 1 where its condition on the point asked fails (as
    :meth:`~crowdhide.accounting.shuffle.certificate.ShuffleCertificate.delta` takes it)."""
    try:
        return curve.delta(eps)
    except ValueError:
        return 1.0


@functools.lru_cache(maxsize=64)
def _placement(eps0: float, n: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The coarse points, all points (a superset) and the top index (δ = 0) of
    :func:`certified_profile`, from the proxy alone."""
    step, below, top, last = _lattice(eps0, n)
    candidates = np.unique(np.round(np.linspace(0, last // step, CANDIDATES)).astype(np.int64))
    candidates = candidates * step
    proxy = np.exp(_proxy_log_deltas(eps0, n, candidates))
    start = np.zeros(candidates.size, dtype=bool)
    start[[0, -1]] = True
    coarse = _placed(candidates, proxy, start, COARSE_EVALUATIONS, PLACEMENT_WEIGHT)
    every = coarse.copy()
    with np.errstate(divide="ignore"):
        log_proxy = np.log(proxy)
    levels = np.linspace(log_proxy[0], math.log(FLOOR), FINE_LEVELS + 2)[1:-1]
    # the last candidate at or above each level (the proxy is non-increasing)
    crossing = np.searchsorted(-log_proxy, -levels, side="right") - 1
    every[np.clip(crossing, 0, candidates.size - 1)] = True
    assert int(candidates[every].max()) <= below < top
    return tuple(candidates[coarse].tolist()), tuple(candidates[every].tolist()), top


def _proxy_log_delta(eps0: float, n: int, index: int) -> float:
    """A stand-in for the certificate's ``log δ̄`` at ``index · PROFILE_STEP`` that only
    places the grid: the FMT23 clone pair's one-rate system (the certificate is within a
    few per cent of it in δ), coarsely blocked; one binary RR report's profile where that
    system does not apply (ε0 beyond ~38). Never used as a bound."""
    eps = index * PROFILE_STEP
    if eps >= eps0:
        return -math.inf
    one = one_report_log_delta(eps, eps0)
    kappa = kappa_up(eps0)
    if kappa >= 1.0:
        return one
    clone = 2.0 / (math.exp(eps0) + 1.0)
    value = clone_noise_log_delta(n, kappa, 1.0, clone, eps, -40.0, c_points=_PROXY_C_POINTS)
    return min(value, one)


def _proxy_log_deltas(eps0: float, n: int, indices: IntArray) -> FloatArray:
    """:func:`_proxy_log_delta` at every index, the same floats (tests compare them): the
    one layout of the proxy's clone system summed at every ε at once
    (:func:`~crowdhide.accounting.shuffle._profile_batch.clone_blocks_log_deltas`, whose
    values are the one-point function's), instead of one sum per candidate (0.1–0.2 s of a
    coarse profile's 0.4–1.2 s)."""
    from crowdhide.accounting.shuffle._krr_fast import S_POINTS, _clone_layout
    from crowdhide.accounting.shuffle._profile_batch import clone_blocks_log_deltas

    eps = np.asarray(np.asarray(indices, dtype=np.int64) * PROFILE_STEP, dtype=np.float64)
    out = np.full(eps.size, -np.inf)
    live = eps < eps0
    at = eps[live]
    one = np.array([one_report_log_delta(float(e), eps0) for e in at], dtype=np.float64)
    kappa = kappa_up(eps0)
    if kappa >= 1.0 or not at.size:
        out[live] = one
        return out
    clone = 2.0 / (math.exp(eps0) + 1.0)
    # clone_noise_log_delta's layout (mu2 = 1 rounded up) and its blocked sum, per ε
    m, log_w, _, s_end, log_mass, log_out, c_tail = _clone_layout(
        n, clone, rate_up(1.0), -40.0, _PROXY_C_POINTS, S_POINTS
    )
    layout = (log_w, log_mass, s_end, np.broadcast_to(m[:, None], s_end.shape), log_out, c_tail)
    values = clone_blocks_log_deltas(layout, kappa, at, -40.0)
    values = np.where(at >= 2.0 * math.atanh(kappa), -np.inf, values)
    out[live] = np.minimum(values, one)
    return out


def _lattice(eps0: float, n: int) -> tuple[int, int, int, int]:
    """``(step, below, top, last)`` in profile steps: the lattice step (:data:`LATTICE_POINTS`
    of them at least up to where the proxy falls under :data:`FLOOR`), the largest lattice
    point below ε0, the first one beyond ``ε0 + PROFILE_STEP`` (δ = 0 there: the chord to
    it then lies strictly above the profile, see
    :func:`~crowdhide.accounting.shuffle.profile_pair.profile_pair`) and the last point
    the placement considers (the proxy under FLOOR there, or ``below``)."""
    limit = math.ceil(eps0 / PROFILE_STEP) - 1  # the largest index whose loss is below ε0
    while limit > 0 and limit * PROFILE_STEP >= eps0:
        limit -= 1
    floor_log = math.log(FLOOR)
    lo, hi = 0, limit  # the proxy is non-increasing: bisect for where it falls under FLOOR
    if limit > 0 and _proxy_log_delta(eps0, n, limit) <= floor_log:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _proxy_log_delta(eps0, n, mid) <= floor_log:
                hi = mid
            else:
                lo = mid
    step = max(1, hi // LATTICE_POINTS)
    below = limit // step * step
    top = step * math.ceil((math.ceil(eps0 / PROFILE_STEP) + 1) / step)
    return step, below, top, min(step * math.ceil(hi / step), below)


def _placed(
    candidates: IntArray,
    proxy: FloatArray,
    start: npt.NDArray[np.bool_],
    budget: int,
    tau: float,
) -> npt.NDArray[np.bool_]:
    """``start`` (a mask over the sorted ``candidates``, the first and the last among it)
    with more candidates, up to ``budget`` in all: in turn, the one where the chord (in
    ``t = e^ε``) through its chosen neighbours exceeds the proxy the most, relative to
    ``proxy + tau proxy[0]``, while a chord is above."""
    t = np.exp(candidates * PROFILE_STEP)
    chosen = start.copy()
    every = np.arange(candidates.size)
    for _ in range(max(budget - int(chosen.sum()), 0)):
        at = np.flatnonzero(chosen)
        right = at[np.minimum(np.searchsorted(at, every), at.size - 1)]
        left = at[np.maximum(np.searchsorted(at, every, side="right") - 1, 0)]
        span = np.where(right > left, t[right] - t[left], 1.0)
        chord = proxy[left] + (proxy[right] - proxy[left]) * (t - t[left]) / span
        score = (chord - proxy) / (proxy + tau * proxy[0] + 1e-300)
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        if not score[best] > 0.0:
            break
        chosen[best] = True
    return chosen
