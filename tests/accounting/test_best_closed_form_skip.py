"""``best`` leaves krr_clone out where Balle et al.'s closed forms beat it (issue 32: n = 1e9,
δ = 1e-300, where its search took 32-122 ms): answers bit-identical to the search that asks
it, krr_clone evaluated once (the check), and its own answer above the one given."""

from __future__ import annotations

import pytest

from crowdhide.accounting.shuffle import _best, _krr_fast, generic
from crowdhide.accounting.shuffle._bound_curves import ShuffleParams


def _clone_calls(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    calls: list[float] = []
    clone = _krr_fast.krr_clone_fast_log_delta

    def counted(*args: float) -> float:
        calls.append(args[3])
        return clone(*args)

    monkeypatch.setattr(_krr_fast, "krr_clone_fast_log_delta", counted)
    return calls


def _answer(k: int, eps0: float, n: int, delta: float) -> tuple[float, str]:
    got = generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k)
    return got.epsilon, got.source


@pytest.mark.parametrize(("k", "eps0"), [(3, 0.5), (4, 4.0), (100, 1.0)])
def test_krr_clone_is_skipped_behind_a_closed_form(
    monkeypatch: pytest.MonkeyPatch, k: int, eps0: float
) -> None:
    n, delta = 10**9, 1e-300
    calls = _clone_calls(monkeypatch)
    got, source = _answer(k, eps0, n, delta)
    assert len(calls) == 1  # the check alone (main searched: 5-13 evaluations)
    assert source == "balle2019_bennett"
    # its own answer is above the one given: leaving it out changed nothing
    alone = generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound="krr_clone")
    assert alone.epsilon > got
    # and the search that asks it gives the same float
    with monkeypatch.context() as m:
        m.setattr(_best, "SKIPPED_BELOW_TINY", {})
        assert _answer(k, eps0, n, delta) == (got, source)
        assert len(calls) > 3


@pytest.mark.parametrize(("k", "eps0"), [(3, 8.0), (100, 8.0)])
def test_where_krr_clone_wins_it_is_still_asked(
    monkeypatch: pytest.MonkeyPatch, k: int, eps0: float
) -> None:
    # ε0 = 8, n = 1e9, δ = 1e-300: krr_clone beats the closed forms; a check that always said
    # "above" would hand the answer to balle2019_bennett, so this test can fail
    n, delta = 10**9, 1e-300
    got, source = _answer(k, eps0, n, delta)
    assert source == "krr_clone"
    with monkeypatch.context() as m:
        m.setattr(_best, "SKIPPED_BELOW_TINY", {})
        assert _answer(k, eps0, n, delta) == (got, source)
    monkeypatch.setattr(_best, "epsilon_above", lambda *args: True)
    wrong, wrong_source = _answer(k, eps0, n, delta)
    assert wrong_source != "krr_clone"
    assert wrong > got


def test_the_closed_forms_are_consulted_only_at_large_n_and_tiny_delta() -> None:
    big, mid = ShuffleParams(eps0=1.0, n=10**9, k=4), ShuffleParams(eps0=1.0, n=10**6, k=4)
    tiny = "balle2019_bennett" in _best._skippers("krr_clone", big, 1e-300)
    assert tiny
    assert "balle2019_bennett" not in _best._skippers("krr_clone", big, 1e-10)
    assert "balle2019_bennett" not in _best._skippers("krr_clone", mid, 1e-300)
    assert _best._skippers("krr_clone", mid, 1e-300) == {"krr_blanket"}
    assert _best._skippers("feldman2021", big, 1e-300) == {"variation_ratio"}
