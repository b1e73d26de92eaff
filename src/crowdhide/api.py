"""The front door's own functions: plans from Python and composition to one statement.

The top-level names of :mod:`crowdhide` are loaded from here or from the module that owns
them (the shuffle dispatcher, the scrambler accountant, the ledger); the command line calls
the same functions (``crowdhide plan`` → :func:`certify_plan`'s ``prepare``, ``crowdhide
run`` → :func:`run_plan`'s ``run_with_html``).

Examples
--------
>>> plan = load_plan("example:diabetes")
>>> plan.name, plan.epsilon
('diabetes', 2.0)
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crowdhide.accounting.ledger import spent
from crowdhide.accounting.statement import PrivacyStatement

if TYPE_CHECKING:
    from crowdhide.plans.run_report import PlanReport, RunReport
    from crowdhide.plans.spec import RunSpec

__all__ = ["certify_plan", "compose", "load_plan", "run_plan"]


def load_plan(path: Path | str) -> RunSpec:
    """Read and check a ``PLAN.toml`` (or the shipped ``example:NAME``).

    Parameters
    ----------
    path
        The plan file; paths inside it are relative to it.

    Returns
    -------
    RunSpec
        The validated plan, as ``crowdhide plan`` and ``crowdhide run`` read it.

    Examples
    --------
    >>> load_plan("example:kmeans").name
    'kmeans'
    """
    from crowdhide.plans.spec import load_spec

    return load_spec(path)


def _spec(plan: RunSpec | Path | str, data: Any = None) -> RunSpec:
    """The plan, with ``data`` (any table :func:`crowdhide.plans.data.as_table` takes) in
    place of its ``[data]`` source."""
    from crowdhide.plans.spec import RunSpec

    spec = plan if isinstance(plan, RunSpec) else load_plan(plan)
    if data is None:
        return spec
    from crowdhide.errors import InvalidParameterError
    from crowdhide.plans.data import as_table

    if spec.query.kind != "aggregate":
        raise InvalidParameterError(
            f"data= replaces the table of an aggregate plan; plan {spec.name!r} is a "
            f"{spec.query.kind!r} query (it reads its points from [data])",
            parameter="data",
            value=type(data).__name__,
        )
    table = as_table(data)
    rows = len(next(iter(table.values())))
    return replace(spec, data=replace(spec.data, path=None, generator=None, rows=rows, table=table))


def certify_plan(plan: RunSpec | Path | str, *, data: Any = None) -> PlanReport:
    """Build, protect and certify a plan without running it (``crowdhide plan``).

    Parameters
    ----------
    plan
        A plan from :func:`load_plan`, or its path / ``example:NAME``.
    data
        Optionally, the table to run an aggregate plan on instead of its ``[data]``: a
        mapping of columns, a ``pandas.DataFrame``, a ``pyarrow.Table`` or a CSV / Parquet
        path.

    Returns
    -------
    PlanReport
        Routes, chosen countermeasures and the certificate (``.privacy``, a
        :class:`PrivacyStatement` checked against the plan's ``[privacy]`` target).

    Examples
    --------
    >>> report = certify_plan("example:diabetes")
    >>> report.privacy.epsilon <= 2.0, report.target_met
    (True, True)
    >>> report
    PlanReport(name='diabetes', ε=1.931, δ=0.0001, target_met=True, routes=4)

    With a table from Python (here a pandas DataFrame):

    >>> import pandas as pd
    >>> df = pd.DataFrame({"age_range": ["20-39", "40-59", "60+"] * 4000,
    ...                    "bmi": ["normal", "high"] * 6000, "insulin": [80.0, 120.0] * 6000})
    >>> certify_plan("example:diabetes", data=df).privacy.meets_target
    True
    """
    from crowdhide.plans.runner import prepare

    return prepare(_spec(plan, data)).report()


def run_plan(
    plan: RunSpec | Path | str,
    out_dir: Path | str | None = None,
    *,
    data: Any = None,
    **options: Any,
) -> RunReport:
    """Run a plan: certify it, execute it, compare with the exact answer (``crowdhide run``).

    Parameters
    ----------
    plan
        A plan from :func:`load_plan`, or its path / ``example:NAME``.
    out_dir
        Where to write ``report.json``, ``report.html``, the result CSVs and the transcript.
        ``None`` (default): nothing is kept — the run works in a temporary folder that is
        removed, and the returned report lists no ``files``.
    data
        As for :func:`certify_plan`: a table that replaces an aggregate plan's ``[data]``.
    **options
        Those of :func:`crowdhide.plans.runner.run_spec` (``backend``, ``shards``,
        ``allow_unmet``, ``before_send`` ...).

    Returns
    -------
    RunReport
        The certified plan (``.privacy``), the answer, costs and timings.

    Examples
    --------
    >>> report = run_plan("example:diabetes")
    >>> report.privacy.meets_target, dict(report.files)
    (True, {})
    >>> report.to_pandas("result").columns.tolist()[:3]
    ['grouping_set', 'age_range', 'avg(insulin)']
    """
    from crowdhide.report.html import run_with_html

    spec = _spec(plan, data)
    if out_dir is not None:
        return run_with_html(spec, Path(out_dir), **options)
    with tempfile.TemporaryDirectory(prefix="crowdhide-run-") as tmp:
        report = run_with_html(spec, Path(tmp), **options)
    return replace(report, files={})


def compose(
    statements: Sequence[PrivacyStatement], *, delta: float, discretization: float = 1e-3
) -> PrivacyStatement:
    """The tightest valid (ε, ``delta``) of running every mechanism in ``statements`` on
    the same people: the smallest of PLD, advanced and basic composition (the budget
    ledger's rule, :func:`crowdhide.accounting.ledger.spent`).

    Parameters
    ----------
    statements
        The (ε_i, δ_i) certificates of each run (adaptively chosen is fine).
    delta
        Total δ of the composition, ``0 < delta < 1``.
    discretization
        Loss-grid step of the PLD bound (rounded to the safe side).

    Returns
    -------
    PrivacyStatement
        ``source`` is ``compose:<method>``; ``inputs`` hold ε of every method.

    Examples
    --------
    >>> run = PrivacyStatement(epsilon=1.0, delta=1e-6)
    >>> total = compose([run] * 4, delta=1e-4)
    >>> total.source, total.epsilon < 4.0, total.inputs["basic"]
    ('compose:pld', True, 4.0)
    """
    result = spent(list(statements), delta=delta, discretization=discretization)
    return PrivacyStatement(
        epsilon=result.epsilon,
        delta=result.delta,
        source=f"compose:{result.method}",
        inputs={"count": len(statements), "discretization": discretization, **result.bounds},
    )
