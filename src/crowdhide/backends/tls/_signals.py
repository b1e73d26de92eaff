"""SIGTERM as an exception while a tls run is live (the spawned-hosts driver and the
coordinator of node daemons share it).

SIGTERM's default action kills the process on the spot: a driver's hosts would finish their
round before noticing, a coordinator's daemons would only learn it from a closed socket, and
the user would get no line and no documented exit code. While a run is live, SIGTERM raises
:class:`Terminated` instead, so the run unwinds as on Ctrl-C and the CLI prints one line and
exits 143.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any

__all__ = ["Terminated", "interrupted", "release_sigterm", "trap_sigterm"]


class Terminated(SystemExit):
    """SIGTERM reached the process while a tls run was live: the process exits (code 143,
    what a shell reports for a job ended by SIGTERM) after the run unwinds as on Ctrl-C —
    spawned hosts terminated at once and their keys removed, node daemons told to abandon
    the run — instead of dying on the spot."""

    exit_code = 128 + signal.SIGTERM
    #: The CLI's one line: ``crowdhide: terminated (SIGTERM); ...``.
    reason = "terminated (SIGTERM)"

    def __init__(self) -> None:
        super().__init__(self.exit_code)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def trap_sigterm() -> bool:
    """Make SIGTERM raise :class:`Terminated`: only from the main thread, and only when
    nobody else handles SIGTERM (an application's own handler is left alone). Whether it
    was trapped (pass it to :func:`release_sigterm`)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _raise_terminated)
    return True


def release_sigterm(trapped: bool) -> bool:
    """Give SIGTERM back its default action if :func:`trap_sigterm` took it; whether it is
    still trapped (``close()`` from another thread cannot release it)."""
    if not trapped:
        return False
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return False
    return True


def interrupted() -> BaseException | None:
    """The Ctrl-C or SIGTERM being handled right now (inside an ``except`` or ``finally``
    unwinding one), else ``None``."""
    exc = sys.exc_info()[1]
    return exc if isinstance(exc, (KeyboardInterrupt, Terminated)) else None
