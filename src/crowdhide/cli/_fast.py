"""``shuffle epsilon``/``delta`` and ``scrambler epsilon``/``delta`` answered without
importing typer (issue 32).

Typer, its click and the conversion of a command's options to click's cost ~30-45 ms of CPU
per process, a fifth of what a k-RR query adds to ``import numpy, scipy.special``. A
command line of one of these commands whose every option is one this module knows, given
once, as ``--name value`` or ``--name=value`` with a value its option accepts, is parsed
here with the parsers the Typer options use (:mod:`crowdhide.cli._values`) and answered by
the same call (:func:`crowdhide.cli._shuffle_answer.answer`,
:func:`crowdhide.cli._scrambler_answer.query`). Anything else — ``--help``, an unknown or
repeated option, a missing or refused value, a value that starts with ``-``, ``--samples``
or ``--seed`` of a scrambler query whose ``--method`` is not Monte-Carlo (Typer refuses
those), shell completion — returns ``None`` and goes through Typer, which then prints its
usual message: a refusal never comes from here, so every message is Typer's.

``tests/cli/test_fast.py`` checks that these tables match the Typer commands' options
(names, defaults, flags, what each value parses to or whether it is refused).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crowdhide.cli._values import (
    MAX_EPSILON,
    MAX_N,
    MAX_SEED,
    MIN_DELTA,
    OptionValueError,
    int_parser,
    real_parser,
)

__all__ = ["COMPLETION_VARIABLE", "QUERY_OPTIONS", "fast_command", "parse_options"]

#: Set (to anything) by shells asking click for completions: Typer answers those.
COMPLETION_VARIABLE = "_CROWDHIDE_COMPLETE"

#: What an option's value becomes: a parser (raises ``OptionValueError``), ``str`` (kept as
#: typed) or ``None`` (a flag: no value, ``True`` when given).
Parser = Callable[[str], Any] | type[str] | None

#: ``shuffle epsilon`` / ``delta`` options in the order of the command's signature (see
#: ``crowdhide.cli.shuffle._query_options``): option -> (parameter, parser, default);
#: ``REQUIRED`` marks an option without a default. The query option (``--delta`` or
#: ``--epsilon``) is added per command in :data:`_COMMANDS`.
REQUIRED = object()
_EPS0 = real_parser(0.0, MAX_EPSILON, True, False)
_N = int_parser(1, MAX_N)
_DOMAIN = int_parser(2, 10**6)
QUERY_OPTIONS: dict[str, tuple[str, Parser, Any]] = {
    "--eps0": ("eps0", _EPS0, REQUIRED),
    "--n": ("n", _N, REQUIRED),
    "--mechanism": ("mechanism", str, None),
    "--d": ("d", _DOMAIN, None),
    "--k": ("k", _DOMAIN, None),
    "--bound": ("bound", str, "best"),
    "--json": ("as_json", None, False),
    "--rounds": ("rounds", int_parser(1, 10**5), 1),
    "--sample-rate": ("sample_rate", real_parser(0.0, 1.0, True, False), 1.0),
    "--relation": ("relation", str, "substitute"),
}
#: ``scrambler epsilon`` / ``delta`` options in signature order (see
#: ``crowdhide.cli.scrambler.epsilon_command``), the query option added after ``--dummies``.
SCRAMBLER_OPTIONS: dict[str, tuple[str, Parser, Any]] = {
    "--targets": ("targets", _N, REQUIRED),
    "--sigma": ("sigma", real_parser(0.0, 1.0, False, False), REQUIRED),
    "--n": ("n", _N, REQUIRED),
    "--dummies": ("dummies", int_parser(0, MAX_N), REQUIRED),
    "--capped": ("capped", None, False),
    "--method": ("method", str, "best"),
    "--samples": ("samples", int_parser(2, 10**6), 5000),
    "--seed": ("seed", int_parser(0, MAX_SEED), 0),
    "--json": ("as_json", None, False),
}
_DELTA = ("--delta", "delta", real_parser(MIN_DELTA, 1.0, False, True))
_EPSILON = ("--epsilon", "epsilon", real_parser(0.0, MAX_EPSILON, False, False))
#: Command -> its query option.
_COMMANDS: dict[tuple[str, str], tuple[str, str, Parser]] = {
    ("shuffle", "epsilon"): _DELTA,
    ("shuffle", "delta"): _EPSILON,
    ("scrambler", "epsilon"): _DELTA,
    ("scrambler", "delta"): _EPSILON,
}
#: Area -> its commands' other options and how many of them precede the query option.
_AREAS: dict[str, tuple[dict[str, tuple[str, Parser, Any]], int]] = {
    "shuffle": (QUERY_OPTIONS, 2),
    "scrambler": (SCRAMBLER_OPTIONS, 4),
}
#: Scrambler options that steer the Monte-Carlo evaluator only: with another ``--method``
#: Typer refuses them (``crowdhide.cli.scrambler._only_for_montecarlo``).
_MONTE_CARLO_ONLY = ("--samples", "--seed")


def command_options(command: tuple[str, str]) -> dict[str, tuple[str, Parser, Any]]:
    """The options of ``command`` (one of :data:`_COMMANDS`), in signature order."""
    flag, name, parse = _COMMANDS[command]
    options, before = _AREAS[command[0]]
    items = list(options.items())
    return dict([*items[:before], (flag, (name, parse, REQUIRED)), *items[before:]])


def parse_options(
    options: Mapping[str, tuple[str, Parser, Any]], args: Sequence[str]
) -> dict[str, Any] | None:
    """The command's keyword arguments as Typer would pass them, or ``None`` when ``args``
    are anything but valid, once-given options of ``options``."""
    values: dict[str, Any] = {}
    at = 0
    while at < len(args):
        flag, eq, value = args[at].partition("=")
        at += 1
        if flag not in options or options[flag][0] in values:
            return None  # not an option of the command, or given twice (click keeps the last)
        name, parse, _default = options[flag]
        if parse is None:  # a flag takes no value
            if eq:
                return None
            values[name] = True
            continue
        if not eq:
            if at == len(args) or args[at].startswith("-"):
                return None  # click would take an option name as the value
            value, at = args[at], at + 1
        try:
            values[name] = value if parse is str else parse(value)
        except OptionValueError:
            return None
    return _with_defaults(options, values)


def _with_defaults(
    options: Mapping[str, tuple[str, Parser, Any]], given: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Every parameter in signature order, defaults for those not given (``None`` if a
    required one is missing). Typer passes a default through the option's parser too; for
    these defaults (``1``, ``1.0``, strings, ``None``) that returns the same value."""
    out: dict[str, Any] = {}
    for name, _parse, default in options.values():
        if name in given:
            out[name] = given[name]
        elif default is REQUIRED:
            return None
        else:
            out[name] = default
    return out


def fast_command(args: Sequence[str]) -> Callable[[], None] | None:
    """The call that answers ``args`` (``crowdhide``'s arguments) without Typer, or
    ``None`` when Typer must handle them."""
    command = (args[0], args[1]) if len(args) >= 2 else None
    if command not in _COMMANDS or COMPLETION_VARIABLE in os.environ:
        return None
    options = command_options(command)
    values = parse_options(options, args[2:])
    if values is None:
        return None
    if command[0] == "scrambler":
        given = {arg.partition("=")[0] for arg in args[2:]}
        if given & set(_MONTE_CARLO_ONLY) and values["method"] not in ("montecarlo", "all"):
            return None
        return lambda: _scrambler_query(values)
    query_name = _COMMANDS[command][1]

    def run() -> None:
        from crowdhide.cli._shuffle_answer import answer

        query = {query_name: values.pop(query_name)}
        answer(query, **values)

    return run


def _scrambler_query(values: dict[str, Any]) -> None:
    # Imported when the query runs: a parse that falls back to Typer loads no more than it.
    from crowdhide.cli._scrambler_answer import query

    query(**values)
