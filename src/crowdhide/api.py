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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crowdhide.accounting.ledger import spent
from crowdhide.accounting.statement import PrivacyStatement, format_bound, statement_card
from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.plans.countermeasure_calibration import CountermeasureCalibration
    from crowdhide.plans.run_report import PlanReport, RunReport
    from crowdhide.plans.spec import RunSpec

__all__ = ["Calibration", "calibrate", "certify_plan", "compose", "load_plan", "run_plan"]


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

    See Also
    --------
    certify_plan : Certify the plan without running it.
    run_plan : Certify and run it.

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

    See Also
    --------
    load_plan : Read and check a plan file.
    run_plan : Certify the plan, then run it.

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

    See Also
    --------
    certify_plan : The certificate alone, without running.
    compose : The total of several runs on the same people.

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

    See Also
    --------
    crowdhide.Ledger : Records runs against a budget with the same rule.
    crowdhide.accounting.compose_curves : Composition of whole privacy curves.

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


# -- calibration ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """What :func:`calibrate` solved: the parameter, its value and the certificate there.

    Parameters
    ----------
    solved_for
        ``"eps0"`` (the largest local ε0 for n users), ``"n"`` (the fewest users for ε0) or
        ``"countermeasures"`` (the cheapest σ, scrambler size n and dummies d for T targets).
    privacy
        The certificate at the solved value, with the target recorded (``meets_target``).
    countermeasures
        The full countermeasure answer (costs, scheme, reason) when ``solved_for`` is
        ``"countermeasures"``, else ``None``.

    See Also
    --------
    calibrate : Computes it.

    Examples
    --------
    >>> cal = calibrate(epsilon=1.0, delta=1e-6, n=1000)
    >>> cal.solved_for, cal.eps0 == cal.value == cal.privacy.inputs["eps0"], cal.n
    ('eps0', True, 1000)
    """

    solved_for: str
    privacy: PrivacyStatement
    countermeasures: CountermeasureCalibration | None = None

    @property
    def eps0(self) -> float | None:
        """The local ε0: solved for, or the one given."""
        value = self.privacy.inputs.get("eps0")
        return None if value is None else float(value)

    @property
    def n(self) -> int | None:
        """Users shuffled together (solved or given); with countermeasures, the scrambler
        size (``None``: no scramblers)."""
        if self.countermeasures is not None:
            return self.countermeasures.n
        value = self.privacy.inputs.get("n")
        return None if value is None else int(value)

    @property
    def value(self) -> Any:
        """The solved value: ε0, n, or ``{scheme, sigma, n, dummies, local_dummies}``."""
        if self.countermeasures is None:
            return self.eps0 if self.solved_for == "eps0" else self.n
        c = self.countermeasures
        return {"scheme": c.scheme, "sigma": c.sigma, "n": c.n, "dummies": c.dummies,
                "local_dummies": c.local_dummies}  # fmt: skip

    @property
    def meets_target(self) -> bool:
        """Whether the certificate at the solved value meets the target."""
        return bool(self.privacy.meets_target)

    def __repr__(self) -> str:
        shown = (
            self.value if not isinstance(self.value, float) else format_bound(self.value, up=False)
        )
        p = self.privacy
        return (
            f"Calibration({self.solved_for}={shown}, ε={format_bound(p.epsilon)}, "
            f"δ={format_bound(p.delta)}, target_met={self.meets_target})"
        )

    def _repr_html_(self) -> str:
        rows = {"solved for": self.solved_for, "value": str(self.value)}
        return statement_card(self.privacy, title="Calibration", rows=rows)


def calibrate(
    *,
    epsilon: float,
    delta: float,
    eps0: float | None = None,
    n: int | None = None,
    k: int | None = None,
    bound: str = "best",
    targets: int | None = None,
    sources: int = 10_000,
    max_channels: float | None = None,
    max_overhead: float | None = None,
    max_consents: float | None = None,
) -> Calibration:
    """Solve for the parameter that meets a target (``epsilon``, ``delta``).

    * ``n`` given → the largest local ``eps0`` whose shuffle of n reports meets the target
      (``crowdhide shuffle calibrate --n``);
    * ``eps0`` given → the smallest ``n`` (``crowdhide shuffle calibrate --eps0``); raises
      :class:`~crowdhide.errors.UnmetTargetError` when even n = 1e9 falls short;
    * ``targets`` given → the cheapest countermeasures (σ, scrambler size n, dummies d) for a
      route to T targets from ``sources`` senders, under ``max_channels``,
      ``max_overhead``, ``max_consents`` (``crowdhide scrambler calibrate``); nothing
      fitting is an answer with ``meets_target`` False and the reason.

    ``k`` (k-RR) and ``bound`` belong to the shuffle questions, the cost limits and
    ``sources`` to the countermeasure one; an input the question does not use is refused.

    Parameters
    ----------
    epsilon, delta
        The target guarantee of the shuffled (or scrambled) release.
    eps0
        The local ε0 of every user's randomizer: solve for ``n``.
    n
        The number of users shuffled together: solve for ``eps0``.
    k
        Domain size of k-ary randomized response (``None``: any ε0-LDP randomizer).
    bound
        The shuffle bound to certify with (``"best"``: the smallest valid one).
    targets
        The number of targets T a route reaches: solve for countermeasures.
    sources
        The number of senders on the route (countermeasures only).
    max_channels, max_overhead, max_consents
        Cost limits of the countermeasures (``None``: no limit).

    Returns
    -------
    Calibration
        The parameter solved for, its value and the certificate there.

    Raises
    ------
    crowdhide.errors.UnmetTargetError
        ``eps0`` given and even n = 1e9 users fall short of the target.
    crowdhide.errors.InvalidParameterError
        Neither or both of ``n`` and ``eps0``, or an input the question does not use.

    See Also
    --------
    crowdhide.shuffle_epsilon : The certificate for given ε0 and n.
    crowdhide.accounting.calibrate : Calibrate any monotone bound.

    Examples
    --------
    >>> import crowdhide
    >>> cal = crowdhide.calibrate(epsilon=0.5, delta=1e-6, n=50_000, k=2)
    >>> cal.solved_for, cal.eps0 > 2.0, cal.meets_target
    ('eps0', True, True)
    >>> crowdhide.calibrate(epsilon=0.5, delta=1e-6, eps0=2.0)
    Calibration(n=661, ε=0.5, δ=1e-06, target_met=True)
    >>> cm = crowdhide.calibrate(epsilon=1.0, delta=1e-4, targets=20, max_channels=620)
    >>> cm.solved_for, cm.meets_target, cm.value["scheme"]
    ('countermeasures', True, 'scrambler')
    """
    costs = {"max_channels": max_channels, "max_overhead": max_overhead}
    costs["max_consents"] = max_consents
    if targets is not None:
        _refuse(eps0=eps0, n=n, k=k, bound=None if bound == "best" else bound, why="targets")
        from crowdhide.plans.countermeasure_calibration import calibrate_countermeasures

        cal = calibrate_countermeasures(
            targets=targets, epsilon=epsilon, delta=delta, sources=sources,
            max_channels=max_channels, max_overhead=max_overhead, max_consents=max_consents,
        )  # fmt: skip
        return Calibration(solved_for="countermeasures", privacy=cal.privacy, countermeasures=cal)
    _refuse(sources=None if sources == 10_000 else sources, **costs, why="eps0 or n")
    if (n is None) == (eps0 is None):
        raise InvalidParameterError(
            "give exactly one of n (solve for eps0), eps0 (solve for n) or targets (solve for "
            f"countermeasures), got n={n!r}, eps0={eps0!r}",
            parameter="n",
            value=n,
        )
    from crowdhide.accounting.shuffle.calibration import calibrate_eps0, calibrate_n

    if n is not None:
        statement = calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k, bound=bound)
        return Calibration(solved_for="eps0", privacy=statement)
    assert eps0 is not None
    statement = calibrate_n(epsilon=epsilon, delta=delta, eps0=eps0, k=k, bound=bound)
    return Calibration(solved_for="n", privacy=statement)


def _refuse(*, why: str, **options: Any) -> None:
    """Refuse the first option given (not None) that the chosen question does not use."""
    for name, value in options.items():
        if value is not None:
            raise InvalidParameterError(
                f"{name} does not apply when solving with {why}, got {name}={value!r}",
                parameter=name,
                value=value,
            )
