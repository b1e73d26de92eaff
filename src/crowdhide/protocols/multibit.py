"""Histograms and selection from repeated shuffled bit sums (Cheu, Smith, Ullman, Zeber,
Zhilyaev, Sections 2.2 and 6.2): the multi-message protocols behind their upper bounds.

* **Histogram** over ``[D]``: each user one-hot encodes its value and takes part in D bit-sum
  runs, sending one labelled message ``(j, y_j)`` per run; the shuffler permutes all n·D
  messages, the analyzer estimates every count from the messages of its label. Replacing one
  user's value changes two of its D bits (the paper's footnote), so each run gets (ε/2, δ/2)
  and basic composition over the two affected runs gives (ε, δ).
* **Selection** over ``{0,1}^d``: one bit-sum run per coordinate; the analyzer outputs the
  coordinate with the largest estimate. A user's change can touch all d bits, so the d runs
  compose: each gets the larger of the per-run ε allowed by basic composition (ε/d, δ/d) and
  by advanced composition (Dwork, Rothblum, Vadhan), which gives n = Õ(√d).

Every run uses the bit-sum protocol's exact calibration (the smallest λ the shared accountant
certifies at the per-run (ε, δ)); a label is data-independent, so the shuffled view of one
run is its count of ones, as for a single bit sum.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int, check_probability, check_real
from crowdhide.accounting.composition import advanced_epsilon
from crowdhide.errors import DataError
from crowdhide.protocols.bitsum import (
    BitSumRandomizer,
    bitsum_error_bound,
    bitsum_estimate,
    calibrate_bit_sum,
)

__all__ = [
    "MultiBitRun",
    "advanced_composition_epsilon",
    "per_run_budget",
    "run_bitsum_histogram",
    "run_bitsum_selection",
]

#: Largest number of bits randomized at once (memory bound of one chunk of users).
_CHUNK_BITS = 4_000_000


def advanced_composition_epsilon(*, epsilon: float, runs: int, slack: float) -> float:
    """ε of ``runs`` (ε, ·)-DP mechanisms under advanced composition with slack δ':
    ``min(k ε, ε √(2k ln(1/δ')) + k ε (e^ε − 1))``, rounded up
    (:func:`crowdhide.accounting.composition.advanced_epsilon`).

    Examples
    --------
    >>> round(advanced_composition_epsilon(epsilon=0.1, runs=100, slack=1e-6), 4)
    6.3082
    >>> advanced_composition_epsilon(epsilon=0.1, runs=10, slack=1e-6)  # k ε, rounded up
    1.0000000000000002
    """
    k = check_int("runs", runs, low=1)
    e = check_real("epsilon", epsilon, low=0.0)
    s = check_probability("slack", slack, allow_zero=False, allow_one=False)
    return advanced_epsilon(e, k, s)


def per_run_budget(*, epsilon: float, delta: float, runs: int) -> tuple[float, float, str]:
    """Per-run (ε_r, δ_r) so that ``runs`` composed runs are (ε, δ)-DP: the larger ε_r of
    basic composition (ε/k, δ/k) and advanced composition (δ/2 for the slack, δ/(2k) per
    run; ε_r by bisection, rounded down). Returns ``(ε_r, δ_r, rule)``."""
    k = check_int("runs", runs, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if k == 1:
        return eps, d, "single run"
    lo, hi = 0.0, eps
    for _ in range(200):  # bisection: the composed ε is increasing in ε_r
        mid = (lo + hi) / 2.0
        if advanced_composition_epsilon(epsilon=mid, runs=k, slack=d / 2.0) <= eps:
            lo = mid
        else:
            hi = mid
    if lo > eps / k:
        return lo, d / (2.0 * k), "advanced composition"
    return eps / k, d / k, "basic composition"


@dataclass(frozen=True, kw_only=True)
class MultiBitRun:
    """Estimates of the D (or d) counts, the truth, the per-run λ and budget, and the
    simultaneous error bound at 1 − β (Bernstein per run, union bound over the runs)."""

    estimates: npt.NDArray[np.float64]
    exact: npt.NDArray[np.float64]
    lam: float
    run_epsilon: float
    run_delta: float
    rule: str
    messages: int
    error_bound: float
    beta: float

    @property
    def max_error(self) -> float:
        """``max_j |estimate_j − count_j|``."""
        return float(np.max(np.abs(self.estimates - self.exact)))


def _counts_of_ones(
    bits_of: Any, n: int, runs: int, randomizer: BitSumRandomizer, gen: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Per label, the ones among the shuffled messages: every user randomizes its ``runs``
    bits with the bit-sum randomizer (chunks of users bound the memory)."""
    ones = np.zeros(runs, dtype=np.float64)
    step = max(1, _CHUNK_BITS // runs)
    for start in range(0, n, step):
        stop = min(n, start + step)
        noisy = randomizer.randomize(bits_of(start, stop).ravel(), rng=gen)
        ones += noisy.reshape(stop - start, runs).sum(axis=0)
    return ones


@functools.lru_cache(maxsize=256)
def _lambda(n: int, epsilon: float, delta: float) -> float:
    """The exact-calibration λ (cached: repeated runs at one size calibrate once)."""
    return calibrate_bit_sum(n=n, epsilon=epsilon, delta=delta)[0]


def _run(
    bits_of: Any,
    exact: npt.NDArray[np.float64],
    *,
    n: int,
    budget: tuple[float, float, str],
    beta: float,
    rng: Any,
) -> MultiBitRun:
    runs = exact.shape[0]
    eps_r, delta_r, rule = budget
    lam = _lambda(n, eps_r, delta_r)
    randomizer = BitSumRandomizer(n=n, lam=lam)
    ones = _counts_of_ones(bits_of, n, runs, randomizer, as_rng(rng))
    estimates = np.array([bitsum_estimate(ones=o, messages=n, n=n, lam=lam) for o in ones])
    b = check_probability("beta", beta, allow_zero=False, allow_one=False)
    return MultiBitRun(
        estimates=estimates,
        exact=exact,
        lam=lam,
        run_epsilon=eps_r,
        run_delta=delta_r,
        rule=rule,
        messages=n * runs,
        error_bound=bitsum_error_bound(n=n, lam=lam, beta=b / runs),
        beta=b,
    )


def run_bitsum_histogram(
    values: npt.ArrayLike,
    *,
    domain: int,
    epsilon: float,
    delta: float,
    beta: float = 0.05,
    rng: Any = None,
) -> MultiBitRun:
    """The multi-message histogram of ``values`` in ``[0, domain)`` (one value per user),
    (ε, δ)-DP under replacement: D bit-sum runs at (ε/2, δ/2) each.

    Examples
    --------
    >>> x = np.repeat(np.arange(4), 500)
    >>> run = run_bitsum_histogram(x, domain=4, epsilon=1.0, delta=1e-6, rng=0)
    >>> run.exact.tolist(), run.max_error <= run.error_bound
    ([500.0, 500.0, 500.0, 500.0], True)
    """
    D = check_int("domain", domain, low=2)
    vals = np.asarray(values, dtype=np.int64).ravel()
    if vals.size < 2 or vals.min() < 0 or vals.max() >= D:
        raise DataError(f"values must be at least 2 integers in [0, {D}), got {vals.size}")
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    dlt = check_probability("delta", delta, allow_zero=False, allow_one=False)

    def bits_of(start: int, stop: int) -> npt.NDArray[np.uint8]:
        one_hot = np.zeros((stop - start, D), dtype=np.uint8)
        one_hot[np.arange(stop - start), vals[start:stop]] = 1
        return one_hot

    exact = np.bincount(vals, minlength=D).astype(np.float64)
    budget = (eps / 2.0, dlt / 2.0, "two affected runs, basic composition")
    return _run(bits_of, exact, n=int(vals.size), budget=budget, beta=beta, rng=rng)


def run_bitsum_selection(
    data: npt.ArrayLike,
    *,
    epsilon: float,
    delta: float,
    beta: float = 0.05,
    rng: Any = None,
) -> tuple[int, MultiBitRun]:
    """Selection over ``{0,1}^d`` (``data``: n × d bits): d composed bit-sum runs, then the
    coordinate with the largest estimate. Returns ``(chosen coordinate, run)``."""
    x = np.asarray(data)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1 or not np.isin(x, (0, 1)).all():
        raise DataError(f"data must be an n × d array of bits with n >= 2, got {x.shape}")
    n, d = int(x.shape[0]), int(x.shape[1])
    bits = x.astype(np.uint8)
    budget = per_run_budget(epsilon=epsilon, delta=delta, runs=d)
    exact = bits.sum(axis=0).astype(np.float64)
    run = _run(lambda a, b: bits[a:b], exact, n=n, budget=budget, beta=beta, rng=rng)
    return int(np.argmax(run.estimates)), run
