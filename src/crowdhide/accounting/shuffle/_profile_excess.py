"""The heavy blocks' excesses of a batched profile sum, per distinct threshold (issue 32).

:func:`crowdhide.accounting.shuffle._profile_batch.clone_blocks_log_deltas` asks
``E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``, rounded up, for every heavy block at every ε of a
profile: up to 4·10^5 elements per cell, of which about a sixth are distinct integer pairs
``(a*, s)`` (``a* = ⌊θ⌋ + 1``; nearby ε and blocks of equal ``s`` share them). The rounded-up
excess (:func:`~crowdhide.accounting.shuffle._krr_fast.excess_half`) is

    ((s/2)·U − θ·T) + (((s/2)·e(U) + |θ|·e(T)) + (s + 1)·ATOL + (RTOL·|θ|)·S)

with the three half tails ``U, T, S`` of ``(a*, s)`` and their error bounds ``e(·)``
(:func:`~crowdhide.accounting.binomial_tails.betainc_error`, a logarithm each), plus the
deep-tail branch where a tail is untrusted. Every factor but θ is a function of the pair, so
:func:`excess_upper` forms those once per distinct pair and only the θ terms per element, in
the same order of operations: each element's float is ``excess_half``'s (one rounding per
operation on the same operands). Where any tail of the batch is untrusted (below
``BETAINC_TRUSTED``, never in the benchmark grid's profiles) or the pairs are not the
integral ones :func:`~crowdhide.accounting.binomial_tails.half_tails` deduplicates, it calls
``excess_half`` itself. With no untrusted tail ``excess_half``'s deep branch adds exactly 0 to
the error (``UNTRUSTED_ATOL · (|s/2|·0 + |θ|·0)``) and keeps the value, so it is left out.
``tests/accounting/test_profile_excess.py`` compares the floats.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crowdhide.accounting import binomial_tails as _tails
from crowdhide.accounting._half_memo import PairMemo, pair_keys
from crowdhide.accounting.binomial_tails import (
    BETAINC_ATOL,
    BETAINC_TRUSTED,
    betainc_error,
    half_sf,
)
from crowdhide.accounting.shuffle import _krr_fast

__all__ = ["distinct_pairs", "excess_upper"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Largest ``s`` (and clipped ``a*``) the packed pair keys hold (as ``half_tails``).
_KEY_LIMIT = 2.0**30
#: Pairs are deduplicated through a table of every code (:func:`_dense_distinct`) where the
#: codes' range is at most this many times the elements, else by sorting.
DENSE_RATIO = 1


def excess_upper(s: FloatArray, theta: FloatArray) -> FloatArray:
    """``excess_half(broadcast s, theta, upper=True)``, the same floats (module docstring):
    ``s`` the heavy blocks' units (one per block), ``theta`` (ε × blocks) their thresholds."""
    s = np.asarray(s, dtype=np.float64)
    units = np.broadcast_to(s, theta.shape)
    integral = bool(np.all((s >= 0.0) & (s < _KEY_LIMIT) & (s == np.floor(s))))
    clipped = np.clip(np.floor(theta) + 1.0, 0.0, units + 2.0)
    if theta.size < _tails._DEDUP_MIN or not integral:
        return _krr_fast.excess_half(units, theta, upper=True)
    if not bool(np.all(clipped == np.floor(clipped))):  # (θ not finite)
        return _krr_fast.excess_half(units, theta, upper=True)
    a_u, s_u, inverse = distinct_pairs(clipped.astype(np.int64), units.astype(np.int64))
    table, untrusted = _pair_table(a_u, s_u)
    # per element, in excess_half's order: err = (s/2)e(U) + |θ|e(T), + (s+1)ATOL,
    # + (RTOL|θ|)S; value = ((s/2)U − θT) + err (products and sums commute exactly, so the
    # in-place forms below round the same operands once each); then max(value, 0)
    places = inverse.reshape(theta.shape)
    absolute = np.abs(theta)
    err = np.take(table[1], places)
    err *= absolute
    err += np.take(table[0], places)
    err += np.take(table[2], places)
    moved = np.take(table[3], places)
    moved *= _krr_fast._THETA_RTOL * absolute
    err += moved
    value = np.take(table[5], places)
    value *= theta
    np.subtract(np.take(table[4], places), value, out=value)
    value += err
    np.maximum(value, 0.0, out=value)
    out = value if bool(np.all(s >= 1.0)) else np.where(units >= 1.0, value, 0.0)
    if untrusted.any():  # excess_half's deep branch decides there (elementwise: same floats)
        deep = untrusted[places]
        out[deep] = _krr_fast.excess_half(units[deep], theta[deep], upper=True)
    return np.asarray(out, dtype=np.float64)


def distinct_pairs(
    k: IntArray, m: IntArray, *, runs: bool = False
) -> tuple[FloatArray, FloatArray, IntArray]:
    """The distinct integer pairs ``(k, m)`` (flattened), in increasing (k, m) order, as
    floats, and each element's place among them (what ``half_tails`` gets from its packed
    keys: the same set, the same order). Each pair is coded in the bits its ranges need, so
    that ``binomial_tails._distinct`` can sort the codes with their indices packed below;
    codes in a range at most :data:`DENSE_RATIO` times the elements are marked in a table
    instead (:func:`_dense_distinct`), and ``runs`` (the pairs are a few runs each in
    increasing (k, m) order) merges the runs (:func:`_merged_distinct`). All three give the
    same arrays: the sorted distinct codes and each element's rank among them."""
    kk, mm = k.ravel(), m.ravel()
    k_low, m_low = int(kk.min()), int(mm.min())
    span = int(mm.max()) - m_low + 1
    codes = (int(kk.max()) - k_low + 1) * span
    if codes.bit_length() > 62:  # (not met by half tails' pairs: both below 2^31)
        rows, inverse = np.unique(np.stack([kk, mm], axis=1), axis=0, return_inverse=True)
        return rows[:, 0].astype(np.float64), rows[:, 1].astype(np.float64), inverse.ravel()
    code = (kk - k_low) * span + (mm - m_low)
    if codes <= DENSE_RATIO * code.size:
        keys, inverse = _dense_distinct(code, codes)
    elif runs:
        keys, inverse = _merged_distinct(code)
    else:
        keys, inverse = _tails._distinct(code)
    k_u, m_u = keys // span + k_low, keys % span + m_low
    return k_u.astype(np.float64), m_u.astype(np.float64), inverse


def _dense_distinct(code: IntArray, codes: int) -> tuple[IntArray, IntArray]:
    """``binomial_tails._distinct(code)`` for codes in ``[0, codes)`` with ``codes`` at most a
    few times the number of elements: the same sorted distinct codes and places, found by
    marking each code in a table of them (linear) instead of sorting the elements (less than
    half the time at ε0 = 0.5, n = 1e3, where up to 2·10^5 elements share 6·10^4 codes;
    beyond about one code per element the table's random access costs more than the sort)."""
    place = np.zeros(codes, dtype=np.int64)
    place[code] = 1
    keys = np.flatnonzero(place)
    place[keys] = np.arange(keys.size)  # each code's rank among the distinct ones
    return keys, place[code]


def _merged_distinct(code: IntArray) -> tuple[IntArray, IntArray]:
    """``binomial_tails._distinct(code)`` for codes made of a few increasing runs: a stable
    sort finds the runs and merges them in linear passes (about half the packed sort's time
    on the three tails of the distinct pairs), then the same distinct codes and ranks."""
    order = np.argsort(code, kind="stable")
    return _tails.distinct_ranks(code[order], order)


def _pair_table(a_u: FloatArray, s_u: FloatArray) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Per distinct ``(a*, s)`` (clipped a*): ``(s/2)·e(U)``, ``e(T)``, ``(s + 1)·ATOL``,
    ``S``, ``(s/2)·U``, ``T`` as rows (each contiguous, gathered per element), the tails
    from the shared memo (``half_tails``' own: the same floats), and whether a tail ``U``
    or ``T`` is untrusted (there the rows are not used)."""
    k = np.concatenate([a_u - 1.0, a_u, a_u - 1.0]).astype(np.int64)
    m = np.concatenate([s_u - 1.0, s_u, s_u]).astype(np.int64)
    k_p, m_p, place = distinct_pairs(k, m, runs=True)  # three runs in (a*, s) order
    pairs = pair_keys(k_p, m_p)
    memo = _tails._TAIL_MEMO if pairs.size <= _tails._TAIL_MEMO.capacity else PairMemo(pairs.size)
    upper, at, slope = memo.values(pairs, half_sf)[place].reshape(3, a_u.size)
    half = 0.5 * s_u
    columns = (
        half * betainc_error(upper, s_u),
        betainc_error(at, s_u),
        (s_u + 1.0) * BETAINC_ATOL,
        slope,
        half * upper,
        at,
    )
    untrusted = (upper < BETAINC_TRUSTED) | (at < BETAINC_TRUSTED)
    return np.stack(columns), untrusted
