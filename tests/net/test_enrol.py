"""Enrolment: node keys stay in their folder (0600), the CA signs only well-formed requests,
and the signed directory refuses every edit, another CA, duplicates and unknown versions."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from crowdhide.backends.tls.enrol import (
    EnrolmentError,
    ca_sign,
    load_directory,
    make_directory,
    node_init,
)
from crowdhide.backends.tls.pki import make_ca, write_host_cert
from tests.cli_helpers import run_cli


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def enrolled(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    make_ca(out=tmp_path / "ca")
    cards = [
        node_init(tmp_path / f"n{i}", node=i, address=f"10.9.0.{i + 1}:7000") for i in range(3)
    ]
    for card in cards:
        ca_sign(tmp_path / "ca", card)
    return tmp_path / "ca", cards, make_directory(tmp_path / "ca", cards, out=tmp_path / "d.toml")


def test_node_keys_stay_private_and_are_reused(tmp_path: Path) -> None:
    card = node_init(tmp_path / "n", node=4, address="127.0.0.1:7004")
    state = card.parent
    assert _mode(state) == 0o700
    assert _mode(state / "tls.key") == 0o600
    assert _mode(state / "sealing.key") == 0o600
    text = card.read_text()
    for key in ("tls.key", "sealing.key"):
        body = "".join((state / key).read_text().splitlines()[1:-1])
        assert body[:40] not in text.replace("\n", "")  # no private key material on the card
    first = json.loads(text)["sealing_public"]
    again = node_init(state, node=4, address="127.0.0.1:7004")
    assert json.loads(again.read_text())["sealing_public"] == first  # keys are not rotated
    with pytest.raises(EnrolmentError, match="another node"):
        node_init(state, node=5, address="127.0.0.1:7005")
    (state / "tls.key").chmod(0o644)
    with pytest.raises(EnrolmentError, match="owner only"):
        node_init(state, node=4, address="127.0.0.1:7004")


def test_the_ca_signs_only_requests_naming_the_cards_node(tmp_path: Path) -> None:
    make_ca(out=tmp_path / "ca")
    card = node_init(tmp_path / "n", node=1, address="10.0.0.1:7000")
    data = json.loads(card.read_text())
    data["node"] = 2  # the request names host1
    card.write_text(json.dumps(data))
    with pytest.raises(EnrolmentError, match="must name 'host2'"):
        ca_sign(tmp_path / "ca", card)
    data["node"] = 1
    data["csr"] = data["csr"].replace(data["csr"][100:104], "AAAA")
    card.write_text(json.dumps(data))
    with pytest.raises(EnrolmentError, match="request"):
        ca_sign(tmp_path / "ca", card)


def test_the_directory_lists_what_was_enrolled(enrolled: tuple[Path, list[Path], Path]) -> None:
    ca, cards, path = enrolled
    directory = load_directory(path, ca=ca / "ca.pem")
    assert [e.node for e in directory.entries] == [0, 1, 2]
    for i, card in enumerate(cards):
        entry = directory.entry(i)
        assert entry.sealing_public == json.loads(card.read_text())["sealing_public"]
        directory.check_peer(i, (ca / "issued" / f"host{i}.pem").read_bytes())


def test_a_certificate_of_the_same_ca_and_name_but_another_key_is_refused(
    enrolled: tuple[Path, list[Path], Path], tmp_path: Path
) -> None:
    ca, _, path = enrolled
    rogue = write_host_cert(ca, "host1", out=tmp_path / "rogue")
    directory = load_directory(path, ca=ca / "ca.pem")
    with pytest.raises(EnrolmentError, match="node 1: certificate fingerprint"):
        directory.check_peer(1, rogue.cert.read_bytes())


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda t: t.replace("10.9.0.2:7000", "10.9.0.9:7000"), "signature does not verify"),
        (lambda t: t.replace("node = 2", "node = 7"), "signature does not verify"),
        (lambda t: t.replace("crowdhide-directory/1", "crowdhide-directory/2"), "version"),
        (lambda t: t.replace('signature = "', 'signature = "00'), "signature does not verify"),
        (lambda t: t + "[[node\n", "not a directory"),
    ],
)
def test_an_edited_directory_is_refused(
    enrolled: tuple[Path, list[Path], Path], edit: object, words: str
) -> None:
    ca, _, path = enrolled
    text = path.read_text()
    changed = edit(text)  # type: ignore[operator]
    assert changed != text
    path.write_text(changed)
    with pytest.raises(EnrolmentError, match=words):
        load_directory(path, ca=ca / "ca.pem")


def test_another_ca_and_duplicates_are_refused(
    enrolled: tuple[Path, list[Path], Path], tmp_path: Path
) -> None:
    ca, cards, path = enrolled
    other = make_ca(out=tmp_path / "other")
    with pytest.raises(EnrolmentError, match="signature does not verify"):
        load_directory(path, ca=other)
    twin = node_init(tmp_path / "twin", node=5, address="10.9.0.1:7000")  # node 0's address
    ca_sign(ca, twin)
    with pytest.raises(EnrolmentError, match="address"):
        make_directory(ca, [*cards, twin], out=tmp_path / "dup.toml")


def test_the_enrolment_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def run(*args: str) -> str:
        result = run_cli(capsys, *args)
        assert result.code == 0, result.err
        return str(result.out)

    run("net", "ca", "init", "--out", str(tmp_path / "ca"))
    for i in range(2):
        state = str(tmp_path / f"n{i}")
        run("node", "init", "--id", str(i), "--address", f"10.9.0.{i + 1}:7000", "--state", state)
        run("net", "ca", "sign", "--ca", str(tmp_path / "ca"), f"{state}/card.json")
    cards = [str(tmp_path / f"n{i}" / "card.json") for i in range(2)]
    out = run(
        "net",
        "directory",
        "--ca",
        str(tmp_path / "ca"),
        "--out",
        str(tmp_path / "d.toml"),
        "--json",
        *cards,
    )
    assert json.loads(out)["nodes"] == ["0 10.9.0.1:7000", "1 10.9.0.2:7000"]
    for args, words in (
        (
            ("node", "init", "--id", "3", "--address", "nowhere", "--state", str(tmp_path / "n3")),
            "address must be IP:PORT, got 'nowhere'",
        ),
        (("net", "ca", "init", "--out", str(tmp_path / "ca")), "already holds a CA key"),
        (
            ("net", "directory", "--ca", str(tmp_path / "ca"), str(tmp_path / "n3.json")),
            "is not a node card",
        ),
    ):
        bad = run_cli(capsys, *args)
        assert bad.code == 2
        assert words in bad.err
        assert len(bad.err.strip().splitlines()) == 1
