"""``crowdhide shuffle``: privacy amplification by shuffling (epsilon, delta, calibrate, plot).

Every answer is a :class:`~crowdhide.accounting.statement.PrivacyStatement`: ``--json`` prints
its ``to_dict()``; tables show one row per bound (source, kind, conditions, ε, δ, notes).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import (
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
from crowdhide.cli._shuffle_answer import answer, statement_row
from crowdhide.cli._values import MAX_EPSILON, MAX_N
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
    answer({"delta": options.pop("delta")}, **options)


@shuffle.command("delta")
@_with_query("epsilon", QueryEpsilon)
def delta_command(**options: Any) -> None:
    """Delta after shuffling at a given epsilon."""
    answer({"epsilon": options.pop("epsilon")}, **options)


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
        record |= result.to_dict() if as_json else statement_row(result)
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
