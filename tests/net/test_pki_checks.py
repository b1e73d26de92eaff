"""Issue #28: a PKI whose files do not belong together is one line naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from crowdhide.backends.tls.pki import check_credentials, make_pki
from crowdhide.errors import DataError
from tests.cli_helpers import run_cli

PLAN = """
[data]
generator = "diabetes"
rows = 100
[query]
sql = "SELECT age_range, COUNT(*) FROM D GROUP BY age_range"
compute_nodes = 2
[countermeasures]
sigma = 0.0
[run]
plots = false
"""


def test_a_certificate_that_does_not_match_its_key_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pki = tmp_path / "pki"
    make_pki(hosts=2, out=pki)
    check_credentials(pki, 2)  # as written: fine
    shutil.copy(pki / "host1.key", pki / "host0.key")
    with pytest.raises(DataError, match=r"host0\.pem does not match its key"):
        check_credentials(pki, 2)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    args = ["run", str(plan), "--backend", "tls", "--hosts", "2", "--pki", str(pki)]
    res = run_cli(capsys, *args, "--out", str(tmp_path / "out"))
    assert res.code == 2, res.err
    assert "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert "host0.pem" in res.err


def test_a_certificate_of_another_ca_is_named(tmp_path: Path) -> None:
    make_pki(hosts=1, out=tmp_path / "a")
    make_pki(hosts=1, out=tmp_path / "b")
    for name in ("host0.pem", "host0.key"):
        shutil.copy(tmp_path / "b" / name, tmp_path / "a" / name)
    with pytest.raises(DataError, match=r"host0\.pem was not signed by .*ca\.pem"):
        check_credentials(tmp_path / "a", 1)


def test_the_one_key_writer_narrows_a_replaced_file_and_never_overwrites_a_node_key(
    tmp_path: Path,
) -> None:
    """`net pki` replaces a world-readable key file with a 0600 one; `node init` refuses to
    overwrite (both go through write_private_key)."""
    import stat

    from cryptography.hazmat.primitives.asymmetric import ec

    from crowdhide.backends.tls.pki import write_private_key

    path = tmp_path / "k.key"
    path.write_bytes(b"old")
    path.chmod(0o644)
    write_private_key(path, ec.generate_private_key(ec.SECP256R1()), replace=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_private_key(path, ec.generate_private_key(ec.SECP256R1()), replace=False)
    assert path.read_bytes() == before
