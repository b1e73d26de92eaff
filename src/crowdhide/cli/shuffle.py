"""``crowdhide shuffle``: privacy amplification by shuffling (epsilon, delta, calibrate, plot).

Every answer is a :class:`~crowdhide.accounting.statement.PrivacyStatement`: ``--json`` prints
its ``to_dict()``; tables show one row per bound (source, kind, conditions, ε, δ, notes).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crowdhide.cli._engine_progress import progress_wanted, spinner
from crowdhide.cli._options import (
    MAX_EPSILON,
    MAX_N,
    AllowUnmetFlag,
    check_output_file,
    delta_option,
    epsilon_option,
    finish_target,
    int_option,
    output_path,
    real_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError, OutputPathError

if TYPE_CHECKING:
    from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["register", "shuffle"]

#: Image formats ``shuffle plot --out`` writes (matplotlib, chosen by suffix).
_PLOT_SUFFIXES = (".png", ".pdf", ".svg")

Eps0 = Annotated[
    float,
    real_option("--eps0", "Local DP level of each user.", low=0.0, high=MAX_EPSILON, low_open=True),
]
Users = Annotated[int, int_option("--n", "Number of users shuffled together.", low=1, high=MAX_N)]
DomainK = Annotated[
    int | None,
    int_option(
        "--k", "k-ary randomized response domain size (omit: any eps0-LDP).", low=2, high=10**6
    ),
]
Delta = Annotated[float, delta_option(help="Target delta.")]
QueryEpsilon = Annotated[float, epsilon_option(help="Target epsilon.", zero=True)]
BoundName = Annotated[str, typer.Option("--bound", help="Bound name, 'best' (default) or 'all'.")]
Rounds = Annotated[
    int, int_option("--rounds", "Shuffled rounds composed by PLD (default 1).", low=1, high=10**5)
]
SampleRate = Annotated[
    float,
    real_option(
        "--sample-rate",
        "Poisson sampling rate of users per round (default 1).",
        low=0.0,
        high=1.0,
        low_open=True,
    ),
]
Relation = Annotated[
    str, typer.Option("--relation", help="Neighbouring relation: substitute|add_remove.")
]
MechanismName = Annotated[
    str | None,
    typer.Option(
        "--mechanism",
        help="krr, oue, rappor, subset, olh, hadamard (these need --d; subset --k), "
        "piecewise or laplace (input in [-1, 1], no --d).",
    ),
]
DomainD = Annotated[
    int | None, int_option("--d", "Domain size for --mechanism.", low=2, high=10**6)
]

shuffle = typer.Typer(
    name="shuffle",
    help="Privacy amplification by shuffling: (eps, delta) of n shuffled eps0-LDP reports.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``shuffle`` commands to ``app``."""
    app.add_typer(shuffle, name="shuffle")


# -- presentation --------------------------------------------------------------------------


def _finite_or_none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _row(s: PrivacyStatement) -> dict[str, Any]:
    """A statement as one flat table row (not applicable: '-')."""
    row: dict[str, Any] = {
        "bound": s.source,
        "kind": s.kind,
        "conditions_met": s.conditions_met,
        "epsilon": _finite_or_none(s.epsilon),
        "delta": _finite_or_none(s.delta),
        "note": "; ".join(s.notes),
    }
    if s.lower is not None:
        row |= {
            "lower_bound": s.lower.source,
            "lower_epsilon": _finite_or_none(s.lower.epsilon),
            "lower_delta": _finite_or_none(s.lower.delta),
        }
    if s.target is not None:
        row["meets_target"] = s.target.met
    # inputs are echoed beside the answer; the answer's own columns keep their meaning
    # (the input ``bound`` is what was asked, the column ``bound`` what answered)
    return row | {key: _finite_or_none(v) for key, v in s.inputs.items() if key not in row}


def _emit_one(s: PrivacyStatement, *, as_json: bool, title: str) -> None:
    emit(s.to_dict() if as_json else _row(s), as_json=as_json, title=title)


def _table_notes(rows: list[PrivacyStatement], key: str) -> list[str]:
    from crowdhide.accounting.registry import best_of
    from crowdhide.accounting.statement import format_bound

    best = best_of(rows, by=key)
    if not best.is_certificate:
        return []
    value = getattr(best, key)
    notes = [
        f"best valid upper bound: {best.source} ({key} = {format_bound(value, digits=6)}); "
        "kind 'lower' rows are lower bounds, not guarantees."
    ]
    low = math.nan if best.lower is None else getattr(best.lower, key)
    if math.isfinite(low) and low > 0.0 and best.lower is not None:
        notes.append(
            f"the truth lies in [{format_bound(low, up=False, digits=6)}, "
            f"{format_bound(value, digits=6)}] "
            f"({best.lower.source}; certificate / lower bound = {value / low:.4g})"
        )
    return notes


@contextmanager
def _bound_progress(as_json: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress bar on stderr over the bounds of ``--bound all`` (tables on a terminal)."""
    if not progress_wanted(as_json):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("bounds", total=None)

        def advance(name: str, done: int, total: int) -> None:
            bar.update(task, description=name, completed=done, total=total)

        yield advance


# -- one query, ε at δ or δ at ε -----------------------------------------------------------


def _needs_d(mechanism: str) -> bool:
    """Whether a named mechanism needs ``--d`` (its table is imported only for --mechanism)."""
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    return mechanism in MECHANISMS and MECHANISMS[mechanism].needs_d


def _answer(query: Mapping[str, float], *, as_json: bool, **options: Any) -> None:
    """Make the one library call that answers ``query`` (ε at δ or δ at ε), emit.

    Which accountant answers is decided in :mod:`crowdhide.accounting.shuffle.query`; an
    option that does not apply comes back as an input error naming it (exit 2)."""
    from crowdhide.accounting.shuffle import query as shuffle_query

    what = "epsilon" if "delta" in query else "delta"
    mechanism = options.get("mechanism")
    needs_d = mechanism is not None and _needs_d(mechanism)
    if needs_d and options.get("d") is None:  # name the option the user must add
        raise InvalidParameterError(
            f"--d (the domain size) is needed by --mechanism {mechanism}",
            parameter="--d",
            value=None,
        )
    if options["bound"] == "all":
        options.pop("bound")
        with _bound_progress(as_json) as progress:
            asked: dict[str, Any] = {"delta": query.get("delta"), "epsilon": query.get("epsilon")}
            rows = shuffle_query.shuffle_all(**options, **asked, progress=progress)
        given = ", ".join(f"{key}={value:g}" for key, value in query.items())
        emit(
            [r.to_dict() for r in rows] if as_json else [_row(r) for r in rows],
            as_json=as_json,
            title=f"{what} at {given}, eps0={options['eps0']:g}, n={options['n']}, "
            f"k={options['k'] or 'any'}",
            # The queried value is in the title: the table shows the answer only (it fits
            # in 80 columns with every bound's name).
            columns=["bound", "kind", "conditions_met", what, "note"],
            notes=_table_notes(rows, what),
        )
        return
    result = getattr(shuffle_query, f"shuffle_{what}")(**options, **query)
    composed = (options["rounds"], options["sample_rate"], options["relation"]) != (
        1,
        1.0,
        "substitute",
    )
    label = f" ({options['mechanism']})" if options["mechanism"] is not None else ""
    _emit_one(result, as_json=as_json, title=f"{'composed ' * composed}shuffle {what}{label}")


def _query_options(
    eps0: Eps0,
    n: Users,
    query: float,
    mechanism: MechanismName = None,
    d: DomainD = None,
    k: DomainK = None,
    bound: BoundName = "best",
    as_json: JsonFlag = False,
    rounds: Rounds = 1,
    sample_rate: SampleRate = 1.0,
    relation: Relation = "substitute",
) -> None:
    """The options of ``shuffle epsilon`` and ``shuffle delta``, written once: each command
    is given this signature with ``query`` renamed to its query option (see
    :func:`_with_query`)."""


def _with_query(name: str, option: Any) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a query command the signature of :func:`_query_options`, ``query`` becoming
    ``name`` with the Typer option ``option`` (Typer reads ``__signature__``)."""
    base = inspect.signature(_query_options, eval_str=True)
    params = [
        p.replace(name=name, annotation=option) if p.name == "query" else p
        for p in base.parameters.values()
    ]

    def give(command: Callable[..., None]) -> Callable[..., None]:
        setattr(command, "__signature__", base.replace(parameters=params))  # noqa: B010
        return command

    return give


@shuffle.command("epsilon")
@_with_query("delta", Delta)
def epsilon_command(**options: Any) -> None:
    """Epsilon after shuffling at a given delta."""
    _answer({"delta": options.pop("delta")}, **options)


@shuffle.command("delta")
@_with_query("epsilon", QueryEpsilon)
def delta_command(**options: Any) -> None:
    """Delta after shuffling at a given epsilon."""
    _answer({"epsilon": options.pop("epsilon")}, **options)


# -- calibrate and plot --------------------------------------------------------------------

CalibrateUsers = Annotated[
    int | None, int_option("--n", "Number of users (-> largest eps0).", low=1, high=MAX_N)
]
CalibrateEps0 = Annotated[
    float | None,
    real_option(
        "--eps0",
        "Local eps0 instead of --n (-> smallest n).",
        low=0.0,
        high=MAX_EPSILON,
        low_open=True,
    ),
]


def _calibrated(
    epsilon: float, delta: float, n: int | None, eps0: float | None, k: int | None, quiet: bool
) -> tuple[str, PrivacyStatement | str]:
    """``(solved_for, statement)``, or ``(solved_for, reason)`` when the target is out of
    reach."""
    from crowdhide.api import calibrate
    from crowdhide.errors import UnmetTargetError

    if (n is None) == (eps0 is None):
        raise InvalidParameterError(
            "give exactly one of --n (calibrate eps0) or --eps0 (calibrate n)",
            parameter="--n",
            value=n,
        )
    if n is not None:
        with spinner(not quiet, "calibrating eps0"):
            return "eps0", calibrate(epsilon=epsilon, delta=delta, n=n, k=k).privacy
    assert eps0 is not None
    try:
        with spinner(not quiet, "calibrating n"):
            return "n", calibrate(epsilon=epsilon, delta=delta, eps0=eps0, k=k).privacy
    except UnmetTargetError as exc:
        return "n", str(exc)


@shuffle.command("calibrate")
def calibrate_command(
    epsilon: Annotated[float, epsilon_option(help="Target epsilon.")],
    delta: Delta,
    n: CalibrateUsers = None,
    eps0: CalibrateEps0 = None,
    k: DomainK = None,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Largest eps0 for a target (epsilon, delta, n) — or smallest n given --eps0.

    Exit code 3 if the target is out of reach (unless --allow-unmet).
    """
    from crowdhide.accounting.statement import format_bound

    solved, result = _calibrated(epsilon, delta, n, eps0, k, as_json)
    record: dict[str, Any] = {"solved_for": solved, "target_epsilon": epsilon}
    record |= {"target_delta": delta, "allow_unmet": allow_unmet}  # echoed even when met
    if isinstance(result, str):
        record |= {"target_met": False, "reason": result}
        detail = result
    else:
        record |= {"target_met": bool(result.meets_target), solved: result.inputs[solved]}
        record |= result.to_dict() if as_json else _row(result)
        shown = format_bound(result.epsilon, digits=6)
        detail = f"certified epsilon={shown} vs target epsilon={epsilon:g}"
    emit(record, as_json=as_json, title=f"calibrated {solved}")
    finish_target(record["target_met"], detail, allow_unmet=allow_unmet, as_json=as_json)


@shuffle.command("plot")
def plot_command(
    eps0: Eps0,
    delta: Delta,
    out: Annotated[Path, typer.Option("--out", help="PNG file to write.", parser=output_path)],
    k: DomainK = None,
    n_min: Annotated[int, int_option("--n-min", "Smallest n.", low=1, high=MAX_N)] = 100,
    n_max: Annotated[int, int_option("--n-max", "Largest n.", low=1, high=MAX_N)] = 10**7,
    points: Annotated[int, int_option("--points", "Points per curve.", low=2, high=200)] = 16,
    as_json: JsonFlag = False,
) -> None:
    """Plot epsilon against n for every bound (PNG)."""
    from crowdhide._extras import require
    from crowdhide.accounting.shuffle.calibration import epsilon_vs_n
    from crowdhide.report.plots import plot_epsilon_vs_n

    check_output_file(out)
    if out.suffix.lower() not in _PLOT_SUFFIXES:
        raise OutputPathError(
            f"--out must end in one of {', '.join(_PLOT_SUFFIXES)}, got {str(out)!r}"
        )
    require("matplotlib", purpose="shuffle plot")  # before the work: reported at once
    with spinner(not as_json, f"{points} points per bound"):
        data = epsilon_vs_n(eps0=eps0, delta=delta, k=k, n_min=n_min, n_max=n_max, points=points)
        title = f"eps0={eps0:g}, delta={delta:g}, k={k or 'any'}"
        plot_epsilon_vs_n(data["n"], data["epsilon"], title=title, out=out)
    if as_json:
        emit({"out": str(out), "eps0": eps0, "delta": delta, "k": k, **data}, as_json=True)
        return
    counts = [
        {"bound": name, "points": sum(1 for v in values if math.isfinite(v))}
        for name, values in data["epsilon"].items()
    ]
    # the inputs in the title: the counts alone can be the same for another --delta or n range
    shown = f"inputs: {title}, n in [{n_min}, {n_max}], {points} points per curve"
    emit(counts, as_json=False, title=f"wrote {out}", notes=[shown])
