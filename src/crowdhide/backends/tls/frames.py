"""Fixed-size frames and end-to-end sealing for target nodes.

Every frame on a link has the same size ``F`` (the run's frame size): a 16-byte header, a
sealed body and zero padding. A frame is written with one ``write`` call, so every TLS
record carrying frames has the same length (``F + 22`` bytes on the wire in TLS 1.3).

Bodies are sealed end to end for the *node* that must read them: the sending host and the
target node agree on a ChaCha20-Poly1305 key by X25519 (host key × node key, HKDF-SHA256),
with a per-key counter nonce. A message through a scrambler is an onion: the outer body,
sealed for the scrambler node, carries the final target and an inner body sealed for that
target; the scrambler forwards the inner body, which it cannot read. Dummies are sealed like
real messages (payload ``-1``) and dropped by their target after decryption.

Header layout (little endian): kind u8, mode u8, route u16, origin host u16, sender block
u16, destination node u32, index u32. ``END``/``ACK`` frames carry the epoch in ``route``
and a frame count in ``index``; ``WELCOME`` carries the sender's host id in ``origin``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACK",
    "DATA",
    "END",
    "FORWARD",
    "HEADER",
    "MIN_FRAME",
    "ONION",
    "PLAIN",
    "SEAL",
    "WELCOME",
    "Header",
    "Sealer",
    "pack_control",
    "unpack_header",
]

WELCOME, DATA, END, ACK = 1, 2, 3, 4
PLAIN, ONION, FORWARD = 0, 1, 2
HEADER = struct.Struct("<BBHHHII")
_DST = struct.Struct("<I")
_LENGTH = struct.Struct("<H")
NONCE, TAG = 12, 16
#: Sealing overhead of a body: length prefix, nonce and tag.
SEAL = 2 + NONCE + TAG
#: Smallest frame: header, an onion with its inner body, and a small payload row.
MIN_FRAME = 128
WELCOME_MAGIC = 0x43484944  # "CHID"


@dataclass(frozen=True)
class Header:
    """A decoded frame header."""

    kind: int
    mode: int
    batch: int
    origin: int
    block: int
    dst: int
    index: int


def unpack_header(frame: bytes | memoryview) -> Header:
    """Decode the header of ``frame``.

    Examples
    --------
    >>> unpack_header(pack_control(END, batch=3, count=7, origin=1, size=MIN_FRAME)).index
    7
    """
    kind, mode, batch, origin, block, dst, index = HEADER.unpack_from(frame, 0)
    return Header(kind, mode, batch, origin, block, dst, index)


def pack_control(kind: int, *, batch: int, count: int, origin: int, size: int) -> bytes:
    """A control frame (``WELCOME``, ``END`` or ``ACK``) padded to ``size`` bytes."""
    head = HEADER.pack(kind, 0, batch & 0xFFFF, origin, 0, 0, count)
    return head + bytes(size - HEADER.size)


@dataclass
class Sealer:
    """One host's X25519 keys and the AEAD keys it shares with nodes.

    ``host`` is this host's id; :meth:`node_public` creates (once) the key pair of a node
    this host serves; :meth:`learn` records public keys of other hosts and nodes.

    Examples
    --------
    >>> a, b = Sealer(host=0), Sealer(host=1)
    >>> b.learn(hosts={0: a.host_public}, nodes={})
    >>> a.learn(hosts={}, nodes={7: b.node_public(7)})
    >>> blob = a.seal(7, b"row 42")
    >>> b.open(7, 0, blob)[0]
    b'row 42'
    """

    host: int
    _key: Any = field(init=False, repr=False)
    host_public: bytes = field(init=False)
    _nodes: dict[int, Any] = field(default_factory=dict, repr=False)
    _node_pubs: dict[int, bytes] = field(default_factory=dict, repr=False)
    _host_pubs: dict[int, bytes] = field(default_factory=dict, repr=False)
    _send: dict[int, tuple[Any, int]] = field(default_factory=dict, repr=False)
    _recv: dict[tuple[int, int], Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        self._key = X25519PrivateKey.generate()
        self.host_public = _raw(self._key.public_key())

    def node_public(self, node: int) -> bytes:
        """Public key of ``node`` (a node this host serves), created on first use."""
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        if node not in self._nodes:
            self._nodes[node] = X25519PrivateKey.generate()
        return _raw(self._nodes[node].public_key())

    def learn(self, *, hosts: dict[int, bytes], nodes: dict[int, bytes]) -> None:
        """Record public keys of hosts (by id) and nodes (by global id)."""
        self._host_pubs.update(hosts)
        self._node_pubs.update(nodes)

    def _send_key(self, node: int) -> Any:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

        entry = self._send.get(node)
        if entry is None:
            if node not in self._node_pubs:
                raise KeyError(f"no public key known for node {node}")
            peer = X25519PublicKey.from_public_bytes(self._node_pubs[node])
            entry = (_aead(self._key.exchange(peer), self.host, node), 0)
        aead, counter = entry
        self._send[node] = (aead, counter + 1)
        return aead, counter.to_bytes(NONCE, "little")

    def _recv_key(self, node: int, origin: int) -> Any:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

        aead = self._recv.get((node, origin))
        if aead is None:
            peer = X25519PublicKey.from_public_bytes(self._host_pubs[origin])
            aead = _aead(self._nodes[node].exchange(peer), origin, node)
            self._recv[(node, origin)] = aead
        return aead

    def seal(self, node: int, plain: bytes) -> bytes:
        """Seal ``plain`` for ``node``: ``length u16 || nonce || ciphertext``."""
        aead, nonce = self._send_key(node)
        body: bytes = nonce + aead.encrypt(nonce, plain, _DST.pack(node))
        return _LENGTH.pack(len(body)) + body

    def open(
        self, node: int, origin: int, data: bytes | memoryview, at: int = 0
    ) -> tuple[bytes, int]:
        """Open a body sealed by host ``origin`` for ``node`` at offset ``at`` of ``data``.

        Returns the plaintext and the offset just past the body; raises
        ``cryptography.exceptions.InvalidTag`` for a forged or misdirected body.
        """
        (length,) = _LENGTH.unpack_from(data, at)
        start = at + _LENGTH.size
        body = bytes(data[start : start + length])
        aead = self._recv_key(node, origin)
        plain = aead.decrypt(body[:NONCE], body[NONCE:], _DST.pack(node))
        return plain, start + length


def _raw(public: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _aead(shared: bytes, host: int, node: int) -> Any:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    info = b"crowdhide e2e" + struct.pack("<HI", host, node)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)
    return ChaCha20Poly1305(key)
