"""HPKE base mode against RFC 9180's test vector A.2.1 (single shot and a context's sequence
numbers) and against cryptography's own HPKE."""

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
EXPORTER = "a3b010d4994890e2c6968a36f64470d3c824c8f5029942feb11e7a74b2921922"
# A.2.1.1: sequence number -> (aad, nonce, ciphertext), the same plaintext PT each time.
SEQUENCE = {
    0: ("436f756e742d30", "5c4d98150661b848853b547f", CT),
    1: (
        "436f756e742d31",
        "5c4d98150661b848853b547e",
        "6b53c051e4199c518de79594e1c4ab18b96f081549d45ce015be002090bb119e85285337cc95ba5f59992dc98c",
    ),
    2: (
        "436f756e742d32",
        "5c4d98150661b848853b547d",
        "71146bd6795ccc9c49ce25dda112a48f202ad220559502cef1f34271e0cb4b02b4f10ecac6f48c32f878fae86b",
    ),
    255: (
        "436f756e742d323535",
        "5c4d98150661b848853b5480",
        "18ab939d63ddec9f6ac2b60d61d36a7375d2070c9b683861110757062c52b8880a5f6b3936da9cd6c23ef2a95c",
    ),
}


def _key(hexed: str) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(bytes.fromhex(hexed))


def test_rfc9180_vector_a21_key_schedule_seal_and_open() -> None:
    ephemeral, receiver = _key(SK_E), _key(SK_R)
    assert hpke.public_bytes(ephemeral).hex() == PK_E
    assert hpke.public_bytes(receiver).hex() == PK_R
    dh = ephemeral.exchange(receiver.public_key())
    key, nonce, exporter = hpke._schedule(
        dh, bytes.fromhex(PK_E), bytes.fromhex(PK_R), bytes.fromhex(INFO)
    )
    assert (key.hex(), nonce.hex(), exporter.hex()) == (KEY, NONCE, EXPORTER)
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


def test_rfc9180_vector_a211_a_context_seals_each_sequence_number() -> None:
    """SetupBaseS/R, then the RFC's ciphertexts of sequence numbers 0, 1, 2 and 255: the
    nonce is derived from the sequence number on both ends (never sent)."""
    enc, sender = hpke.setup_base_s(bytes.fromhex(PK_R), bytes.fromhex(INFO), ephemeral=_key(SK_E))
    assert enc.hex() == PK_E
    receiver = hpke.setup_base_r(_key(SK_R), enc, bytes.fromhex(INFO))
    plain = bytes.fromhex(PT)
    for seq, (aad, nonce, ct) in SEQUENCE.items():
        assert sender.nonce(seq).hex() == nonce
        assert sender.seal_at(seq, bytes.fromhex(aad), plain).hex() == ct
        assert receiver.open_at(seq, bytes.fromhex(aad), bytes.fromhex(ct)) == plain
    # In-order use: seal()/open() and seal_many() walk the same sequence numbers.
    ordered = [sender.seal(bytes.fromhex(SEQUENCE[s][0]), plain) for s in (0, 1, 2)]
    assert [b.hex() for b in ordered] == [SEQUENCE[s][2] for s in (0, 1, 2)]
    _, fresh = hpke.setup_base_s(bytes.fromhex(PK_R), bytes.fromhex(INFO), ephemeral=_key(SK_E))
    many = fresh.seal_many([plain] * 3, [bytes.fromhex(SEQUENCE[s][0]) for s in (0, 1, 2)])
    assert [b.hex() for b in many] == [SEQUENCE[s][2] for s in (0, 1, 2)]
    assert fresh.seq == 3


def test_a_context_refuses_tampered_replayed_reordered_and_foreign_messages() -> None:
    node = X25519PrivateKey.generate()
    enc, sender = hpke.setup_base_s(hpke.public_bytes(node), b"link")
    bodies = sender.seal_many([b"m0", b"m1", b"m2"], [b"h0", b"h1", b"h2"])
    receiver = hpke.setup_base_r(node, enc, b"link")
    assert [receiver.open(b"h%d" % i, b) for i, b in enumerate(bodies)] == [b"m0", b"m1", b"m2"]
    again = hpke.setup_base_r(node, enc, b"link")
    forged = bytearray(bodies[0])
    forged[0] ^= 1
    other_enc, other = hpke.setup_base_s(hpke.public_bytes(node), b"link")
    assert other_enc != enc  # a fresh encapsulation per context
    for seq, aad, body in (
        (0, b"h0", bytes(forged)),  # altered
        (1, b"h0", bodies[0]),  # replayed at another position
        (0, b"h1", bodies[1]),  # reordered
        (0, b"h9", bodies[0]),  # moved under another header
        (0, b"h0", other.seal(b"h0", b"m0")),  # another context
    ):
        with pytest.raises(InvalidTag):
            again.open_at(seq, aad, body)
    with pytest.raises(InvalidTag):  # another info (another round of the link)
        hpke.setup_base_r(node, enc, b"link 2").open_at(0, b"h0", bodies[0])
    with pytest.raises(ValueError, match="sequence number"):
        sender.nonce((1 << 96) - 1)


def test_export_is_bound_to_the_context() -> None:
    node = X25519PrivateKey.generate()
    enc, sender = hpke.setup_base_s(hpke.public_bytes(node), b"i")
    receiver = hpke.setup_base_r(node, enc, b"i")
    assert sender.export(b"x", 32) == receiver.export(b"x", 32) != sender.export(b"y", 32)
