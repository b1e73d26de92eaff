"""The ``crowdhide`` command line: ``crowdhide <area> <verb> [options]``.

Each module of this package (not starting with ``_``) is one area and exposes
``register(app: typer.Typer) -> None``; :func:`build_app` discovers them, so adding an area
never touches this file. Every command takes ``--json``; invalid input ends with one line on
standard error and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence

import typer

__all__ = ["build_app", "main"]

EXIT_USAGE = 2


def build_app() -> typer.Typer:
    """Create the Typer application with every area registered."""
    app = typer.Typer(
        name="crowdhide",
        help="Differential privacy for decentralized and shuffled computation.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
    )

    @app.callback()
    def _root() -> None:
        """Run, hide and certify decentralized computations."""

    package = sys.modules[__name__]
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        area = importlib.import_module(f"{__name__}.{module.name}")
        area.register(app)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdhide`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["--help"]
    app = build_app()
    try:
        result = app(args=args, prog_name="crowdhide", standalone_mode=False)
    except Exception as exc:
        return _handle(exc)
    return int(result) if isinstance(result, int) else 0


def _handle(exc: Exception) -> int:
    """Map an exception to an exit code, printing one line for the user.

    Typer (through click, vendored or not) signals usage errors with exceptions that carry
    ``exit_code`` and ``format_message``; they are recognised by that shape so that the CLI
    works with either flavour of Typer.
    """
    kind = type(exc).__name__
    if kind == "Exit":
        return int(getattr(exc, "exit_code", 0))
    if kind == "Abort":
        typer.echo("crowdhide: aborted", err=True)
        return 1
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        typer.echo(f"crowdhide: error: {_one_line_text(exc.format_message())}", err=True)
        return EXIT_USAGE
    if isinstance(exc, ValueError | TypeError | OSError | KeyError):
        typer.echo(f"crowdhide: error: {_one_line(exc)}", err=True)
        return EXIT_USAGE
    raise exc


def _one_line_text(text: str) -> str:
    return " ".join(str(text).split())


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return _one_line_text(f"{exc.strerror}: {exc.filename}")
    if isinstance(exc, KeyError) and exc.args:
        return _one_line_text(str(exc.args[0]))
    return _one_line_text(str(exc) or type(exc).__name__)
