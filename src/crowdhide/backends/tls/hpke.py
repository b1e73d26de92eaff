"""HPKE (RFC 9180) base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.

Every message is sealed for its receiving node with a fresh ephemeral X25519 key (the
*encapsulated key* ``enc``, 32 bytes, sent in front of the ciphertext), so a sealed body
carries neither the sealing host nor a counter: two bodies sealed by the same host for the
same node share nothing an observer or a relaying node could link. Single-shot use only
(sequence number 0), as RFC 9180 section 6.1 describes.

Built from ``cryptography``'s X25519 and ChaCha20-Poly1305 and the standard library's HMAC
(the HKDF of RFC 5869 is two HMAC calls for outputs of at most 32 bytes); the RFC's test
vector A.2.1 is checked in ``tests/net/test_hpke.py``.
"""

from __future__ import annotations

import hmac
from typing import Any

__all__ = ["ENC", "OVERHEAD", "TAG", "open_base", "public_bytes", "seal_base"]

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


def _schedule(dh: bytes, enc: bytes, receiver: bytes, info: bytes) -> tuple[bytes, bytes]:
    """``(key, base_nonce)`` from the Diffie-Hellman output (DHKEM, then KeySchedule)."""
    prk = _labeled_extract(_KEM_SUITE, b"", b"eae_prk", dh)
    shared = _labeled_expand(_KEM_SUITE, prk, b"shared_secret", enc + receiver, 32)
    secret = _labeled_extract(_HPKE_SUITE, shared, b"secret", b"")
    context = _context(info)
    key = _labeled_expand(_HPKE_SUITE, secret, b"key", context, 32)
    nonce = _labeled_expand(_HPKE_SUITE, secret, b"base_nonce", context, 12)
    return key, nonce


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
    from cryptography.hazmat.primitives.asymmetric.x25519 import (
        X25519PrivateKey,
        X25519PublicKey,
    )
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    if ephemeral is None:
        ephemeral = X25519PrivateKey.generate()
    enc = public_bytes(ephemeral)
    dh = ephemeral.exchange(X25519PublicKey.from_public_bytes(receiver))
    key, nonce = _schedule(dh, enc, receiver, info)
    return enc + ChaCha20Poly1305(key).encrypt(nonce, plain, aad)


def open_base(private: Any, info: bytes, aad: bytes, body: bytes | memoryview) -> bytes:
    """Inverse of :func:`seal_base` for the receiver's X25519 private key.

    Raises ``cryptography.exceptions.InvalidTag`` for a forged, altered or misdirected body
    and ``ValueError`` for a malformed encapsulated key.
    """
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    data = bytes(body)
    enc = data[:ENC]
    dh = private.exchange(X25519PublicKey.from_public_bytes(enc))
    key, nonce = _schedule(dh, enc, public_bytes(private), info)
    return bytes(ChaCha20Poly1305(key).decrypt(nonce, data[ENC:], aad))
