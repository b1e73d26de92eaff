"""Fixed-size frames whose bodies are sealed (HPKE) per link and round.

Every frame of a run has the same size ``F`` (data and control alike) and is its own TLS
record (many are handed to the transport at once, each still one record), so every TLS
record after the handshake has one length (``F + 22`` bytes on the wire in TLS 1.3).

A data frame is a 12-byte header (visible to the receiving host only, inside TLS), the
``enc`` of its link's HPKE context for the round (32 bytes, the same in every frame of
the round: one X25519 encapsulation per link and round), the body sealed in that context
(message ``seq`` = the frame's position among the round's data frames on the link, so the
nonce is derived by both ends and never sent), then zero padding. The header is the body's
associated data, so a body moved to another node, route or block, reordered, replayed or
carried into another round does not open.

Header of a data frame (little endian): kind u8, mode u8, route u16, sender block u32,
destination node u32. Control frames (``WELCOME``, ``END``, ``ACK``): kind u8, 0, origin
host u16, epoch u32, count u32, magic u32.

Plaintexts have one length per mode whatever the message carries (real, dummy, any number
of rows), see :mod:`crowdhide.backends.tls.codec`. The inner body of an onion (what a
scrambler forwards unread) is sealed single-shot for its final target with a fresh
ephemeral key: it has one length, names neither its source nor a counter, and two inner
bodies share nothing a scrambler or the target could link.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.backends.tls import hpke
from crowdhide.errors import DataError

__all__ = [
    "ACK",
    "CONTROL",
    "DATA",
    "END",
    "FORWARD",
    "HEADER",
    "INFO",
    "LINK_INFO",
    "MIN_FRAME",
    "ONION",
    "PLAIN",
    "WELCOME",
    "WELCOME_MAGIC",
    "Control",
    "Sealer",
    "frames_of",
    "link_node",
    "pack_control",
    "secure_order",
    "unpack_control",
]

WELCOME, DATA, END, ACK = 1, 2, 3, 4
PLAIN, ONION, FORWARD = 0, 1, 2
HEADER = struct.Struct("<BBHII")
CONTROL = struct.Struct("<BBHIII")
#: HPKE ``info`` of every inner body of this wire format (a version change makes old bodies
#: fail) and of the link contexts (followed by the round's epoch, u32 little endian).
INFO = b"crowdhide wire v2"
LINK_INFO = b"crowdhide wire v2 link"
#: Smallest frame: header, the largest fixed part of a body (onion) and 4 payload bytes.
MIN_FRAME = 136
WELCOME_MAGIC = 0x43484944  # "CHID"


@dataclass(frozen=True)
class Control:
    """A decoded control frame."""

    kind: int
    origin: int
    epoch: int
    count: int
    magic: int


def pack_control(kind: int, *, epoch: int, count: int, origin: int, size: int) -> bytes:
    """A control frame padded to ``size`` bytes.

    Examples
    --------
    >>> unpack_control(pack_control(END, epoch=3, count=7, origin=1, size=MIN_FRAME)).count
    7
    """
    head = CONTROL.pack(kind, 0, origin, epoch, count, WELCOME_MAGIC)
    return head + bytes(size - CONTROL.size)


def unpack_control(frame: bytes | memoryview) -> Control:
    """Decode a control frame."""
    kind, _, origin, epoch, count, magic = CONTROL.unpack_from(frame, 0)
    return Control(kind, origin, epoch, count, magic)


def link_node(host: int) -> int:
    """Key id of host ``host``'s link key among node ids (negative: never a plan node).

    Examples
    --------
    >>> link_node(0), link_node(2)
    (-1, -3)
    """
    return -1 - host


@dataclass
class Sealer:
    """The X25519 keys of one host: its link key, the nodes it serves, others' public keys.

    :meth:`node_public` creates (once) the key pair of a node this host serves;
    :meth:`learn` records public keys of other nodes (by global id; a host's link key under
    :func:`link_node`). Inner bodies are single-shot (:meth:`seal`, a fresh ephemeral key
    per body: nothing in one names the sealing host); the frames of one link and round
    share one HPKE context (:meth:`seal_frames`, :meth:`open_frame`).

    Examples
    --------
    >>> a, b = Sealer(host=0), Sealer(host=1)
    >>> a.learn(hosts={}, nodes={7: b.node_public(7)})
    >>> b.open(7, a.seal(7, b"row 42", b"aad"), b"aad")
    b'row 42'
    """

    host: int
    _nodes: dict[int, Any] = field(default_factory=dict, repr=False)
    _node_pubs: dict[int, bytes] = field(default_factory=dict, repr=False)
    # Public keys of this host's own nodes (an inner body's key schedule needs them).
    _own: dict[int, bytes] = field(default_factory=dict, repr=False)
    # Receiving contexts by sending host: (epoch, enc, context) of its latest round.
    _links_in: dict[int, tuple[int, bytes, hpke.Context]] = field(default_factory=dict, repr=False)

    def node_public(self, node: int) -> bytes:
        """Public key of ``node`` (a node this host serves), created on first use."""
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        if node not in self._nodes:
            self._nodes[node] = X25519PrivateKey.generate()
            self._own[node] = hpke.public_bytes(self._nodes[node])
        return self._own[node]

    def link_public(self) -> bytes:
        """Public key of this host's link key (the receiving end of its links' contexts)."""
        return self.node_public(link_node(self.host))

    def learn(self, *, hosts: dict[int, bytes], nodes: dict[int, bytes]) -> None:
        """Record public keys of nodes (by global id) and hosts' link keys (by host id)."""
        self._node_pubs.update(nodes)
        self._node_pubs.update({link_node(h): key for h, key in hosts.items()})

    def seal(self, node: int, plain: bytes, aad: bytes) -> bytes:
        """``enc || ciphertext`` of ``plain`` for ``node`` (``len(plain) + 48`` bytes)."""
        public = self._node_pubs.get(node)
        if public is None:
            raise KeyError(f"no public key known for node {node}")
        return hpke.seal_base(public, INFO, aad, plain)

    def open(self, node: int, body: bytes | memoryview, aad: bytes) -> bytes:
        """Open a body sealed for ``node`` (a node this host serves).

        Raises ``cryptography.exceptions.InvalidTag`` for a forged or misdirected body.
        """
        return hpke.open_base(self._nodes[node], INFO, aad, body, public=self._own[node])

    def seal_frames(
        self, peer: int, epoch: int, items: Sequence[tuple[bytes, bytes]], size: int
    ) -> list[bytes]:
        """The data frames of one link and round, in this order: ``header || enc ||
        ciphertext`` zero-padded to ``size`` bytes per ``(header, plaintext)`` item.

        One fresh HPKE context (one encapsulation to ``peer``'s link key) for the round;
        frame ``i`` is message ``i`` of the context (its nonce is derived from its position
        on the link, never sent) with the header as associated data. ``enc`` repeats in
        every frame of the round: it names the round's context to the receiving host only
        (inside TLS), which knows the sending host anyway.
        """
        if not items:
            return []
        enc, context = self.link_context(peer, epoch)
        return frames_of(enc, context, items, size)

    def link_context(self, peer: int, epoch: int) -> tuple[bytes, hpke.Context]:
        """``(enc, context)``: the sending HPKE context of ``peer``'s link in round
        ``epoch`` (one encapsulation; see :meth:`seal_frames`)."""
        public = self._node_pubs.get(link_node(peer))
        if public is None:
            raise KeyError(f"no link key known for host {peer}")
        return hpke.setup_base_s(public, LINK_INFO + epoch.to_bytes(4, "little"))

    def open_frame(self, peer: int, epoch: int, seq: int, frame: bytes, length: int) -> bytes:
        """The plaintext of data frame number ``seq`` of ``peer``'s link in round ``epoch``
        (``length``: bytes of its sealed body after ``enc``).

        ``InvalidTag`` for a frame altered, moved, replayed, reordered or from another round;
        ``ValueError`` for a frame naming another context than the round's first frame (a
        sender cannot make the receiver set up a context per frame).
        """
        context = self._link_in(peer, epoch, frame)
        if frame[HEADER.size : _BODY] != self._links_in[peer][1]:
            raise DataError(f"frame {seq} of host {peer} names another context")
        return context.open_at(seq, frame[: HEADER.size], frame[_BODY : _BODY + length])

    def open_frames(
        self, peer: int, epoch: int, seq: int, frames: Sequence[bytes], lengths: Mapping[int, int]
    ) -> list[bytes | None]:
        """:meth:`open_frame` of consecutive frames ``seq, seq+1, ...`` of one link and
        round (``lengths``: body length by the header's mode ``& 0x7F``); ``None`` for a
        frame that does not open, whatever the reason. One AEAD call per frame."""
        from cryptography.exceptions import InvalidTag

        if not frames:
            return []
        try:
            context = self._link_in(peer, epoch, frames[0])
        except (ValueError, KeyError):
            return [None] * len(frames)
        enc = self._links_in[peer][1]
        decrypt, base = context._aead.decrypt, context._base
        at = HEADER.size
        out: list[bytes | None] = []
        for i, frame in enumerate(frames, start=seq):
            length = lengths.get(frame[1] & 0x7F)
            if length is None or frame[at:_BODY] != enc:
                out.append(None)
                continue
            try:
                nonce = (base ^ i).to_bytes(12, "big")
                out.append(decrypt(nonce, frame[_BODY : _BODY + length], frame[:at]))
            except InvalidTag:
                out.append(None)
        return out

    def _link_in(self, peer: int, epoch: int, frame: bytes) -> hpke.Context:
        """The receiving context of ``peer``'s link in round ``epoch``, set up from the
        round's first frame (``ValueError`` for a malformed ``enc``)."""
        known = self._links_in.get(peer)
        if known is None or known[0] != epoch:
            private = self._nodes[link_node(self.host)]
            enc = bytes(frame[HEADER.size : _BODY])
            info = LINK_INFO + epoch.to_bytes(4, "little")
            known = (epoch, enc, hpke.setup_base_r(private, enc, info))
            self._links_in[peer] = known
        return known[2]


def frames_of(
    enc: bytes, context: hpke.Context, items: Sequence[tuple[bytes, bytes]], size: int
) -> list[bytes]:
    """The next data frames of a link's round context (``enc``, ``context`` from
    :meth:`Sealer.link_context`), one per ``(header, plaintext)`` item in this order: a
    round's frames may be sealed a chunk at a time, as they are written."""
    if not items:
        return []
    heads = [head for head, _ in items]
    bodies = context.seal_many([plain for _, plain in items], heads)
    zeros = bytes(size)
    prefix = len(heads[0]) + hpke.ENC
    return [
        b"".join((head, enc, body, zeros[: size - prefix - len(body)]))
        for head, body in zip(heads, bodies, strict=True)
    ]


def secure_order(count: int) -> npt.NDArray[np.intp]:
    """A uniformly random permutation of ``range(count)`` from the operating system's
    CSPRNG (argsort of 64-bit random keys; a tie, probability below ``count**2 / 2**65``,
    only keeps two items in place), in one call instead of one per item.

    Examples
    --------
    >>> sorted(secure_order(5).tolist())
    [0, 1, 2, 3, 4]
    """
    keys = np.frombuffer(os.urandom(8 * count), dtype=np.uint64)
    return np.argsort(keys, kind="stable")


#: Offset of a data frame's sealed body (after the header and the context's ``enc``).
_BODY = HEADER.size + hpke.ENC
