"""``best`` stops once a certificate is within SETTLED_RTOL of the lower bound (issue 32):
the answer is still the smallest certificate of every bound (``shuffle_epsilon_all``), the
bounds left out are not evaluated, and a looser tolerance would change an answer."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _best, _krr_fast, generic
from crowdhide.accounting.statement import PrivacyStatement


def _smallest_certificate(k: int, eps0: float, n: int, delta: float) -> float:
    rows = generic.shuffle_epsilon_all(eps0=eps0, n=n, delta=delta, k=k)
    return min(r.epsilon for r in rows if r.is_certificate)


def test_settled_compares_certificates_with_the_lower_bound() -> None:
    cert = PrivacyStatement(epsilon=2.0, delta=1e-300, source="a")
    low = PrivacyStatement(epsilon=2.0 * (1 - 1e-10), delta=1e-300, kind="lower", source="lb")
    assert _best.settled([cert, low], low.epsilon)
    assert not _best.settled([cert], 1.99)  # 0.5 % apart: another bound may be below
    assert not _best.settled([low], low.epsilon)  # a lower bound certifies nothing
    assert not _best.settled([cert], math.nan)


def test_at_eps0_the_expensive_bounds_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # k = 4, ε0 = 2, n = 1e3, δ = 1e-300: balle2019_hoeffding answers ε0 and the lower bound
    # ε0 (1 − 1e-10); krr_blanket took 126 ms to answer ε0 too
    calls: list[float] = []
    blanket = _krr_fast.krr_blanket_log_delta

    def counted(*args: object, **kw: object) -> float:
        calls.append(1.0)
        return blanket(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_krr_fast, "krr_blanket_log_delta", counted)
    got = generic.shuffle_epsilon(eps0=2.0, n=1000, delta=1e-300, k=4)
    assert not calls
    assert got.epsilon == _smallest_certificate(4, 2.0, 1000, 1e-300) == 2.0
    assert got.lower is not None
    assert got.lower.epsilon <= got.epsilon


def test_a_looser_tolerance_would_lose_the_winner(monkeypatch: pytest.MonkeyPatch) -> None:
    # k = 4, ε0 = 8, n = 1e3, δ = 1e-6: balle2019_hoeffding answers 8, 3.6e-7 above the lower
    # bound (7.9999971); krr_clone, asked later, wins with 7.9999986
    want = _smallest_certificate(4, 8.0, 1000, 1e-6)
    got = generic.shuffle_epsilon(eps0=8.0, n=1000, delta=1e-6, k=4).epsilon
    assert got == want < 8.0
    monkeypatch.setattr(_best, "SETTLED_RTOL", 1e-6)
    assert generic.shuffle_epsilon(eps0=8.0, n=1000, delta=1e-6, k=4).epsilon == 8.0
