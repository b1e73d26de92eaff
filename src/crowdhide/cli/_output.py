"""Output helpers shared by every command: ``--json`` or a rich table.

The output itself is in :mod:`crowdhide.cli._emit` (no typer there: the commonest queries
start without it, issue 32); this module adds the ``--json`` option and re-exports it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from crowdhide._json import jsonable
from crowdhide.cli._emit import COMMAND_LINE, _cell, emit

__all__ = ["COMMAND_LINE", "JsonFlag", "_cell", "emit", "jsonable"]

#: The ``--json`` flag every command takes: ``as_json: JsonFlag = False``.
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print JSON (one object or a list) instead of a table.")
]
