"""The composed-shuffle answer with FMT21 always composed: the reference both FMT21 skips
(test_fmt21_skip.py, test_fmt21_floor.py) must reproduce float for float."""

from __future__ import annotations

from crowdhide.accounting.shuffle import profile_pair as profile
from crowdhide.accounting.shuffle.composition import (
    CLONE_PAIR_REGISTRY,
    PROFILE_PAIR,
    ComposedShuffleParams,
    _interval_for,
    _log_tail_for,
)
from crowdhide.accounting.statement import PrivacyStatement


def composed_params(eps0: float, n: int, rounds: int, delta: float) -> ComposedShuffleParams:
    """The parameters ``composed_shuffle`` builds for best, no k, no sampling."""
    return ComposedShuffleParams(
        eps0=eps0,
        n=n,
        rounds=rounds,
        discretization=_interval_for(rounds, None),
        log_tail=_log_tail_for(delta),
    )


def always_composed(eps0: float, n: int, rounds: int, delta: float) -> PrivacyStatement:
    """FMT21 composed, then the smaller of it and the profile pair (what ``composed_shuffle``
    does for best, no k, no sampling, substitute, without any skip)."""
    params = composed_params(eps0, n, rounds, delta)
    other = profile.PROFILE_PAIR_REGISTRY.statement(PROFILE_PAIR, params, delta=delta)
    fmt = CLONE_PAIR_REGISTRY.statement("feldman2021", params, delta=delta)
    return profile.smaller(fmt, other, key="epsilon")


def pairs_answer(eps0: float, n: int, rounds: int, delta: float) -> PrivacyStatement:
    """``composed_shuffle``'s best of the two composed pairs, with its FMT21 skips — before
    the rounds-apart member (docs/proofs/profile-pair.md §19), which is not under test here."""
    from crowdhide.accounting.shuffle.composition import _best_of_pairs

    return _best_of_pairs("feldman2021", composed_params(eps0, n, rounds, delta), {"delta": delta})
