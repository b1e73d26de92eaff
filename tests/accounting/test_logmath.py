"""Error model of log-gamma sums (:func:`crowdhide.accounting.logmath.log_terms_error`)
against 40-digit values."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.special import gammaln

from crowdhide.accounting.logmath import log_terms_error, rate_down, rate_up


def _binomial_log_pmf_terms(r: int, j: np.ndarray, p: float) -> tuple[np.ndarray, ...]:
    return (
        np.full(j.shape, gammaln(r + 1.0)),
        gammaln(j + 1.0),
        gammaln(r - j + 1.0),
        j * math.log(p),
        (r - j) * math.log1p(-p),
    )


def _exact_log_pmf(r: int, j: int, p: float) -> mpmath.mpf:
    with mpmath.workdps(40):
        q = mpmath.mpf(p)  # the float p itself: only the evaluation's rounding is measured
        return (
            mpmath.loggamma(r + 1)
            - mpmath.loggamma(j + 1)
            - mpmath.loggamma(r - j + 1)
            + j * mpmath.log(q)
            + (r - j) * mpmath.log1p(-q)
        )


@pytest.mark.parametrize("r", [10**3, 10**5, 10**6, 10**7, 10**8])
def test_the_error_model_covers_measured_log_pmfs(r: int) -> None:
    rng = np.random.default_rng(r)
    worst_error = 0.0
    for _ in range(3):
        p = 1.0 / (int(r * rng.uniform(0.01, 10.0)) + 2)
        mean = r * p
        jmax = int(min(r, math.ceil(mean + 10.0 * math.sqrt(mean) + 20.0)))
        j = np.unique(rng.integers(1, jmax + 1, 15)).astype(np.float64)
        terms = _binomial_log_pmf_terms(r, j, p)
        value = terms[0] - terms[1] - terms[2] + terms[3] + terms[4]
        bound = log_terms_error(*terms)
        for jj, v, b in zip(j, value, bound, strict=True):
            error = abs(float(mpmath.mpf(float(v)) - _exact_log_pmf(r, int(jj), p)))
            assert error <= b / 2.0, (r, jj, p, error, b)
            worst_error = max(worst_error, error)
    if r >= 10**7:
        # the fixed 1e-9 margin used before does not cover these: the check above has teeth
        assert worst_error > 1e-9


def test_the_model_is_a_floor_for_exact_zero_terms() -> None:
    assert float(log_terms_error(0.0, 0.0)) > 0.0
    assert log_terms_error(np.zeros(3), 1.0).shape == (3,)


def _rates_in_floating_point(eps0: float, k: int, mu: float) -> dict[str, float]:
    """The clone and blanket rates as the evaluators compute them."""
    from crowdhide.accounting.shuffle.variation_ratio import clone_rates

    e = math.exp(eps0)
    c_inf, c_zero = clone_rates(mu, eps0)
    return {
        "fmt23": 2.0 / (e + 1.0),
        "fmt21": math.exp(-eps0),
        "blanket": k / (math.expm1(eps0) + k),
        "split": c_inf + c_zero,
    }


def _exact_rates(eps0: float, k: int, mu: float) -> dict[str, mpmath.mpf]:
    with mpmath.workdps(40):
        e = mpmath.exp(mpmath.mpf(eps0))
        m = mpmath.mpf(mu)
        return {
            "fmt23": 2 / (e + 1),
            "fmt21": 1 / e,
            "blanket": k / (e - 1 + k),
            "split": 2 * m / (e + 1) + (1 - m) / e,
        }


def test_rounded_down_rates_never_exceed_the_exact_rates() -> None:
    """``rate_down`` of every clone/blanket rate is at most its 40-digit value, while the
    rates rounded to nearest exceed it for many inputs (so the rounding matters)."""
    rng = np.random.default_rng(7)
    above = 0
    for _ in range(400):
        eps0 = float(rng.choice([rng.uniform(0.01, 2.0), rng.uniform(2.0, 30.0)]))
        k = int(rng.integers(2, 1000))
        mu = float(rng.uniform(0.0, 1.0))
        exact = _exact_rates(eps0, k, mu)
        for name, value in _rates_in_floating_point(eps0, k, mu).items():
            assert rate_down(value) <= exact[name], (name, eps0, k, mu)
            above += int(value > exact[name])
    assert above > 50


def test_rounded_up_informative_probabilities_are_at_least_exact() -> None:
    """``rate_up`` of k-RR's informative probability (e + 1)/(e + k − 1) is at least its
    40-digit value, while the value rounded to nearest falls below it for many inputs."""
    rng = np.random.default_rng(11)
    below = 0
    for _ in range(400):
        eps0 = float(rng.uniform(0.01, 30.0))
        k = int(rng.integers(3, 1000))
        e = math.exp(eps0)
        value = (e + 1.0) / (e + k - 1.0)
        with mpmath.workdps(40):
            exact = (mpmath.exp(mpmath.mpf(eps0)) + 1) / (mpmath.exp(mpmath.mpf(eps0)) + k - 1)
        assert rate_up(value) >= exact, (eps0, k)
        below += int(value < exact)
    assert below > 50
