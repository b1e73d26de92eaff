"""Tests of crowdhide.netdp.cycle_privacy: per-cycle certificates against exact mixtures,
enumeration of k-RR groups, grouping of cycle lengths, safe-side per-cycle ε."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.accounting.gaussian import gaussian_epsilon, gaussian_log_delta
from crowdhide.netdp.cycle_privacy import (
    CycleMechanism,
    cycle_epsilons,
    cycle_log_delta,
    cycle_profile,
    krr_group_log_delta,
)

GAUSS = CycleMechanism(kind="gaussian", noise_multiplier=3.0)
KRR = CycleMechanism(kind="krr", eps0=0.8, domain_size=3)


@pytest.mark.parametrize(
    ("mech", "p", "lo", "hi"),
    [
        (GAUSS, 1 / 9, 1, 12),
        (GAUSS, 1 / 99, 40, 75),
        (GAUSS, 1 / 999, 900, 1100),
        (GAUSS, 1 / 20, 60, 63),
        (KRR, 1 / 9, 2, 10),
        (KRR, 1 / 49, 30, 45),
    ],
)
def test_group_profile_dominates_every_length(
    mech: CycleMechanism, p: float, lo: int, hi: int
) -> None:
    grid = np.linspace(0.0, 3.0, 61)
    group = cycle_profile(grid, intermediates=hi, p=p, mechanism=mech, noise_terms=lo)
    for r in range(lo, hi + 1, max(1, (hi - lo) // 12)):
        one = _thm10(grid, r, p, mech)
        assert np.all(group >= one * (1 - 1e-9)), r


def _thm10(grid: np.ndarray, r: int, p: float, mech: CycleMechanism) -> np.ndarray:
    """Balle et al. Thm 10 bound of one length, summed over j <= 20 (Gaussian: every j)."""
    eta = -np.expm1(r * np.log1p(-p))
    base = np.log1p(np.expm1(grid) / eta)
    j = np.arange(1, (r if mech.kind == "gaussian" else min(r, 20)) + 1)
    w = binom.pmf(j, r, p)
    if mech.kind == "gaussian":
        mu = j / (mech.noise_multiplier * np.sqrt(r))
        prof = np.exp(gaussian_log_delta(base[:, None], mu=mu[None, :]))
    else:
        prof = np.array(
            [
                [
                    np.exp(krr_group_log_delta(e, eps0=mech.eps0, domain_size=3, group=int(g)))
                    for g in j
                ]
                for e in base
            ]
        )
    return np.asarray(np.minimum((prof * w[None, :]).sum(axis=1), 1.0))


@pytest.mark.parametrize(("p", "lo", "hi"), [(1 / 9, 1, 12), (1 / 99, 40, 75)])
def test_wrong_group_choice_is_caught(p: float, lo: int, hi: int) -> None:
    # participation of the smallest length with the noise of the largest is *not* a bound
    grid = np.linspace(0.0, 3.0, 301)
    wrong = cycle_profile(grid, intermediates=lo, p=p, mechanism=GAUSS)
    longest = cycle_profile(grid, intermediates=hi, p=p, mechanism=GAUSS)
    assert np.any(wrong < longest * (1 - 1e-6))


def test_noise_terms_validated() -> None:
    with pytest.raises(ValueError, match="noise_terms"):
        cycle_profile([0.0], intermediates=5, p=0.1, mechanism=GAUSS, noise_terms=6)


def test_gaussian_cycle_certificate_bounds_exact_mixture() -> None:
    # one cycle, r = 4 intermediates, n = 5 users (p = 1/4), σ/Δ = 2; exact mixture for the
    # dataset (others 0; u: 0 vs 1) computed numerically must be below the certificate.
    from scipy.stats import binom, norm

    r, p, s = 4, 0.25, 2.0 * math.sqrt(4)
    z = np.linspace(-40, 50, 400_001)
    dz = z[1] - z[0]
    q_dens = norm.pdf(z, 0, s)
    p_dens = sum(binom.pmf(j, r, p) * norm.pdf(z, j, s) for j in range(r + 1))
    mech = CycleMechanism(kind="gaussian", noise_multiplier=2.0)
    for eps in (0.0, 0.05, 0.2):
        exact = max(
            np.sum(np.maximum(p_dens - math.exp(eps) * q_dens, 0)) * dz,
            np.sum(np.maximum(q_dens - math.exp(eps) * p_dens, 0)) * dz,
        )
        cert = cycle_profile([eps], intermediates=r, p=p, mechanism=mech)[0]
        assert cert >= exact * (1 - 1e-6)


def _krr_probs(eps0: float, size: int, x: int) -> np.ndarray:
    probs = np.full(size, 1.0 / (math.exp(eps0) + size - 1))
    probs[x] *= math.exp(eps0)
    return probs


@pytest.mark.parametrize(("eps0", "size", "group"), [(1.0, 2, 3), (0.5, 3, 2), (2.0, 4, 2)])
def test_krr_group_log_delta_matches_enumeration(eps0: float, size: int, group: int) -> None:
    # j independent k-RR outputs, every input changed a -> b: enumerate all output tuples
    pa, pb = _krr_probs(eps0, size, 0), _krr_probs(eps0, size, 1)
    p, q = [], []
    for outs in itertools.product(range(size), repeat=group):
        p.append(math.prod(pa[o] for o in outs))
        q.append(math.prod(pb[o] for o in outs))
    exact = DiscretePairCurve.from_probabilities(p, q)
    for eps in (0.0, 0.4, 1.5):
        got = math.exp(krr_group_log_delta(eps, eps0=eps0, domain_size=size, group=group))
        assert got == pytest.approx(exact.delta(eps), rel=1e-9, abs=1e-15)
    assert krr_group_log_delta(0.3, eps0=eps0, domain_size=size, group=0) == -math.inf


@pytest.mark.parametrize("mech", [GAUSS, KRR])
def test_cycle_log_delta_is_the_profile_in_log_space(mech: CycleMechanism) -> None:
    grid = np.array([0.0, 0.05, 0.3, 1.0])
    prof = cycle_profile(grid, intermediates=7, p=1 / 9, mechanism=mech)
    for e, value in zip(grid, prof, strict=True):
        got = cycle_log_delta(float(e), intermediates=7, p=1 / 9, mechanism=mech)
        assert math.exp(got) == pytest.approx(value, rel=1e-9)
    assert cycle_log_delta(0.1, intermediates=0, p=0.1, mechanism=mech) == -math.inf


def test_cycle_epsilons_are_safe_side_roots() -> None:
    mech = CycleMechanism(kind="gaussian", noise_multiplier=4.0)
    r = np.array([0, 3, 30])
    eps = cycle_epsilons(r, p=1 / 19, mechanism=mech, cycle_delta=1e-8)
    assert eps[0] == 0.0
    for length, e in zip(r[1:], eps[1:], strict=True):
        at = cycle_log_delta(float(e), intermediates=int(length), p=1 / 19, mechanism=mech)
        below = cycle_log_delta(
            float(e) * (1 - 1e-6), intermediates=int(length), p=1 / 19, mechanism=mech
        )
        assert at <= math.log(1e-8) < below


def test_cycle_mechanism_local_epsilon_is_exact_composition() -> None:
    g = CycleMechanism(kind="gaussian", noise_multiplier=5.0)
    assert g.local_epsilon(contributions=9, delta=1e-6) == pytest.approx(
        gaussian_epsilon(mu=3.0 / 5.0, delta=1e-6)
    )
    k = CycleMechanism(kind="krr", eps0=0.7, domain_size=3)
    probs = [_krr_probs(0.7, 3, 0), _krr_probs(0.7, 3, 1)]
    rr = DiscretePairCurve.from_probabilities(probs[0], probs[1])
    ref = compose_curves([(rr, 5)]).epsilon(1e-6)
    assert k.local_epsilon(contributions=5, delta=1e-6) == pytest.approx(ref, abs=1e-3)
    assert k.local_epsilon(contributions=0, delta=1e-6) == 0.0
    with pytest.raises(ValueError, match="kind"):
        CycleMechanism(kind="laplace")  # type: ignore[arg-type]


@pytest.mark.parametrize("r", [10**4, 10**6, 10**8])
def test_binomial_weights_bound_the_exact_pmf_at_large_lengths(r: int) -> None:
    """The weights are upper bounds of the exact B(r, p) pmf (40 digits) also where the
    log-gamma cancellation errs by more than 1e-9 (r >= 10^6), and the tail bounds the rest."""
    import mpmath

    from crowdhide.netdp.cycle_privacy import _binomial_weights

    p = 1.0 / (r // 3 + 7)
    j, logw, tail = _binomial_weights(r, p)
    with mpmath.workdps(80):  # 1 − P(0) − Σ kept cancels to ~1e-33: 80 digits
        q = mpmath.mpf(p)
        exact = [
            mpmath.loggamma(r + 1)
            - mpmath.loggamma(int(k) + 1)
            - mpmath.loggamma(r - int(k) + 1)
            + int(k) * mpmath.log(q)
            + (r - int(k)) * mpmath.log1p(-q)
            for k in j
        ]
        kept = mpmath.fsum(mpmath.exp(e) for e in exact)
        zero = mpmath.exp(r * mpmath.log1p(-q))
        assert all(float(w - e) >= 0.0 for w, e in zip(logw, exact, strict=True))
        assert float(1 - zero - kept) <= tail * (1 + 1e-12)
