"""A run's public-key infrastructure: one CA, one ECDSA P-256 certificate per node host.

Host ``i`` is named ``host<i>`` (certificate subject CN and DNS subject-alternative name);
a peer is accepted only if its certificate chains to the run's CA *and* carries the name the
node map expects. Private keys are written with mode ``0600``.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdhide._validation import check_int
from crowdhide.errors import DataError, OutputPathError

__all__ = [
    "HostCredentials",
    "Pki",
    "check_credentials",
    "host_name",
    "issue_certificate",
    "make_ca",
    "make_pki",
    "write_host_cert",
    "write_private_key",
]


def host_name(index: int) -> str:
    """Certificate name of node host ``index``.

    Examples
    --------
    >>> host_name(3)
    'host3'
    """
    return f"host{check_int('index', index, low=0)}"


@dataclass(frozen=True)
class HostCredentials:
    """Paths of one host's certificate and private key."""

    name: str
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Paths of a run's CA certificate and of every host's credentials."""

    ca_cert: Path
    ca_key: Path
    hosts: tuple[HostCredentials, ...]


def write_private_key(path: Path, key: Any, *, replace: bool) -> None:
    """Write private ``key`` (any ``cryptography`` private key: ECDSA, X25519) to ``path`` as
    unencrypted PKCS#8 PEM, readable by its owner only (mode ``0600``).

    The one writer of private keys: ``net pki``/``net ca`` (``replace=True``: an existing
    file is overwritten, the caller decided) and ``node init`` (``replace=False``: a key is
    never overwritten, an existing file raises :class:`FileExistsError`).

    Examples
    --------
    >>> import tempfile, stat
    >>> from cryptography.hazmat.primitives.asymmetric import x25519
    >>> path = Path(tempfile.mkdtemp()) / "k.key"
    >>> write_private_key(path, x25519.X25519PrivateKey.generate(), replace=False)
    >>> oct(stat.S_IMODE(path.stat().st_mode))
    '0o600'
    >>> write_private_key(path, x25519.X25519PrivateKey.generate(), replace=False)
    Traceback (most recent call last):
    ...
    FileExistsError: ...
    """
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # 0600 before the first byte: os.open's mode applies only to a new file, so an existing
    # (e.g. 0644) one being replaced is narrowed through its descriptor before the write.
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _load_ca(pki_dir: Path) -> tuple[object, object]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate((pki_dir / "ca.pem").read_bytes())
    key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), password=None)
    return cert, key


def issue_certificate(
    ca_cert: Any,
    ca_key: Any,
    *,
    subject: Any,
    public_key: Any,
    name: str,
    valid: tuple[_dt.datetime, _dt.datetime],
) -> Any:
    """A node certificate for ``public_key`` signed by the CA: ``subject``, DNS name
    ``name``, not a CA, TLS server and client use, valid from ``valid[0]`` to ``valid[1]``.
    The one issuer of ``net pki`` (:func:`write_host_cert`) and ``net ca sign``
    (:func:`crowdhide.backends.tls.enrol.ca_sign`)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def write_host_cert(
    pki_dir: Path,
    name: str,
    *,
    out: Path | None = None,
    not_before: _dt.datetime | None = None,
    not_after: _dt.datetime | None = None,
) -> HostCredentials:
    """Issue a certificate named ``name`` from the CA in ``pki_dir`` (default: 1 year).

    ``not_before``/``not_after`` exist so that tests can issue an expired certificate.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_cert, ca_key = _load_ca(Path(pki_dir))
    assert isinstance(ca_cert, x509.Certificate)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    now = _dt.datetime.now(_dt.UTC)
    start = not_before if not_before is not None else now - _dt.timedelta(minutes=5)
    end = not_after if not_after is not None else now + _dt.timedelta(days=365)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = issue_certificate(
        ca_cert, ca_key, subject=subject, public_key=key.public_key(), name=name, valid=(start, end)
    )
    target = Path(out) if out is not None else Path(pki_dir)
    target.mkdir(parents=True, exist_ok=True)
    from cryptography.hazmat.primitives import serialization

    cert_path = target / f"{name}.pem"
    key_path = target / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_private_key(key_path, key, replace=True)
    return HostCredentials(name=name, cert=cert_path, key=key_path)


def make_pki(*, hosts: int, out: Path, days: int = 365, overwrite: bool = False) -> Pki:
    """Write a CA and ``hosts`` host certificates (ECDSA P-256) into ``out``.

    An existing CA in ``out`` is replaced only with ``overwrite=True``: a new CA orphans
    every certificate the old one issued.

    Examples
    --------
    >>> import tempfile, stat
    >>> d = Path(tempfile.mkdtemp())
    >>> pki = make_pki(hosts=2, out=d)
    >>> [h.name for h in pki.hosts], oct(stat.S_IMODE(pki.hosts[0].key.stat().st_mode))
    (['host0', 'host1'], '0o600')
    """
    count = check_int("hosts", hosts, low=1, high=4096)
    days = check_int("days", days, low=1)
    directory = Path(out)
    make_ca(out=directory, days=days, overwrite=overwrite)
    now = _dt.datetime.now(_dt.UTC)
    creds = tuple(
        write_host_cert(directory, host_name(i), not_after=now + _dt.timedelta(days=days))
        for i in range(count)
    )
    return Pki(ca_cert=directory / "ca.pem", ca_key=directory / "ca.key", hosts=creds)


def make_ca(*, out: Path, days: int = 365, overwrite: bool = False) -> Path:
    """Write a CA certificate ``out/ca.pem`` and its key ``out/ca.key`` (mode 0600).

    An existing CA in ``out`` is replaced only with ``overwrite=True``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    days = check_int("days", days, low=1)
    directory = Path(out)
    existing = [f for f in ("ca.pem", "ca.key") if (directory / f).exists()]
    if existing and not overwrite:
        raise OutputPathError(
            f"{directory / existing[0]} exists: a new CA would orphan every certificate the "
            "old one issued (pass --force / overwrite=True to replace it)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "crowdhide run CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,  # the CA also signs node directories
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    write_private_key(directory / "ca.key", key, replace=True)
    return directory / "ca.pem"


def check_credentials(pki_dir: Path, hosts: int) -> None:
    """Each host's certificate matches its key and was issued by the CA of ``pki_dir``.

    Checked in the driver before any host starts, so a wrong file is one line naming it
    (a host process failing its TLS setup was a traceback from a closed control pipe).
    """
    import ssl

    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    directory = Path(pki_dir)
    ca_file = directory / "ca.pem"
    try:
        ca = x509.load_pem_x509_certificate(ca_file.read_bytes())
    except (OSError, ValueError) as exc:
        raise DataError(f"pki: {ca_file} is not a readable PEM certificate ({exc})") from None
    for index in range(hosts):
        cert = directory / f"{host_name(index)}.pem"
        key = directory / f"{host_name(index)}.key"
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(cert, key)
            x509.load_pem_x509_certificate(cert.read_bytes()).verify_directly_issued_by(ca)
        except ssl.SSLError as exc:
            raise DataError(
                f"pki: certificate {cert} does not match its key {key} ({exc.reason or exc})"
            ) from None
        except InvalidSignature:
            raise DataError(f"pki: certificate {cert} was not signed by {ca_file}") from None
        except (OSError, ValueError, TypeError) as exc:
            raise DataError(
                f"pki: certificate {cert} is unreadable or not issued by {ca_file} ({exc})"
            ) from None
