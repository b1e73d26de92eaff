"""Options, ranges and checks shared by every command.

Every numeric option is declared through :func:`real_option` or :func:`int_option`: the range
is printed in ``--help`` and checked while the command line is parsed, before any work, with
click's one-line message naming the option and echoing the value (exit code 2). The ranges
are the documented limits of the CLI: beyond them a computation would overflow, exhaust memory
or run for hours.

Privacy targets go through :func:`finish_target`: the JSON carries ``target_met``, the table
ends with a line nobody can miss, and the process exits with :data:`EXIT_UNMET` unless the
user passed ``--allow-unmet``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._values import (
    MAX_EPSILON,
    MAX_SEED,
    MIN_DELTA,
    OptionValueError,
    int_parser,
    range_text,
    real_parser,
)
from crowdhide.errors import (
    CrowdhideError,
    InvalidParameterError,
    OutputPathError,
    ParameterTypeError,
    UnmetTargetError,
)

__all__ = [
    "AllowUnmetFlag",
    "check_output_dir",
    "check_output_file",
    "finish_target",
    "int_option",
    "option_names",
    "output_path",
    "real_option",
]


def _typer_parser(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` for a Typer option: its :class:`OptionValueError` becomes click's
    ``BadParameter`` with the same message (click names the option and exits 2)."""

    def typer_parse(text: str) -> Any:
        try:
            return parse(text)
        except OptionValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return typer_parse


def real_option(
    name: str,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> Any:
    """A ``typer.Option`` for a finite real in a documented range (shown in ``--help``)."""
    rng = range_text(low, high, low_open, high_open)
    return typer.Option(
        name,
        parser=_typer_parser(real_parser(low, high, low_open, high_open)),
        metavar="<float>",
        help=f"{help} Range: {rng}.",
    )


def int_option(name: str, help: str, *, low: int | None = None, high: int | None = None) -> Any:
    """A ``typer.Option`` for an integer in a documented range (``1e6`` is accepted)."""
    rng = range_text(low, high, False, False)
    return typer.Option(
        name,
        parser=_typer_parser(int_parser(low, high)),
        metavar="<int>",
        help=f"{help} Range: {rng}.",
    )


def epsilon_option(name: str = "--epsilon", help: str = "Target ε.", *, zero: bool = False) -> Any:
    """ε-like option: (0, 50] (``zero=True``: [0, 50])."""
    return real_option(name, help, low=0.0, high=MAX_EPSILON, low_open=not zero)


def delta_option(name: str = "--delta", help: str = "Target δ.") -> Any:
    """δ option: [1e-300, 1)."""
    return real_option(name, help, low=MIN_DELTA, high=1.0, high_open=True)


def seed_option(help: str = "Random seed.") -> Any:
    """``--seed``: a non-negative integer."""
    return int_option("--seed", help, low=0, high=MAX_SEED)


#: ``--allow-unmet``: exit 0 even when the certified privacy is weaker than the target.
AllowUnmetFlag = Annotated[
    bool,
    typer.Option(
        "--allow-unmet",
        help="Exit 0 even if the certified privacy is weaker than the target "
        "(default: exit code 3). The output still says target_met: false.",
    ),
]


def finish_target(met: bool | None, detail: str, *, allow_unmet: bool, as_json: bool) -> None:
    """After the output: flag an unmet target (table line, stderr) and exit 3 unless allowed.

    ``met`` is ``None`` when the command had no target (nothing to report).
    """
    if met is None or met:
        return
    if not as_json:
        from rich.console import Console

        Console().print(
            f"[bold red]✗ TARGET NOT MET: {detail}[/bold red]"
            + ("" if allow_unmet else " (exit code 3; --allow-unmet accepts it)")
        )
    if allow_unmet:
        typer.echo(f"crowdhide: warning: target not met (--allow-unmet): {detail}", err=True)
        return
    raise UnmetTargetError(detail)


def output_path(value: str | Path) -> Path:
    """Parser of every path option that is written to (``parser=output_path``).

    ``Path("")`` is the current folder: an empty value is refused while it can still be
    told apart from ``.`` (a user who means the current folder types ``.``).
    """
    if isinstance(value, Path):  # a default, not typed by the user
        return value
    if not value.strip():
        raise typer.BadParameter(f"must not be empty, got {value!r} (use '.' for this folder)")
    return Path(value)


def check_output_file(path: Path, *, option: str = "--out", suffixes: tuple[str, ...] = ()) -> Path:
    """Fail fast (exit 2) if ``path`` cannot be written as a file; return it unchanged.

    With ``suffixes`` the file name must end in one of them (the format follows the name).
    """
    if path.is_dir():
        raise OutputPathError(f"{option} must be a file, got the directory {str(path)!r}")
    if suffixes and not path.name.lower().endswith(suffixes):
        raise OutputPathError(
            f"{option} must end in one of {', '.join(suffixes)}, got {str(path)!r}"
        )
    _check_parent_writable(path.parent, path, option)
    return path


def check_output_dir(path: Path, *, option: str = "--out") -> Path:
    """Fail fast (exit 2) if ``path`` cannot be used (or created) as a directory."""
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{option} must be a directory, got the file {str(path)!r}")
    _check_parent_writable(path, path, option)
    return path


def _check_parent_writable(folder: Path, path: Path, option: str) -> None:
    """The nearest existing ancestor of ``folder`` must be a writable directory."""
    probe = folder if str(folder) else Path(".")
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise OutputPathError(f"{option}: {str(probe)!r} is not a directory (in {str(path)!r})")
    if not os.access(probe, os.W_OK | os.X_OK) or not _can_create_in(probe):
        raise OutputPathError(f"{option}: directory {str(probe)!r} is not writable")


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be created in ``folder``: tried, since ``os.access`` says yes to
    root everywhere (``/proc``, read-only mounts)."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


@contextmanager
def option_names(mapping: Mapping[str, str]) -> Iterator[None]:
    """Say which CLI option a library validation message is about.

    Library functions name their own parameters (``delta_slack must be ...``); when a command
    feeds one option into several of them, ``mapping`` (library name -> option) rewrites the
    message to ``--delta (delta_slack) must be ...``.
    """
    try:
        yield
    except (CrowdhideError, ValueError, TypeError) as exc:
        if isinstance(exc, UnmetTargetError) or (
            isinstance(exc, TypeError) and not isinstance(exc, ParameterTypeError)
        ):
            raise
        text = str(exc)
        for name, option in mapping.items():
            if text.startswith(f"{name} ") and not text.startswith(option):
                rest = text[len(name) + 1 :]
                raise InvalidParameterError(
                    f"{option} ({name}) {rest}", parameter=name, value=getattr(exc, "value", None)
                ) from exc
        raise
