"""Insiders on the wire: a host that duplicates, replays, withholds frames or sends garbage
is detected and named; the other links keep working and nothing it sent twice is used."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.errors import RoundOverrunError
from tests.net.conftest import BLOCK, SOURCES, small_plan

pytestmark = pytest.mark.net

ROGUE = 1


def _rogue_backend(
    backends: Any, monkeypatch: pytest.MonkeyPatch, action: str, **options: Any
) -> TlsBackend:
    monkeypatch.setenv("ROGUE_ACTION", action)
    launch = TlsBackend._launch

    def swap(self: TlsBackend, module: str, cfg: Any, label: str, netns: str | None = None) -> Any:
        if label == f"host{ROGUE}":
            module = "tests.net._rogue_host"
        return launch(self, module, cfg, label, netns)

    monkeypatch.setattr(TlsBackend, "_launch", swap)
    # The rogue tampers with its frames for the first other host: modulo puts blocks on
    # every host, so host 1 has frames to tamper with in every plan these tests run.
    settings = {
        "hosts": 3,
        "on_missing": "report",
        "deadline": 5.0,
        "placement": "modulo",
        **options,
    }
    backend: TlsBackend = backends(**settings)
    return backend


@pytest.mark.parametrize(
    ("action", "reason"),
    [("duplicate", "duplicate"), ("replay", "stale"), ("garbage", "garbage")],
)
def test_refused_frames_are_counted_and_their_sender_named(
    backends: Any, monkeypatch: pytest.MonkeyPatch, action: str, reason: str
) -> None:
    plan = small_plan(protected=True)  # two rounds of frames: sources, then scramblers
    local = execute(plan, rng=3, block_size=BLOCK)
    backend = _rogue_backend(backends, monkeypatch, action)
    run = execute(plan, rng=3, backend=backend, block_size=BLOCK)
    report = backend.missing
    assert report.suspects == (ROGUE,)
    refused = {link: counts for link, counts in report.rejected.items() if counts[reason]}
    assert refused
    assert {a for a, _ in refused} == {ROGUE}
    assert report.to_dict()["suspect_hosts"] == [ROGUE]
    if action != "garbage":
        # Nothing was used twice: the result is the honest one.
        np.testing.assert_array_equal(run.states["C"]["count"], local.states["C"]["count"])
        assert report.messages == 0


def test_a_withheld_frame_is_named_on_its_link(
    backends: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = small_plan(protected=False)
    backend = _rogue_backend(backends, monkeypatch, "withhold")
    execute(plan, rng=3, backend=backend, block_size=BLOCK)
    report = backend.missing
    # The blocks' transcript says one more frame than the host wrote on one of its links.
    assert sum(report.withheld.values()) == 1
    assert report.suspects == (ROGUE,)
    assert report.messages == 0  # not lost in transit: withheld by its sender
    assert SOURCES > 0


def test_frames_of_a_late_host_are_reported_lost_and_never_used(
    backends: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that starts its round after the others closed it (deadline passed): its
    frames count as lost in that round, the run stops as an overrun; nothing is used twice."""
    monkeypatch.setenv("ROGUE_DELAY", "4")
    plan = small_plan(protected=False)
    backend = _rogue_backend(backends, monkeypatch, "late", deadline=1.0, round_seconds=1.0)
    with pytest.raises(RoundOverrunError, match="overran its fixed length"):
        execute(plan, rng=3, backend=backend, block_size=BLOCK)
    report = backend.missing
    assert report.messages > 0
    assert {a for a, _ in report.links} == {ROGUE}
