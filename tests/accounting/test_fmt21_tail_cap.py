"""One round of the FMT21 pair in ``composed_shuffle`` (best, no k) is not built where its
windows' left-out mass alone puts δ above the target (``composition._capped_by_tails``,
issue 32: 1-3 s per δ = 1e-300 query at R = 1): its ε is then the cap ε0, the float the
full build reports. Checked against the full build (the pair, its PLD and dp_accounting's
search), on both sides of the rule's threshold."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import composition as comp
from crowdhide.accounting.shuffle._clone_counts import clone_window
from crowdhide.accounting.shuffle.composition import (
    CLONE_PAIR_REGISTRY,
    ClonePairBound,
    ComposedShuffleParams,
    composed_shuffle,
)
from crowdhide.errors import ResourceLimitError

#: Cells where the full build's ε at half a nat above the +inf mass is below the cap (its
#: largest finite losses are window tails, too): a rule firing there would be caught.
CELLS = [(1.0, 10**4), (2.0, 10**5), (4.0, 10**5), pytest.param(1.0, 10**5, marks=pytest.mark.slow)]


def _params(eps0: float, n: int, delta: float, rounds: int = 1) -> ComposedShuffleParams:
    return ComposedShuffleParams(
        eps0=eps0,
        n=n,
        rounds=rounds,
        discretization=comp._interval_for(rounds, None),
        log_tail=comp._log_tail_for(delta),
    )


def _full_epsilon(params: ComposedShuffleParams, delta: float) -> float:
    """FMT21's ε from the full build (no δ handed to the bound: nothing skipped)."""
    bound = CLONE_PAIR_REGISTRY["feldman2021"]
    assert isinstance(bound, ClonePairBound)
    assert bound.query_delta is None
    return bound.curve(params).epsilon(delta)


def _window_log_tail(params: ComposedShuffleParams) -> float:
    return clone_window(params.n - 1, math.exp(-params.eps0), params.log_tail)[0].log_tail


@pytest.mark.parametrize(("eps0", "n"), CELLS)
def test_fires_only_where_the_full_build_is_capped(eps0: float, n: int) -> None:
    # δ below the threshold (fires) and above it, where the full build is below the cap
    tail = _window_log_tail(_params(eps0, n, 1e-300))
    assert -125.0 < tail < -115.0  # the windows of log_tail = -120 leave mass out
    fired = 0
    for log_delta in (-690.0, tail - 1.01, tail - 0.5, tail + 0.5, tail + 3.0):
        delta = math.exp(log_delta)
        params = _params(eps0, n, delta)
        assert params.log_tail == -120.0  # the same windows at every δ tried
        full = _full_epsilon(params, delta)
        if comp._capped_by_tails("feldman2021", delta, params):
            fired += 1
            assert full == params.eps0  # the cap, the float the shortcut reports
        else:
            assert log_delta > tail - 1.0
        if log_delta > tail:
            assert full < params.eps0  # the +inf mass is below δ: not capped
    assert fired == 2


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 1000), (4.0, 1000)])
def test_statement_unchanged(eps0: float, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    got = composed_shuffle(eps0=eps0, n=n, delta=1e-300, rounds=1)
    monkeypatch.setattr(comp, "_capped_by_tails", lambda *args: False)
    want = composed_shuffle(eps0=eps0, n=n, delta=1e-300, rounds=1)
    assert (got.epsilon, got.source) == (want.epsilon, want.source)


def test_only_one_round_and_the_plain_pair() -> None:
    assert not comp._capped_by_tails("feldman2021", 1e-300, _params(1.0, 1000, 1e-300, 2))
    assert not comp._capped_by_tails("feldman2021", None, _params(1.0, 1000, 1e-300))
    assert comp._capped_by_tails("feldman2021", 1e-300, _params(1.0, 1000, 1e-300))


def test_same_error_as_the_pair() -> None:
    """n = 1e9: the rows are too wide; the shortcut raises what the full build raises."""
    params = _params(1.0, 10**9, 1e-300)
    with pytest.raises(ResourceLimitError) as full:
        _full_epsilon(params, 1e-300)
    with pytest.raises(ResourceLimitError) as short:
        comp._capped_by_tails("feldman2021", 1e-300, params)
    assert str(short.value) == str(full.value)
