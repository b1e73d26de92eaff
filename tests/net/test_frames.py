"""Sealing and option validation (no processes)."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag

from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.backends.tls.frames import Sealer


def test_a_body_opens_only_for_its_node_and_unaltered() -> None:
    a, b = Sealer(host=0), Sealer(host=1)
    b.learn(hosts={0: a.host_public}, nodes={})
    a.learn(hosts={}, nodes={7: b.node_public(7), 8: b.node_public(8)})
    blob = a.seal(7, b"payload row")
    assert b.open(7, 0, blob)[0] == b"payload row"
    with pytest.raises(InvalidTag):
        b.open(8, 0, blob)  # misdirected: another node's key
    forged = bytearray(blob)
    forged[-1] ^= 1
    with pytest.raises(InvalidTag):
        b.open(7, 0, bytes(forged))
    # Counter nonces: sealing the same plaintext twice gives different bodies.
    assert a.seal(7, b"x") != a.seal(7, b"x")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hosts": 0}, "hosts must be >= 1, got 0"),
        ({"frame_size": 64}, "frame_size must be >= 128, got 64"),
        ({"on_missing": "ignore"}, "on_missing must be 'fail' or 'report', got 'ignore'"),
        ({"deadline": 0.0}, "deadline must be >= 0.1, got 0.0"),
    ],
)
def test_invalid_backend_options_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TlsBackend(**options)  # type: ignore[arg-type]
