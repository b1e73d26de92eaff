"""An unreachable n-calibration is answered with one query at the largest n (issue 28,
bounded work): the fuzz found ``shuffle calibrate --epsilon 1e-05 --delta 4.67e-169 --eps0
0.53`` taking 77 s of CPU in 31 doubling queries. A named bound that applies only to small n
keeps the doubling (its answer must not change)."""

from __future__ import annotations

from typing import Any

import pytest

from crowdhide.accounting.shuffle import calibration
from crowdhide.accounting.shuffle.generic import shuffle_delta, shuffle_epsilon
from crowdhide.errors import UnmetTargetError


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(**kwargs: Any) -> Any:
        calls.append(kwargs["n"])
        return shuffle_delta(**kwargs)

    monkeypatch.setattr(calibration, "shuffle_delta", counted)
    return calls


def test_an_unreachable_target_costs_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    with pytest.raises(UnmetTargetError, match=r"no n <= 1000000000"):
        calibration.calibrate_n(epsilon=1e-5, delta=1e-12, eps0=0.53)
    assert calls == [10**9]


def test_a_reachable_target_is_still_the_smallest_n() -> None:
    r = calibration.calibrate_n(epsilon=0.5, delta=1e-6, eps0=2.0)
    n = r.inputs["n"]
    assert r.epsilon <= 0.5
    assert shuffle_epsilon(eps0=2.0, n=n - 1, delta=1e-6).epsilon > 0.5
