"""``crowdhide run --backend tls`` and ``crowdhide net pki`` end to end."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

pytestmark = pytest.mark.net

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diabetes.toml"


def _small_example(tmp_path: Path, rows: int) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {rows}")
    assert f"rows = {rows}" in text
    plan = tmp_path / "diabetes.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    return plan


def test_diabetes_over_tls_gives_the_local_result(capsys, tmp_path: Path) -> None:
    plan = _small_example(tmp_path, 1500)
    # The example's fixed countermeasures are sized for 20,000 rows: at 1,500 they certify
    # slightly less than its target, which is beside the point of a transport test.
    common = ("run", str(plan), "--block-size", "300", "--json", "--allow-unmet")
    local = run_cli(capsys, *common, "--out", str(tmp_path / "local"))
    assert local.code == 0, local.err
    pki = tmp_path / "pki"
    assert run_cli(capsys, "net", "pki", "--hosts", "3", "--out", str(pki), "--json").code == 0
    tls = run_cli(
        capsys,
        *common,
        "--out",
        str(tmp_path / "tls"),
        "--backend",
        "tls",
        "--hosts",
        "3",
        "--pki",
        str(pki),
    )
    assert tls.code == 0, tls.err
    a, b = local.json(), tls.json()
    for key in ("result", "privacy", "costs", "utility"):
        assert a[key] == b[key], key
    net = b["network"]
    assert net["messages_lost"] == 0
    assert net["dead_hosts"] == []
    assert net["data_frames_delivered"] == a["costs"]["messages"]  # dummies included


def test_pki_writes_private_keys_with_mode_0600(capsys, tmp_path: Path) -> None:
    result = run_cli(capsys, "net", "pki", "--hosts", "2", "--out", str(tmp_path), "--json")
    assert result.code == 0, result.err
    keys = sorted(tmp_path.glob("*.key"))
    assert [k.name for k in keys] == ["ca.key", "host0.key", "host1.key"]
    assert {stat.S_IMODE(k.stat().st_mode) for k in keys} == {0o600}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("net", "pki", "--hosts", "0"), "Invalid value for '--hosts': must be in [1, 256], got 0"),
        (
            ("run", str(EXAMPLE), "--backend", "mpi"),
            "backend must be one of ('local', 'ray', 'tls'), got 'mpi'",
        ),
        (("run", str(EXAMPLE), "--on-missing", "skip"), "--on-missing must be 'fail' or 'report'"),
        (("run", str(EXAMPLE), "--placement", "spread"), "--placement applies to --backend tls"),
        (
            ("run", str(EXAMPLE), "--backend", "tls", "--placement", "random"),
            "--placement must be 'spread' or 'modulo', got 'random'",
        ),
        (("run", str(EXAMPLE), "--backend", "tls", "--pki", "/nonexistent"), "--pki must be"),
    ],
)
def test_invalid_options_end_with_one_line(capsys, args: tuple[str, ...], message: str) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
