"""``variation_ratio`` at tiny tail levels (issue 32, s33-vrtiny): evidence for its floor.

The certificate is the supremum over μ of the split clone system, and at μ = 1 that system
*is* the FMT23 clone pair, so its ``log δ(ε)`` can never be below the pair's exact value.
Here the pair's δ(ε) is computed independently of crowdhide, in log space (``gammaln`` and
log-sum-exp in float64, every pmf an explicit log-binomial), at levels from e^-590 down to
e^-730 — below the smallest normal double (e^-708), where a linear-space evaluator would
underflow — and the certificate, evaluated at the tail level ``exact − 40`` its ε search
would use, must stay above it.

Accuracy of the oracle: each ``gammaln`` is within a few ulps of values below 3·10^4 (an
absolute error below 1e-11 in log), the log-sum-exps add a few ulps of |log δ| <= 750; the
oracle's log δ is within 1e-9 of the truth, far below :data:`ORACLE_ATOL`.

The comparison can fail: the certificate for 10 % more users (more clones, a smaller δ)
falls below the exact pair at the original n
(:func:`test_the_comparison_catches_a_certificate_for_too_many_users`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy.special import gammaln, logsumexp

from crowdhide.accounting.shuffle.variation_ratio import VariationRatio

#: How far below the oracle's log δ the certificate may be before the test fails: covers
#: the oracle's own rounding (module docstring) with a factor of 1000.
ORACLE_ATOL = 1e-6


def _log_binomial_pmf(
    count: float, k: npt.NDArray[np.float64], p: float
) -> npt.NDArray[np.float64]:
    """``log P(Bin(count, p) = k)``, −inf outside ``[0, count]``."""
    inside = (k >= 0.0) & (k <= count)
    kk = np.clip(k, 0.0, count)
    log_choose = gammaln(count + 1.0) - gammaln(kk + 1.0) - gammaln(count - kk + 1.0)
    value = log_choose + kk * math.log(p) + (count - kk) * math.log1p(-p)
    return np.asarray(np.where(inside, value, -np.inf), dtype=np.float64)


@functools.cache  # two tests ask for the same case
def exact_fmt23_log_delta(n: int, eps0: float, eps: float) -> float:
    """``log δ(ε)`` of the FMT23 clone pair: ``C ~ Bin(n − 1, 2/(e + 1))`` fair-coin clones,
    the target ``+1`` with probability ``e/(e + 1)`` under x (``1/(e + 1)`` under x'), the
    adversary seeing C and the number of ``+``. Clone counts whose probability is below
    e^-800 of the largest are left out (they change log δ by less than e^-50)."""
    e = math.exp(eps0)
    counts = np.arange(0.0, float(n))
    log_count = _log_binomial_pmf(float(n - 1), counts, 2.0 / (e + 1.0))
    kept = log_count > log_count.max() - 800.0
    log_on, log_off = math.log(e / (e + 1.0)), math.log(1.0 / (e + 1.0))
    terms = []
    for count, log_c in zip(counts[kept], log_count[kept], strict=True):
        plus = np.arange(0.0, count + 2.0)  # the number of + among the clones and the target
        shifted = _log_binomial_pmf(float(count), plus - 1.0, 0.5)  # the target's +
        same = _log_binomial_pmf(float(count), plus, 0.5)
        log_p0 = np.logaddexp(log_on + shifted, log_off + same)
        log_p1 = np.logaddexp(log_off + shifted, log_on + same)
        above = log_p0 > eps + log_p1
        if above.any():
            gap = log_p0[above] + np.log1p(-np.exp(eps + log_p1[above] - log_p0[above]))
            terms.append(log_c + float(logsumexp(gap)))
    return float(logsumexp(terms)) if terms else -math.inf


def test_the_oracle_matches_the_fmt23_evaluator_at_a_moderate_level() -> None:
    """At δ = e^-22 (where the FMT23 evaluator is tight) the two agree to 1e-6 in log δ."""
    from crowdhide.accounting.shuffle import _pairs as pairs

    n, eps0, eps = 2000, 2.0, 0.25
    exact = exact_fmt23_log_delta(n, eps0, eps)
    evaluated = pairs.clone_pair_log_delta(n, eps0, 2.0 / (math.exp(eps0) + 1.0), eps, -80.0)
    assert exact < -5.0
    assert exact - 1e-9 <= evaluated <= exact + 1e-6


#: (n, ε0, ε) with the pair's exact log δ about −586 (ε0 = 1), −700 and −730 (ε0 = 0.5: below
#: the double range) and −248 (ε0 = 2).
TINY_CASES = [
    pytest.param(3000, 0.5, 0.37161, id="e^-700"),
    pytest.param(3000, 0.5, 0.37904, id="e^-730", marks=pytest.mark.slow),
    pytest.param(2000, 1.0, 0.97, id="e^-586", marks=pytest.mark.slow),
    pytest.param(2000, 2.0, 1.94, id="e^-248", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("n", "eps0", "eps"), TINY_CASES)
def test_certificate_dominates_the_exact_pair_at_tiny_levels(
    n: int, eps0: float, eps: float
) -> None:
    exact = exact_fmt23_log_delta(n, eps0, eps)
    assert exact < -240.0
    certificate = VariationRatio(n, eps0)(eps, exact - 40.0)
    assert certificate >= exact - ORACLE_ATOL


def test_the_comparison_catches_a_certificate_for_too_many_users() -> None:
    """The certificate for n·1.1 users (10 % more clones) is below the exact pair at n: the
    comparison above is not one that cannot fail."""
    n, eps0, eps = 3000, 0.5, 0.37161
    exact = exact_fmt23_log_delta(n, eps0, eps)
    assert VariationRatio(int(n * 1.1), eps0)(eps, exact - 40.0) < exact - ORACLE_ATOL


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_the_answer_at_delta_1e_300_is_above_the_exact_fmt23_root(eps0: float) -> None:
    """With the floor removed (s36-deep, docs/proofs/variation-ratio.md §11) an ε query at
    δ = 1e-300 answers with the certificate: at its ε the exact FMT23 pair (the split system
    at μ = 1, a lower bound on the supremum) has δ at most 1e-300, and within 1 % of that
    pair's root (the certificate's ε is 1.0065-1.009x the exact root at n = 1e4)."""
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    n = 10_000
    got = shuffle_epsilon(eps0=eps0, n=n, delta=1e-300, bound="variation_ratio", lower=False)
    assert got.conditions_met
    target = math.log(1e-300)
    assert exact_fmt23_log_delta(n, eps0, got.epsilon) <= target + ORACLE_ATOL
    assert exact_fmt23_log_delta(n, eps0, got.epsilon / 1.01) > target


def test_the_search_at_delta_1e_300_takes_a_few_suprema_and_returns_a_passing_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Below δ = 1e-280 the ε search stops at ``VARIATION_RATIO_DEEP_RTOL`` (s36-deep): at
    ε0 = 2, n = 1e4 it took 25 suprema creeping along the top system's staircase at
    ``BRACKET_RTOL``; now a handful, and the answer's own bound meets the target."""
    from crowdhide.accounting.shuffle import variation_ratio as vr
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    vr._clear_caches()
    calls: list[float] = []
    inner = vr._supremum

    def counted(n: int, eps0: float, mu_max: float, eps: float, log_tail: float) -> object:
        calls.append(eps)
        return inner(n, eps0, mu_max, eps, log_tail)

    monkeypatch.setattr(vr, "_supremum", counted)
    got = shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-300, bound="variation_ratio", lower=False)
    assert got.conditions_met
    assert len(calls) <= 8
    target = math.log(1e-300)
    assert VariationRatio(10_000, 2.0)(got.epsilon, target - 40.0) <= target
