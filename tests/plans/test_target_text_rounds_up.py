"""Certified values in one-line messages are rounded up, never to nearest.

Found in session 15: the diabetes example on 300 rows certifies ε = 2.17243; the table said
2.173 but the "TARGET NOT MET" line said 2.172 (``:.4g`` rounds to nearest: below the
certificate). The budget refusal of the ledger had the same ``:.4g``.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from crowdhide.accounting import PrivacyStatement
from crowdhide.accounting.ledger import Ledger
from crowdhide.errors import BudgetExceededError
from crowdhide.plans.run_report import PlanReport


def test_the_target_line_rounds_the_certificate_up() -> None:
    plan = SimpleNamespace(
        privacy=PrivacyStatement(epsilon=2.1724312428538064, delta=1.00049e-4),
        target_epsilon=2.0,
        target_delta=1e-4,
    )
    text = PlanReport.target_text(plan)  # type: ignore[arg-type]
    assert "certified epsilon=2.173, delta=0.000101 " in text


def test_a_budget_refusal_rounds_the_run_up(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.json")
    first = PrivacyStatement(epsilon=0.5, delta=1e-6)
    ledger.charge("users", first, run="a", budget=(2.0, 1e-4))
    with pytest.raises(BudgetExceededError, match=r"this run \(ε = 2\.173, δ = 1e-06\)"):
        ledger.charge("users", PrivacyStatement(epsilon=2.17243, delta=1e-6), run="b")
