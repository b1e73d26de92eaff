"""JSON-safe conversion shared by the CLI and the plan runner (no layer above this one)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, paths and non-finite floats into JSON-safe values.

    Non-finite floats (``inf``, ``nan``) become ``None``: JSON has no infinity, and every
    record that can hold one also has a ``valid`` flag or a note saying why.

    numpy is not imported for this: while it is not loaded no numpy value can exist, and the
    command line's start-up stays free of it.

    Examples
    --------
    >>> import numpy as np
    >>> jsonable({"eps": float("inf"), "n": np.int64(3), "xs": np.array([0.5])})
    {'eps': None, 'n': 3, 'xs': [0.5]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)
