"""What the signal tests share: start ``crowdhide`` as a process that handles Ctrl-C as a
terminal's would, find its children, signal it mid-run and time how it ends.

Used by test_tls_sigint.py and test_tls_sigterm.py (a driver of spawned hosts) and
test_coordinator_signals.py (a coordinator of node daemons).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "DRIVER",
    "Ended",
    "alive",
    "children",
    "established",
    "interrupt",
    "kill_survivors",
    "one_line",
    "signal_spawned_run",
    "start",
]

#: ``python -c DRIVER args...`` runs ``crowdhide args...`` with Python's own SIGINT handler
#: (a background job may inherit SIGINT ignored, and then Ctrl-C could not be tested).
DRIVER = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from crowdhide.cli import entry; sys.argv = ['crowdhide', *sys.argv[1:]]; entry()"
)


def children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def established(pids: Sequence[int]) -> dict[int, int]:
    """Established TCP connections held by each of ``pids`` (``ss``)."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established"], capture_output=True, text=True, timeout=20
    ).stdout
    return {pid: out.count(f"pid={pid},") for pid in pids}


def start(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], prefix: Sequence[str] = ()
) -> subprocess.Popen[str]:
    """``crowdhide args`` (after ``prefix``, e.g. ``ip netns exec NS``) with Python's SIGINT
    handler; standard error captured, standard output dropped."""
    return subprocess.Popen(
        [*prefix, sys.executable, "-c", DRIVER, *args],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


class Ended:
    """How a signalled process ended: exit code, standard error, seconds after the signal."""

    def __init__(self, code: int, err: str, seconds: float) -> None:
        self.code, self.err, self.seconds = code, err, seconds


def interrupt(
    proc: subprocess.Popen[str],
    sig: int,
    *,
    ready: Callable[[], bool],
    settle: float,
    timeout: float = 120.0,
    on_signal: Callable[[], None] | None = None,
) -> Ended:
    """Wait (bounded) until ``ready()``, then ``settle`` seconds more, then send ``sig`` to
    ``proc`` (then call ``on_signal``) and wait for it to end (killed by pid if it outlives
    60 s)."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"ended before the signal: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, "never ready for the signal"
            time.sleep(0.2)
        time.sleep(settle)
        assert proc.poll() is None, f"ended before the signal: {proc.communicate()[1]}"
        proc.send_signal(sig)
        began = time.monotonic()
        if on_signal is not None:
            on_signal()
        _, err = proc.communicate(timeout=60)
        return Ended(proc.returncode, err, time.monotonic() - began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def one_line(err: str) -> str:
    """The only line of ``err`` (no traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    assert "Traceback" not in err
    return lines[0]


def kill_survivors(pids: Sequence[int]) -> None:
    """SIGKILL, by pid, every one of ``pids`` still running."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


#: Established connections a host of three holds once its links are up: one each way to
#: each other host (6 measured: the links open together, within 0.4 s).
LINKS = 4
#: Seconds from the links to the signal: the job's first rounds (fixed-length rounds, idle
#: most of the time, so a host owes the driver a reply for nearly all of a round). A fixed
#: 20 s from the hosts' start did the same, 15 s later.
SETTLE = 3.0


def signal_spawned_run(tmp_path: Path, sig: int, *extra: str) -> tuple[float, Ended]:
    """``crowdhide run example:diabetes --backend tls --hosts 3`` (spawned hosts, keys made
    in ``tmp_path``), ``sig`` to the driver :data:`SETTLE` s after every host holds its
    links (a round under way); the seconds until no host is left, and how the driver ended."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=f"{root / 'src'}{os.pathsep}{root}", TMPDIR=str(tmp_path))
    args = ["run", "example:diabetes", "--backend", "tls", "--hosts", "3", *extra]
    args += ["--block-size", "2000", "--out", str(tmp_path / "o")]
    driver = start(args, cwd=tmp_path, env=env)
    hosts: list[int] = []

    def ready() -> bool:  # three hosts, each linked to the two others (both directions)
        hosts[:] = children(driver.pid)
        return len(hosts) >= 3 and min(established(hosts).values()) >= LINKS

    gone: list[float] = []

    def watch() -> None:  # the hosts' end, timed from the signal
        began = time.monotonic()
        while any(alive(pid) for pid in hosts) and time.monotonic() < began + 60:
            time.sleep(0.05)
        gone.append(time.monotonic() - began)

    watcher = threading.Thread(target=watch)
    try:
        ended = interrupt(driver, sig, ready=ready, settle=SETTLE, on_signal=watcher.start)
        watcher.join(70)
    finally:
        kill_survivors(hosts)
    assert [pid for pid in hosts if alive(pid)] == []
    return gone[0], ended
