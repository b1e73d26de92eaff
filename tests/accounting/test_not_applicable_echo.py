"""A "does not apply" statement keeps the asked number (issue #28), and promises nothing.

Keeping the asked ε of a δ query makes that statement's ε finite: the budget ledger must
still refuse to charge it and count it as unprotected, as it did when both numbers were nan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crowdhide.accounting.ledger import Ledger, spent
from crowdhide.accounting.shuffle.composition import composed_shuffle
from crowdhide.accounting.shuffle.generic import shuffle_delta, shuffle_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError

ER = {"bound": "erlingsson2019"}

#: (evaluator, its arguments, the asked quantity): each answers "does not apply".
CASES: list[tuple[Callable[..., PrivacyStatement], dict[str, Any], str]] = [
    # Registry.statement: the bound's parameter conditions fail (n < 1000)
    (shuffle_delta, {"eps0": 1.0, "n": 10, "epsilon": 0.5, **ER}, "epsilon"),
    (shuffle_epsilon, {"eps0": 1.0, "n": 10, "delta": 1e-6, **ER}, "delta"),
    # generic._evaluate: a condition on the queried number fails while evaluating
    (shuffle_delta, {"eps0": 0.4, "n": 1000, "epsilon": 0.001, **ER}, "epsilon"),
    (shuffle_epsilon, {"eps0": 0.4, "n": 1000, "delta": 0.05, **ER}, "delta"),
    # the composed accountant: add_remove without subsampling
    (
        composed_shuffle,
        {"eps0": 1.0, "n": 1000, "epsilon": 0.3, "relation": "add_remove"},
        "epsilon",
    ),
    (composed_shuffle, {"eps0": 1.0, "n": 1000, "delta": 1e-7, "relation": "add_remove"}, "delta"),
]


@pytest.mark.parametrize(("evaluate", "kwargs", "asked"), CASES)
def test_the_asked_number_is_kept_and_the_answer_is_nan(
    evaluate: Callable[..., PrivacyStatement], kwargs: dict[str, Any], asked: str
) -> None:
    s = evaluate(**kwargs)
    assert not s.conditions_met, s
    assert not s.is_certificate
    assert s.is_trivial
    assert getattr(s, asked) == kwargs[asked]
    assert math.isnan(s.delta if asked == "epsilon" else s.epsilon)


def test_the_ledger_refuses_and_spends_nothing_on_a_statement_that_does_not_apply(
    tmp_path: Path,
) -> None:
    moot = PrivacyStatement.not_applicable(source="x", reason="needs n >= 1000", epsilon=0.5)
    ledger = Ledger(tmp_path / "ledger.json")
    with pytest.raises(InvalidParameterError, match="does not apply"):
        ledger.charge("people", moot, run="r1", budget=(10.0, 1e-3))
    fine = PrivacyStatement(epsilon=0.5, delta=1e-6)
    assert math.isinf(spent([fine, moot], delta=1e-4).epsilon)
    assert spent([fine], delta=1e-4).epsilon <= 0.5  # the same run without it: finite
