"""Data for the built-in queries: synthetic generators, table loading, MNIST/digits.

Every generator is deterministic under its ``rng`` seed. Tables are plain ``{column:
numpy array}`` mappings; CSV and Parquet files are read by DuckDB.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from crowdhide._extras import require
from crowdhide._tables import as_table as _columns_of
from crowdhide._validation import as_rng, check_int, check_real
from crowdhide.datasets import ADULT_COLUMNS, data_path, describe_data_path
from crowdhide.errors import DataError, InvalidParameterError, MissingExtraError

__all__ = [
    "BUILTIN_TABLES",
    "KmeansData",
    "as_table",
    "load_builtin_table",
    "load_kmeans_data",
    "load_table",
    "synth_aggregate",
    "synth_diabetes",
    "synth_kmeans",
    "write_table",
]

Table = dict[str, npt.NDArray[Any]]
Distribution = Literal["uniform", "skewed"]


def _category(
    count: int, size: int, distribution: str, skew: float, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    if distribution == "uniform":
        return rng.integers(0, count, size=size)
    if distribution == "skewed":
        weights = 1.0 / np.arange(1, count + 1) ** skew  # Zipf law (the paper leaves it open)
        return rng.choice(count, size=size, p=weights / weights.sum())
    raise InvalidParameterError(f"distribution must be 'uniform' or 'skewed', got {distribution!r}")


def synth_aggregate(
    *,
    rows: int,
    attributes: int = 4,
    intervals: int = 20,
    distribution: Distribution = "uniform",
    skew: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> Table:
    """Section V's Aggregate dataset: ``attributes`` grouping columns ``g1..`` with
    ``intervals`` values each and a numeric value ``v``.

    The paper does not give the generator; values are ``v ~ N(100 + 5·g1, 15)`` and the
    skewed law is Zipf with exponent ``skew`` over the intervals.

    Examples
    --------
    >>> t = synth_aggregate(rows=5, attributes=2, rng=0)
    >>> sorted(t), len(t["v"])
    (['g1', 'g2', 'v'], 5)
    """
    n = check_int("rows", rows, low=1)
    a = check_int("attributes", attributes, low=1)
    k = check_int("intervals", intervals, low=1)
    check_real("skew", skew, low=0.0)
    g = as_rng(rng)
    table: Table = {f"g{i + 1}": _category(k, n, distribution, skew, g) for i in range(a)}
    table["v"] = np.round(100.0 + 5.0 * table["g1"] + g.normal(0.0, 15.0, size=n), 3)
    return table


def synth_diabetes(*, rows: int, rng: np.random.Generator | int | None = None) -> Table:
    """The paper's running example (Example 1): age range A, BMI B, insulin I.

    Deterministic synthetic population: ages 18–89 in 10-year ranges (labels such as
    ``"30-39"``), integer BMI 16–45 rising mildly with age, insulin (µU/mL) rising with
    BMI. Not real data; it only gives the example realistic shapes.

    Examples
    --------
    >>> t = synth_diabetes(rows=3, rng=1)
    >>> sorted(t)
    ['age_range', 'bmi', 'insulin']
    """
    n = check_int("rows", rows, low=1)
    g = as_rng(rng)
    age = g.integers(18, 90, size=n)
    # The label of each decade once, then picked per row (string ops on every row are slow).
    names = np.array([f"{max(10 * k, 18)}-{10 * k + 9}" for k in range(10)], dtype=object)
    labels = names[age // 10]
    bmi = np.clip(np.round(g.normal(24.0 + 0.06 * (age - 18), 4.0)), 16, 45).astype(np.int64)
    insulin = np.round(np.exp(g.normal(np.log(60.0) + 0.035 * (bmi - 25), 0.45)), 1)
    return {"age_range": labels, "bmi": bmi, "insulin": insulin}


def synth_kmeans(
    *,
    rows: int,
    dim: int = 16,
    clusters: int = 10,
    distribution: Distribution = "uniform",
    skew: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Gaussian blobs for K-means: ``(X, labels)``; skewed cluster sizes are Zipf.

    Examples
    --------
    >>> X, y = synth_kmeans(rows=4, dim=2, clusters=2, rng=0)
    >>> X.shape, y.shape
    ((4, 2), (4,))
    """
    n = check_int("rows", rows, low=1)
    d = check_int("dim", dim, low=1)
    k = check_int("clusters", clusters, low=1)
    g = as_rng(rng)
    centers = g.normal(0.0, 4.0, size=(k, d))
    labels = _category(k, n, distribution, skew, g)
    X = centers[labels] + g.normal(0.0, 1.0, size=(n, d))
    return X.astype(np.float32), labels


#: Built-in tables a plan file may name as ``data.path = "builtin:NAME"``.
BUILTIN_TABLES = ("adult",)
_ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss")


def load_table(path: Path | str) -> Table:
    """Read a CSV or Parquet file with DuckDB into ``{column: array}`` (or ``builtin:adult``)."""
    duckdb = require("duckdb", purpose="reading a data table (DuckDB)")

    if str(path).startswith("builtin:"):
        return load_builtin_table(str(path)[len("builtin:") :])
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(2, "No such file or directory", str(file))
    if not file.is_file():
        raise DataError(f"data file {str(file)!r} is not a file")
    if file.stat().st_size == 0:
        raise DataError(f"data file {str(file)!r} is empty")
    reader = "read_parquet" if file.suffix.lower() in (".parquet", ".pq") else "read_csv_auto"
    con = duckdb.connect()
    try:
        data = con.execute(f"SELECT * FROM {reader}(?)", [str(file)]).fetchnumpy()
    except duckdb.Error as exc:  # not CSV/Parquet, or malformed: the user's file, not a bug
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"data file {str(file)!r} could not be read: {first}") from exc
    finally:
        con.close()
    table: Table = {}
    for column, values in data.items():
        if isinstance(values, np.ma.MaskedArray):
            if values.mask.any():
                raise DataError(f"data column {column!r} of {file} has missing values")
            values = values.data
        table[str(column)] = np.asarray(values)
    if not table:
        raise DataError(f"data file {file} has no columns")
    return table


def as_table(table: Any) -> Table:
    """Any table a plan takes, as ``{column: array}``: a mapping of columns, a
    ``pandas.DataFrame``, a ``pyarrow.Table`` / ``RecordBatch``, or a CSV / Parquet path
    (or ``builtin:adult``), read by :func:`load_table`.

    Examples
    --------
    >>> import pandas as pd
    >>> sorted(as_table(pd.DataFrame({"g": ["a", "b"], "v": [1.0, 2.0]})))
    ['g', 'v']
    """
    if isinstance(table, str | Path):
        return load_table(table)
    return _columns_of(table)


def load_builtin_table(name: str) -> Table:
    """The UCI Adult table (``builtin:adult``, 48,842 rows) from the data folder.

    Plan files run on the real table only: when it is not installed the run is refused
    (the protocols' synthetic stand-in has 4 of the 15 columns). Numeric columns are
    integers, ``income`` is 1 for ">50K", the others are text (``?`` where unknown).
    """
    if name not in BUILTIN_TABLES:
        raise DataError(
            f"data.path 'builtin:{name}': plan files know "
            + ", ".join(f"builtin:{t}" for t in BUILTIN_TABLES)
            + " (the other built-in sets are single columns for `crowdhide protocol`)"
        )
    files = [data_path("adult", f"adult.{part}.gz") for part in ("data", "test")]
    if any(f is None or not f.is_file() for f in files):
        raise DataError(
            "data.path 'builtin:adult': the Adult data is not installed (looked for "
            f"{describe_data_path('adult', 'adult.data.gz')}); plan files do not run on a "
            "synthetic stand-in"
        )
    rows: list[list[str]] = []
    for file in files:
        assert file is not None
        with gzip.open(file, "rt", encoding="utf-8") as handle:
            for line in handle:
                parts = line.rstrip("\n").rstrip(".").split(", ")
                if len(parts) == len(ADULT_COLUMNS):  # skips blanks and the test file's header
                    rows.append(parts)
    columns = list(zip(*rows, strict=True))
    table: Table = {}
    for name_, values in zip(ADULT_COLUMNS, columns, strict=True):
        if name_ in _ADULT_NUMERIC or name_ == "hours-per-week":
            table[name_] = np.array(values, dtype=np.int64)
        elif name_ == "income":
            table[name_] = np.array([v == ">50K" for v in values], dtype=np.int64)
        else:
            table[name_] = np.array(values, dtype=object)
    return table


def write_table(table: Mapping[str, npt.NDArray[Any]], path: Path | str) -> Path:
    """Write ``table`` as CSV or Parquet (by suffix) with DuckDB."""
    duckdb = require("duckdb", purpose="writing a data table (DuckDB)")

    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PARQUET" if file.suffix.lower() in (".parquet", ".pq") else "CSV"
    con = duckdb.connect()
    try:
        con.register("t", {k: np.asarray(v) for k, v in table.items()})
        escaped = str(file).replace("'", "''")
        con.execute(f"COPY t TO '{escaped}' (FORMAT {fmt})")
    finally:
        con.close()
    return file


@dataclass(frozen=True)
class KmeansData:
    """Training points, held-out points with labels, and where they came from."""

    train: npt.NDArray[np.float32]
    test: npt.NDArray[np.float32]
    test_labels: npt.NDArray[np.int64]
    source: str


def _idx(path: Path, offset: int) -> npt.NDArray[np.uint8]:
    with gzip.open(path, "rb") as handle:
        return np.frombuffer(handle.read(), np.uint8, offset=offset)


def load_kmeans_data(
    *,
    source: Literal["auto", "mnist", "digits", "synthetic"] = "auto",
    mnist_dir: Path | str | None = None,
    rows: int | None = None,
    rng: np.random.Generator | int | None = None,
) -> KmeansData:
    """MNIST (60k/10k) when present, else scikit-learn's digits, else Gaussian blobs.

    Parameters
    ----------
    source
        ``"auto"`` tries MNIST (``mnist_dir``, default ``$CROWDHIDE_DATA_DIR/mnist``), then
        digits (needs scikit-learn), then synthetic blobs.
    rows
        Optional cap on training rows (a seeded subsample); the test set is kept whole.
    """
    g = as_rng(rng)
    folder = Path(mnist_dir) if mnist_dir is not None else data_path("mnist")
    data: KmeansData | None = None
    if (
        source in ("auto", "mnist")
        and folder is not None
        and (folder / "train-images-idx3-ubyte.gz").exists()
    ):
        train = _idx(folder / "train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
        test = _idx(folder / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784)
        labels = _idx(folder / "t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)
        data = KmeansData(
            (train / np.float32(255)).astype(np.float32),
            (test / np.float32(255)).astype(np.float32),
            labels,
            "mnist",
        )
    elif source == "mnist":
        where = str(folder) if folder is not None else describe_data_path("mnist")
        raise FileNotFoundError(2, "MNIST not found (train-images-idx3-ubyte.gz)", where)
    if data is None and source in ("auto", "digits"):
        try:
            datasets = require("sklearn.datasets", purpose="source='digits'")
        except MissingExtraError:
            if source == "digits":
                raise
        else:
            digits = datasets.load_digits()
            X = (digits.data / 16.0).astype(np.float32)
            y = digits.target.astype(np.int64)
            perm = g.permutation(len(X))
            cut = int(len(X) * 0.8)
            data = KmeansData(X[perm[:cut]], X[perm[cut:]], y[perm[cut:]], "digits")
    if data is None:
        X, y = synth_kmeans(rows=6000, dim=16, clusters=10, rng=g)
        data = KmeansData(X[:5000], X[5000:], y[5000:], "synthetic")
    if rows is not None:
        cap = check_int("rows", rows, low=1)
        if cap < len(data.train):
            pick = np.sort(g.choice(len(data.train), size=cap, replace=False))
            data = KmeansData(data.train[pick], data.test, data.test_labels, data.source)
    return data
