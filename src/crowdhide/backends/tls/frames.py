"""Fixed-size frames whose bodies are sealed end to end (HPKE) for the receiving node.

Every frame of a run has the same size ``F`` (data and control alike) and is written with
one ``write`` call, so every TLS record after the handshake has one length (``F + 22``
bytes on the wire in TLS 1.3). A data frame is a 12-byte header (visible to the receiving
host only, inside TLS) and a body sealed with HPKE (:mod:`crowdhide.backends.tls.hpke`, a fresh
ephemeral key per message) for the node that must read it, then zero padding.

Header of a data frame (little endian): kind u8, mode u8, route u16, sender block u32,
destination node u32; it is the body's associated data, so a body moved to another node,
route or block does not open. Control frames (``WELCOME``, ``END``, ``ACK``): kind u8, 0,
origin host u16, epoch u32, count u32, magic u32.

Plaintexts have one length per mode whatever the message carries (real, dummy, any number
of rows), see :mod:`crowdhide.backends.tls.codec`; a scrambler's decrypted body has one length.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from crowdhide.backends.tls import hpke

__all__ = [
    "ACK",
    "CONTROL",
    "DATA",
    "END",
    "FORWARD",
    "HEADER",
    "INFO",
    "MIN_FRAME",
    "ONION",
    "PLAIN",
    "WELCOME",
    "WELCOME_MAGIC",
    "Control",
    "Sealer",
    "pack_control",
    "unpack_control",
]

WELCOME, DATA, END, ACK = 1, 2, 3, 4
PLAIN, ONION, FORWARD = 0, 1, 2
HEADER = struct.Struct("<BBHII")
CONTROL = struct.Struct("<BBHIII")
#: HPKE ``info`` of every body of this wire format (a version change makes old bodies fail).
INFO = b"crowdhide wire v1"
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


@dataclass
class Sealer:
    """The X25519 keys of the nodes one host serves, and the public keys of other nodes.

    :meth:`node_public` creates (once) the key pair of a node this host serves;
    :meth:`learn` records public keys of other nodes (by global id). Sealing uses a fresh
    ephemeral key per body (HPKE base mode): nothing in a body names the sealing host.

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

    def node_public(self, node: int) -> bytes:
        """Public key of ``node`` (a node this host serves), created on first use."""
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        if node not in self._nodes:
            self._nodes[node] = X25519PrivateKey.generate()
        return hpke.public_bytes(self._nodes[node])

    def learn(self, *, hosts: dict[int, bytes], nodes: dict[int, bytes]) -> None:
        """Record public keys of nodes (by global id); ``hosts`` is accepted and unused."""
        self._node_pubs.update(nodes)

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
        return hpke.open_base(self._nodes[node], INFO, aad, body)
