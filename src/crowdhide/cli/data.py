"""``crowdhide data synth aggregate|kmeans --rows N --out FILE``: synthetic datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]

_KINDS = ("aggregate", "kmeans", "diabetes")


def register(app: typer.Typer) -> None:
    """Add the ``data`` group to ``app``."""
    data_app = typer.Typer(help="Datasets for the built-in queries.", no_args_is_help=True)
    app.add_typer(data_app, name="data")

    @data_app.command("synth")
    def synth(
        kind: Annotated[str, typer.Argument(help="aggregate | kmeans | diabetes")],
        rows: Annotated[int, typer.Option("--rows", help="Number of tuples.")] = 10_000,
        out: Annotated[Path, typer.Option("--out", help="CSV or Parquet file.")] = Path("data.csv"),
        distribution: Annotated[
            str, typer.Option("--distribution", help="uniform | skewed (Zipf).")
        ] = "uniform",
        seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Write a deterministic synthetic dataset."""
        from crowdhide.plans.data import synth_aggregate, synth_diabetes, synth_kmeans, write_table

        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
        if distribution not in ("uniform", "skewed"):
            raise ValueError(f"distribution must be 'uniform' or 'skewed', got {distribution!r}")
        if kind == "aggregate":
            table = synth_aggregate(rows=rows, distribution=distribution, rng=seed)  # type: ignore[arg-type]
        elif kind == "diabetes":
            table = synth_diabetes(rows=rows, rng=seed)
        else:
            X, y = synth_kmeans(rows=rows, distribution=distribution, rng=seed)  # type: ignore[arg-type]
            table = {f"x{i}": X[:, i] for i in range(X.shape[1])}
            table["label"] = y.astype(np.int64)
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
