"""``crowdhide data synth aggregate|kmeans --rows N --out FILE``: synthetic datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import check_output_file, int_option, output_path, seed_option
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError

__all__ = ["data", "register", "synth_command"]

_KINDS = ("aggregate", "kmeans", "diabetes")
#: The file formats written (by suffix; anything else was written as CSV).
_SUFFIXES = (".csv", ".parquet", ".pq")
#: Rows held in memory before writing (several float64/int64 columns: 1e7 rows ≈ 0.5 GB).
_MAX_ROWS = 10**7


data = typer.Typer(help="Datasets for the built-in queries.", no_args_is_help=True)


@data.command("synth")
def synth_command(
    kind: Annotated[str, typer.Argument(help="aggregate | kmeans | diabetes")],
    rows: Annotated[int, int_option("--rows", "Number of tuples.", low=1, high=_MAX_ROWS)] = 10_000,
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="CSV (.csv) or Parquet (.parquet, .pq) file.", parser=output_path
        ),
    ] = Path("data.csv"),
    distribution: Annotated[
        str, typer.Option("--distribution", help="uniform | skewed (Zipf).")
    ] = "uniform",
    seed: Annotated[int, seed_option()] = 0,
    as_json: JsonFlag = False,
) -> None:
    """Write a deterministic synthetic dataset."""
    from crowdhide.plans.data import write_table

    if kind not in _KINDS:
        raise InvalidParameterError(
            f"kind must be one of {_KINDS}, got {kind!r}", parameter="kind", value=kind
        )
    if distribution not in ("uniform", "skewed"):
        raise InvalidParameterError(
            f"--distribution must be 'uniform' or 'skewed', got {distribution!r}",
            parameter="--distribution",
            value=distribution,
        )
    check_output_file(out, suffixes=_SUFFIXES)
    with spinner(not as_json, f"generating {rows} rows"):
        table = _generate(kind, rows, distribution, seed)
        path = write_table(table, out)
    emit(
        {
            "kind": kind,
            "rows": rows,
            "distribution": distribution,
            "seed": seed,
            "columns": list(table),
            "out": str(path),
        },
        as_json=as_json,
        title="dataset written",
    )


def register(app: typer.Typer) -> None:
    """Add the ``data`` group to ``app``."""
    app.add_typer(data, name="data")


def _generate(kind: str, rows: int, distribution: str, seed: int) -> dict[str, Any]:
    import numpy as np

    from crowdhide.plans.data import synth_aggregate, synth_diabetes, synth_kmeans

    if kind == "aggregate":
        return dict(synth_aggregate(rows=rows, distribution=distribution, rng=seed))  # type: ignore[arg-type]
    if kind == "diabetes":
        return dict(synth_diabetes(rows=rows, rng=seed))
    X, y = synth_kmeans(rows=rows, distribution=distribution, rng=seed)  # type: ignore[arg-type]
    table: dict[str, Any] = {f"x{i}": X[:, i] for i in range(X.shape[1])}
    table["label"] = y.astype(np.int64)
    return table
