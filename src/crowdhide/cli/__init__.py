"""The ``crowdhide`` command line: ``crowdhide <area> <verb> [options]``.

Each module of this package (not starting with ``_``) is one area and exposes
``register(app: typer.Typer) -> None``; :func:`build_app` discovers them, so adding an area
never touches this file. Every command takes ``--json``; invalid input ends with one line on
standard error and exit code 2, never a traceback.

Exit codes: 0 success; 2 invalid input (one line naming the option); 3 a privacy target was
not met (unless ``--allow-unmet``); 4 a round of a tls run overran its fixed length; 5 a tls
run lost a node or frames (``--on-missing fail``); 130 interrupted (Ctrl-C); 143
terminated (SIGTERM, while tls hosts run or a coordinator drives node daemons); 1 a bug in
crowdhide (traceback and a request to report it).
User errors are the :mod:`crowdhide.errors` classes, click's usage errors, ``ValueError`` raised
by crowdhide's own validation, and errors opening the user's files. Anything else is a bug and
is never disguised as bad input.

``crowdhide --version`` prints the version; ``--install-completion`` / ``--show-completion``
(Typer's) install or print tab completion for bash, zsh, fish or PowerShell.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import pkgutil
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._options import (
    EXIT_BUG,
    EXIT_CODES_HELP,
    EXIT_NODE_FAILURE,
    EXIT_OVERRUN,
    EXIT_UNMET,
    EXIT_USAGE,
)
from crowdhide.cli._output import COMMAND_LINE
from crowdhide.errors import (
    CrowdhideError,
    NodeFailureError,
    RoundOverrunError,
    UnmetTargetError,
)

__all__ = ["build_app", "entry", "main"]

#: Where crowdhide's own modules live: a ``ValueError`` raised here is input validation.
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
#: File errors that always concern a path the user gave.
_PATH_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


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
        area = importlib.import_module(f"{__name__}.{name}")
        area.register(app)
    return app


def _print_version(value: bool) -> None:
    if value:
        from crowdhide import __version__

        typer.echo(f"crowdhide {__version__}")
        raise typer.Exit(0)


def _area_names() -> list[str]:
    """The area modules of this package, sorted."""
    package = sys.modules[__name__]
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdhide`` console script; returns the exit code.

    Parameters
    ----------
    argv
        The arguments (``None``: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 success, 2 invalid input, 3 target not met, 4 a tls round overran,
        5 a tls node died or frames were lost, 130 Ctrl-C, 143 SIGTERM during a tls
        run, 1 a bug in crowdhide.

    See Also
    --------
    entry : The console script, which exits with this code.
    build_app : The application it runs.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["--help"]
    command = typer.main.get_command(_app_for(args))
    _plain_help(command)
    token = COMMAND_LINE.set(("crowdhide", *args))
    try:
        result = command.main(args=args, prog_name="crowdhide", standalone_mode=False)
    except KeyboardInterrupt:
        return _interrupted()
    except SystemExit as exc:  # SIGTERM during a tls run (backends.tls._signals.Terminated)
        if not hasattr(exc, "reason"):
            raise
        return _interrupted(exc)
    except Exception as exc:
        return _handle(exc, args)
    finally:
        COMMAND_LINE.reset(token)
    if result == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into Exit(130), returned here
        return _interrupted()
    return int(result) if isinstance(result, int) else 0


def entry() -> None:
    """The ``crowdhide`` console script and ``python -m crowdhide``: :func:`main`, then exit.

    After Ctrl-C under the Ray backend the process leaves without finalizing the
    interpreter: Ray's C++ core worker can crash (SIGSEGV) in its exit handlers once a run
    was interrupted while its workers were up (seen in 1 of 3 CI runs), which turned the
    documented exit 130 into a crash. crowdhide's own files are closed by then; standard
    output and error are flushed first.

    See Also
    --------
    main : The same, returning the exit code instead of exiting.
    """
    code = main()
    if code == EXIT_INTERRUPTED and "ray" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


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


def _handle(exc: Exception, args: Sequence[str] = ()) -> int:
    """Map an exception to an exit code, printing one line for the user (or a bug report).

    Typer (through click, vendored or not) signals usage errors with exceptions that carry
    ``exit_code`` and ``format_message``; they are recognised by that shape so that the CLI
    works with either flavour of Typer.
    """
    kind = type(exc).__name__
    if kind == "Exit":
        code = int(getattr(exc, "exit_code", 0))
        return _interrupted() if code == EXIT_INTERRUPTED else code
    if kind == "InterruptException" or isinstance(exc.__context__, KeyboardInterrupt):
        # Ctrl-C inside DuckDB (the exact answer) arrives as its InterruptException.
        return _interrupted()
    if kind == "Abort":
        typer.echo("crowdhide: aborted", err=True)
        return 1
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        typer.echo(f"crowdhide: error: {_one_line_text(exc.format_message())}", err=True)
        return EXIT_USAGE
    if isinstance(exc, UnmetTargetError):
        typer.echo(f"crowdhide: TARGET NOT MET: {_one_line(exc)}", err=True)
        return EXIT_UNMET
    if isinstance(exc, RoundOverrunError):
        typer.echo(f"crowdhide: ROUND OVERRUN: {_one_line(exc)}", err=True)
        return EXIT_OVERRUN
    if isinstance(exc, NodeFailureError):
        typer.echo(f"crowdhide: NODE FAILURE: {_one_line(exc)}", err=True)
        return EXIT_NODE_FAILURE
    if _is_user_error(exc):
        typer.echo(f"crowdhide: error: {_as_option(_one_line(exc), args)}", err=True)
        return EXIT_USAGE
    return _report_bug(exc)


#: Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _interrupted(exc: BaseException | None = None) -> int:
    """One line, no traceback: the user stopped the command (Ctrl-C: exit 130; SIGTERM
    while tls hosts ran: ``exc`` carries its ``reason`` and ``exit_code``, 143)."""
    reason = getattr(exc, "reason", "interrupted (Ctrl-C)")
    typer.echo(f"crowdhide: {reason}; files already written are incomplete", err=True)
    return int(getattr(exc, "exit_code", EXIT_INTERRUPTED))


def _as_option(text: str, args: Sequence[str]) -> str:
    """``k must be <= 9, got 10`` -> ``--k must be ...`` when the command line has ``--k``:
    library messages name their parameters, the user typed options.

    >>> _as_option("n_max must be > n_min", ["plot", "--n-max", "10"])
    '--n-max must be > n_min'
    >>> _as_option("bound must be one of a, b; got 'x'", ["--eps0", "1"])
    "bound must be one of a, b; got 'x'"
    """
    word = text.split(" ", 1)[0]
    if not word.isidentifier():
        return text
    option = "--" + word.replace("_", "-")
    if any(a == option or a.startswith(option + "=") for a in args):
        return option + text[len(word) :]
    return text


def _is_user_error(exc: Exception) -> bool:
    """Whether ``exc`` is about the user's input (exit 2) rather than a bug in crowdhide."""
    if isinstance(exc, CrowdhideError):
        return True
    if isinstance(exc, _PATH_ERRORS) or (isinstance(exc, OSError) and exc.filename):
        return True
    if type(exc) is ValueError:
        # crowdhide's modules validate with ValueError; the same class escaping numpy, scipy
        # or duckdb means crowdhide passed them something it should have refused: a bug.
        frames = traceback.extract_tb(exc.__traceback__)
        return bool(frames) and frames[-1].filename.startswith(_PACKAGE_DIR)
    return False


def _report_bug(exc: Exception) -> int:
    traceback.print_exception(exc, file=sys.stderr)
    typer.echo(
        "crowdhide: internal error (a bug in crowdhide, not a problem with your input): "
        "please report it with the command line and the traceback above.",
        err=True,
    )
    return EXIT_BUG


def _one_line_text(text: str) -> str:
    return " ".join(str(text).split())


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return _one_line_text(f"{exc.strerror}: {exc.filename}")
    if isinstance(exc, KeyError) and exc.args:
        return _one_line_text(str(exc.args[0]))
    return _one_line_text(str(exc) or type(exc).__name__)
