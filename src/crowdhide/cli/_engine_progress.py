"""Progress display for long commands (rich, on standard error, only on a terminal).

Every command that can take more than about two seconds shows progress through these helpers
unless ``--json`` is given or standard error is not a terminal (pipes and logs stay clean, and
the one-line error contract holds there).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["progress_wanted", "spinner", "stage_progress", "with_spinner"]

T = TypeVar("T")


def progress_wanted(as_json: bool) -> bool:
    """Show progress: not with ``--json``, and only when standard error is a terminal."""
    if as_json:
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


@contextmanager
def stage_progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """Yield a ``progress(stage, done, total)`` callback drawing a bar per stage."""
    if not enabled or not progress_wanted(False):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as bar:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


@contextmanager
def spinner(enabled: bool, text: str) -> Iterator[None]:
    """A spinner with elapsed time on standard error while the block runs."""
    if not enabled or not progress_wanted(False):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        progress.add_task(text, total=None)
        yield


def with_spinner(enabled: bool, text: str, func: Callable[[], T]) -> T:
    """Call ``func()`` under :func:`spinner`."""
    with spinner(enabled, text):
        return func()
