"""Lower bounds on ε from the error rates of a distinguishing test.

If M is (ε, δ)-DP then every test that tells M(x) from M(x') with false-positive rate α and
false-negative rate β satisfies ``α + e^ε β >= 1 − δ`` and ``β + e^ε α >= 1 − δ``
(Kairouz, Oh, Viswanath 2015, Thm 2.1). Given Clopper–Pearson upper confidence limits on α and
β measured on fresh samples, ::

    ε >= max(ln((1 − δ − α̂⁺) / β̂⁺), ln((1 − δ − β̂⁺) / α̂⁺))

holds with the stated confidence. The threshold of the test is chosen on one half of the
samples and the rates are measured on the other half, so the choice does not bias the bound.

References
----------
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
   privacy. ICML 2015.
.. [JUO20] M. Jagielski, J. Ullman, A. Oprea. Auditing differentially private machine
   learning: how private is private SGD? NeurIPS 2020.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import beta as beta_distribution

from crowdhide._validation import check_int, check_probability, check_real

__all__ = [
    "AuditResult",
    "audit_scores",
    "bayes_success_bound",
    "clopper_pearson",
    "epsilon_from_error_rates",
]


def clopper_pearson(*, successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided Clopper–Pearson (exact binomial) confidence interval for a proportion.

    Examples
    --------
    >>> low, high = clopper_pearson(successes=0, trials=100, confidence=0.95)
    >>> low, round(high, 4)
    (0.0, 0.0362)
    """
    n = check_int("trials", trials, low=1)
    k = check_int("successes", successes, low=0, high=n)
    level = check_probability("confidence", confidence, allow_zero=False, allow_one=False)
    tail = (1.0 - level) / 2.0
    low = 0.0 if k == 0 else float(beta_distribution.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(beta_distribution.ppf(1.0 - tail, k + 1, n - k))
    return low, high


def epsilon_from_error_rates(
    *, false_positive_rate: float, false_negative_rate: float, delta: float
) -> float:
    """The smallest ε compatible with a test's error rates under (ε, δ)-DP.

    Returns 0 when the rates are compatible with ε = 0 and ``inf`` when a rate is 0 while the
    other is below ``1 − δ`` (no finite ε allows it).

    Examples
    --------
    >>> round(epsilon_from_error_rates(false_positive_rate=0.25, false_negative_rate=0.25,
    ...                                delta=0.0), 6)  # binary RR with eps0 = ln 3
    1.098612
    """
    alpha = check_probability("false_positive_rate", false_positive_rate)
    beta = check_probability("false_negative_rate", false_negative_rate)
    d = check_probability("delta", delta)
    best = 0.0
    for first, second in ((alpha, beta), (beta, alpha)):
        numerator = 1.0 - d - first
        if numerator <= 0.0:
            continue
        if second == 0.0:
            return math.inf
        best = max(best, math.log(numerator / second))
    return best


@dataclass(frozen=True, slots=True)
class AuditResult:
    """Outcome of an audit: a lower bound on ε at the given δ and confidence.

    Attributes
    ----------
    epsilon_lower
        ε that the mechanism cannot beat, with probability >= ``confidence``.
    delta
        δ at which the bound holds.
    confidence
        Confidence level of the bound.
    threshold
        Score threshold of the test (outputs scoring above it are called "from x").
    false_positive_rate, false_negative_rate
        Rates measured on the held-out half.
    trials
        Held-out samples per side.
    """

    epsilon_lower: float
    delta: float
    confidence: float
    threshold: float
    false_positive_rate: float
    false_negative_rate: float
    trials: int


def audit_scores(
    scores_x: npt.ArrayLike,
    scores_x_prime: npt.ArrayLike,
    *,
    delta: float,
    confidence: float = 0.95,
) -> AuditResult:
    """Audit a mechanism from attack scores of samples of M(x) and M(x').

    A higher score must mean "more likely from x" (e.g. the log-likelihood ratio, or the count
    of x's value in a shuffled histogram). The first half of each sample picks the threshold
    that maximises the ε bound; the second half measures the rates.

    Parameters
    ----------
    scores_x, scores_x_prime
        Scores of independent samples of M(x) and M(x'), at least 20 each.
    delta
        δ of the guarantee being audited.
    confidence
        Confidence of the lower bound (Clopper–Pearson on each rate, Bonferroni-corrected).

    Examples
    --------
    Binary randomized response with ε0 = ln 3, attacked with its own output:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> yes = (rng.random(200_000) < 0.75).astype(float)
    >>> no = (rng.random(200_000) < 0.25).astype(float)
    >>> result = audit_scores(yes, no, delta=0.0)
    >>> bool(1.0 < result.epsilon_lower < np.log(3))
    True
    """
    sx = np.asarray(scores_x, dtype=float).ravel()
    sy = np.asarray(scores_x_prime, dtype=float).ravel()
    for name, arr in (("scores_x", sx), ("scores_x_prime", sy)):
        if arr.size < 20:
            raise ValueError(f"{name} must hold at least 20 samples, got {arr.size}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite, got a NaN or infinite score")
    d = check_probability("delta", delta, allow_one=False)
    level = check_probability("confidence", confidence, allow_zero=False, allow_one=False)
    half_x, half_y = sx.size // 2, sy.size // 2
    threshold = _best_threshold(sx[:half_x], sy[:half_y], d)
    test_x, test_y = sx[half_x:], sy[half_y:]
    false_neg = int(np.count_nonzero(test_x <= threshold))
    false_pos = int(np.count_nonzero(test_y > threshold))
    # Bonferroni over the two rates: each one-sided upper limit at level 1 − (1 − c)/2, which is
    # the upper end of the two-sided Clopper–Pearson interval of confidence c.
    _, fnr_high = clopper_pearson(successes=false_neg, trials=test_x.size, confidence=level)
    _, fpr_high = clopper_pearson(successes=false_pos, trials=test_y.size, confidence=level)
    eps = epsilon_from_error_rates(
        false_positive_rate=fpr_high, false_negative_rate=fnr_high, delta=d
    )
    return AuditResult(
        epsilon_lower=eps,
        delta=d,
        confidence=level,
        threshold=threshold,
        false_positive_rate=false_pos / test_y.size,
        false_negative_rate=false_neg / test_x.size,
        trials=min(test_x.size, test_y.size),
    )


def _best_threshold(
    sx: npt.NDArray[np.float64], sy: npt.NDArray[np.float64], delta: float
) -> float:
    candidates = np.unique(np.concatenate([sx, sy]))
    if candidates.size > 2048:
        candidates = np.quantile(candidates, np.linspace(0.0, 1.0, 2048))
    sorted_x, sorted_y = np.sort(sx), np.sort(sy)
    fnr = np.searchsorted(sorted_x, candidates, side="right") / sx.size
    fpr = 1.0 - np.searchsorted(sorted_y, candidates, side="right") / sy.size
    # Pseudo-counts keep empty tails from looking infinitely informative on the tuning half.
    fnr = np.maximum(fnr, 1.0 / sx.size)
    fpr = np.maximum(fpr, 1.0 / sy.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.maximum(
            np.log(np.clip(1.0 - delta - fpr, 1e-300, None) / fnr),
            np.log(np.clip(1.0 - delta - fnr, 1e-300, None) / fpr),
        )
    return float(candidates[int(np.argmax(score))])


def bayes_success_bound(*, epsilon: float, delta: float, choices: int) -> float:
    """Largest probability of guessing a secret among ``choices`` equally likely values.

    Under (ε, δ)-DP with respect to changing the secret, an adversary with a uniform prior over
    ``T`` values guesses right with probability at most ``e^ε / (e^ε + T − 1) + δ``.

    Examples
    --------
    >>> round(bayes_success_bound(epsilon=0.0, delta=0.0, choices=4), 6)
    0.25
    """
    eps = check_real("epsilon", epsilon, low=0.0, allow_inf=True)
    d = check_probability("delta", delta)
    t = check_int("choices", choices, low=1)
    if math.isinf(eps):
        return 1.0
    return min(1.0, 1.0 / (1.0 + (t - 1) * math.exp(-eps)) + d)
