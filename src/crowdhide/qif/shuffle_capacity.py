"""Multiplicative Bayes capacity of k-RR and shuffling on whole datasets (identity gain).

Jurado, Gonze, Alvim, Palamidessi: the capacity ``Σ_y max_x C[x, y]`` is the largest
multiplicative Bayes leakage over all priors. The shuffle makes the output a histogram, so
the sum runs over the reduced channels (histograms in, histograms out) without building a
``k^n`` matrix: the binary case by one FFT batch per chunk of rows, general ``k`` level by
level over dense histogram grids (size-guarded). Exact rationals are used when the keep
probability is a :class:`~fractions.Fraction`. The single-target vulnerabilities of the
same channels are in :mod:`crowdhide.qif.shuffle`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide._validation import check_int
from crowdhide.qif.combinatorics import check_power_size, check_size
from crowdhide.qif.shuffle import _channel_name, _noise

__all__ = ["CapacityResult", "shuffled_krr_capacity"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CapacityResult:
    """Multiplicative Bayes capacity of a channel on whole datasets (identity gain).

    ``capacity = Σ_y max_x C[x, y]`` is the largest multiplicative Bayes leakage over all
    priors (reached at the uniform prior on the ``k^n`` datasets); ``log_capacity`` is its
    natural log (always finite; ``capacity`` is ``inf`` only if it exceeds ``1e308``).
    ``unshuffled_log_capacity`` is ``n ln(kp)``, the capacity of k-RR alone, for comparison.
    The record also gives the whole-dataset Bayes vulnerabilities and leakages at the uniform
    prior (which reaches the capacity), with their logs.

    Parameters
    ----------
    capacity, log_capacity
        The capacity and its natural log.
    unshuffled_capacity, unshuffled_log_capacity
        The same for k-RR alone.
    n, k, channel, eps0, keep_probability
        The inputs of :func:`shuffled_krr_capacity`.
    method
        How it was computed.

    See Also
    --------
    shuffled_krr_capacity : Produces it.
    """

    capacity: float | Fraction
    log_capacity: float
    unshuffled_capacity: float | Fraction
    unshuffled_log_capacity: float
    n: int
    k: int
    channel: str
    eps0: float | None
    keep_probability: float | Fraction
    method: str

    def as_record(self) -> dict[str, Any]:
        """JSON-ready record (inputs echoed)."""
        # At the uniform prior on the k^n datasets (the prior reaching the capacity):
        # V(π) = k^{-n} and V[π ▷ C] = capacity · k^{-n}; logs never underflow.
        log_prior = -self.n * math.log(self.k)
        log_post = self.log_capacity + log_prior
        prior = math.exp(log_prior)
        post = math.exp(log_post)
        return {
            "vulnerability": post,
            "log_vulnerability": log_post,
            "prior_vulnerability": prior,
            "log_prior_vulnerability": log_prior,
            "leakage": {"multiplicative": float(self.capacity), "additive": post - prior},
            "capacity": float(self.capacity),
            "log_capacity": self.log_capacity,
            "log2_capacity": self.log_capacity / math.log(2.0),
            "unshuffled_capacity": float(self.unshuffled_capacity),
            "unshuffled_log_capacity": self.unshuffled_log_capacity,
            "n": self.n,
            "k": self.k,
            "eps0": self.eps0,
            "keep_probability": float(self.keep_probability),
            "channel": self.channel,
            "method": self.method,
        }


def _safe_exp(log_value: float) -> float:
    return math.exp(log_value) if log_value < 709.0 else math.inf


def _binomial_rows(
    counts: npt.NDArray[np.int64],
    support: npt.NDArray[np.int64],
    prob: float,
    log_factorial: FloatArray,
) -> FloatArray:
    """``Bin(counts[j], prob)`` pmfs on ``support`` as rows (log-space, vectorized)."""
    valid = support[None, :] <= counts
    i = np.where(valid, support[None, :], 0)
    c = np.broadcast_to(counts, valid.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = math.log(prob) if prob > 0 else -math.inf
        log_q = math.log1p(-prob) if prob < 1 else -math.inf
        terms = np.where(i > 0, i * log_p, 0.0) + np.where(c - i > 0, (c - i) * log_q, 0.0)
        log_pmf = log_factorial[c] - log_factorial[i] - log_factorial[c - i] + terms
    return np.where(valid, np.exp(log_pmf), 0.0)


def _binary_capacity_sum(n: int, p: float) -> float:
    """``Σ_m max_j P(Bin(j, p) + Bin(n−j, 1−p) = m)``: binary ``N S^r`` capacity."""
    check_size(f"the binary reduced channel ({n + 1} x {n + 1})", (n + 1) ** 2, limit=1 << 26)
    from scipy import fft as sfft

    length = sfft.next_fast_len(2 * n + 1, real=True)
    support = np.arange(n + 1)
    log_factorial = gammaln(np.arange(n + 2) + 1.0)
    best = np.zeros(n + 1)
    chunk = max(1, (1 << 21) // length)
    # Rows j = input histogram (j of value 0): Bin(j, p) + Bin(n − j, 1 − p) zeros of value 0,
    # batched through one FFT per chunk of rows (absolute round-off ~1e-16 per entry).
    for start in range(0, n + 1, chunk):
        js = np.arange(start, min(n + 1, start + chunk))[:, None]
        kept = _binomial_rows(js, support, p, log_factorial)
        flipped = _binomial_rows(n - js, support, 1.0 - p, log_factorial)
        spectrum = sfft.rfft(kept, n=length, axis=1) * sfft.rfft(flipped, n=length, axis=1)
        rows = sfft.irfft(spectrum, n=length, axis=1)[:, : n + 1]
        np.maximum(best, rows.max(axis=0), out=best)
    return float(np.clip(best, 0.0, None).sum())


def _general_capacity_sum(n: int, k: int, p: float) -> float:
    """``Σ_h max_g N^r[g, h]`` for general ``k`` (floats), rows built level by level.

    The output law of input histogram ``g`` is that of ``g − e_v`` convolved with row ``v``
    of ``K`` (one more user holding ``v``). Laws are dense arrays over the first ``k − 1``
    output counts (the last one is implied), all histograms of one level at once.
    """
    from crowdhide.qif.combinatorics import histograms

    check_power_size(f"the reduced k-RR channel rows (n={n}, k={k})", n + 1, k - 1, limit=1 << 25)
    width = (n + 1) ** (k - 1)
    size = math.comb(n + k - 1, k - 1)
    check_size(f"the reduced k-RR channel rows (n={n}, k={k})", size * width, limit=1 << 25)
    q = (1.0 - p) / (k - 1)
    shape = (n + 1,) * (k - 1)
    laws = np.zeros((1, *shape))
    laws[(0,) * k] = 1.0  # level 0: the empty histogram, output (0, ..., 0)
    index: dict[tuple[int, ...], int] = {(0,) * k: 0}
    for level in range(1, n + 1):
        hists = histograms(n=level, k=k)
        first = np.argmax(hists > 0, axis=1)  # the value of the added user
        parents = hists.copy()
        parents[np.arange(len(hists)), first] -= 1
        old = laws[[index[tuple(int(v) for v in g)] for g in parents]]
        row_prob = np.where(np.arange(k)[None, :] == first[:, None], p, q)  # (|H|, k)
        new = old * row_prob[:, k - 1].reshape(-1, *([1] * (k - 1)))
        for u in range(k - 1):
            shifted = np.zeros_like(old)
            dst = [slice(None)] + [
                slice(1, None) if ax == u else slice(None) for ax in range(k - 1)
            ]
            src = [slice(None)] + [
                slice(None, -1) if ax == u else slice(None) for ax in range(k - 1)
            ]
            shifted[tuple(dst)] = old[tuple(src)]
            new += shifted * row_prob[:, u].reshape(-1, *([1] * (k - 1)))
        laws = new
        index = {tuple(int(v) for v in g): i for i, g in enumerate(hists)}
    return float(laws.max(axis=0).sum())


def shuffled_krr_capacity(
    *,
    n: int,
    k: int,
    channel: str = "krr+shuffle",
    eps0: float | None = None,
    keep_probability: Any = None,
) -> CapacityResult:
    """Multiplicative Bayes capacity (datasets → observable) of k-RR and/or shuffle.

    ``krr``: ``(kp)^n``; ``shuffle``: the number of histograms ``C(n+k−1, k−1)``;
    ``krr+shuffle``: ``Σ_h max_g N^r[g, h]`` over input/output histograms (``N^r`` built
    row by row; binary rows by convolution of two binomials). Exact with a Fraction
    ``keep_probability``.

    Parameters
    ----------
    n, k
        Users and values.
    channel
        One of :data:`CHANNELS`.
    eps0, keep_probability
        The k-RR noise (one of them; not needed for ``shuffle``).

    Returns
    -------
    CapacityResult
        The capacity, its log and the unshuffled capacity for comparison.

    See Also
    --------
    crowdhide.qif.bayes_capacity : The capacity of an explicit channel.

    Examples
    --------
    >>> r = shuffled_krr_capacity(n=2, k=2, eps0=math.log(3))
    >>> round(r.capacity, 12), round(r.unshuffled_capacity, 12)
    (1.75, 2.25)
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    channel = _channel_name(channel)
    p, echoed, _ = _noise(channel, k, eps0, keep_probability)
    exact = isinstance(p, Fraction)
    log_unshuffled = n * math.log(k * float(p))
    unshuffled: float | Fraction = (k * p) ** n if exact else _safe_exp(log_unshuffled)
    if channel == "krr":
        value: float | Fraction = unshuffled
        log_value, method = log_unshuffled, "closed form (kp)^n"
    elif channel == "shuffle":
        log_value = float(gammaln(n + k) - gammaln(k) - gammaln(n + 1))
        if log_value < 700.0:
            count = math.comb(n + k - 1, k - 1)
            value = Fraction(count) if exact else float(count)
            log_value = math.log(count)
        else:
            value = math.inf
        method = "number of histograms C(n+k-1, k-1)"
    elif k == 2 and not exact:
        value = _binary_capacity_sum(n, float(p))
        log_value, method = math.log(value), "binomial convolutions (k = 2)"
    elif not exact:
        value = _general_capacity_sum(n, k, float(p))
        log_value, method = math.log(value), "reduced channel N^r, level-by-level DP"
    else:
        from crowdhide.qif.channels import reduced_krr_channel
        from crowdhide.qif.core import bayes_capacity

        size = math.comb(n + k - 1, k - 1)
        # Exact mode builds N^r by a pure-Python DP: ~|H|^2 · n · k steps.
        check_size(
            f"the exact reduced k-RR channel (n={n}, k={k}, {size} histograms)",
            size * size * n * k,
            limit=30_000_000,
        )
        reduced = reduced_krr_channel(n=n, k=k, keep_probability=p)
        value = bayes_capacity(reduced)
        log_value = math.log(value)
        method = "exact reduced channel N^r (fractions)"
    return CapacityResult(
        capacity=value,
        log_capacity=float(log_value),
        unshuffled_capacity=unshuffled,
        unshuffled_log_capacity=log_unshuffled,
        n=n,
        k=k,
        channel=channel,
        eps0=echoed,
        keep_probability=p,
        method=method,
    )
