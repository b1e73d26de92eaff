"""Output shared by every command, ``--json`` or a rich table, without typer.

The commonest queries are answered without importing typer (issue 32: start-up; see
:mod:`crowdhide.cli._fast`); :mod:`crowdhide.cli._output` re-exports these names beside the
``--json`` option.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from crowdhide._json import jsonable

__all__ = ["COMMAND_LINE", "emit", "write_line"]

#: The command line being run (``crowdhide`` and its arguments), set by ``cli.main``;
#: ``crowdhide run`` records it in the report's provenance.
COMMAND_LINE: ContextVar[tuple[str, ...] | None] = ContextVar("COMMAND_LINE", default=None)


def write_line(text: str) -> None:
    """Write ``text`` and a newline to standard output and flush: ``typer.echo(text)`` for
    the ASCII text of ``json.dumps`` (no ANSI codes for click to strip, nothing an encoding
    can refuse), without importing typer."""
    out = sys.stdout
    if out is None:  # no standard output (pythonw): click writes nothing either
        return
    out.write(text + "\n")
    out.flush()


#: Keys whose shown value must not be above the computed one: lower bounds, what is left
#: of a budget, and a calibrated local ε0 (a larger one would be claimed to meet a target).
_ROUND_DOWN_MARKERS = ("lower", "left", "remaining", "eps0")


def _rounds_down(key: str) -> bool:
    return any(marker in key for marker in _ROUND_DOWN_MARKERS)


def _cell(value: Any, key: str = "") -> str:
    """One table cell. A float is shown to 6 significant digits rounded to its safe side
    (up, or down for the keys of ``_ROUND_DOWN_MARKERS``): a table never shows a
    certificate below the computed value (a review found 0.14906 for 0.1490604)."""
    if isinstance(value, float):
        # here, not at import: the CLI starts without the accounting package (numpy)
        from crowdhide.accounting.statement import format_bound

        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        return format_bound(value, up=not _rounds_down(key), digits=6)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return str(value)


def emit(
    records: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    as_json: bool,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    notes: Sequence[str] = (),
) -> None:
    """Print ``records`` as JSON (object or list, unchanged shape) or as a rich table.

    Parameters
    ----------
    records
        One record (printed as a two-column key/value table) or a list of records (one row
        each).
    as_json
        Print JSON instead of a table.
    title
        Table title.
    columns
        Columns to show in the table (default: every key of the first record). JSON always
        carries every key.
    notes
        Extra lines printed under the table (not in JSON).
    """
    if as_json:
        write_line(json.dumps(jsonable(records), indent=2, allow_nan=False))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=title, show_lines=False)
    if isinstance(records, Mapping):
        table.add_column("quantity", style="bold")
        table.add_column("value", justify="right")
        for key in columns or list(records):
            table.add_row(key, _cell(records[key], key))
    else:
        rows = list(records)
        keys = list(columns) if columns else (list(rows[0]) if rows else [])
        for key in keys:
            table.add_column(key, justify="right")
        for row in rows:
            table.add_row(*[_cell(row.get(k), k) for k in keys])
    console.print(table)
    for line in notes:
        console.print(line)
