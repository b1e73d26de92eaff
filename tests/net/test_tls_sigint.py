"""Ctrl-C during a run on spawned tls hosts: one line, exit 130, every host stopped, soon.

The driver used to close politely on an interrupt: ask every host for its counters (10 s
each, and a host in the middle of a round owes the interrupted request's reply first), then
ask each to stop in turn (up to 10 s each): 27 s for three hosts here. Now an interrupt
terminates the hosts at once and every wait shares one deadline.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from crowdhide.backends.tls.pki import make_pki
from tests.net._signals import one_line, signal_spawned_run

pytestmark = pytest.mark.net


def test_ctrl_c_stops_every_host_at_once(tmp_path: Path) -> None:
    make_pki(hosts=3, out=tmp_path / "pki")
    _, ended = signal_spawned_run(tmp_path, signal.SIGINT, "--pki", str(tmp_path / "pki"))
    assert ended.code == 130, ended.err[-2000:]
    assert one_line(ended.err).startswith("crowdhide: interrupted (Ctrl-C)")
    # Generous for a loaded machine; the polite close took 27 s for three hosts here.
    assert ended.seconds < 15, f"Ctrl-C took {ended.seconds:.1f} s to stop three hosts"
