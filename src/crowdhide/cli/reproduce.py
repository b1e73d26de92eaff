"""``crowdhide reproduce NAME``: figure and table reproductions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import check_output_dir, seed_option
from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register", "reproduce_command"]


def reproduce_command(
    name: Annotated[str, typer.Argument(help="Experiment name, or 'list' to list them.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("results"),
    seed: Annotated[int, seed_option()] = 0,
    quick: Annotated[
        bool, typer.Option("--quick", help="Reduced-size run (minutes → seconds).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Reproduce a paper's figure or table: writes CSV/JSON + PNG and compares."""
    from crowdhide.experiments.registry import discover, resolve, run_experiment

    if name == "list":
        rows = [{"name": e.name, "summary": e.summary} for e in discover().values()]
        emit(rows, as_json=as_json, title="Reproducible experiments")
        return
    try:
        found = resolve(name)  # former names (e.g. seed000-fig3) still run, unlisted
    except ValueError:
        known = ", ".join(discover())
        raise ValueError(f"NAME must be 'list' or one of {known}, got {name!r}") from None
    check_output_dir(out / name)
    with spinner(not as_json, f"reproducing {found.name}{' (quick)' if quick else ''}"):
        result = run_experiment(name, out / name, seed=seed, quick=quick)
    record = {
        "experiment": found.name,
        "out": str(out / name),
        "seed": seed,
        "quick": quick,
        "files": [str(f) for f in result.files],
        "comparison": list(result.comparison),
        "verdicts": [v.record() for v in result.verdicts],
        "data": result.data,
    }
    if as_json:
        emit(record, as_json=True)
        return
    emit(
        [{"file": str(f)} for f in result.files],
        as_json=False,
        title=f"{found.name}: files written",
        notes=[*result.comparison, *result.verdict_lines()],
    )


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` command to ``app``."""
    app.command("reproduce")(reproduce_command)
