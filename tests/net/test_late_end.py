"""A round closed before its END arrived: the late END must not shift the link's epoch.

Two real :class:`~crowdhide.backends.tls.host.Host` objects in one event loop, a real
mutual-TLS links on 127.0.0.1 between them, real sealed frames. Host 1 closes round
1 before host 0 has sent anything (its END is late); host 0 then sends round 1 (2 frames and
its END) and round 2 (3 frames). Round 1's frames were reported lost, so they must be
refused as stale; round 2's frames must all be accepted. Before the fix, the END counted
once more on top of the closing, every round-2 frame was opened under epoch 3 and refused
as invalid: silent loss for the rest of the run.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from crowdhide.backends.tls import codec
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls.host import Host
from crowdhide.backends.tls.links import Link
from crowdhide.backends.tls.pki import make_pki

FRAME = 256


def _host(pki: Any, index: int) -> Host:
    creds = pki.hosts[index]
    cfg = {
        "host": index,
        "hosts": 2,
        "frame": FRAME,
        "cert": str(creds.cert),
        "key": str(creds.key),
        "ca": str(pki.ca_cert),
        "coordinator": b"",
    }
    return Host(cfg)


def _queue(host: Host, peer: int, epoch: int, count: int) -> None:
    """Queue ``count`` dummy PLAIN messages of round ``epoch`` for ``peer``."""
    blank = codec.encode_values(None, 0, -1, host.values)
    for i in range(count):
        head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 1 << 30)
        host.outbox[peer].append((head, codec.pack_fields(epoch, i, 0, 0) + blank))


async def _scenario(pki: Any) -> dict[str, Any]:
    hosts = [_host(pki, 0), _host(pki, 1)]
    sender, receiver = hosts
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(
            functools.partial(Link, h, outgoing=None), "127.0.0.1", 0, ssl=h.contexts[0]
        )
        for h in hosts
    ]
    try:
        ports = [s.sockets[0].getsockname()[1] for s in servers]
        keys = {i: h.sealer.link_public() for i, h in enumerate(hosts)}
        for i, h in enumerate(hosts):  # a full mesh of links, as the coordinator sets up
            h.sealer.learn(hosts=keys, nodes={})
            peer = 1 - i
            linked = await h.connect({peer: ("127.0.0.1", ports[peer])}, 10.0)
            assert linked == {"failed": {}}
        # Round 1: the receiver closes it before the sender flushed (the END is late).
        early = await receiver.flush(1, [0], 0.05)
        _queue(sender, 1, 1, 2)
        first = await sender.flush(1, [1], 10.0)
        # Round 2, flushed by both ends as the coordinator does.
        _queue(sender, 1, 2, 3)
        accepted = len(receiver.inbox)
        second, got = await asyncio.gather(sender.flush(2, [1], 10.0), receiver.flush(2, [0], 10.0))
        return {
            "early": early,
            "first": first,
            "second": second,
            "got": got,
            "accepted": len(receiver.inbox) - accepted,
            "recv_epoch": receiver.recv_epochs[0],
        }
    finally:
        for h in hosts:
            for link in [*h.out.values(), *h.incoming.values()]:
                link.drop()
        for s in servers:
            s.close()
            await s.wait_closed()


def test_late_end_keeps_the_link_on_the_next_round(tmp_path: Path) -> None:
    pki = make_pki(hosts=2, out=tmp_path)
    out = asyncio.run(_scenario(pki))
    # Round 2: all 3 frames received, claimed and used; round 1's 2 late frames refused
    # as stale (reported lost in their own round: never used), none refused as invalid.
    assert out["accepted"] == 3
    assert out["got"]["rejected"] == {0: {"invalid": 0, "stale": 2, "duplicate": 0, "garbage": 0}}
    assert out["got"]["received"] == {0: 3}
    assert out["got"]["claimed"] == {0: 3}
    assert out["second"]["acked"] == {1: 3}
    assert out["recv_epoch"] == 2
    # Round 1 closed with nothing received and no claim: its 2 frames count as lost.
    assert out["early"]["received"] == {0: 0}
    assert out["early"]["claimed"] == {0: None}
    # The late END was still acknowledged, with the count reported for its round (0), not
    # with the late frames it followed.
    assert out["first"]["acked"] == {1: 0}
