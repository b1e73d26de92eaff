"""HPKE (RFC 9180) base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.

Two uses on the wire (:mod:`crowdhide.backends.tls.frames`):

* **single-shot** (:func:`seal_base`, :func:`open_base`, sequence number 0, RFC 9180
  section 6.1): a fresh ephemeral X25519 key (the *encapsulated key* ``enc``, 32 bytes, in
  front of the ciphertext) per body, so two bodies share nothing a relaying node could link
  (the inner bodies of onions, which a scrambler forwards and whose sender the target must
  not learn);
* **a context** (:func:`setup_base_s`, :func:`setup_base_r`, :class:`Context`): one
  encapsulation, then many messages, message ``seq`` sealed under the nonce
  ``base_nonce XOR seq`` derived by both ends (the link layer: one context per link and
  round, the sequence number is a frame's position in its TLS stream, never sent).

Built from ``cryptography``'s X25519 and ChaCha20-Poly1305 and the standard library's HMAC
(the HKDF of RFC 5869 is two HMAC calls for outputs of at most 32 bytes); the RFC's test
vector A.2.1 (key schedule, sequence numbers 0, 1, 2 and 255) is checked in
``tests/net/test_hpke.py``.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Any

from crowdhide.errors import InvalidParameterError

__all__ = [
    "ENC",
    "OVERHEAD",
    "TAG",
    "Context",
    "open_base",
    "public_bytes",
    "seal_base",
    "setup_base_r",
    "setup_base_s",
]

#: Bytes of an encapsulated key (an X25519 public key) and of the AEAD tag.
ENC, TAG = 32, 16
#: Bytes a sealed body adds to its plaintext.
OVERHEAD = ENC + TAG
_VERSION = b"HPKE-v1"
_KEM_ID, _KDF_ID, _AEAD_ID = 0x0020, 0x0001, 0x0003
_KEM_SUITE = b"KEM" + _KEM_ID.to_bytes(2, "big")
_HPKE_SUITE = (
    b"HPKE" + _KEM_ID.to_bytes(2, "big") + _KDF_ID.to_bytes(2, "big") + _AEAD_ID.to_bytes(2, "big")
)
_MODE_BASE = b"\x00"
_contexts: dict[bytes, bytes] = {}


def _extract(salt: bytes, ikm: bytes) -> bytes:
    return hmac.digest(salt or bytes(32), ikm, "sha256")


def _expand(prk: bytes, info: bytes, length: int) -> bytes:
    # One HMAC block suffices: every output here is at most 32 bytes.
    return hmac.digest(prk, info + b"\x01", "sha256")[:length]


def _labeled_extract(suite: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return _extract(salt, _VERSION + suite + label + ikm)


def _labeled_expand(suite: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    full = length.to_bytes(2, "big") + _VERSION + suite + label + info
    return _expand(prk, full, length)


def _context(info: bytes) -> bytes:
    """``key_schedule_context`` of the base mode (cached: the run uses few ``info`` values)."""
    context = _contexts.get(info)
    if context is None:
        psk_id_hash = _labeled_extract(_HPKE_SUITE, b"", b"psk_id_hash", b"")
        info_hash = _labeled_extract(_HPKE_SUITE, b"", b"info_hash", info)
        context = _contexts[info] = _MODE_BASE + psk_id_hash + info_hash
    return context


def _schedule(dh: bytes, enc: bytes, receiver: bytes, info: bytes) -> tuple[bytes, bytes, bytes]:
    """``(key, base_nonce, exporter_secret)`` from the Diffie-Hellman output (DHKEM, then
    KeySchedule)."""
    secret, key, nonce = _key_nonce(dh, enc, receiver, info)
    exporter = _labeled_expand(_HPKE_SUITE, secret, b"exp", _context(info), 32)
    return key, nonce, exporter


def _key_nonce(dh: bytes, enc: bytes, receiver: bytes, info: bytes) -> tuple[bytes, bytes, bytes]:
    """``(secret, key, base_nonce)``: :func:`_schedule` but the exporter secret, which a
    single-shot body never uses (five HMAC calls instead of six)."""
    prk = _labeled_extract(_KEM_SUITE, b"", b"eae_prk", dh)
    shared = _labeled_expand(_KEM_SUITE, prk, b"shared_secret", enc + receiver, 32)
    secret = _labeled_extract(_HPKE_SUITE, shared, b"secret", b"")
    context = _context(info)
    key = _labeled_expand(_HPKE_SUITE, secret, b"key", context, 32)
    nonce = _labeled_expand(_HPKE_SUITE, secret, b"base_nonce", context, 12)
    return secret, key, nonce


#: RFC 9180 section 5.2: a context refuses to seal or open past ``2**96 - 1`` messages.
_SEQ_LIMIT = (1 << 96) - 1


class Context:
    """An HPKE encryption context (RFC 9180 section 5.2): one key, many messages.

    Message ``seq`` is sealed under the nonce ``base_nonce XOR seq``: the sequence number
    is derived by both ends (from a message's position in an ordered stream), never sent.
    One X25519 encapsulation then serves every message of the context, so each message
    costs one ChaCha20-Poly1305 operation.

    Examples
    --------
    >>> from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    >>> node = X25519PrivateKey.generate()
    >>> enc, sender = setup_base_s(public_bytes(node), b"i")
    >>> bodies = sender.seal_many([b"a", b"b", b"c"], [b"h"] * 3)
    >>> receiver = setup_base_r(node, enc, b"i")
    >>> [receiver.open_at(seq, b"h", body) for seq, body in enumerate(bodies)]
    [b'a', b'b', b'c']
    """

    __slots__ = ("_aead", "_base", "exporter_secret", "seq")

    def __init__(self, key: bytes, base_nonce: bytes, exporter_secret: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        self._aead = ChaCha20Poly1305(key)
        self._base = int.from_bytes(base_nonce, "big")
        self.exporter_secret = exporter_secret
        self.seq = 0

    def nonce(self, seq: int) -> bytes:
        """The nonce of message ``seq`` (``ValueError`` past the RFC's limit)."""
        if not 0 <= seq < _SEQ_LIMIT:
            raise InvalidParameterError(
                f"HPKE sequence number {seq} outside [0, 2**96 - 1)", parameter="seq", value=seq
            )
        return (self._base ^ seq).to_bytes(12, "big")

    def seal(self, aad: bytes, plain: bytes) -> bytes:
        """Seal the next message (RFC 9180 ``ContextS.Seal``)."""
        body = self.seal_at(self.seq, aad, plain)
        self.seq += 1
        return body

    def open(self, aad: bytes, body: bytes | memoryview) -> bytes:
        """Open the next message (RFC 9180 ``ContextR.Open``); the sequence number
        advances only when the body opens."""
        plain = self.open_at(self.seq, aad, body)
        self.seq += 1
        return plain

    def seal_at(self, seq: int, aad: bytes, plain: bytes) -> bytes:
        """Seal message number ``seq``: ``ciphertext || tag`` (``len(plain) + 16``)."""
        return bytes(self._aead.encrypt(self.nonce(seq), plain, aad))

    def open_at(self, seq: int, aad: bytes, body: bytes | memoryview) -> bytes:
        """Open message number ``seq``; ``InvalidTag`` if it was altered, moved, replayed
        under another number or sealed in another context."""
        return bytes(self._aead.decrypt(self.nonce(seq), bytes(body), aad))

    def seal_many(self, plains: Sequence[bytes], aads: Sequence[bytes]) -> list[bytes]:
        """Seal ``plains`` as messages ``seq, seq+1, ...`` (one AEAD call each, no other
        per-message work) and advance the sequence number past them."""
        first, count = self.seq, len(plains)
        if first + count >= _SEQ_LIMIT:
            raise InvalidParameterError(
                f"HPKE sequence number {first + count} outside [0, 2**96 - 1)",
                parameter="seq",
                value=first + count,
            )
        encrypt, base = self._aead.encrypt, self._base
        out = [
            encrypt((base ^ (first + i)).to_bytes(12, "big"), plain, aad)
            for i, (plain, aad) in enumerate(zip(plains, aads, strict=True))
        ]
        self.seq = first + count
        return out

    def export(self, context: bytes, length: int) -> bytes:
        """RFC 9180 ``Context.Export`` for ``length <= 32`` bytes."""
        if not 0 < length <= 32:
            raise InvalidParameterError(
                f"export length must be in [1, 32], got {length}", parameter="length", value=length
            )
        return _labeled_expand(_HPKE_SUITE, self.exporter_secret, b"sec", context, length)


def setup_base_s(receiver: bytes, info: bytes, *, ephemeral: Any = None) -> tuple[bytes, Context]:
    """RFC 9180 ``SetupBaseS``: ``(enc, context)`` for the X25519 public key ``receiver``.

    ``ephemeral`` (an ``X25519PrivateKey``) is for the RFC's test vectors only; by default a
    fresh key is generated.
    """
    enc, dh = _encapsulate(receiver, ephemeral)
    return enc, Context(*_schedule(dh, enc, receiver, info))


def _encapsulate(receiver: bytes, ephemeral: Any) -> tuple[bytes, bytes]:
    """DHKEM's ``Encap`` before key derivation: ``(enc, dh)`` with a fresh ephemeral key
    unless one is given (the RFC's test vectors)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import (
        X25519PrivateKey,
        X25519PublicKey,
    )

    if ephemeral is None:
        ephemeral = X25519PrivateKey.generate()
    return public_bytes(ephemeral), ephemeral.exchange(X25519PublicKey.from_public_bytes(receiver))


def setup_base_r(private: Any, enc: bytes, info: bytes) -> Context:
    """RFC 9180 ``SetupBaseR``: the receiving context for ``enc`` and the receiver's
    X25519 private key (``ValueError`` for a malformed ``enc``)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    dh = private.exchange(X25519PublicKey.from_public_bytes(bytes(enc)))
    return Context(*_schedule(dh, bytes(enc), public_bytes(private), info))


def public_bytes(private: Any) -> bytes:
    """Raw 32-byte public key of an X25519 private key."""
    return bytes(private.public_key().public_bytes_raw())


def seal_base(
    receiver: bytes, info: bytes, aad: bytes, plain: bytes, *, ephemeral: Any = None
) -> bytes:
    """``enc || ciphertext`` of ``plain`` for the X25519 public key ``receiver``.

    ``ephemeral`` (an ``X25519PrivateKey``) is for the RFC's test vectors only; by default
    a fresh key is generated for every call.

    Examples
    --------
    >>> from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    >>> node = X25519PrivateKey.generate()
    >>> body = seal_base(public_bytes(node), b"i", b"a", b"row 42")
    >>> len(body) == len(b"row 42") + OVERHEAD, open_base(node, b"i", b"a", body)
    (True, b'row 42')
    """
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    # SetupBaseS then the context's message 0 (nonce = base_nonce), without building a
    # Context: the body is the only message under its key.
    enc, dh = _encapsulate(receiver, ephemeral)
    _, key, nonce = _key_nonce(dh, enc, receiver, info)
    return enc + ChaCha20Poly1305(key).encrypt(nonce, plain, aad)


def open_base(
    private: Any, info: bytes, aad: bytes, body: bytes | memoryview, *, public: bytes = b""
) -> bytes:
    """Inverse of :func:`seal_base` for the receiver's X25519 private key (``public``: its
    public key's bytes if the caller keeps them, else derived here).

    Raises ``cryptography.exceptions.InvalidTag`` for a forged, altered or misdirected body
    and ``ValueError`` for a malformed encapsulated key.
    """
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    data = bytes(body)
    enc = data[:ENC]
    dh = private.exchange(X25519PublicKey.from_public_bytes(enc))
    _, key, nonce = _key_nonce(dh, enc, public or public_bytes(private), info)
    return bytes(ChaCha20Poly1305(key).decrypt(nonce, data[ENC:], aad))
