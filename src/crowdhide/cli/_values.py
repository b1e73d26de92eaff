"""Exit codes, ranges and option-value parsers of the command line, without typer.

The commonest queries are answered without importing typer (issue 32: start-up; see
:mod:`crowdhide.cli._fast`), so what they share with the Typer commands lives here:
:mod:`crowdhide.cli._options` wraps these parsers into Typer options (an
:class:`OptionValueError` becomes click's ``BadParameter`` with the same message); the
exit codes and ranges are imported from here, by every module.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = [
    "EXIT_BUG",
    "EXIT_CODES_HELP",
    "EXIT_NODE_FAILURE",
    "EXIT_OK",
    "EXIT_OVERRUN",
    "EXIT_UNMET",
    "EXIT_USAGE",
    "MAX_EPSILON",
    "MAX_N",
    "MAX_SEED",
    "MIN_DELTA",
    "OptionValueError",
    "int_parser",
    "range_text",
    "real_parser",
]

EXIT_OK = 0
#: A bug in crowdhide: traceback plus a request to report it.
EXIT_BUG = 1
#: Invalid input: one line on standard error naming the option and echoing the value.
EXIT_USAGE = 2
#: A run, plan or calibration certifies less privacy than its target (see ``--allow-unmet``).
EXIT_UNMET = 3
#: A tls run's round did not fit its fixed length (``--round-seconds``): reported, never
#: absorbed by stretching the round.
EXIT_OVERRUN = 4
#: A tls run lost a node daemon or frames (``--on-missing fail``): one line naming the dead
#: nodes and the links that lost frames.
EXIT_NODE_FAILURE = 5

EXIT_CODES_HELP = (
    "Exit codes: 0 success · 2 invalid input (one line naming the option) · "
    "3 privacy target not met (pass --allow-unmet to exit 0) · 4 a tls round overran "
    "its fixed length (raise --round-seconds) · 5 a tls node died or frames were lost · "
    "130 interrupted (Ctrl-C) · 143 terminated (SIGTERM) · 1 bug in crowdhide "
    "(traceback; please report it)."
)

#: Largest ε / ε0 accepted anywhere on the command line (e^50 ≈ 5e21: beyond, no privacy).
MAX_EPSILON = 50.0
#: Smallest δ accepted (the numerics work in log space down to 1e-300).
MIN_DELTA = 1e-300
#: Largest population (users, sources, rows of a sum) the accountants are built for.
MAX_N = 10**9
#: Largest seed (numpy seeds are non-negative integers).
MAX_SEED = 10**18


class OptionValueError(ValueError):
    """A command-line value outside its option's type or range; the message is click's
    ``BadParameter`` text (``must be in (0, 50], got 51``)."""


def _fmt(value: float) -> str:
    """Short range ends for help texts: 1e9 rather than 1000000000."""
    if isinstance(value, int) and abs(value) >= 10**6:
        return f"{value:.3g}".replace("e+0", "e").replace("e+", "e")
    return f"{value:g}" if isinstance(value, float) else str(value)


def range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    """An interval as help texts and messages show it.

    >>> range_text(0.0, 50.0, True, False), range_text(1, 10**9, False, False)
    ('(0, 50]', '[1, 1e9]')
    """
    lo = "-inf" if low is None else _fmt(low)
    hi = "inf" if high is None else _fmt(high)
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    return f"{left}{lo}, {hi}{right}"


def real_parser(
    low: float | None, high: float | None, low_open: bool, high_open: bool
) -> Callable[[str], float]:
    """Parser of a finite real in a range; raises :class:`OptionValueError`.

    >>> parse = real_parser(0.0, 50.0, True, False)
    >>> parse(" 1e-1 "), parse(50.0)
    (0.1, 50.0)
    >>> parse("0")
    Traceback (most recent call last):
    ...
    crowdhide.cli._values.OptionValueError: must be in (0, 50], got 0
    """
    text_range = range_text(low, high, low_open, high_open)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise OptionValueError(f"expected a real number, got {text!r}") from None
        ok = math.isfinite(value)
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            raise OptionValueError(f"must be in {text_range}, got {text}")
        return value

    return parse


def int_parser(low: int | None, high: int | None) -> Callable[[str], int]:
    """Parser of an integer in a range (``1e6`` and ``4.0`` are accepted); raises
    :class:`OptionValueError`.

    >>> parse = int_parser(1, 10**9)
    >>> parse("1e3"), parse("1_000"), parse(7)
    (1000, 1000, 7)
    >>> parse("1.5")
    Traceback (most recent call last):
    ...
    crowdhide.cli._values.OptionValueError: expected an integer, got '1.5'
    """
    text_range = range_text(low, high, False, False)

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if not (math.isfinite(number) and number.is_integer()):
                raise OptionValueError(f"expected an integer, got {text!r}") from None
            value = int(number)
        if (low is not None and value < low) or (high is not None and value > high):
            raise OptionValueError(f"must be in {text_range}, got {text}")
        return value

    return parse
