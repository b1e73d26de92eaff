"""``value_discretization_interval`` is never silently ignored: it sets the FMT21/FMT23 pairs'
PLD grid, and an answer of the profile pair (its own grid of ``PROFILE_STEP`` multiples) says
in a note that the option did not apply to it."""

from __future__ import annotations

import pytest

from crowdhide.accounting.shuffle.composition import composed_shuffle

_ECHO = "value_discretization_interval=1e-05 does not apply to profile_pair"


@pytest.mark.parametrize("query", [{"delta": 1e-6}, {"epsilon": 0.1}])
def test_a_profile_pair_answer_echoes_the_unused_grid(query: dict[str, float]) -> None:
    given = composed_shuffle(
        eps0=0.5, n=10_000, rounds=10, value_discretization_interval=1e-5, **query
    )
    default = composed_shuffle(eps0=0.5, n=10_000, rounds=10, **query)
    assert given.source == default.source == "profile_pair"
    assert any(note.startswith(_ECHO) for note in given.notes)
    assert not any("value_discretization_interval" in note for note in default.notes)
    assert (given.epsilon, given.delta) == (default.epsilon, default.delta)  # unused indeed


def test_a_pair_that_uses_the_grid_does_not_echo_it() -> None:
    fine = composed_shuffle(
        eps0=0.5, n=10_000, rounds=10, delta=1e-6, k=2, value_discretization_interval=1e-5
    )
    coarse = composed_shuffle(
        eps0=0.5, n=10_000, rounds=10, delta=1e-6, k=2, value_discretization_interval=1e-4
    )
    assert fine.source == "feldman2023"
    assert not any("does not apply to profile_pair" in note for note in fine.notes)
    assert fine.epsilon != coarse.epsilon  # the option changes the answer
