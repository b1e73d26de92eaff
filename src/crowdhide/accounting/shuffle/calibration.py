"""Shuffle calibrations: the smallest ε0 or n meeting (ε, δ), and ε against n.

Each calibration asks the shuffle bounds of :mod:`crowdhide.accounting.shuffle.generic` for δ
at the target ε along a monotone parameter (cheaper than solving for ε), then settles the
answer with an ε query. Plotting ε against n is :func:`crowdhide.report.plots.plot_epsilon_vs_n`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.roots import LOG_ZERO, safe_root
from crowdhide.accounting.shuffle.curves import _summed_like_epsilon_at
from crowdhide.accounting.shuffle.generic import (
    _BOUNDS,
    _MAX_EPS0,
    _MAX_N,
    ShuffleParams,
    _check_bound,
    _evaluate,
    _query,
    shuffle_delta,
    shuffle_epsilon,
)
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError, UnmetTargetError

__all__ = ["calibrate_eps0", "calibrate_n", "epsilon_vs_n"]


def _delta_query(
    params: Callable[[float], dict[str, Any]], bound: str, epsilon: float, delta: float
) -> Callable[[float], float]:
    """``x -> log δ`` of ``bound`` at ``epsilon`` for the parameters ``params(x)``, memoized:
    one δ query per point, several times cheaper than solving for ε. A bound that does not
    certify there gives ``−LOG_ZERO`` (fails every target); δ = 0 gives ``LOG_ZERO``. In exact
    arithmetic δ(ε) <= δ exactly when ε(δ) <= ε; the δ queries are summed like an ε query at
    ``delta`` (:func:`_summed_like_epsilon_at`) so that the blocked sums agree too, up to the
    ε solver's tolerance, which the callers settle afterwards."""
    log_target = math.log(delta)

    @functools.cache
    def log_delta(x: float) -> float:
        with _summed_like_epsilon_at(log_target):
            r = shuffle_delta(epsilon=epsilon, bound=bound, lower=False, **params(x))
        if not r.is_certificate or math.isnan(r.delta):
            return -LOG_ZERO
        return math.log(r.delta) if r.delta > 0 else LOG_ZERO

    return log_delta


#: Steps taken back along a calibration when the ε query at the δ-calibrated point lands a
#: hair above the target (the two queries sum to different tail levels).
_SETTLE_STEPS = 50


def calibrate_eps0(
    *, epsilon: float, delta: float, n: int, k: int | None = None, bound: str = "best"
) -> PrivacyStatement:
    """Largest ε0 (to 1e-6 relative) whose shuffled guarantee is (epsilon, delta) or better.

    Returns the statement at the calibrated ε0 (``inputs["eps0"]``) with the target recorded
    (``meets_target``); the achieved ``epsilon`` is ``<=`` the target. ε0 = ``epsilon``
    always works (shuffling never hurts).

    Examples
    --------
    >>> r = calibrate_eps0(epsilon=0.5, delta=1e-6, n=50_000, k=2)
    >>> r.inputs["eps0"] > 2.0, r.epsilon <= 0.5, r.meets_target
    (True, True, True)
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True, high=_MAX_EPS0)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    nn, kk = ShuffleParams(eps0=1.0, n=n, k=k).n, k
    name = _check_bound(bound)

    def achieved(e0: float, lower: bool = False) -> PrivacyStatement:
        return shuffle_epsilon(eps0=e0, n=nn, delta=d, k=kk, bound=name, lower=lower)

    log_delta_at = _delta_query(lambda e0: {"eps0": e0, "n": nn, "k": kk}, name, target, d)

    first = achieved(target)
    if not (first.is_certificate and first.epsilon <= target):
        # ε0 = ε is ε-DP for every bound that caps at ε0; a failing named bound does not apply.
        reason = "; ".join(first.notes)
        raise InvalidParameterError(f"bound {name!r} does not apply at eps0={target!r}: {reason}")
    # Grow the bracket from ε0 = ε by doubling: the curves are cheapest, and best behaved,
    # at moderate ε0, so ε0 = 50 is evaluated only when everything below it passes.
    log_d = math.log(d)
    lo, hi = target, min(2.0 * target + 1.0, _MAX_EPS0)
    while lo < _MAX_EPS0 and log_delta_at(hi) <= log_d:
        lo, hi = hi, min(2.0 * hi, _MAX_EPS0)
    found = lo
    if lo < _MAX_EPS0:
        # The largest passing ε0 by bracketed interpolation on log δ (it is smooth in ε0),
        # not bisection on pass/fail: ~3x fewer δ queries. The variable is −ε0 so that the
        # curve is non-increasing; the returned point is one whose own query passes.
        found = -safe_root(lambda x: log_delta_at(-x), log_d, -hi, -lo, xtol=max(1e-13, 1e-6 * hi))
    result = achieved(found, lower=True)
    for _ in range(_SETTLE_STEPS):  # the answer is the ε query: make it meet the target too
        if result.epsilon <= target or found <= target:
            break
        found = max(target, found * (1.0 - 2e-4))
        result = achieved(found, lower=True)
    return result.with_target(epsilon=target, delta=d)


def calibrate_n(
    *, epsilon: float, delta: float, eps0: float, k: int | None = None, bound: str = "best"
) -> PrivacyStatement:
    """Smallest n whose shuffled guarantee is (epsilon, delta) or better.

    Returns the statement at the calibrated n (``inputs["n"]``) with the target recorded.

    Raises
    ------
    crowdhide.errors.UnmetTargetError
        If even n = 1e9 does not reach the target.

    Examples
    --------
    >>> r = calibrate_n(epsilon=0.5, delta=1e-6, eps0=2.0)
    >>> r.epsilon <= 0.5
    True
    >>> shuffle_epsilon(eps0=2.0, n=r.inputs["n"] - 1, delta=1e-6).epsilon > 0.5
    True
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    e0, kk = ShuffleParams(eps0=eps0, n=1, k=k).eps0, k
    name = _check_bound(bound)

    log_d = math.log(d)
    log_delta_at = _delta_query(lambda m: {"eps0": e0, "n": int(m), "k": kk}, name, target, d)

    unmet = f"no n <= {_MAX_N} reaches epsilon={target!r} at delta={d!r} with eps0={e0!r}"
    # With "best" (some bound certifies at every n, and δ does not grow with n) an
    # unreachable target is found with one query at the largest n, not after 30 doublings:
    # at eps0 = 0.53, ε = 1e-5, δ = 5e-169 those took 77 s CPU. A named bound may apply only
    # to small n ("exact"), so it keeps the doubling alone.
    if name == "best" and log_delta_at(_MAX_N) > log_d:
        raise UnmetTargetError(unmet)
    # Grow the bracket by doubling from n = 1 (small n are cheap), then search it.
    lo, hi = 1, 1
    while log_delta_at(hi) > log_d:
        if hi >= _MAX_N:
            raise UnmetTargetError(unmet)
        lo, hi = hi, min(2 * hi, _MAX_N)
    m = hi
    if hi > lo:
        # Bracketed interpolation on log δ over real x at n = ⌈x⌉ (non-increasing), to a
        # bracket narrower than 1/2: then ⌈x⌉ passes and ⌈x⌉ − 1 fails, the smallest passing
        # n. ~2x fewer δ queries than bisecting pass/fail on the integers.
        x = safe_root(lambda v: log_delta_at(math.ceil(v)), log_d, float(lo), float(hi), xtol=0.25)
        m = math.ceil(x)
    result = shuffle_epsilon(eps0=e0, n=m, delta=d, k=kk, bound=name)
    for _ in range(_SETTLE_STEPS):  # the answer is the ε query: make it meet the target too
        if (result.is_certificate and result.epsilon <= target) or m >= _MAX_N:
            break
        m = min(_MAX_N, m + 1 + m // 5000)
        result = shuffle_epsilon(eps0=e0, n=m, delta=d, k=kk, bound=name)
    return result.with_target(epsilon=target, delta=d)


def epsilon_vs_n(
    *,
    eps0: float,
    delta: float,
    k: int | None = None,
    n_min: int = 100,
    n_max: int = 10**7,
    points: int = 16,
) -> dict[str, Any]:
    """ε against n for every listed bound (``nan`` where a bound does not apply); the data of
    ``crowdhide shuffle plot`` (drawn by :func:`crowdhide.report.plots.plot_epsilon_vs_n`).

    A bound that takes a second or more per point (``variation_ratio``) is evaluated at up to
    8 grid points spread evenly, ``nan`` (and ``conditions_met`` false) at the others.

    Returns ``{"n": [...], "epsilon": {bound: [...]}, "conditions_met": {bound: [...]}}``.

    Examples
    --------
    >>> d = epsilon_vs_n(eps0=1.0, delta=1e-6, n_min=1000, n_max=10_000, points=2)
    >>> d["n"], round(d["epsilon"]["feldman2021"][1], 4)
    ([1000, 10000], 0.053)
    """
    lo = ShuffleParams(eps0=eps0, n=n_min, k=k)
    hi = ShuffleParams(eps0=eps0, n=n_max, k=k).n
    query = _query(delta, None)
    count = check_int("points", points, low=2, high=200)
    if hi <= lo.n:
        raise InvalidParameterError(f"n_max must be > n_min, got n_min={n_min!r}, n_max={n_max!r}")
    grid = sorted({round(x) for x in np.geomspace(lo.n, hi, count)})
    series: dict[str, list[float]] = {}
    met: dict[str, list[bool]] = {}
    for entry in _BOUNDS:
        if not entry.listed_for(lo.k):
            continue
        chosen = _plot_subset(len(grid), entry.plot_points)
        rows = [
            _evaluate(entry.name, replace(lo, n=n), query) if i in chosen else None
            for i, n in enumerate(grid)
        ]
        series[entry.name] = [r.epsilon if r and r.conditions_met else math.nan for r in rows]
        met[entry.name] = [bool(r and r.conditions_met) for r in rows]
    return {"n": grid, "epsilon": series, "conditions_met": met}


def _plot_subset(size: int, most: int | None) -> set[int]:
    """Indices of the grid points a bound is evaluated at: all, or ``most`` spread evenly
    (both ends included)."""
    if most is None or size <= most:
        return set(range(size))
    return {round(i * (size - 1) / (most - 1)) for i in range(most)}
