"""Ctrl-C during a run on spawned tls hosts: one line, exit 130, every host stopped, soon.

The driver used to close politely on an interrupt: ask every host for its counters (10 s
each, and a host in the middle of a round owes the interrupted request's reply first), then
ask each to stop in turn (up to 10 s each): 27 s for three hosts here. Now an interrupt
terminates the hosts at once and every wait shares one deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crowdhide.backends.tls.pki import make_pki

pytestmark = pytest.mark.net
ROOT = Path(__file__).resolve().parents[2]

#: The driver with Python's own SIGINT handler (a background job may inherit SIGINT ignored).
DRIVER = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from crowdhide.cli import entry; sys.argv = ['crowdhide', *sys.argv[1:]]; entry()"
)


def _children(pid: int) -> list[int]:
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


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_stops_every_host_at_once(tmp_path: Path) -> None:
    make_pki(hosts=3, out=tmp_path / "pki")
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    args = ["run", "example:diabetes", "--backend", "tls", "--hosts", "3"]
    args += ["--pki", str(tmp_path / "pki"), "--block-size", "2000", "--out", str(tmp_path / "o")]
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    hosts: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(hosts) < 3 and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.5)
            hosts = _children(driver.pid)
        assert len(hosts) >= 3, "the hosts never started"
        time.sleep(20)  # the hosts are up and a round is under way
        assert driver.poll() is None, "the run ended before it could be interrupted"
        driver.send_signal(signal.SIGINT)
        began = time.monotonic()
        _, err = driver.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)
        for pid in hosts:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert driver.returncode == 130, err[-2000:]
    assert "crowdhide: interrupted (Ctrl-C)" in err
    assert "Traceback" not in err
    assert [pid for pid in hosts if _alive(pid)] == []
    # Generous for a loaded machine; the polite close took 27 s for three hosts here.
    assert took < 15, f"Ctrl-C took {took:.1f} s to stop three hosts"
