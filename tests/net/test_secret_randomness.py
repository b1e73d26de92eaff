"""Secret per-host randomness over tls (issue #27 review, HIGH: every host received the seed
and could replay every other host's sampling, dummies and scrambler shuffles).

By default each host draws a 256-bit secret when it loads the job and keys its blocks with
it: two runs with the same seed send the same number of frames over the same routes but
other dummy targets and orders; the secret never appears in what the driver receives
(scanned byte for byte, as test_daemon scans the coordinator's). ``shared_seed=True`` is
the local backend's run exactly (test_tls_backend compares them with it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import _control
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.backend import TlsBackend
from tests.net._secret_hook import encodings, install, secrets_drawn
from tests.net.conftest import BLOCK, small_plan

pytestmark = pytest.mark.net

HOSTS = 3


def _transcript(run: Any) -> dict[str, np.ndarray]:
    t = run.transcript
    return {c: np.asarray(getattr(t, c)) for c in ("round", "source", "target", "size", "order")}


def test_same_seed_other_draws_same_counts(backends: Callable[..., TlsBackend]) -> None:
    plan = small_plan(protected=True)
    local = execute(plan, rng=3, block_size=BLOCK)
    runs = [
        execute(plan, rng=3, backend=backends(hosts=HOSTS, shared_seed=False), block_size=BLOCK)
        for _ in range(2)
    ]
    a, b, ref = _transcript(runs[0]), _transcript(runs[1]), _transcript(local)
    # Same frames: per round, the same senders send the same number of messages...
    for column in ("round", "source", "size"):
        np.testing.assert_array_equal(a[column], ref[column])
        np.testing.assert_array_equal(b[column], ref[column])
    for run in runs:
        assert {k: r.messages for k, r in run.routes.items()} == {
            k: r.messages for k, r in local.routes.items()
        }
    # ... but to other targets: the sources' σ draws, the scramblers' 5 dummies each and
    # their shuffles (which message leaves in which slot) differ — all equal by chance with
    # probability far below 1e-100 at 300 sources. (Send-order labels are slot numbers.)
    for other in (b, ref):
        assert not np.array_equal(a["target"], other["target"])


def test_no_secret_in_what_the_driver_receives(
    backends: Callable[..., TlsBackend], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    drawn = tmp_path / "drawn"
    for key, value in install(tmp_path / "hooks", drawn).items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(tmp_path / "hooks"))  # the hosts' PYTHONPATH
    received = bytearray()
    fill = _control.Channel._fill

    def recording(self: _control.Channel, need: int, deadline: float) -> None:
        before = len(self._buffer)
        fill(self, need, deadline)
        received.extend(self._buffer[before:])

    monkeypatch.setattr(_control.Channel, "_fill", recording)
    plan = small_plan(protected=True)
    execute(plan, rng=3, backend=backends(hosts=HOSTS, shared_seed=False), block_size=BLOCK)
    secrets = secrets_drawn(drawn)
    assert len(secrets) == HOSTS  # one per host (the hook ran: the scan below means something)
    assert len(received) > 10_000  # block reports, schemas, stats: the driver heard a lot
    assert [s for s in secrets for e in encodings(s) if e in received] == []
    # The scan can fail: a host reporting its secret (here, in an error) would be found.
    leaked = ctl.encode(ctl.RunFailed(error=f"secret {secrets[0]}"))
    assert any(e in leaked for e in encodings(secrets[0]))


def test_a_shared_seed_draws_no_secret(
    backends: Callable[..., TlsBackend], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    drawn = tmp_path / "drawn"
    for key, value in install(tmp_path / "hooks", drawn).items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(tmp_path / "hooks"))
    plan = small_plan(protected=True)
    local = execute(plan, rng=3, block_size=BLOCK)
    run = execute(plan, rng=3, backend=backends(hosts=2, shared_seed=True), block_size=BLOCK)
    assert secrets_drawn(drawn) == []
    for column, values in _transcript(local).items():
        np.testing.assert_array_equal(_transcript(run)[column], values)
