"""A frozen coordinator (SIGSTOP) does not hold its daemons forever.

Its kernel still answers TCP keepalive, so only the daemons' application-level idle timeout
(:mod:`crowdhide.backends.tls.idle`) frees them: each drops the run once the coordinator's
next message is past due (its own wait for the slowest daemon: round + deadline 10 s + 30 s)
plus the grace, logs one line naming the coordinator and the seconds waited, and serves the
next coordinator while the frozen one is still stopped. Resumed (SIGCONT), the frozen
coordinator ends with one line. Four daemons on 127.0.0.1 with ``--idle-grace 2`` (the grace
is then the 2 s round): about 44 s after the coordinator's last message.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net._deploy import _env
from tests.net._signals import one_line, start
from tests.net._site import Site, serving
from tests.net.test_faults import NODES

pytestmark = pytest.mark.net

#: Round length (s): a 2 s round fits on a loaded machine (as _site.ROUND).
ROUND = 2.0
#: The daemons' --idle-grace (s): the grace is max(this, longest round) = 2 s.
GRACE = 2.0
#: Seconds a daemon must wait after the coordinator's last round message before dropping
#: the run: the coordinator waits that long for the slowest daemon's answer (round 2 s +
#: its default deadline 10 s + 30 s), then the grace. Written out, not imported: the test
#: fails if a constant of the code drifts.
DUE = ROUND + 10.0 + 30.0
LINE = re.compile(
    r"node (\d): the coordinator \(id \d+, 127\.0\.0\.1:\d+\) sent nothing for ([\d.]+) s "
    r"after its (Run|Flush) \(.*\): it is stopped or stuck; its state is dropped"
)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with serving(tmp_path, "--idle-grace", str(GRACE)) as running:
        yield running


def test_daemons_drop_the_run_of_a_frozen_coordinator(site: Site) -> None:
    proc = start(site.args("frozen", "--round-seconds", str(ROUND)), cwd=site.root, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not site.linked() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(ROUND)  # mid-run (the plan has 3 rounds)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGSTOP)
        assert site.sessions() > 0  # the run is on, held by a frozen coordinator
        freed = site.wait_idle(timeout=DUE + GRACE + 60)
        print(f"SIGSTOP: every daemon freed {freed:.1f} s after the coordinator stopped")
        assert site.sessions() == 0, "the daemons still hold the frozen coordinator's run"
        waited = []
        for node in range(NODES):
            log = site.log(node)
            found = [m for m in LINE.finditer(log) if int(m.group(1)) == node]
            assert len(found) == 1, log[-2000:]
            assert "Traceback" not in log
            waited.append(float(found[0].group(2)))
        print(f"seconds each daemon waited after the coordinator's last message: {waited}")
        # Never before the coordinator's own wait and the grace (it could still be waiting
        # for a late daemon); not much after it (the timer fires on an idle loop).
        assert min(waited) >= DUE + GRACE - 0.1
        assert max(waited) <= DUE + GRACE + 5.0
        assert freed <= DUE + GRACE + 5.0
        # The daemons serve the next coordinator while the frozen one is still stopped.
        site.clean_run("after")
        assert proc.poll() is None
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait(10)
    line = one_line(err)
    print(f"resumed: exit {proc.returncode}: {line}")
    assert proc.returncode in (4, 5), err[-3000:]  # the daemons are gone: overrun or death
