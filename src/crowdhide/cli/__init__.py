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

import errno
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from crowdhide._lazy import lazy_names
from crowdhide.cli._emit import COMMAND_LINE
from crowdhide.cli._fast import fast_command
from crowdhide.cli._values import (
    EXIT_BUG,
    EXIT_NODE_FAILURE,
    EXIT_OVERRUN,
    EXIT_UNMET,
    EXIT_USAGE,
)
from crowdhide.errors import (
    CrowdhideError,
    NodeFailureError,
    RoundOverrunError,
    UnmetTargetError,
)

if TYPE_CHECKING:  # at run time loaded on first access (typer: not for the fast path)
    from crowdhide.cli._app import _app_for as _app_for
    from crowdhide.cli._app import _escape_markup as _escape_markup
    from crowdhide.cli._app import build_app as build_app

__all__ = ["build_app", "entry", "main"]

#: Names of :mod:`crowdhide.cli._app` (it imports typer), loaded on first access: the
#: queries of :mod:`crowdhide.cli._fast` start without typer (issue 32).
_LAZY = dict.fromkeys(("build_app", "_app_for", "_escape_markup"), "crowdhide.cli._app")
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

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
    fast = fast_command(args)
    if fast is not None:
        return _run_fast(fast, args)
    from typer.main import get_command

    from crowdhide.cli._app import _app_for, _plain_help

    command = get_command(_app_for(args))
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


def _run_fast(run: Callable[[], None], args: Sequence[str]) -> int:
    """Run a query of :mod:`crowdhide.cli._fast`: what :func:`main` does around Typer's
    ``command.main`` plus what Typer's ``main`` does around the command (``typer.core._main``:
    Ctrl-C is exit 130, ``EOFError`` a blank line on stderr then "aborted", a broken pipe
    exit 1 with both streams quietened), so exit codes and messages are the same."""
    token = COMMAND_LINE.set(("crowdhide", *args))
    try:
        run()
    except KeyboardInterrupt:
        return _interrupted()
    except EOFError:
        import typer

        typer.echo(err=True)
        return _handle(typer.Abort(), args)
    except SystemExit as exc:
        if not hasattr(exc, "reason"):
            raise
        return _interrupted(exc)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            return _handle(exc, args)
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    except Exception as exc:
        return _handle(exc, args)
    finally:
        COMMAND_LINE.reset(token)
    return 0


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


def _handle(exc: Exception, args: Sequence[str] = ()) -> int:
    """Map an exception to an exit code, printing one line for the user (or a bug report).

    Typer (through click, vendored or not) signals usage errors with exceptions that carry
    ``exit_code`` and ``format_message``; they are recognised by that shape so that the CLI
    works with either flavour of Typer.
    """
    import typer

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
    import typer

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
    import typer

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
