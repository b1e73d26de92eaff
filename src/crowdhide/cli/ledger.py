"""``crowdhide ledger show FILE``: privacy spent per population across runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``ledger`` command group to ``app``."""
    group = typer.Typer(
        help="Privacy budget across runs (crowdhide run --ledger FILE).", no_args_is_help=True
    )

    @group.command("show")
    def show(
        file: Annotated[Path, typer.Argument(help="Ledger file written by crowdhide run.")],
        as_json: JsonFlag = False,
    ) -> None:
        """Privacy spent per population: composed ε at the budget's δ, budget left."""
        from crowdhide.accounting.ledger import Ledger

        if not str(file).strip() or file.is_dir():
            raise InvalidParameterError(
                f"FILE must be a ledger file, got {str(file)!r} (a folder or empty)",
                parameter="FILE",
                value=str(file),
            )
        if not file.exists():
            raise InvalidParameterError(
                f"ledger file does not exist: {file}", parameter="FILE", value=str(file)
            )
        rows = Ledger(file).summary()
        if as_json:
            emit(rows, as_json=True)
            return
        from rich.console import Console

        from crowdhide.report.terminal import render_ledger

        render_ledger(rows, Console())

    app.add_typer(group, name="ledger")
