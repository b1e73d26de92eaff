"""The privacy-budget hook of ``crowdhide run --ledger`` (:mod:`crowdhide.accounting.ledger`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crowdhide.errors import InvalidParameterError

__all__ = ["budget_hook", "population_of"]


def population_of(spec: Any) -> str:
    """The population a plan's data comes from: its file, or its generator and seed."""
    data = spec.data
    if data.path is not None:
        return f"file:{Path(data.path).resolve()}"
    return f"{data.generator}(rows={data.rows}, seed={data.seed})"


@contextmanager
def budget_hook(
    spec: Any,
    *,
    ledger: Path | None,
    budget_epsilon: float | None,
    budget_delta: float | None,
    population: str | None,
    plan_file: Path,
) -> Iterator[Callable[[Any], None] | None]:
    """Yield the ``before_send`` hook charging the run to the ledger (``None`` without one).

    The hook refuses the run (:class:`BudgetExceededError`) before anything is sent; once
    the run ends the record is marked ``done`` or ``failed`` (a failed run stays charged).
    """
    if ledger is None:
        if budget_epsilon is not None or budget_delta is not None or population is not None:
            raise InvalidParameterError(
                "--budget-epsilon/--budget-delta/--population need --ledger FILE",
                parameter="--ledger",
                value=None,
            )
        yield None
        return
    if (budget_epsilon is None) != (budget_delta is None):
        raise InvalidParameterError(
            "--budget-epsilon and --budget-delta go together, got "
            f"--budget-epsilon={budget_epsilon} --budget-delta={budget_delta}",
            parameter="--budget-delta",
            value=budget_delta,
        )
    from crowdhide._validation import check_probability, check_real
    from crowdhide.accounting.ledger import Ledger
    from crowdhide.accounting.statement import PrivacyStatement

    if budget_epsilon is not None and budget_delta is not None:
        check_real("--budget-epsilon", budget_epsilon, low=0.0, low_open=True)
        check_probability("--budget-delta", budget_delta, allow_zero=False, allow_one=False)

    book = Ledger(ledger)
    who = population or population_of(spec)
    run = f"{spec.name}@{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}#{os.getpid()}"
    budget = (budget_epsilon, budget_delta) if budget_epsilon is not None else None
    charged: list[bool] = []

    def hook(prepared: Any) -> None:
        cert = prepared.certificate.privacy
        book.charge(
            who,
            PrivacyStatement(epsilon=cert.epsilon, delta=cert.delta, source="run"),
            run=run,
            budget=budget,  # type: ignore[arg-type]
            details={"plan": str(plan_file)},
        )
        charged.append(True)

    try:
        yield hook
    except BaseException:
        if charged:
            book.mark(who, run, "failed")
        raise
    if charged:
        book.mark(who, run, "done")
