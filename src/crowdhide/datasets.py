"""Where the optional real data sets live (no layer above this one).

crowdhide works without any downloaded data: every loader has a synthetic stand-in or a clear
error. When real data is wanted, it is read from one folder:

1. ``$CROWDHIDE_DATA_DIR`` when the variable is set (used as given, even if the folder is
   missing or empty: the loaders then fall back, so a test can switch the real data off);
2. otherwise ``../shared/data`` next to the repository checkout, if that folder exists;
3. otherwise none (:func:`data_dir` returns ``None``).

The expected layout inside the folder: ``mnist/*-ubyte.gz``, ``adult/adult.{data,test}.gz``,
``gowalla/*.csv`` and ``california_housing/cal_housing.data.gz``.

Examples
--------
>>> import os, tempfile
>>> saved = os.environ.pop(DATA_DIR_VARIABLE, None)
>>> with tempfile.TemporaryDirectory() as folder:
...     os.environ[DATA_DIR_VARIABLE] = folder
...     found = data_dir() == Path(folder), data_path("mnist")
>>> found
(True, None)
>>> os.environ.pop(DATA_DIR_VARIABLE) and None
>>> if saved is not None:
...     os.environ[DATA_DIR_VARIABLE] = saved
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ADULT_COLUMNS", "DATA_DIR_VARIABLE", "data_dir", "data_path", "describe_data_path"]

#: Columns of the UCI Adult files ``adult/adult.{data,test}.gz`` (no header, ", "-separated).
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: Environment variable naming the data folder.
DATA_DIR_VARIABLE = "CROWDHIDE_DATA_DIR"

# src/crowdhide/datasets.py -> the checkout's parent folder, where ``shared/data`` may sit.
_CHECKOUT_PARENT = Path(__file__).resolve().parents[3]


def data_dir() -> Path | None:
    """The data folder: ``$CROWDHIDE_DATA_DIR``, else ``../shared/data`` beside the repository
    when it exists, else ``None``.

    Returns
    -------
    pathlib.Path or None
        The folder, or ``None`` when there is none.

    See Also
    --------
    data_path : A file or folder inside it.
    """
    configured = os.environ.get(DATA_DIR_VARIABLE)
    if configured:
        return Path(configured)
    shared = _CHECKOUT_PARENT / "shared" / "data"
    return shared if shared.is_dir() else None


def data_path(*parts: str) -> Path | None:
    """``data_dir() / parts`` when that file or folder exists, else ``None``.

    Parameters
    ----------
    *parts
        Path components below the data folder.

    Returns
    -------
    pathlib.Path or None
        The path when it exists, else ``None``.

    See Also
    --------
    describe_data_path : Where it was looked for.
    """
    root = data_dir()
    if root is None:
        return None
    path = root.joinpath(*parts)
    return path if path.exists() else None


def describe_data_path(*parts: str) -> str:
    """Where ``parts`` would be looked for, for messages about missing data.

    Parameters
    ----------
    *parts
        Path components below the data folder.

    Returns
    -------
    str
        The path (or the folder that would hold it) and how to set the data folder.

    See Also
    --------
    data_path : The path when it exists.

    Examples
    --------
    >>> import os
    >>> saved = os.environ.get(DATA_DIR_VARIABLE)
    >>> os.environ[DATA_DIR_VARIABLE] = "/nowhere"
    >>> describe_data_path("adult", "adult.data.gz")
    '/nowhere/adult/adult.data.gz (set $CROWDHIDE_DATA_DIR to the data folder)'
    >>> if saved is None:
    ...     del os.environ[DATA_DIR_VARIABLE]
    ... else:
    ...     os.environ[DATA_DIR_VARIABLE] = saved
    """
    root = data_dir()
    hint = f"set ${DATA_DIR_VARIABLE} to the data folder"
    if root is None:
        return f"{'/'.join(parts)} (no data folder: {hint})"
    return f"{root.joinpath(*parts)} ({hint})"
