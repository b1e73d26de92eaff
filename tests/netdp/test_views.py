"""Tests of crowdhide.netdp.views: transcripts, user and coalition views, exact curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.netdp.protocols import complete_sum, ring_sum
from crowdhide.netdp.views import (
    View,
    WalkTranscript,
    check_coalition,
    coalition_view,
    network_dp_curve,
    user_view,
)


def test_views_and_coalitions() -> None:
    run = ring_sum(values=np.ones((3, 4)), sigma=0.0, rng=0)
    assert run.transcript is not None
    view = user_view(run.transcript, 2)
    assert isinstance(view, View)
    assert view.received.tolist() == [2.0, 6.0, 10.0]  # K receipts
    assert view.senders is not None
    assert view.senders.tolist() == [1, 1, 1]
    run_c = complete_sum(values=np.ones(5), steps=50, sigma=0.0, rng=0)
    assert run_c.transcript is not None
    hidden = user_view(run_c.transcript, 0)
    assert hidden.senders is None
    assert hidden.receivers is None
    known = coalition_view(run_c.transcript, [0, 1], known_peers=True)
    assert known.senders is not None
    assert set(run_c.transcript.holders[known.times]) <= {0, 1}
    with pytest.raises(ValueError, match="must not contain the protected user"):
        check_coalition([1, 2], n=5, target=2)


def test_transcript_messages_and_known_peers() -> None:
    tr = WalkTranscript(
        n=3,
        holders=np.array([0, 1, 2, 1]),
        received=np.arange(4.0),
        final=np.array(4.0),
        topology="complete",
    )
    assert tr.steps == 4
    assert [(s, float(m), r) for s, m, r in tr.messages()] == [
        (0, 1.0, 1),
        (1, 2.0, 2),
        (2, 3.0, 1),
    ]
    v = user_view(tr, 1, known_peers=True)
    assert v.times.tolist() == [1, 3]
    assert v.senders is not None
    assert v.receivers is not None
    assert v.senders.tolist() == [0, 2]
    assert v.receivers.tolist() == [2, -1]  # the last holder sends nothing


def test_check_coalition_validates() -> None:
    assert check_coalition([3, 1], n=5) == (1, 3)
    with pytest.raises(ValueError, match="distinct"):
        check_coalition([1, 1], n=5)
    with pytest.raises(ValueError, match="honest"):
        check_coalition([0, 1], n=2)


def test_network_dp_curve_is_the_exact_hockey_stick() -> None:
    p = {"a": 0.5, "b": 0.3, "c": 0.2}
    q = {"a": 0.2, "b": 0.3, "d": 0.5}
    curve = network_dp_curve(p, q)
    for eps in (0.0, 0.3, 1.0):
        forward = sum(max(p.get(k, 0) - math.exp(eps) * q.get(k, 0), 0) for k in "abcd")
        backward = sum(max(q.get(k, 0) - math.exp(eps) * p.get(k, 0), 0) for k in "abcd")
        assert curve.delta(eps) == pytest.approx(max(forward, backward), rel=1e-9)
