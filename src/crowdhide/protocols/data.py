"""Loading the users' data for the protocols: one row = one user.

Sources:

* a CSV or Parquet file given by the user (read with duckdb; the column is chosen by header
  name, or by 0-based position for files without a header);
* built-in data sets, named ``builtin:NAME``:

  - ``builtin:adult`` — UCI Adult census table (48,842 rows; columns ``age``, ``fnlwgt``,
    ``education-num``, ``capital-gain``, ``capital-loss``, ``hours-per-week`` numeric,
    ``workclass``, ``education``, ``marital-status``, ``occupation``, ``relationship``,
    ``race``, ``sex``, ``native-country`` categorical, ``income`` (0/1 for ">50K"));
  - ``builtin:gowalla-sf`` / ``builtin:gowalla-paris`` — Gowalla check-ins on the grids of
    Biswas, Jung, Palamidessi (§V-D): San Francisco 17 × 24 = 408 cells, Paris 12 × 16 = 192
    cells; column ``cell`` = ``i · columns + j`` (also ``i`` and ``j``);
  - ``builtin:synthetic`` — 100,000 generated rows: ``bit`` (Bernoulli(0.3)), ``unit``
    (Beta(2, 5) on [0, 1]), ``age`` (integers 17–90), ``category`` (N(0, 2) cut into 15
    equal bins on [−3√2, 3√2], the synthetic set of Biswas et al. §V-C).

  The real data sets are read from the data folder (:func:`crowdhide.datasets.data_dir`:
  ``$CROWDHIDE_DATA_DIR``, else ``../shared/data`` beside the repository).
  When they are absent (a fresh machine) a synthetic stand-in with the same columns and
  domain is generated, and :attr:`DataColumn.note` says so — results on it are not results
  on the real data.

Every problem with the data raises ``ValueError``/``TypeError`` naming the file and column:
missing file, unreadable or empty file, unknown column (the available ones are listed),
missing values, non-numeric values where numbers are needed, values outside declared
bounds. Values are never clipped silently: :func:`as_bounded` clips only when asked and
reports how many values it changed.
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._extras import require
from crowdhide._validation import check_bool, check_int, check_real
from crowdhide.datasets import ADULT_COLUMNS, data_dir, data_path, describe_data_path
from crowdhide.errors import DataError, DataTypeError, InvalidParameterError, ParameterTypeError

__all__ = [
    "BUILTIN_DATASETS",
    "BoundedValues",
    "Categories",
    "DataColumn",
    "GowallaPoints",
    "as_bits",
    "as_bounded",
    "as_categories",
    "data_dir",
    "load_column",
    "load_gowalla_points",
]

BUILTIN_DATASETS = ("adult", "gowalla-sf", "gowalla-paris", "synthetic")

#: Gowalla grids of Biswas et al. §V-D: (file, latitude bands, longitude bands).
GOWALLA_GRIDS = {
    "gowalla-sf": ("gowalla_sf_grid.csv.gz", 17, 24),
    "gowalla-paris": ("gowalla_paris_grid.csv.gz", 12, 16),
}
#: Bounding boxes of Biswas et al. §V-D: (south, north, west, east) in degrees.
GOWALLA_BOXES = {
    "gowalla-sf": (37.7228, 37.7946, -122.5153, -122.3789),
    "gowalla-paris": (48.8286, 48.8798, 2.2855, 2.3909),
}
_GOWALLA_POINT_FILES = {
    "gowalla-sf": "gowalla_sf_latlon.csv.gz",
    "gowalla-paris": "gowalla_paris_latlon.csv.gz",
}
_GOWALLA_ROWS = {"gowalla-sf": 123_026, "gowalla-paris": 10_079}
_SYNTHETIC_ROWS = 100_000
_ADULT_ROWS = 48_842


@dataclass(frozen=True)
class DataColumn:
    """One column of user data.

    Attributes
    ----------
    values
        The raw values (numeric array, or an object array of strings for text columns).
    source
        File path or ``builtin:NAME``.
    column
        Column name.
    note
        Set when the data is a synthetic stand-in or was altered; ``None`` otherwise.
    domain_size
        Number of categories when the source fixes it (Gowalla grids, synthetic
        ``category``), else ``None``.
    """

    values: npt.NDArray[Any]
    source: str
    column: str
    note: str | None = None
    domain_size: int | None = None

    @property
    def n(self) -> int:
        """Number of users (rows)."""
        return int(self.values.shape[0])

    @property
    def is_numeric(self) -> bool:
        """Whether the column holds numbers."""
        return self.values.dtype.kind in "iufb"


def load_column(source: str | os.PathLike[str], *, column: str) -> DataColumn:
    """Load one column of a CSV/Parquet file or of a built-in data set.

    Examples
    --------
    >>> col = load_column("builtin:synthetic", column="bit")
    >>> col.n, sorted(set(col.values.tolist()))
    (100000, [0, 1])
    >>> load_column("builtin:synthetic", column="nope")
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: column must be one of bit, unit, age, ... got 'nope'
    """
    if not isinstance(column, str) or not column:
        raise ParameterTypeError(
            f"column must be a non-empty string, got {column!r}", parameter="column", value=column
        )
    text = os.fspath(source)
    if not text.strip():
        raise InvalidParameterError(f"data must name a file or builtin:NAME, got {text!r}")
    if text.startswith("builtin:"):
        return _load_builtin(text[len("builtin:") :], column)
    return _load_file(Path(text), column)


# ---- files -------------------------------------------------------------------------------


def _load_file(path: Path, column: str) -> DataColumn:
    duckdb = require("duckdb", purpose="reading a data column (DuckDB)")

    if not path.exists():
        raise DataError(f"data file not found: {str(path)!r}")
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} is not a file")
    if path.stat().st_size == 0:
        raise DataError(f"data file is empty: {str(path)!r}")
    try:
        if path.suffix == ".parquet":
            relation = duckdb.read_parquet(str(path))
        else:
            relation = duckdb.read_csv(str(path))
        names = list(relation.columns)
        if column in names:
            name = column
        elif column.isdigit() and int(column) < len(names):
            name = names[int(column)]
        else:
            raise InvalidParameterError(
                f"column must be one of {', '.join(names)} (or a 0-based position) in "
                f"{str(path)!r}, got {column!r}"
            )
        fetched = relation.select(duckdb.ColumnExpression(name)).fetchnumpy()[name]
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"data file {str(path)!r} could not be read: {first}") from exc
    values = _unmask(fetched, f"column {name!r} of {str(path)!r}")
    if values.size == 0:
        raise DataError(f"data file {str(path)!r} has no rows")
    return DataColumn(values=values, source=str(path), column=name)


def _unmask(values: Any, what: str) -> npt.NDArray[Any]:
    if isinstance(values, np.ma.MaskedArray):
        missing = int(np.ma.getmaskarray(values).sum())
        if missing:
            raise DataError(f"{what} has {missing} missing value(s); remove or impute them first")
        values = values.data
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise DataError(f"{what} has {int(np.isnan(arr).sum())} missing (NaN) value(s)")
    return arr


# ---- built-in data sets ------------------------------------------------------------------


def _load_builtin(name: str, column: str) -> DataColumn:
    if name not in BUILTIN_DATASETS:
        raise InvalidParameterError(
            f"data must be a file or builtin:{{{','.join(BUILTIN_DATASETS)}}}, got 'builtin:{name}'"
        )
    source = f"builtin:{name}"
    if name == "synthetic":
        table = _synthetic_table(np.random.default_rng(20_240_601))
        return _pick(table, column, source, None, {"category": 15})
    if name == "adult":
        return _load_adult(column, source)
    return _load_gowalla(name, column, source)


def _pick(
    table: dict[str, npt.NDArray[Any]],
    column: str,
    source: str,
    note: str | None,
    domains: dict[str, int],
) -> DataColumn:
    if column not in table:
        raise InvalidParameterError(
            f"column must be one of {', '.join(table)} for {source}, got {column!r}"
        )
    return DataColumn(
        values=table[column],
        source=source,
        column=column,
        note=note,
        domain_size=domains.get(column),
    )


def _synthetic_table(rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
    n = _SYNTHETIC_ROWS
    normal = rng.normal(0.0, math.sqrt(2.0), size=n)
    edges = np.linspace(-3 * math.sqrt(2.0), 3 * math.sqrt(2.0), 16)
    return {
        "bit": (rng.random(n) < 0.3).astype(np.int64),
        "unit": rng.beta(2.0, 5.0, size=n),
        "age": rng.integers(17, 91, size=n),
        "category": np.clip(np.searchsorted(edges, normal, side="right") - 1, 0, 14),
    }


def _load_adult(column: str, source: str) -> DataColumn:
    found = [data_path("adult", "adult.data.gz"), data_path("adult", "adult.test.gz")]
    files = [f for f in found if f is not None and f.is_file()]
    if len(files) < len(found):
        rng = np.random.default_rng(48_842)
        n = _ADULT_ROWS
        table: dict[str, npt.NDArray[Any]] = {
            "age": np.clip(np.round(rng.normal(38.6, 13.7, size=n)), 17, 90).astype(np.int64),
            "hours-per-week": np.clip(np.round(rng.normal(40.4, 12.4, size=n)), 1, 99).astype(
                np.int64
            ),
            "sex": np.where(rng.random(n) < 0.668, "Male", "Female").astype(object),
            "income": (rng.random(n) < 0.239).astype(np.int64),
        }
        note = (
            f"Adult data not found under {describe_data_path('adult')}; using a synthetic "
            "stand-in with matching marginal shapes (not the real census data)"
        )
        return _pick(table, column, source, note, {})
    if column not in ADULT_COLUMNS:
        raise InvalidParameterError(
            f"column must be one of {', '.join(ADULT_COLUMNS)} for {source}, got {column!r}"
        )
    position = ADULT_COLUMNS.index(column)
    values: list[str] = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                parts = line.rstrip("\n").split(", ")
                if len(parts) != len(ADULT_COLUMNS):
                    continue  # blank lines and the test file's "|1x3 Cross validator" header
                values.append(parts[position].rstrip("."))
    if column == "income":
        return DataColumn(
            values=np.array([v == ">50K" for v in values], dtype=np.int64),
            source=source,
            column=column,
        )
    try:
        return DataColumn(values=np.array(values, dtype=np.int64), source=source, column=column)
    except ValueError:
        text_note: str | None = None
        if "?" in values:
            text_note = "missing values ('?') are kept as their own category"
        return DataColumn(
            values=np.array(values, dtype=object), source=source, column=column, note=text_note
        )


def _load_gowalla(name: str, column: str, source: str) -> DataColumn:
    filename, rows, cols = GOWALLA_GRIDS[name]
    path = data_path("gowalla", filename)
    domains = {"cell": rows * cols, "i": rows, "j": cols}
    if path is not None and path.is_file():
        grid = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2)
        note = None
    else:
        rng = np.random.default_rng(rows * cols)
        n = _GOWALLA_ROWS[name]
        # A few hot spots on the grid, as check-ins cluster around venues.
        centres = rng.uniform([0, 0], [rows, cols], size=(6, 2))
        which = rng.integers(0, 6, size=n)
        points = centres[which] + rng.normal(0.0, 1.5, size=(n, 2))
        grid = np.clip(np.floor(points), 0, [rows - 1, cols - 1]).astype(np.int64)
        note = (
            f"Gowalla grid file not found at {describe_data_path('gowalla', filename)}; using a "
            f"synthetic clustered stand-in on the same {rows} x {cols} grid (not the real "
            "check-ins)"
        )
    table = {"cell": grid[:, 0] * cols + grid[:, 1], "i": grid[:, 0], "j": grid[:, 1]}
    return _pick(table, column, source, note, domains)


@dataclass(frozen=True)
class GowallaPoints:
    """Check-in coordinates of one Gowalla city (degrees), with the seed-003 box.

    ``note`` is set when the points are a synthetic stand-in (real file absent).
    """

    latitude: npt.NDArray[np.float64]
    longitude: npt.NDArray[np.float64]
    box: tuple[float, float, float, float]
    note: str | None = None


def load_gowalla_points(name: str) -> GowallaPoints:
    """Latitude/longitude of every check-in of ``gowalla-sf`` or ``gowalla-paris``.

    Without the data directory, the stand-in places one point uniformly inside the cell of
    every row of the grid stand-in (cells counted from the north and east edges, as in the
    grid files), so maps and grid histograms agree with the stand-in cells.
    """
    if name not in GOWALLA_BOXES:
        raise InvalidParameterError(f"name must be one of {', '.join(GOWALLA_BOXES)}, got {name!r}")
    box = GOWALLA_BOXES[name]
    path = data_path("gowalla", _GOWALLA_POINT_FILES[name])
    if path is not None and path.is_file():
        points = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        return GowallaPoints(latitude=points[:, 0], longitude=points[:, 1], box=box)
    cells = _load_gowalla(name, "i", f"builtin:{name}")
    cols = _load_gowalla(name, "j", f"builtin:{name}").values
    _, rows_n, cols_n = GOWALLA_GRIDS[name]
    south, north, west, east = box
    rng = np.random.default_rng(rows_n * cols_n + 1)
    lat = north - (cells.values + rng.random(cells.n)) * (north - south) / rows_n
    lon = east - (cols + rng.random(cells.n)) * (east - west) / cols_n
    return GowallaPoints(latitude=lat, longitude=lon, box=box, note=cells.note)


# ---- conversions -------------------------------------------------------------------------


def _require_numeric(data: DataColumn) -> npt.NDArray[Any]:
    if not data.is_numeric:
        sample = next((v for v in data.values.tolist() if v is not None), None)
        raise DataTypeError(
            f"column {data.column!r} of {data.source} must be numeric, got text values such as "
            f"{sample!r}"
        )
    return data.values


def as_bits(data: DataColumn) -> npt.NDArray[np.int64]:
    """The column as bits; every value must be exactly 0 or 1."""
    values = _require_numeric(data)
    bad = ~np.isin(values, (0, 1))
    if bad.any():
        raise DataError(
            f"column {data.column!r} of {data.source} must hold bits 0/1 for the bit-sum "
            f"protocol, got {int(bad.sum())} other value(s) such as {values[bad][0].item()!r}; use "
            "--protocol real with --lower/--upper for real values"
        )
    return values.astype(np.int64)


@dataclass(frozen=True)
class BoundedValues:
    """Values checked (or clipped) to a declared range."""

    values: npt.NDArray[np.float64]
    lower: float
    upper: float
    clipped: int


def as_bounded(
    data: DataColumn, *, lower: float, upper: float, clip: bool = False
) -> BoundedValues:
    """The column as reals in ``[lower, upper]``.

    Values outside the declared bounds raise ``ValueError`` unless ``clip=True``; then they
    are clipped and :attr:`BoundedValues.clipped` counts them (the caller must report it —
    clipping changes the answer, and the bounds must not be derived from the data, or the
    privacy guarantee no longer holds).
    """
    lo = check_real("lower", lower)
    hi = check_real("upper", upper)
    if not hi > lo:
        raise InvalidParameterError(f"upper must be > lower, got lower={lo!r}, upper={hi!r}")
    do_clip = check_bool("clip", clip)
    values = _require_numeric(data).astype(np.float64)
    if not np.isfinite(values).all():
        raise DataError(f"column {data.column!r} of {data.source} has non-finite values")
    outside = (values < lo) | (values > hi)
    count = int(outside.sum())
    if count and not do_clip:
        example = float(values[outside][0])
        raise DataError(
            f"column {data.column!r} of {data.source} has {count} value(s) outside the declared "
            f"bounds [{lo:g}, {hi:g}] (e.g. {example:g}); fix --lower/--upper or pass --clip"
        )
    if count:
        values = np.clip(values, lo, hi)
    return BoundedValues(values=values, lower=lo, upper=hi, clipped=count)


@dataclass(frozen=True)
class Categories:
    """Values mapped to categories ``0 … k−1``."""

    values: npt.NDArray[np.int64]
    k: int
    labels: tuple[str, ...]


def as_categories(data: DataColumn, *, bins: int | None = None) -> Categories:
    """The column as categories ``0 … k−1``.

    * Integer columns are used as they are: the values must lie in ``0 … k−1`` where ``k``
      is ``bins``, or the data set's known domain size (Gowalla grids), or — as a last resort
      — ``max + 1`` (data-dependent; pass ``bins`` to avoid revealing the maximum).
    * Text columns: every distinct string is a category (sorted); ``bins`` must then be
      omitted or equal to the number of distinct strings.
    * Real columns are rejected: discretize them first (a data-independent binning is a
      modelling choice crowdhide does not make for you).
    """
    k_given = None if bins is None else check_int("bins", bins, low=2)
    if not data.is_numeric:
        labels, codes = np.unique(data.values.astype(str), return_inverse=True)
        if k_given is not None and k_given != labels.size:
            raise DataError(
                f"bins must equal the {labels.size} distinct values of text column "
                f"{data.column!r}, got {k_given}"
            )
        if labels.size < 2:
            raise DataError(f"column {data.column!r} must have at least 2 distinct values")
        return Categories(
            values=codes.astype(np.int64),
            k=int(labels.size),
            labels=tuple(str(x) for x in labels),
        )
    values = data.values
    if values.dtype.kind == "f":
        if not (np.isfinite(values).all() and (values == np.floor(values)).all()):
            raise DataError(
                f"column {data.column!r} of {data.source} holds non-integer values; the "
                "histogram protocol needs integer categories 0..k-1 or text labels"
            )
        values = values.astype(np.int64)
    values = values.astype(np.int64)
    if values.min() < 0:
        raise DataError(
            f"column {data.column!r} of {data.source} must hold categories >= 0, "
            f"got {int(values.min())}"
        )
    k = k_given or data.domain_size or int(values.max()) + 1
    k = max(k, 2)
    if values.max() >= k:
        raise DataError(
            f"column {data.column!r} of {data.source} has category {int(values.max())}, outside "
            f"0..{k - 1} (bins={k})"
        )
    return Categories(values=values, k=k, labels=tuple(str(i) for i in range(k)))
