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
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = [
    "AuditResult",
    "audit_scores",
    "bayes_success_bound",
    "clopper_pearson",
    "epsilon_from_error_rates",
]


def clopper_pearson(*, successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided Clopper–Pearson (exact binomial) confidence interval for a proportion.

    Parameters
    ----------
    successes, trials
        Observed successes among the trials, ``0 <= successes <= trials``.
    confidence
        Coverage of the interval, ``0 < confidence < 1``.

    Returns
    -------
    tuple of (float, float)
        The lower and upper limits.

    See Also
    --------
    audit_scores : Prices each measured rate with it.

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

    Parameters
    ----------
    false_positive_rate, false_negative_rate
        The test's error rates, in ``[0, 1]``.
    delta
        δ of the guarantee being audited.

    Returns
    -------
    float
        The smallest ε, ``>= 0`` (``inf`` as above).

    See Also
    --------
    audit_scores : Measures the rates and applies this.

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
    """Outcome of an audit: a lower bound on ε at the given δ and confidence, and the test.

    Parameters
    ----------
    privacy
        The lower bound as a statement (``kind="lower"``): ε that the mechanism cannot beat
        at ``privacy.delta``, with probability >= ``confidence``; ``inputs`` records the
        confidence and the held-out trials.
    confidence
        Confidence level of the bound.
    threshold
        Score threshold of the test (outputs scoring above it are called "from x").
    false_positive_rate, false_negative_rate
        Rates measured on the held-out half.
    trials
        Held-out samples per side.
    side
        Which side of the threshold the test calls "from x" (``"above"`` or
        ``"below"``), chosen on the tuning half.

    See Also
    --------
    audit_scores : Produces it.
    """

    privacy: PrivacyStatement
    confidence: float
    threshold: float
    false_positive_rate: float
    false_negative_rate: float
    trials: int
    side: str = "above"


def audit_scores(
    scores_x: npt.ArrayLike,
    scores_x_prime: npt.ArrayLike,
    *,
    delta: float,
    confidence: float = 0.95,
) -> AuditResult:
    """Audit a mechanism from attack scores of samples of M(x) and M(x').

    The first half of each sample chooses the test — a threshold and a side ("from x" above
    it, or below it) — by the bound it *would* certify on a held-out sample of the second
    half's size if each rate were at its upper Clopper–Pearson limit from the tuning half.
    That criterion prices both halves' sampling error in, so it does not chase the extreme
    tails where a handful of samples look infinitely informative. The second half then measures
    the rates of that one test, which keeps the bound valid.

    Parameters
    ----------
    scores_x, scores_x_prime
        Scores of independent samples of M(x) and M(x'), at least 20 each; any monotone
        statistic works (the side is chosen from the data).
    delta
        δ of the guarantee being audited.
    confidence
        Confidence of the lower bound (Clopper–Pearson on each rate, Bonferroni-corrected).

    Returns
    -------
    AuditResult
        The lower bound on ε at ``delta`` and the test that gave it.

    See Also
    --------
    epsilon_from_error_rates : The ε a pair of error rates implies.
    clopper_pearson : The confidence interval of each rate.

    Examples
    --------
    Binary randomized response with ε0 = ln 3, attacked with its own output:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> yes = (rng.random(200_000) < 0.75).astype(float)
    >>> no = (rng.random(200_000) < 0.25).astype(float)
    >>> result = audit_scores(yes, no, delta=0.0)
    >>> bool(1.0 < result.privacy.epsilon < np.log(3)), result.privacy.kind
    (True, 'lower')
    """
    sx = np.asarray(scores_x, dtype=float).ravel()
    sy = np.asarray(scores_x_prime, dtype=float).ravel()
    for name, arr in (("scores_x", sx), ("scores_x_prime", sy)):
        if arr.size < 20:
            raise InvalidParameterError(
                f"{name} must hold at least 20 samples, got {arr.size}", parameter=name
            )
        if not np.isfinite(arr).all():
            raise InvalidParameterError(
                f"{name} must be finite, got a NaN or infinite score", parameter=name
            )
    d = check_probability("delta", delta, allow_one=False)
    level = check_probability("confidence", confidence, allow_zero=False, allow_one=False)
    half_x, half_y = sx.size // 2, sy.size // 2
    test_x, test_y = sx[half_x:], sy[half_y:]
    threshold, flip = _best_test(sx[:half_x], sy[:half_y], d, level, test_x.size, test_y.size)
    sign = -1.0 if flip else 1.0
    # Side "x above t" on sign * score: for flip, "from x" means score < -t' i.e. <= t.
    false_neg = int(np.count_nonzero(sign * test_x <= threshold))
    false_pos = int(np.count_nonzero(sign * test_y > threshold))
    # Bonferroni over the two rates: each one-sided upper limit at level 1 − (1 − c)/2, which is
    # the upper end of the two-sided Clopper–Pearson interval of confidence c.
    _, fnr_high = clopper_pearson(successes=false_neg, trials=test_x.size, confidence=level)
    _, fpr_high = clopper_pearson(successes=false_pos, trials=test_y.size, confidence=level)
    eps = epsilon_from_error_rates(
        false_positive_rate=fpr_high, false_negative_rate=fnr_high, delta=d
    )
    trials = min(test_x.size, test_y.size)
    privacy = PrivacyStatement(
        epsilon=eps,
        delta=d,
        kind="lower",
        source="hypothesis test (Clopper-Pearson rates, Kairouz-Oh-Viswanath)",
        notes=(f"holds with probability >= {level:g} over the samples",),
        inputs={"confidence": level, "trials": trials},
    )
    return AuditResult(
        privacy=privacy,
        confidence=level,
        threshold=sign * threshold,
        false_positive_rate=false_pos / test_y.size,
        false_negative_rate=false_neg / test_x.size,
        trials=trials,
        side="above" if not flip else "below",
    )


def _upper_limits(counts: npt.NDArray[np.float64], n: int, level: float) -> npt.NDArray[np.float64]:
    """Vectorised upper Clopper–Pearson limits (as in :func:`clopper_pearson`)."""
    tail = (1.0 - level) / 2.0
    k = np.clip(np.round(counts), 0, n)
    out = np.ones_like(k)
    inner = k < n
    out[inner] = beta_distribution.ppf(1.0 - tail, k[inner] + 1, n - k[inner])
    return out


def _best_test(
    sx: npt.NDArray[np.float64],
    sy: npt.NDArray[np.float64],
    delta: float,
    level: float,
    held_x: int,
    held_y: int,
) -> tuple[float, bool]:
    """Threshold and side maximising the bound certifiable on held-out samples of that size."""
    best = (-np.inf, 0.0, False)
    for flip in (False, True):
        x, y = (-sx, -sy) if flip else (sx, sy)
        candidates = np.unique(np.concatenate([x, y]))
        if candidates.size > 4096:
            candidates = np.unique(np.quantile(candidates, np.linspace(0.0, 1.0, 4096)))
        fnr = np.searchsorted(np.sort(x), candidates, side="right") / x.size
        fpr = 1.0 - np.searchsorted(np.sort(y), candidates, side="right") / y.size
        # Pessimistic twice: the rate could be as high as the tuning half's upper limit, and
        # the held-out half then adds its own; this keeps sparse tails from being chosen.
        fn_high = _upper_limits(_upper_limits(fnr * x.size, x.size, level) * held_x, held_x, level)
        fp_high = _upper_limits(_upper_limits(fpr * y.size, y.size, level) * held_y, held_y, level)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.maximum(
                np.log(np.clip(1.0 - delta - fp_high, 1e-300, None) / fn_high),
                np.log(np.clip(1.0 - delta - fn_high, 1e-300, None) / fp_high),
            )
        i = int(np.argmax(score))
        if score[i] > best[0]:
            best = (float(score[i]), float(candidates[i]), flip)
    return best[1], best[2]


def bayes_success_bound(*, epsilon: float, delta: float, choices: int) -> float:
    """Largest probability of guessing a secret among ``choices`` equally likely values.

    Under (ε, δ)-DP with respect to changing the secret, an adversary with a uniform prior over
    ``T`` values guesses right with probability at most ``e^ε / (e^ε + T − 1) + δ``.

    Parameters
    ----------
    epsilon, delta
        The guarantee.
    choices
        The number T of equally likely values, ``T >= 1``.

    Returns
    -------
    float
        ``min(1, e^ε / (e^ε + T − 1) + δ)``.

    See Also
    --------
    crowdhide.qif.scrambler_vulnerability : The exact guessing probability of a scrambler.

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
