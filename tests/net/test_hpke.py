"""HPKE base mode against RFC 9180's test vector A.2.1 and against cryptography's own HPKE."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from crowdhide.backends.tls import hpke

# RFC 9180, appendix A.2.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20Poly1305, base.
INFO = "4f6465206f6e2061204772656369616e2055726e"
SK_E = "f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600"
PK_E = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a"
SK_R = "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb"
PK_R = "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a"
PT = "4265617574792069732074727574682c20747275746820626561757479"
AAD = "436f756e742d30"
CT = "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28"
KEY = "ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91"
NONCE = "5c4d98150661b848853b547f"


def _key(hexed: str) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(bytes.fromhex(hexed))


def test_rfc9180_vector_a21_key_schedule_seal_and_open() -> None:
    ephemeral, receiver = _key(SK_E), _key(SK_R)
    assert hpke.public_bytes(ephemeral).hex() == PK_E
    assert hpke.public_bytes(receiver).hex() == PK_R
    dh = ephemeral.exchange(receiver.public_key())
    key, nonce = hpke._schedule(dh, bytes.fromhex(PK_E), bytes.fromhex(PK_R), bytes.fromhex(INFO))
    assert (key.hex(), nonce.hex()) == (KEY, NONCE)
    body = hpke.seal_base(
        bytes.fromhex(PK_R),
        bytes.fromhex(INFO),
        bytes.fromhex(AAD),
        bytes.fromhex(PT),
        ephemeral=ephemeral,
    )
    assert body.hex() == PK_E + CT
    assert hpke.open_base(receiver, bytes.fromhex(INFO), bytes.fromhex(AAD), body).hex() == PT


def test_a_body_opens_only_unaltered_for_its_key_info_and_aad() -> None:
    node, other = X25519PrivateKey.generate(), X25519PrivateKey.generate()
    body = hpke.seal_base(hpke.public_bytes(node), b"info", b"aad", b"payload")
    assert hpke.open_base(node, b"info", b"aad", body) == b"payload"
    forged = bytearray(body)
    forged[-1] ^= 1
    for key, info, aad, data in (
        (other, b"info", b"aad", body),
        (node, b"other", b"aad", body),
        (node, b"info", b"other", body),
        (node, b"info", b"aad", bytes(forged)),
    ):
        with pytest.raises(InvalidTag):
            hpke.open_base(key, info, aad, data)
    # Ephemeral keys: the same plaintext never gives the same body or the same enc.
    again = hpke.seal_base(hpke.public_bytes(node), b"info", b"aad", b"payload")
    assert again[: hpke.ENC] != body[: hpke.ENC]


def test_interoperates_with_cryptography_hpke_when_available() -> None:
    builtin = pytest.importorskip("cryptography.hazmat.primitives.hpke")
    suite = builtin.Suite(
        builtin.KEM.X25519, builtin.KDF.HKDF_SHA256, builtin.AEAD.CHACHA20_POLY1305
    )
    node = X25519PrivateKey.generate()
    theirs = suite.encrypt(b"row", node.public_key(), info=b"i")
    assert hpke.open_base(node, b"i", b"", theirs) == b"row"
    ours = hpke.seal_base(hpke.public_bytes(node), b"i", b"", b"row")
    assert suite.decrypt(ours, node, info=b"i") == b"row"
