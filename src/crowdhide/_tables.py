"""Tables in and out: any column table becomes ``{column: array}``; row lists print well.

:func:`as_table` is what every function that takes a table calls first, so a plain
``{column: array-like}`` mapping, a ``pandas.DataFrame`` and a ``pyarrow.Table`` (or record
batch) are all accepted (:func:`crowdhide.plans.data.as_table` adds CSV / Parquet paths).
pandas and pyarrow are recognised by their methods, never imported here: passing one needs
it installed, the others do not.

:class:`Rows` is the list of dicts a result holds (one dict per row). It *is* a list — it
compares equal to one, serialises to JSON as one — and adds :meth:`Rows.to_pandas` and an
HTML table for notebooks.

Examples
--------
>>> t = as_table({"a": [1, 2], "b": (0.5, 1.5)})
>>> {k: v.tolist() for k, v in t.items()}
{'a': [1, 2], 'b': [0.5, 1.5]}
>>> rows = Rows([{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5}])
>>> rows == [{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5}], rows
(True, Rows(2 rows × 2 columns: a, b))
>>> print(rows.to_pandas())
   a    b
0  1  0.5
1  2  1.5
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._extras import require
from crowdhide.errors import DataError, DataTypeError

__all__ = ["Rows", "TableLike", "as_table"]

#: What a function taking a table accepts (see :func:`as_table`); ``Any`` because pandas and
#: pyarrow are optional and recognised by duck typing.
TableLike = Any

#: Rows shown by :meth:`Rows._repr_html_` (the rest is summarised in one line).
_HTML_ROWS = 20


def _column_names(table: Any) -> list[str] | None:
    """The column names of a DataFrame / Arrow table, recognised by duck typing."""
    if hasattr(table, "column_names") and hasattr(table, "column"):  # pyarrow Table/RecordBatch
        return [str(c) for c in table.column_names]
    if hasattr(table, "columns") and hasattr(table, "to_numpy") and hasattr(table, "iloc"):
        return [str(c) for c in table.columns]  # pandas DataFrame
    return None


def _arrow_column(table: Any, name: str) -> npt.NDArray[Any]:
    column = table.column(name)
    if column.null_count:
        raise DataError(f"data column {name!r} has missing values (nulls)")
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _pandas_column(table: Any, name: str) -> npt.NDArray[Any]:
    series = table[name]
    if bool(series.isna().any()):
        raise DataError(f"data column {name!r} has missing values (NaN/None)")
    return np.asarray(series.to_numpy())


def as_table(table: Any) -> dict[str, npt.NDArray[Any]]:
    """``table`` as ``{column: numpy array}``.

    Parameters
    ----------
    table
        A mapping of column name to array-like, a ``pandas.DataFrame``, a ``pyarrow.Table``
        or ``RecordBatch`` (a CSV / Parquet path is read by
        :func:`crowdhide.plans.data.as_table`, which then calls this).

    Raises
    ------
    DataTypeError
        ``table`` is none of these.
    DataError
        No columns, columns of different lengths, a duplicated column name or missing
        values (a DataFrame's NaN / an Arrow null: the queries have no rule for them).

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> as_table(pd.DataFrame({"x": [1, 2]}))["x"].tolist()
    [1, 2]
    >>> as_table(pa.table({"x": ["u", "v"]}))["x"].tolist()
    ['u', 'v']
    >>> as_table({"x": [1], "y": [1, 2]})
    Traceback (most recent call last):
    ...
    crowdhide.errors.DataError: table columns have different lengths: {'x': 1, 'y': 2}
    >>> as_table([1, 2])
    Traceback (most recent call last):
    ...
    crowdhide.errors.DataTypeError: table must be a mapping of columns, a pandas DataFrame, a \
pyarrow Table, got list
    """
    names = _column_names(table)
    out: dict[str, npt.NDArray[Any]]
    if isinstance(table, Mapping):
        out = {str(k): np.asarray(v) for k, v in table.items()}
    elif names is not None:
        if len(set(names)) != len(names):
            raise DataError(f"table has duplicated column names: {names}")
        read = _arrow_column if hasattr(table, "column_names") else _pandas_column
        out = {name: read(table, name) for name in names}
    else:
        raise DataTypeError(
            "table must be a mapping of columns, a pandas DataFrame, a pyarrow Table, "
            f"got {type(table).__name__}"
        )
    if not out:
        raise DataError("table has no columns")
    lengths = {k: len(v) if v.ndim else -1 for k, v in out.items()}
    if len(set(lengths.values())) != 1 or -1 in lengths.values():
        raise DataError(f"table columns have different lengths: {lengths}")
    return out


class Rows(list[dict[str, Any]]):
    """A result's rows: a ``list`` of dicts with :meth:`to_pandas` and a notebook table."""

    __slots__ = ()

    def columns(self) -> list[str]:
        """Column names in first-seen order over all rows."""
        return list(dict.fromkeys(k for row in self for k in row))

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas: ``crowdhide[pandas]``)."""
        pandas = require("pandas", purpose="to_pandas()")
        return pandas.DataFrame(list(self), columns=self.columns())

    def __repr__(self) -> str:
        """One line: how many rows and which columns (``list(rows)`` shows them all)."""
        columns = self.columns()
        shown = ", ".join(columns[:8]) + (", ..." if len(columns) > 8 else "")
        return f"Rows({len(self)} rows × {len(columns)} columns: {shown})"

    def _repr_html_(self) -> str:
        """The first rows as an HTML table (notebooks), values escaped."""
        columns = self.columns()
        head = "".join(f"<th>{escape(c)}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(_cell(row.get(c, '')))}</td>" for c in columns) + "</tr>"
            for row in self[:_HTML_ROWS]
        )
        more = len(self) - _HTML_ROWS
        tail = f"<p>… {more} more rows (.to_pandas() has them all)</p>" if more > 0 else ""
        return f"<table><tr>{head}</tr>{body}</table>{tail}"


def _cell(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
