"""``crowdhide protocol sum|histogram``: shuffle-model protocols run on a data file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crowdhide.cli._engine_progress import with_spinner as _run
from crowdhide.cli._options import (
    AllowUnmetFlag,
    delta_option,
    epsilon_option,
    finish_target,
    int_option,
    real_option,
    seed_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.protocols.data import DataColumn
    from crowdhide.protocols.results import SumRun

__all__ = ["histogram_command", "protocol_app", "register", "sum_command"]

#: Declared bounds of a real sum: finite, and small enough that (upper − lower) · n is finite.
_BOUND = 1e100
#: Histogram domain: memory and time grow linearly in k (1e5 bins: a few seconds).
_MAX_BINS = 10**5
#: Table columns of the per-hop traffic, shown with ``--engine``.
_TRAFFIC_COLUMNS = ("users_to_shuffler", "shuffler_to_analyzer", "bytes_on_wire")

DataOption = Annotated[
    str,
    typer.Option(
        "--data",
        help="CSV/Parquet file (one row per user) or builtin:adult|gowalla-sf|gowalla-paris|"
        "synthetic.",
    ),
]
ColumnOption = Annotated[str, typer.Option("--column", help="Column name (or 0-based index).")]
EpsilonOption = Annotated[float, epsilon_option(help="Target ε of the shuffled view.")]
DeltaOption = Annotated[float, delta_option(help="Target δ.")]
EngineFlag = Annotated[
    bool,
    typer.Option(
        "--engine",
        help="Run users -> shuffler -> analyzer as a plan on the engine (transcript, per-hop "
        "message counts); same estimate as the direct path for the same seed.",
    ),
]
SeedOption = Annotated[int | None, seed_option("Seed of the users' randomizers (shuffle: CSPRNG).")]
LowerOption = Annotated[
    float | None,
    real_option("--lower", "Declared lower bound (real/single).", low=-_BOUND, high=_BOUND),
]
UpperOption = Annotated[
    float | None,
    real_option("--upper", "Declared upper bound (real/single).", low=-_BOUND, high=_BOUND),
]
ProtocolOption = Annotated[
    str, typer.Option("--protocol", help="bits | real (multi-message) | single.")
]
CalibrationOption = Annotated[
    str, typer.Option("--calibration", help="exact (tight accountant) | paper.")
]
MessagesOption = Annotated[
    int | None,
    int_option("--messages", "Messages per user (real); default auto.", low=1, high=10**4),
]
ClipFlag = Annotated[
    bool, typer.Option("--clip", help="Clip values outside the bounds (reported).")
]
BinsOption = Annotated[
    int | None,
    int_option("--bins", "Domain size k (default: from the data set).", low=2, high=_MAX_BINS),
]
EstimatorOption = Annotated[
    str, typer.Option("--estimator", help="inversion (projected) | debias (unbiased).")
]

_SUM_COLUMNS = (
    "protocol",
    "n",
    "estimate",
    "exact",
    "error",
    "std_error",
    "epsilon",
    "delta",
    "bound",
    "target_met",
    "eps0",
    "messages",
    "messages_per_user",
    "central_mechanism",
    "central_error",
)
_HISTOGRAM_COLUMNS = (
    "n",
    "k",
    "estimator",
    "tvd",
    "max_value_error",
    "epsilon",
    "delta",
    "bound",
    "target_met",
    "eps0",
    "messages",
    "central_sigma",
    "central_tvd",
    "central_half_l1_error",
)

protocol_app = typer.Typer(
    help="Shuffle-model protocols (sums, histograms) run on data, with certificates.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``protocol`` command group to ``app``."""
    app.add_typer(protocol_app, name="protocol")


def _emit_run(
    record: dict[str, Any],
    *,
    title: str,
    columns: Sequence[str],
    engine: bool,
    allow_unmet: bool,
    as_json: bool,
) -> None:
    """Print a run's record (JSON, or a table with the comparison and notes under it), then
    flag a certificate weaker than the target (exit code 3 unless ``--allow-unmet``).

    ``--allow-unmet`` is echoed in every case, also when the target is met (issue 28)."""
    record = {**record, "allow_unmet": allow_unmet}
    # the inputs first: another --data or --seed may print the same estimate
    echo = [key for key in ("data", "column", "lower", "upper", "seed") if key in record]
    if as_json:
        emit(record, as_json=True)
    else:
        emit(
            record,
            as_json=False,
            title=title,
            columns=[*echo, *columns, *(_TRAFFIC_COLUMNS if engine else ()), "allow_unmet"],
            notes=[record["comparison"], *record["notes"]],
        )
    from crowdhide.accounting.statement import format_bound

    finish_target(
        record["target_met"],
        f"certified epsilon={format_bound(record['epsilon'], digits=6)} > target epsilon="
        f"{record['target_epsilon']:.6g} (delta={format_bound(record['delta'])})",
        allow_unmet=allow_unmet,
        as_json=as_json,
    )


def _run_sum(
    column_data: DataColumn,
    *,
    protocol: str,
    lower: float | None,
    upper: float | None,
    clip: bool,
    messages: int | None,
    show_progress: bool,
    **options: Any,
) -> tuple[SumRun, float, float, list[str]]:
    """Run the chosen sum protocol: ``(run, lower, upper, notes)`` (the bounds actually used).

    ``options`` are the keywords every protocol takes: ``epsilon, delta, calibration, rng,
    engine``.
    """
    from crowdhide.protocols import run_bit_sum, run_real_sum, run_single_message_sum
    from crowdhide.protocols.data import as_bits, as_bounded

    notes = [column_data.note] if column_data.note else []
    if protocol == "bits":
        if lower is not None or upper is not None:
            raise InvalidParameterError(
                "lower/upper apply to --protocol real or single, not bits",
                parameter="--lower",
                value=(lower, upper),
            )
        bits = as_bits(column_data)
        return _run(show_progress, "bit sum", lambda: run_bit_sum(bits, **options)), 0.0, 1.0, notes
    lo = 0.0 if lower is None else lower
    hi = 1.0 if upper is None else upper
    bounded = as_bounded(column_data, lower=lo, upper=hi, clip=clip)
    if bounded.clipped:
        notes.append(
            f"warning: {bounded.clipped} value(s) outside [{lo:g}, {hi:g}] were clipped; "
            "'exact' is the sum of the clipped values"
        )
    if protocol == "real":
        run = _run(
            show_progress,
            "multi-message real sum",
            lambda: run_real_sum(bounded.values, lower=lo, upper=hi, messages=messages, **options),
        )
        return run, lo, hi, notes
    if options.pop("calibration") != "exact":
        raise InvalidParameterError(
            "calibration must be 'exact' for --protocol single",
            parameter="--calibration",
            value=None,
        )
    run = _run(
        show_progress,
        "single-message real sum",
        lambda: run_single_message_sum(bounded.values, lower=lo, upper=hi, **options),
    )
    return run, lo, hi, notes


@protocol_app.command("sum")
def sum_command(
    data: DataOption,
    column: ColumnOption,
    epsilon: EpsilonOption,
    delta: DeltaOption,
    lower: LowerOption = None,
    upper: UpperOption = None,
    protocol: ProtocolOption = "bits",
    calibration: CalibrationOption = "exact",
    messages: MessagesOption = None,
    clip: ClipFlag = False,
    seed: SeedOption = None,
    engine: EngineFlag = False,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Private sum of a column: estimate, exact answer, error, certificate, central model.

    Exit code 3 if the certified ε exceeds the target (unless --allow-unmet).
    """
    from crowdhide.protocols.data import load_column

    if protocol not in ("bits", "real", "single"):
        raise InvalidParameterError(
            f"protocol must be one of bits, real, single, got {protocol!r}",
            parameter="--protocol",
            value=protocol,
        )
    column_data = load_column(data, column=column)
    run, lo, hi, notes = _run_sum(
        column_data,
        protocol=protocol,
        lower=lower,
        upper=upper,
        clip=clip,
        show_progress=not as_json,
        epsilon=epsilon,
        delta=delta,
        calibration=calibration,
        messages=messages,
        rng=seed,
        engine=engine,
    )
    central = run.central
    record: dict[str, Any] = {
        "data": data,
        "column": column_data.column,
        "lower": lo,
        "upper": hi,
        "seed": seed,
        **run.as_record(),
        "notes": [*notes, *run.notes],
        "comparison": f"central model ({central.mechanism}) at the same (ε, δ): estimate "
        f"{central.estimate:.6g}, error {central.error:+.4g} (std {central.std_error:.4g}); "
        f"shuffle std / central std = {run.std_error / central.std_error:.3g}",
        "error_ratio_to_central": abs(run.error) / max(abs(central.error), 1e-300),
    }
    _emit_run(
        record,
        title=f"Shuffled sum of {column_data.column!r} ({run.protocol})",
        columns=_SUM_COLUMNS,
        engine=engine,
        allow_unmet=allow_unmet,
        as_json=as_json,
    )


@protocol_app.command("histogram")
def histogram_command(
    data: DataOption,
    column: ColumnOption,
    epsilon: EpsilonOption,
    delta: DeltaOption,
    bins: BinsOption = None,
    estimator: EstimatorOption = "inversion",
    seed: SeedOption = None,
    engine: EngineFlag = False,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Private histogram by shuffled k-RR, with the central Gaussian at the same (ε, δ).

    Exit code 3 if the certified ε exceeds the target (unless --allow-unmet).
    """
    from crowdhide.protocols.data import as_categories, load_column
    from crowdhide.protocols.histogram import run_histogram

    column_data = load_column(data, column=column)
    categories = as_categories(column_data, bins=bins)
    run = _run(
        not as_json,
        f"shuffled k-RR histogram (k={categories.k})",
        lambda: run_histogram(
            categories.values,
            k=categories.k,
            epsilon=epsilon,
            delta=delta,
            estimator=estimator,
            rng=seed,
            engine=engine,
        ),
    )
    record: dict[str, Any] = {
        "data": data,
        "column": column_data.column,
        "seed": seed,
        "labels": list(categories.labels),
        **run.as_record(),
        "notes": [column_data.note] if column_data.note else [],
        "comparison": f"central Gaussian (sigma {run.central.sigma:.4g} per bin) at the same "
        f"(ε, δ): TVD {run.central_tvd:.4g} (simplex projection; raw half-L1 error "
        f"{run.central_half_l1_error:.4g}); shuffle TVD {run.tvd:.4g} "
        f"({run.tvd / max(run.central_tvd, 1e-300):.3g}x)",
    }
    _emit_run(
        record,
        title=f"Shuffled k-RR histogram of {column_data.column!r}",
        columns=_HISTOGRAM_COLUMNS,
        engine=engine,
        allow_unmet=allow_unmet,
        as_json=as_json,
    )
