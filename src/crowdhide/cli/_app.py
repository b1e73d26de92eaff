"""The Typer application of the command line: every area registered, or only the one a
command needs (issue 32, start-up), with help text made plain.

Each module of :mod:`crowdhide.cli` not starting with ``_`` is one area and exposes
``register(app: typer.Typer) -> None``; :func:`build_app` discovers them, so adding an area
never touches this file. :func:`crowdhide.cli.main` runs the application (or, for the
commonest queries, :mod:`crowdhide.cli._fast` without it).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from crowdhide.cli._values import EXIT_CODES_HELP

__all__ = ["build_app"]

#: The package whose modules are the areas.
_PACKAGE = "crowdhide.cli"


def build_app(areas: Sequence[str] | None = None) -> typer.Typer:
    """Create the Typer application with every area registered (or only ``areas``).

    Parameters
    ----------
    areas
        Names of the command areas to register (``None``: all of them).

    Returns
    -------
    typer.Typer
        The application.

    See Also
    --------
    main : Runs it on an argument list.
    """
    app = typer.Typer(
        name="crowdhide",
        help="Differential privacy for decentralized and shuffled computation.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
        epilog=EXIT_CODES_HELP,
    )

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option(
                "--version",
                help="Print crowdhide's version and exit.",
                is_eager=True,
                callback=_print_version,
            ),
        ] = False,
    ) -> None:
        """Run, hide and certify decentralized computations."""
        del version  # handled by its eager callback

    for name in _area_names() if areas is None else areas:
        area = importlib.import_module(f"{_PACKAGE}.{name}")
        area.register(app)
    return app


def _print_version(value: bool) -> None:
    if value:
        from crowdhide import __version__

        typer.echo(f"crowdhide {__version__}")
        raise typer.Exit(0)


def _area_names() -> list[str]:
    """The area modules of this package, sorted."""
    package = sys.modules[_PACKAGE]
    found = (m.name for m in pkgutil.iter_modules(package.__path__))
    return sorted(name for name in found if not name.startswith("_"))


def _app_for(args: Sequence[str]) -> typer.Typer:
    """The application that runs ``args``.

    When the command's first word is an area module that registers a command or group of
    that name, only that area is imported and converted to click commands (start-up time:
    the other areas' options are never built); a command that no area module is named after
    (``--help``, a typo, ``local``) gets every area. Behaviour is the same either way.
    """
    first = args[0] if args else ""
    if first in _area_names():
        app = build_app([first])
        provided = {g.name for g in app.registered_groups}
        provided |= {c.name for c in app.registered_commands}
        if first in provided:
            if len(args) > 1:
                _only_command(app, first, args[1])
            return app
    return build_app()


def _only_command(app: typer.Typer, area: str, verb: str) -> None:
    """Keep only the command ``verb`` in the group ``area`` of ``app`` (a fresh application),
    when the group has a command of exactly that name and no subgroups: converting a command's
    options to click's costs ~5 ms each (``shuffle`` has four; issue 32, start-up), and the
    others are never run. The group's Typer object is shared by every application, so it is
    copied, not changed. Anything else (``--help``, a typo, a subgroup) keeps the whole group:
    its listing and its "no such command" error are the same as ever.
    """
    for at, info in enumerate(app.registered_groups):
        group = info.typer_instance
        if info.name != area or group is None or group.registered_groups:
            continue
        chosen = [c for c in group.registered_commands if c.name == verb]
        if len(chosen) != 1:
            return
        trimmed = copy.copy(group)
        trimmed.registered_commands = chosen
        trimmed_info = copy.copy(info)
        trimmed_info.typer_instance = trimmed
        app.registered_groups[at] = trimmed_info


def _plain_help(command: Any) -> None:
    """Help text is text: ``[privacy]`` is escaped from rich markup (it vanished), the lines
    of a paragraph flow (rich mode kept the docstring's line breaks) and flags show no
    ``<bool>`` value (they take none); walks every subcommand."""
    escape = _escape_markup
    for attr in ("help", "epilog", "short_help"):
        if isinstance(getattr(command, attr, None), str):
            setattr(command, attr, _flow(escape(getattr(command, attr))))
    params = list(getattr(command, "params", []))
    # The context class of the command's own click (Typer may vendor click).
    help_option = command.get_help_option(command.context_class(command))
    for param in [*params, *([help_option] if help_option is not None else [])]:
        if isinstance(getattr(param, "help", None), str):
            param.help = escape(param.help)
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


#: What rich reads as a markup tag: ``[`` then a letter, ``#``, ``/`` or ``@``, up to the
#: next ``]`` with no ``[`` between, with the backslashes before it.
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?\])")


def _escape_markup(text: str) -> str:
    r"""``text`` with every rich markup tag escaped (rich's ``markup.escape``, without
    importing rich: every command runs this on its help, and rich costs ~20 ms of start-up;
    a help output imports rich itself): a backslash before each tag's ``[`` with the
    backslashes already before it doubled, and a lone trailing backslash doubled.

    >>> print(_escape_markup("[privacy] and \\[bold] [1] \\"))
    \[privacy] and \\\[bold] [1] \\
    """
    out = _MARKUP_TAG.sub(lambda m: f"{m.group(1) * 2}\\{m.group(2)}", text)
    return out + "\\" if out.endswith("\\") and not out.endswith("\\\\") else out


def _flow(text: str) -> str:
    """Join the lines of each paragraph (paragraphs are separated by blank lines).

    >>> _flow("a\\nb\\n\\nc")
    'a b\\n\\nc'
    """
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split("\n")) for p in paragraphs)
