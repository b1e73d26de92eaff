"""Display helpers shared by the reproductions (internal): log-scale formatting and a progress
display on stderr. Files are written by :mod:`crowdhide._output`."""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

__all__ = ["Progress", "fmt_log10", "legend_below", "log10_of_log", "plain_log_ticks", "progress"]


def log10_of_log(log_value: float) -> float:
    """``log10`` of a value given by its natural log (``-inf`` stays ``-inf``).

    Examples
    --------
    >>> log10_of_log(math.log(1e-300))
    -300.0
    """
    return log_value / math.log(10.0) if log_value > -math.inf else -math.inf


def fmt_log10(log10_value: float) -> str:
    """A value given by its ``log10`` as ``m.mme±x`` (``"0"`` for ``-inf``), so values below
    the smallest double (1e-308) print as well.

    Examples
    --------
    >>> fmt_log10(-351.75), fmt_log10(-math.inf)
    ('1.78e-352', '0')
    """
    if log10_value == -math.inf:
        return "0"
    if not math.isfinite(log10_value):
        return "n/a"
    exponent = math.floor(log10_value)
    mantissa = 10 ** (log10_value - exponent)
    if round(mantissa, 2) >= 10.0:  # 9.999 would print as 10e-x
        mantissa, exponent = mantissa / 10.0, exponent + 1
    return f"{mantissa:.3g}e{exponent:+d}"


class Progress(Protocol):
    """What :func:`progress` yields: ``advance(text)`` after each step."""

    def advance(self, text: str = "") -> None:
        """Mark one step done; ``text`` says which."""


class _Silent:
    def advance(self, text: str = "") -> None:
        return None


class _RichSteps:
    def __init__(self, bar: Any, task: Any) -> None:
        self._bar, self._task = bar, task

    def advance(self, text: str = "") -> None:
        self._bar.update(self._task, advance=1, description=text or None)


@contextlib.contextmanager
def progress(label: str, total: int) -> Iterator[Progress]:
    """A progress bar on stderr (rich) with ``total`` steps, shown only on a terminal so that
    captured output and logs stay clean."""
    if not sys.stderr.isatty():
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        yield _RichSteps(bar, bar.add_task(label, total=total))


def legend_below(ax: Any, *, ncol: int = 2, fontsize: float = 7) -> None:
    """The panel's legend under its x label, never over its data."""
    ax.legend(
        fontsize=fontsize,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=ncol,
        frameon=False,
    )


def save_with_legend_below(
    fig: Any, ax: Any, path: Path, *, title: str, ncol: int, bottom: float
) -> Path:
    """Save ``fig`` with ``ax``'s legend once under all panels (never over data) and one
    title (``e-0N`` exponents printed as ``e-N``); the bottom ``bottom`` of the figure is kept
    for the legend. Returns ``path``."""
    import matplotlib.pyplot as plt

    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.suptitle(title.replace("e-0", "e-"), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plain_log_ticks(axis: Any) -> None:
    """Label a log axis at 1, 2, 5 × 10^k in plain numbers, without minor labels: over less
    than two decades matplotlib's minor labels (2×10³, 3×10³, ...) run into each other."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
