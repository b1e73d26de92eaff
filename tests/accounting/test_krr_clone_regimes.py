"""The blocked k-RR clone sum (``_krr_fast``) against the unblocked one in the regime where
clones are rare (large k and ε0: the mean clone count 2(n − 1)/(e^ε0 + 1) is ~20 at
n = 1e4, ε0 = 6.9). There ε of ``krr_clone`` at δ = 1e-6 jumps from 2.9 (ε0 = 6.85) to 5.9
(ε0 = 6.9): the question is whether the blocking or the windows cause it. They do not — the
unblocked sum has the same plateau of δ(ε) ≈ 1e-6 over ε ∈ [3, 5.9], coming from the
datasets' few-clone outcomes (a property of the clone reduction, not of its evaluation)."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle import _pairs as pairs


@pytest.mark.parametrize("eps0", [6.85, 6.9, 7.0])
def test_blocked_clone_sum_equals_the_full_sum_when_clones_are_rare(eps0: float) -> None:
    n, k = 10_000, 408
    for eps in (2.0, 3.0, 4.0, 5.0, 5.9):
        full = pairs.krr_clone_log_delta(n, k, eps0, eps, -54.0)
        blocked = fast.krr_clone_fast_log_delta(n, k, eps0, eps, -54.0)
        assert blocked >= full - 1e-9
        assert blocked == pytest.approx(full, abs=1e-8)


def test_the_plateau_is_in_the_unblocked_clone_sum() -> None:
    """δ(3) and δ(5.9) of the exact clone sum at ε0 = 6.9 differ by less than 2x, both
    above 1e-6: the plateau that makes ε(1e-6) jump is in the reduction itself."""
    n, k, eps0 = 10_000, 408, 6.9
    at3 = math.exp(pairs.krr_clone_log_delta(n, k, eps0, 3.0, -54.0))
    at59 = math.exp(pairs.krr_clone_log_delta(n, k, eps0, 5.9, -54.0))
    assert 1e-6 < at59 < at3 < 2.0 * at59
