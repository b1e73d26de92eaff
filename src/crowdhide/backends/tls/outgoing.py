"""What a node host queues to send: a program's messages as frames, per peer.

:func:`queue_part` turns one part of a program's output (the messages of one route from one
block to one receiving block) into a frame header and plaintext per message on the host's
outbox for that peer: values blocks for plain messages, a body sealed to the final receiver
inside for a scrambler's onion, the held inner body (or a fresh dummy one) for a forward.
The outbox is sealed per link and round when the round is flushed
(:meth:`~crowdhide.backends.tls.host.Host.flush`).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from crowdhide.backends.tls import codec
from crowdhide.backends.tls import frames as fr

if TYPE_CHECKING:
    from crowdhide.backends.tls.host import Host

__all__ = ["inner_aad", "queue_blank", "queue_part"]

_INNER = struct.Struct("<HI")


def inner_aad(r: int, node: int) -> bytes:
    """The associated data of an inner body sealed to ``node`` on route ``r``."""
    return _INNER.pack(r, node)


def queue_part(host: Host, part: Any, peer: int, epoch: int) -> dict[int, Any]:
    """Queue one frame per message of ``part`` for ``peer``; return its route's schema."""
    r = host.route_index[part.route]
    route = host.routes[r]
    if part.forward is not None:
        kind = fr.ONION
    elif part.sender != route.sender:
        kind = fr.FORWARD
    else:
        kind = fr.PLAIN
    mode = kind | (codec.MULTI if part.rows is not None else 0)
    wire = codec.wire_columns(part.columns) if kind != fr.FORWARD else {}
    schema = codec.schema_of(wire)
    records = codec.table(wire, schema) if kind != fr.FORWARD else None
    handle_col = part.columns.get(codec.HANDLE)
    dst_first = host.offsets[part.receiver]
    final_first = host.offsets[route.receiver]
    seal, values = host.sealer, host.values
    queue = host.outbox[peer]
    # Values blocks and fields of the whole part at once (one array each).
    payload = part.payload.tolist()
    blocks = codec.encode_many(records, part.payload, part.rows, values)
    fields = codec.pack_many(epoch, part.src, part.order, part.forward)
    head_of = fr.HEADER.pack
    for i, node in enumerate((dst_first + part.dst).tolist()):
        if kind == fr.FORWARD:
            if payload[i] >= 0:
                inner = _forwarded(host, int(handle_col[payload[i]]))
            else:  # the scrambler's own dummy: a fresh inner body of the same length
                inner = seal.seal(node, blocks[i], inner_aad(r, node))
        elif kind == fr.ONION:
            target = final_first + int(part.forward[i])
            inner = seal.seal(target, blocks[i], inner_aad(r, target))
        else:
            inner = blocks[i]
        head = head_of(fr.DATA, mode, r, part.block, node)
        queue.append((head, fields[i] + inner))  # sealed per link and round at the flush
    return {r: schema} if kind != fr.FORWARD else {}


def _forwarded(host: Host, handle: int) -> bytes:
    """The inner body of onion ``handle``, dropped from the scrambler's memory."""
    return host.onions.pop(handle)


def queue_blank(host: Host, peer: int, count: int) -> int:
    """Queue ``count`` PLAIN messages for ``peer`` (benchmark): sealed, written, opened and
    acknowledged like any other (the receiver drops them as refused: no job holds them)."""
    blank = codec.encode_values(None, 0, -1, host.values)
    queue = host.outbox[peer]
    epoch = host.recv_epochs[peer] + 1
    for i in range(count):
        head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 1 << 30)
        queue.append((head, codec.pack_fields(epoch, i, 0, 0) + blank))
    return count
