"""Array validation shared by the mechanisms and the protocols.

Each function checks an array argument and returns it in the dtype the callers compute with;
the error names the argument and echoes (the start of) the offending values.

Examples
--------
>>> as_category_array("bits", [0, 1, 1.0], k=2).tolist()
[0, 1, 1]
>>> as_real_array("values", [1, float("nan")])
Traceback (most recent call last):
...
crowdhide.errors.InvalidParameterError: values must be finite, got [nan]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = ["as_category_array", "as_count_vector", "as_real_array"]


def _describe_array(arr: npt.NDArray[Any]) -> str:
    text = np.array2string(arr.ravel()[:6], separator=", ")
    return text if arr.size <= 6 else text[:-1] + ", ...]"


def as_category_array(name: str, values: Any, *, k: int) -> npt.NDArray[np.int64]:
    """Return ``values`` as an int64 array after checking every entry is in ``{0, …, k−1}``.

    Integral floats and booleans are accepted (they come from CSV files and masks).
    """
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not (arr == np.floor(arr)).all():
            raise InvalidParameterError(
                f"{name} must contain integer categories in 0..{k - 1}, "
                f"got non-integral values {_describe_array(arr)}"
            )
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise ParameterTypeError(
            f"{name} must be an array of integer categories, got dtype {arr.dtype} "
            f"({_describe_array(arr)})"
        )
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= k:
            bad = lo if lo < 0 else hi
            raise InvalidParameterError(
                f"{name} must contain categories in 0..{k - 1}, got {bad}", parameter=name
            )
    return arr.astype(np.int64, copy=False)


def as_real_array(name: str, values: Any) -> npt.NDArray[np.float64]:
    """Return ``values`` as a float64 array after checking it is numeric and finite."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iufb":
        raise ParameterTypeError(
            f"{name} must be a numeric array, got dtype {arr.dtype}", parameter=name
        )
    out = arr.astype(np.float64, copy=False)
    if not np.isfinite(out).all():
        raise InvalidParameterError(
            f"{name} must be finite, got {_describe_array(out[~np.isfinite(out)])}", parameter=name
        )
    return out


def as_count_vector(
    name: str, counts: Any, *, length: int | None = None
) -> npt.NDArray[np.float64]:
    """Return a 1-D vector of non-negative counts (as floats) with a positive total."""
    arr = np.asarray(counts)
    if arr.dtype.kind not in "iuf":
        raise ParameterTypeError(
            f"{name} must be a numeric array of counts, got dtype {arr.dtype}", parameter=name
        )
    vec = arr.astype(np.float64)
    if vec.ndim != 1:
        raise InvalidParameterError(
            f"{name} must be one-dimensional, got shape {vec.shape}", parameter=name
        )
    if length is not None and vec.size != length:
        raise InvalidParameterError(
            f"{name} must have length {length}, got length {vec.size}", parameter=name
        )
    if vec.size == 0:
        raise InvalidParameterError(f"{name} must not be empty, got an empty array", parameter=name)
    if not np.isfinite(vec).all() or (vec < 0).any():
        raise InvalidParameterError(
            f"{name} must be finite and non-negative, got {_describe_array(vec)}", parameter=name
        )
    if vec.sum() <= 0:
        raise InvalidParameterError(
            f"{name} must have a positive total, got total {float(vec.sum())!r}", parameter=name
        )
    return vec
