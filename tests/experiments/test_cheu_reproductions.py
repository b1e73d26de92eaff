"""The exact λ of Cheu et al.'s shuffled bit sum against enumeration over all datasets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.experiments.cheu_sums import exact_lambda


def _enumerated_delta(n: int, lam: float, eps: float) -> float:
    """max over every dataset of the n − 1 others (all 2^(n−1), no reduction to counts) and
    both directions of the hockey-stick divergence of the count of 1-reports, x_0 = 1 vs 0."""
    keep_one = 1.0 - lam / (2.0 * n)  # P(report 1 | bit 1); P(report 1 | bit 0) = lam / (2n)
    worst = 0.0
    for others in itertools.product((0, 1), repeat=n - 1):
        pmf = np.array([1.0])
        for bit in others:
            p1 = keep_one if bit else 1.0 - keep_one
            pmf = np.convolve(pmf, [1.0 - p1, p1])
        with_one = np.convolve(pmf, [1.0 - keep_one, keep_one])
        with_zero = np.convolve(pmf, [keep_one, 1.0 - keep_one])
        for p, q in ((with_one, with_zero), (with_zero, with_one)):
            worst = max(worst, float(np.maximum(p - math.exp(eps) * q, 0.0).sum()))
    return worst


@pytest.mark.parametrize(("n", "eps", "delta"), [(10, 1.0, 0.02), (12, 0.8, 0.05)])
def test_exact_lambda_brackets_the_enumerated_minimum(n: int, eps: float, delta: float) -> None:
    found = exact_lambda(n=n, epsilon=eps, delta=delta)
    assert found.certified
    # the upper end is private against every dataset ...
    assert _enumerated_delta(n, found.high, eps) <= delta
    # ... and just below the lower end some dataset is not: the bracket holds the minimum
    assert _enumerated_delta(n, found.low * (1 - 1e-3), eps) > delta
    assert found.high / found.low - 1 <= 1e-2


def test_exact_lambda_is_below_the_fast_bound_certificate() -> None:
    from crowdhide.protocols.bitsum import calibrate_bit_sum

    found = exact_lambda(n=2000, epsilon=1.0, delta=1e-6)
    certified, _ = calibrate_bit_sum(n=2000, epsilon=1.0, delta=1e-6, calibration="exact")
    assert found.certified
    assert found.high <= certified * (1 + 1e-9)


def test_lower_bound_chain_exponent_is_one_seventeenth() -> None:
    import math

    from crowdhide.experiments.cheu_multibit import chain_exponent, chain_rows

    slope = (chain_exponent("histogram", 600.0) - chain_exponent("histogram", 300.0)) / 300.0
    assert slope == pytest.approx(1 / 17, rel=1e-3)
    sel = chain_exponent("selection", math.log(700)) - chain_exponent("selection", math.log(500))
    assert sel / 200 == pytest.approx(1 / 17, rel=0.02)
    for r in chain_rows():  # Thm 6.2 on the bit-sum randomizer, R's ε at δ recomputed
        p = math.exp(r["eps0_R"]) / (1 + math.exp(r["eps0_R"]))
        want = math.log((p - 1e-6) / (1 - p))
        assert r["eps_R_at_delta"] == pytest.approx(max(0.0, want))
        assert r["eps_R_at_delta"] <= r["thm62_bound"]


def test_multibit_quick_verdicts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crowdhide.experiments.claims import HOLDS
    from crowdhide.experiments.registry import run_experiment

    result = run_experiment("cheu-multibit", tmp_path, seed=0, quick=True)
    assert any(str(f).endswith(".png") for f in result.files)
    outcome = {v.claim.section: v.outcome for v in result.verdicts}
    assert outcome["Thm 6.2"] == HOLDS
    assert outcome["Cor. 6.6"] == HOLDS
    assert outcome["Cor. 6.8"] == HOLDS
    assert len(result.verdicts) == 7
