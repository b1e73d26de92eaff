"""``crowdhide run --backend/--shards/--address`` and ``[run] backend, shards``: the report
echoes them, the output does not depend on the shard count, invalid values exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

PLAN = '''
name = "shards"
[data]
generator = "diabetes"
rows = 2500
seed = 1
[query]
kind = "aggregate"
sql = """SELECT age_range, bmi, AVG(insulin), COUNT(*) FROM D
         GROUP BY GROUPING SETS ((age_range), (bmi))"""
compute_nodes = 4
[countermeasures]
sigma = 0.2
n = 100
d = 10
[run]
plots = false
block_size = 700
'''


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str, extra: str = ""):  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN + extra, encoding="utf-8")
    out = tmp_path / ("out" + "".join(flags).replace("-", "_"))
    return run_cli(capsys, "run", str(plan), "--out", str(out), "--json", *flags)


def test_shards_flag_is_echoed_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _run(tmp_path, capsys)
    three = _run(tmp_path, capsys, "--shards", "3", "--backend", "local")
    assert one.code == 0, one.err
    assert three.code == 0, three.err
    a, b = one.json(), three.json()
    assert a["execution"] == {
        "backend": "local",
        "shards": 1,
        "address": None,
        "block_size": 700,
        "seed": 0,
    }
    assert b["execution"]["shards"] == 3
    for key in ("result", "utility", "privacy", "costs"):
        assert a[key] == b[key]


def test_plan_file_sets_the_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _run(tmp_path, capsys, extra='shards = 2\nbackend = "local"\n')
    assert res.code == 0, res.err
    assert res.json()["execution"]["shards"] == 2


@pytest.mark.parametrize(
    ("flags", "extra", "message"),
    [
        (("--backend", "spark"), "", "backend must be one of ('local', 'ray', 'tls'), got 'spark'"),
        (("--shards", "0"), "", "Invalid value for '--shards': must be in [1, 4096], got 0"),
        (("--address", "10.0.0.1:6379"), "", "address applies to backend 'ray' only"),
        ((), "shards = -1\n", "run.shards must be >= 1, got -1"),
        ((), 'backend = "dask"\n', "run.backend must be one of"),
        ((), 'address = "h:1"\n', "run.address needs run.backend = 'ray'"),
        # the tls backend places blocks on its hosts: shards were silently dropped (review)
        (("--backend", "tls", "--shards", "2"), "", "--shards applies to backends local and ray"),
        # the hosts' randomness is a tls matter: a local run has no hosts to key
        (("--shared-seed",), "", "--shared-seed applies to --backend tls only"),
        ((), 'shared_seed = "yes"\n', "run.shared_seed must be a bool"),
    ],
)
def test_invalid_backend_options_exit_2_naming_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    extra: str,
    message: str,
) -> None:
    res = _run(tmp_path, capsys, *flags, extra=extra)
    assert res.code == 2
    assert message in res.err
    assert "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_round_seconds_on_a_local_run_is_reported_as_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[run] round_seconds`` only shapes tls rounds; a local run said nothing (review)."""
    res = _run(tmp_path, capsys, extra="round_seconds = 7.5\n")
    assert res.code == 0, res.err
    notes = " ".join(res.json()["notes"])
    assert "round_seconds = 7.5 applies to the tls backend only" in notes


def test_shared_seed_on_a_local_run_is_reported_as_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[run] shared_seed`` keys tls hosts by the seed; local always is: said in the notes."""
    res = _run(tmp_path, capsys, extra="shared_seed = true\n")
    assert res.code == 0, res.err
    notes = " ".join(res.json()["notes"])
    assert "shared_seed = true applies to the tls backend only" in notes


def test_more_ray_shards_than_this_machine_can_host_are_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fuzz audit's ``--backend ray --shards 3842`` spawned actor processes for 60 s."""
    import os

    from crowdhide.engine.backend import ACTORS_PER_CORE

    too_many = ACTORS_PER_CORE * (os.cpu_count() or 1) + 1
    res = _run(tmp_path, capsys, "--backend", "ray", "--shards", str(too_many))
    assert res.code == 2
    assert f"--shards must be <= {too_many - 1} for a Ray started on this machine" in res.err
    assert not list(tmp_path.glob("out*"))  # refused before any output
