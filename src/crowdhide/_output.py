"""The one CSV writer and JSON writer behind every file crowdhide writes (no layer above).

Rows may have different keys: the header is the union of keys in first-seen order and missing
cells are left empty, so a table of heterogeneous records (e.g. bounds that do or do not apply)
still reads in a spreadsheet.

Examples
--------
>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     path = write_csv(pathlib.Path(d) / "t.csv", [{"a": 1}, {"a": 2, "b": "x"}])
...     path.read_text().splitlines()
['a,b', '1,', '2,x']
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crowdhide._json import jsonable
from crowdhide.errors import InvalidParameterError

__all__ = ["write_csv", "write_json"]


def write_csv(
    path: Path, rows: Sequence[dict[str, Any]], *, fieldnames: Sequence[str] | None = None
) -> Path:
    """Write ``rows`` as CSV, header ``fieldnames`` (default: union of keys); returns ``path``."""
    keys: list[str] = list(fieldnames) if fieldnames is not None else []
    if fieldnames is None:
        for row in rows:
            keys += [k for k in row if k not in keys]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _spell_infinities(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _spell_infinities(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_spell_infinities(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def write_json(path: Path, payload: Any, *, infinities: str = "null") -> Path:
    """Write ``payload`` as indented JSON; returns ``path``.

    numpy values are converted; NaN becomes ``null``, and ±inf becomes ``null`` (default) or,
    with ``infinities="strings"``, the strings ``"inf"`` / ``"-inf"`` (for tables where an
    infinite ε is a result, not a gap).
    """
    if infinities not in ("null", "strings"):
        raise InvalidParameterError(f"infinities must be 'null' or 'strings', got {infinities!r}")
    if infinities == "strings":
        payload = _spell_infinities(payload)
    path.write_text(json.dumps(jsonable(payload), indent=2) + "\n", encoding="utf-8")
    return path
