"""Enrolment: nodes make their own keys, a CA signs their requests, a signed directory lists them.

1. :func:`node_init` — run by a node's owner: creates the node's TLS key (ECDSA P-256), a
   certificate signing request named ``host<id>`` and an X25519 sealing key in the node's
   state folder (keys mode ``0600``; they never leave it), and a public **card**
   (``card.json``: id, address, CSR, sealing public key) to hand to the CA operator.
2. :func:`ca_sign` — the CA operator signs a card's CSR (after checking its signature and
   that it names the card's node) into ``issued/host<id>.pem``; the certificate goes back
   to the node (``cert.pem`` in its state folder). The CA never sees a private key.
3. :func:`make_directory` — the operator lists every enrolled node (id, address, SHA-256
   fingerprint of its certificate, sealing public key) in a TOML **directory** signed with
   the CA key. :func:`load_directory` verifies the signature against the CA certificate a
   node trusts, and :meth:`Directory.check_peer` authenticates a peer's certificate against
   its entry (a certificate the CA issued to another key under the same name is refused).

Examples
--------
>>> import tempfile
>>> from crowdhide.backends.tls.pki import make_ca
>>> root = Path(tempfile.mkdtemp())
>>> _ = make_ca(out=root / "ca")
>>> cards = [node_init(root / f"n{i}", node=i, address=f"10.0.0.{i + 1}:7000") for i in range(2)]
>>> certs = [ca_sign(root / "ca", card) for card in cards]
>>> path = make_directory(root / "ca", cards, out=root / "directory.toml")
>>> d = load_directory(path, ca=root / "ca" / "ca.pem")
>>> [(e.node, e.address) for e in d.entries]
[(0, '10.0.0.1:7000'), (1, '10.0.0.2:7000')]
>>> d.check_peer(1, certs[1].read_bytes())
>>> d.check_peer(0, certs[1].read_bytes())
Traceback (most recent call last):
...
crowdhide.backends.tls.enrol.EnrolmentError: node 0: certificate fingerprint ...
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import ipaddress
import json
import stat
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdhide.backends.tls.pki import host_name, issue_certificate, write_private_key
from crowdhide.errors import CrowdhideError, DataError

__all__ = [
    "DIRECTORY_VERSION",
    "ROLES",
    "Directory",
    "EnrolmentError",
    "NodeEntry",
    "ca_sign",
    "check_address",
    "load_directory",
    "make_directory",
    "node_init",
]

DIRECTORY_VERSION = "crowdhide-directory/1"
#: Roles of directory entries: daemons serving blocks, and the coordinator of runs.
ROLES = ("node", "coordinator")


class EnrolmentError(CrowdhideError, ValueError):
    """A card, certificate request, certificate or directory that does not check out."""


def check_address(address: str) -> tuple[str, int]:
    """``"IP:PORT"`` (IPv6 as ``[::1]:PORT``) as ``(ip, port)``; :class:`EnrolmentError` else.

    Examples
    --------
    >>> check_address("10.0.0.1:7000"), check_address("[::1]:7001")
    (('10.0.0.1', 7000), ('::1', 7001))
    """
    host, _, port = str(address).rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ip = ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise EnrolmentError(f"address must be IP:PORT, got {address!r}") from None
    if not 1 <= number <= 65535:
        raise EnrolmentError(f"address port must be in [1, 65535], got {address!r}")
    return str(ip), number


def _keys(state: Path) -> tuple[Any, Any]:
    """The node's TLS and sealing keys, created on first use (never overwritten)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, x25519

    out = []
    for name, make in (
        ("tls.key", lambda: ec.generate_private_key(ec.SECP256R1())),
        ("sealing.key", x25519.X25519PrivateKey.generate),
    ):
        path = state / name
        if not path.exists():
            write_private_key(path, make(), replace=False)
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            raise EnrolmentError(f"{path} must be readable by its owner only (mode 0600)")
        out.append(serialization.load_pem_private_key(path.read_bytes(), password=None))
    return out[0], out[1]


def node_init(state: Path, *, node: int, address: str, role: str = "node") -> Path:
    """Create (or reuse) the node's keys in ``state`` and write its public card; return it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    name = host_name(node)
    check_address(address)
    if role not in ROLES:
        raise EnrolmentError(f"role must be one of {ROLES}, got {role!r}")
    state = Path(state)
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    card_path = state / "card.json"
    if card_path.exists() and json.loads(card_path.read_text())["node"] != node:
        raise EnrolmentError(f"{state} already holds the keys of another node; use a new folder")
    tls_key, sealing_key = _keys(state)
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(tls_key, hashes.SHA256())
    )
    raw = serialization.Encoding.Raw
    sealing = sealing_key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
    card = {
        "node": node,
        "address": address,
        "csr": csr.public_bytes(serialization.Encoding.PEM).decode(),
        "sealing_public": sealing.hex(),
    }
    if role != "node":
        card["role"] = role
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    return card_path


def _card(path: Path) -> dict[str, Any]:
    try:
        card = json.loads(Path(path).read_text())
        node, address, csr, sealing = (
            card["node"],
            card["address"],
            card["csr"],
            card["sealing_public"],
        )
        check_address(address)
        if (
            card.get("role", "node") not in ROLES
            or not isinstance(node, int)
            or len(bytes.fromhex(sealing)) != 32
            or "CERTIFICATE REQUEST" not in csr
        ):
            raise DataError("bad field")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EnrolmentError(
            f"{path} is not a node card from `crowdhide node init` ({exc})"
        ) from None
    return dict(card)


def _load_ca(ca: Path) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate((ca / "ca.pem").read_bytes())
        key = serialization.load_pem_private_key((ca / "ca.key").read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise EnrolmentError(
            f"{ca} is not a CA folder from `crowdhide net ca init` ({exc})"
        ) from None
    return cert, key


def ca_sign(ca: Path, card_path: Path, *, days: int = 365) -> Path:
    """Sign the CSR of a node card with the CA in ``ca``; return ``ca/issued/host<id>.pem``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    card = _card(card_path)
    name = host_name(card["node"])
    try:
        csr = x509.load_pem_x509_csr(card["csr"].encode())
        valid = csr.is_signature_valid
    except ValueError as exc:
        raise EnrolmentError(f"{card_path}: not a certificate request ({exc})") from None
    if not valid:
        raise EnrolmentError(f"{card_path}: the certificate request's signature is invalid")
    names = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    if names.value.get_values_for_type(x509.DNSName) != [name]:
        raise EnrolmentError(f"{card_path}: the request must name {name!r} only")
    ca_cert, ca_key = _load_ca(Path(ca))
    now = _dt.datetime.now(_dt.UTC)
    period = (now - _dt.timedelta(minutes=5), now + _dt.timedelta(days=days))
    cert = issue_certificate(
        ca_cert, ca_key, subject=csr.subject, public_key=csr.public_key(), name=name, valid=period
    )
    issued = Path(ca) / "issued"
    issued.mkdir(exist_ok=True)
    out = issued / f"{name}.pem"
    out.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return out


def _fingerprint(pem: bytes) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class NodeEntry:
    """One enrolled node: id, address, certificate fingerprint, sealing public key."""

    node: int
    address: str
    certificate_sha256: str
    sealing_public: str
    #: ``"node"`` (a daemon serving blocks) or ``"coordinator"`` (schedules runs, no blocks).
    role: str = "node"

    def signed(self) -> dict[str, Any]:
        """The fields the directory's signature covers (``role`` only when not ``node``, so
        directories written before roles existed still verify)."""
        out = dict(self.__dict__)
        if self.role == "node":
            del out["role"]
        return out


@dataclass(frozen=True)
class Directory:
    """The verified list of a deployment's nodes."""

    entries: tuple[NodeEntry, ...]

    @property
    def nodes(self) -> tuple[NodeEntry, ...]:
        """The entries of role ``node`` (the daemons), by id."""
        return tuple(e for e in self.entries if e.role == "node")

    def by_fingerprint(self, der: bytes) -> NodeEntry | None:
        """The entry whose certificate has the DER encoding ``der``, if any."""
        seen = hashlib.sha256(der).hexdigest()
        return next((e for e in self.entries if e.certificate_sha256 == seen), None)

    def entry(self, node: int) -> NodeEntry:
        """The entry of ``node``."""
        for e in self.entries:
            if e.node == node:
                return e
        raise EnrolmentError(f"node {node} is not in the directory")

    def check_peer(self, node: int, certificate_pem: bytes) -> None:
        """Raise unless ``certificate_pem`` is the certificate the directory lists for ``node``."""
        seen = _fingerprint(certificate_pem)
        wanted = self.entry(node).certificate_sha256
        if seen != wanted:
            raise EnrolmentError(
                f"node {node}: certificate fingerprint {seen[:16]}… is not the directory's "
                f"{wanted[:16]}…"
            )


def _signed_bytes(entries: Sequence[NodeEntry]) -> bytes:
    body = {"version": DIRECTORY_VERSION, "nodes": [e.signed() for e in entries]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def make_directory(ca: Path, cards: Sequence[Path], *, out: Path) -> Path:
    """Write the directory of the nodes of ``cards`` (certificates issued by ``ca``), signed."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    _, ca_key = _load_ca(Path(ca))
    entries = []
    for path in cards:
        card = _card(path)
        cert = Path(ca) / "issued" / f"{host_name(card['node'])}.pem"
        if not cert.is_file():
            raise EnrolmentError(f"{path}: no certificate issued yet (crowdhide net ca sign)")
        entries.append(
            NodeEntry(
                card["node"],
                card["address"],
                _fingerprint(cert.read_bytes()),
                card["sealing_public"],
                card.get("role", "node"),
            )
        )
    entries.sort(key=lambda e: e.node)
    _check_unique(entries)
    signature = ca_key.sign(_signed_bytes(entries), ec.ECDSA(hashes.SHA256()))
    lines = [f'version = "{DIRECTORY_VERSION}"', f'signature = "{signature.hex()}"', ""]
    for e in entries:
        lines += [
            "[[node]]",
            f"node = {e.node}",
            f'address = "{e.address}"',
            f'certificate_sha256 = "{e.certificate_sha256}"',
            f'sealing_public = "{e.sealing_public}"',
            *([f'role = "{e.role}"'] if e.role != "node" else []),
            "",
        ]
    Path(out).write_text("\n".join(lines))
    return Path(out)


def _check_unique(entries: Sequence[NodeEntry]) -> None:
    for what in ("node", "address", "certificate_sha256", "sealing_public"):
        values = [getattr(e, what) for e in entries]
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:
            raise EnrolmentError(f"directory lists {what} {twice} more than once")


def load_directory(path: Path, *, ca: Path) -> Directory:
    """The directory at ``path``, verified against the CA certificate ``ca``."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        data = tomllib.loads(Path(path).read_text())
        version = data.get("version")
        if version != DIRECTORY_VERSION:
            raise EnrolmentError(f"directory version {version!r} is not {DIRECTORY_VERSION!r}")
        entries = [
            NodeEntry(
                int(n["node"]),
                str(n["address"]),
                str(n["certificate_sha256"]),
                str(n["sealing_public"]),
                str(n.get("role", "node")),
            )
            for n in data.get("node", [])
        ]
        signature = bytes.fromhex(data["signature"])
        key = x509.load_pem_x509_certificate(Path(ca).read_bytes()).public_key()
    except (OSError, ValueError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        if isinstance(exc, EnrolmentError):
            raise
        raise EnrolmentError(
            f"{path} is not a directory from `crowdhide net directory` ({exc})"
        ) from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise EnrolmentError(f"{ca} is not an ECDSA CA certificate")
    try:
        key.verify(signature, _signed_bytes(entries), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise EnrolmentError(f"{path}: the signature does not verify with the CA {ca}") from None
    _check_unique(entries)
    for e in entries:
        check_address(e.address)
        if e.role not in ROLES:
            raise EnrolmentError(f"{path}: node {e.node} has role {e.role!r}, not one of {ROLES}")
    return Directory(tuple(entries))
