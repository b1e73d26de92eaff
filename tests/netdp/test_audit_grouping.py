"""Cycle-length grouping of ``account_walk``: a group's profile dominates each of its lengths."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.netdp.walk_accounting import (
    CycleMechanism,
    account_walk,
    cycle_profile,
    gaussian_log_delta,
    krr_group_log_delta,
)
from crowdhide.netdp.walks import complete_walk

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
        prof = np.exp(gaussian_log_delta(base[:, None], mu[None, :]))
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


def test_grouped_audit_is_a_certificate_close_to_per_length() -> None:
    walk = complete_walk(n=60, steps=6000, rng=3)
    exact = account_walk(walk, n=60, mechanism=GAUSS, delta=1e-6)
    grouped = account_walk(walk, n=60, mechanism=GAUSS, delta=1e-6, group_ratio=0.05)
    assert exact.details["length_grouping"] == "exact"
    assert grouped.details["length_grouping"] == "dominating"
    assert grouped.details["curve_groups"] < exact.details["curve_groups"]
    for key in ("network_mean", "network_worst"):
        assert exact.summary[key] * 0.995 <= grouped.summary[key] <= exact.summary[key] * 1.1
