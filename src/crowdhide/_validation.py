"""Parameter validation shared by every public function.

Every public entry point of crowdhide validates its inputs with these helpers so that an
invalid value always raises :class:`~crowdhide.errors.InvalidParameterError` (a
:class:`ValueError`: wrong value) or :class:`~crowdhide.errors.ParameterTypeError` (a
:class:`TypeError`: wrong type) whose message names the parameter and echoes the offending
value. The command line turns
those exceptions into a one-line message and exit code 2.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "as_rng",
    "check_bool",
    "check_int",
    "check_positive_int",
    "check_probability",
    "check_real",
]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking type, finiteness and range.

    Parameters
    ----------
    name
        Parameter name used in error messages.
    value
        Value to check; ``bool`` is rejected even though it is an ``int``.
    low, high
        Optional bounds, closed unless ``low_open`` / ``high_open``.
    allow_inf
        Accept ``+inf`` (``-inf`` and NaN are always rejected).

    Examples
    --------
    >>> check_real("epsilon", 1)
    1.0
    >>> check_real("epsilon", -1.0, low=0.0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: epsilon must be >= 0.0, got -1.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"{name} must be a real number, got {_describe(value)}", parameter=name, value=value
        )
    result = float(value)
    if math.isnan(result):
        raise InvalidParameterError(
            f"{name} must not be NaN, got {_describe(value)}", parameter=name, value=value
        )
    if math.isinf(result) and not (allow_inf and result > 0):
        raise InvalidParameterError(
            f"{name} must be finite, got {_describe(value)}", parameter=name, value=value
        )
    if low is not None:
        if low_open and not result > low:
            raise InvalidParameterError(
                f"{name} must be > {low}, got {_describe(value)}", parameter=name, value=value
            )
        if not low_open and not result >= low:
            raise InvalidParameterError(
                f"{name} must be >= {low}, got {_describe(value)}", parameter=name, value=value
            )
    if high is not None:
        if high_open and not result < high:
            raise InvalidParameterError(
                f"{name} must be < {high}, got {_describe(value)}", parameter=name, value=value
            )
        if not high_open and not result <= high:
            raise InvalidParameterError(
                f"{name} must be <= {high}, got {_describe(value)}", parameter=name, value=value
            )
    return result


def check_probability(
    name: str, value: Any, *, allow_zero: bool = True, allow_one: bool = True
) -> float:
    """Return ``value`` as a float in [0, 1] (ends optionally excluded).

    Examples
    --------
    >>> check_probability("delta", 1e-300, allow_zero=False, allow_one=False)
    1e-300
    >>> check_probability("delta", 0.0, allow_zero=False)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: delta must be > 0.0, got 0.0
    """
    return check_real(
        name, value, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one
    )


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking type and range.

    Integral floats such as ``1e9`` are accepted because command lines and configuration
    files produce them; non-integral values are rejected.

    Examples
    --------
    >>> check_int("n", 1e9, low=1)
    1000000000
    >>> check_int("n", 2.5)
    Traceback (most recent call last):
    ...
    crowdhide.errors.ParameterTypeError: n must be an integer, got 2.5
    """
    if isinstance(value, bool):
        raise ParameterTypeError(
            f"{name} must be an integer, got {_describe(value)}", parameter=name, value=value
        )
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        result = int(float(value))
    else:
        raise ParameterTypeError(
            f"{name} must be an integer, got {_describe(value)}", parameter=name, value=value
        )
    if low is not None and result < low:
        raise InvalidParameterError(
            f"{name} must be >= {low}, got {_describe(value)}", parameter=name, value=value
        )
    if high is not None and result > high:
        raise InvalidParameterError(
            f"{name} must be <= {high}, got {_describe(value)}", parameter=name, value=value
        )
    return result


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an ``int`` >= 1."""
    return check_int(name, value, low=1)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a ``bool``; raise :class:`TypeError` otherwise."""
    if not isinstance(value, bool | np.bool_):
        raise ParameterTypeError(
            f"{name} must be a bool, got {_describe(value)}", parameter=name, value=value
        )
    return bool(value)


def as_rng(rng: Any) -> np.random.Generator:
    """Turn ``rng`` (a Generator, an integer seed or ``None``) into a Generator.

    Examples
    --------
    >>> g = as_rng(7)
    >>> isinstance(g, np.random.Generator)
    True
    >>> as_rng("seed")
    Traceback (most recent call last):
    ...
    crowdhide.errors.ParameterTypeError: rng must be a numpy.random.Generator, an integer seed or
    None, got 'seed'
    >>> as_rng(-1)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: rng (seed) must be >= 0, got -1
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        if rng is not None and int(rng) < 0:
            # numpy's own message ("expected non-negative integer") names no parameter.
            raise InvalidParameterError(
                f"rng (seed) must be >= 0, got {_describe(rng)}", parameter="rng", value=rng
            )
        return np.random.default_rng(None if rng is None else int(rng))
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise ParameterTypeError(
        f"rng must be a numpy.random.Generator, an integer seed or None, got {_describe(rng)}",
        parameter="rng",
        value=rng,
    )
