"""Issue 11: never a traceback, a hang, or a silently unmet privacy target.

One test per failure class found by hand and by fuzzing; each failed on the code before the
fix (tracebacks, minutes-long hangs, exit 0 with a weaker certificate, wrong names).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crowdhide.cli import _handle
from crowdhide.errors import (
    CrowdhideError,
    InvalidParameterError,
    ResourceLimitError,
    UnmetTargetError,
)
from tests.cli.fuzz_support import discover, invoke
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]

PLAN = '''
name = "unmet"
[data]
generator = "diabetes"
rows = 600
seed = 1
[query]
kind = "aggregate"
sql = """SELECT age_range, AVG(insulin), COUNT(*) FROM D GROUP BY GROUPING SETS ((age_range))"""
compute_nodes = 3
[countermeasures]
sigma = 0.2
n = 50
d = 5
[privacy]
epsilon = 0.5
delta = 1e-4
[run]
plots = false
'''

#: Generous: these commands used to run for minutes; now they are refused at parse time.
FAST = 60.0


def _plan(tmp_path: Path) -> Path:
    path = tmp_path / "unmet.toml"
    path.write_text(PLAN, encoding="utf-8")
    return path


# ----------------------------------------------------------------- 1. targets are promises


def test_plan_unmet_target_exit_3_and_json_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = run_cli(capsys, "plan", str(_plan(tmp_path)), "--json")
    assert res.code == 3, res.err
    report = res.json()
    assert report["target_met"] is False
    assert report["privacy"]["epsilon"] > 0.5
    assert "TARGET NOT MET" in res.err


def test_plan_unmet_target_table_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "plan", str(_plan(tmp_path)))
    assert res.code == 3
    assert "TARGET NOT MET" in res.out


def test_plan_allow_unmet_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "plan", str(_plan(tmp_path)), "--json", "--allow-unmet")
    assert res.code == 0
    assert res.json()["target_met"] is False


def test_run_unmet_target_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    res = run_cli(capsys, "run", str(_plan(tmp_path)), "--out", str(out), "--json")
    assert res.code == 3
    assert "nothing was run" in res.err
    assert not (out / "report.json").exists()


def test_run_allow_unmet_reports_target_met_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ("run", str(_plan(tmp_path)), "--out", str(out), "--json", "--allow-unmet")
    res = run_cli(capsys, *args)
    assert res.code == 0, res.err
    assert res.json()["target_met"] is False
    assert (out / "report.json").exists()


def test_scrambler_calibrate_infeasible_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("scrambler", "calibrate", "--targets", "20", "--epsilon", "0.01", "--delta", "1e-9")
    res = run_cli(capsys, *args, "--max-overhead", "1.1", "--json")
    assert res.code == 3
    assert res.json()["target_met"] is False
    assert run_cli(capsys, *args, "--max-overhead", "1.1", "--allow-unmet").code == 0


def test_shuffle_calibrate_out_of_reach_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "calibrate", "--epsilon", "0.01", "--delta", "1e-12", "--eps0", "50")
    res = run_cli(capsys, *args, "--json")
    assert res.code == 3
    assert res.json()["target_met"] is False
    met = run_cli(
        capsys, "shuffle", "calibrate", "--epsilon", "1", "--delta", "1e-6", "--n", "1000"
    )
    assert met.code == 0


# ------------------------------------------------- 2. ranges: no overflow, no hang, names


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["scrambler", "delta", "--targets", "10", "--sigma", "0.5", "--n", "10", "--dummies",
          "2", "--epsilon", "1e308"], "--epsilon"),
        (["netdp", "epsilon", "--topology", "complete", "--task", "sum", "--n", "100", "--eps0",
          "1e308", "--delta", "1e-6", "--steps", "1000"], "--eps0"),
        (["netdp", "calibrate", "--topology", "complete", "--task", "sgd", "--n", "100",
          "--steps", "1000", "--epsilon", "1e308", "--delta", "1e-6"], "--epsilon"),
        (["netdp", "calibrate", "--topology", "complete", "--task", "sgd", "--n", "0",
          "--steps", "100", "--epsilon", "1", "--delta", "1e-6"], "--n"),
        (["netdp", "calibrate", "--topology", "complete", "--task", "sgd", "--n", "100",
          "--steps", "1000", "--epsilon", "40", "--delta", "1e-6", "--lipschitz", "1e-300"],
         "--lipschitz"),
        (["protocol", "sum", "--data", "builtin:synthetic", "--column", "bit", "--epsilon",
          "1e308", "--delta", "1e-6"], "--epsilon"),
        (["data", "synth", "aggregate", "--rows", "100000000000"], "--rows"),
        (["scrambler", "epsilon", "--targets", "1000000000000", "--sigma", "0.5", "--n", "10",
          "--dummies", "2", "--delta", "1e-6"], "--targets"),
        (["scrambler", "delta", "--targets", "10", "--sigma", "0.5", "--n", "1000000000000",
          "--dummies", "2", "--epsilon", "1"], "--n"),
        (["scrambler", "epsilon", "--targets", "10", "--sigma", "0.5", "--n", "10",
          "--dummies", "1000000000000", "--delta", "1e-6"], "--dummies"),
        (["qif", "capacity", "--k", "1000000000", "--n", "10", "--eps0", "1"], "--k"),
        (["protocol", "histogram", "--data", "builtin:synthetic", "--column", "category",
          "--epsilon", "1", "--delta", "1e-6", "--bins", "1000000000000"], "--bins"),
        (["scrambler", "epsilon", "--targets", "10", "--sigma", "0.5", "--n", "10", "--dummies",
          "2", "--delta", "1e-6", "--method", "montecarlo", "--seed", "-1"], "--seed"),
        (["netdp", "audit", "--topology", "complete", "--n", "100", "--steps", "1000", "--eps0",
          "2", "--delta", "1e-6"], "--eps0"),
        (["netdp", "epsilon", "--topology", "complete", "--task", "sum", "--n", "100", "--eps0",
          "1", "--delta", "nan", "--steps", "1000"], "--delta"),
        # Found by the slow fuzz tier: minutes-long exact integer powers / linear scans.
        (["netdp", "calibrate", "--topology", "complete", "--task", "sgd", "--n", "2", "--steps",
          "2", "--epsilon", "2.0872360382635404e-286", "--delta", "0.5"], "--epsilon"),
        (["scrambler", "calibrate", "--targets", "3", "--epsilon", "1.0", "--delta", "1e-300",
          "--max-consents", "0.0", "--sources", "1"], "--delta"),
        (["qif", "capacity", "--k", "871912", "--n", "1e6", "--eps0", "0"], "10^"),
        (["scrambler", "calibrate", "--targets", "386521", "--epsilon", "1e-12", "--delta",
          "1e-12"], "--targets"),
    ],
)  # fmt: skip
def test_out_of_range_is_one_line_naming_the_option(args: list[str], option: str) -> None:
    outcome = invoke([*args, "--json"], timeout=FAST)
    assert not outcome.hang, f"hang: {args}"
    assert outcome.code == 2, outcome.err[-2000:]
    assert outcome.err.count("\n") == 1
    assert f"'{option}'" in outcome.err or option in outcome.err
    assert "Traceback" not in outcome.err


def test_large_but_valid_scrambler_instance_is_fast() -> None:
    # (n + d + 1) ** T was evaluated as an exact integer: minutes for T = 1e7.
    args = ["scrambler", "epsilon", "--targets", "1000000000", "--sigma", "0.5", "--n", "10"]
    outcome = invoke([*args, "--dummies", "2", "--delta", "1e-6", "--json"], timeout=FAST)
    assert not outcome.hang
    assert outcome.code == 0, outcome.err


def test_resource_limits_are_refused_with_a_reason() -> None:
    # One certificate per cycle length (--group-ratio 0; the default bins them) would take
    # minutes here: refused with the way out named.
    audit = ["netdp", "audit", "--topology", "complete", "--n", "1000", "--steps", "100000"]
    audit += ["--group-ratio", "0"]
    outcome = invoke([*audit, "--eps0", "0.5", "--delta", "1e-6", "--json"], timeout=FAST)
    assert outcome.code == 2
    assert "--group-ratio" in outcome.err
    qif = ["qif", "scrambler", "--targets", "10", "--n", "1e9", "--sigma", "0.5"]
    outcome = invoke([*qif, "--adversary", "informed", "--json"], timeout=FAST)
    assert not outcome.hang
    assert outcome.code == 2
    assert "limit" in outcome.err


def test_internal_names_are_mapped_to_options(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys, "netdp", "epsilon", "--topology", "ring", "--task", "histogram", "--n", "100",
        "--eps0", "1", "--delta", "0.9", "--rounds", "3", "--colluders", "2",
    )  # fmt: skip
    assert res.code == 2
    assert "--colluders" in res.err


@pytest.mark.parametrize("out_kind", ["directory", "below-a-file"])
def test_output_paths_checked_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out_kind: str
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    out = tmp_path if out_kind == "directory" else blocker / "data.csv"
    res = run_cli(capsys, "data", "synth", "aggregate", "--rows", "10", "--out", str(out))
    assert res.code == 2
    assert "--out" in res.err
    assert res.err.count("\n") == 1


@pytest.mark.parametrize("sigma", ["0.0", "0.3"])
def test_subnormal_epsilon_no_overflow(sigma: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by the fuzzer: b/log1p(u) and b²/(4a) overflowed for ε = 2.2e-313.
    res = run_cli(
        capsys, "scrambler", "delta", "--targets", "2", "--sigma", sigma, "--n", "3",
        "--dummies", "1", "--epsilon", "2.2250738585e-313", "--method", "all", "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert all(0.0 <= row["delta"] <= 1.0 for row in res.json() if row["delta"] is not None)


def test_plot_out_suffix_checked_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys, "shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--out",
        str(tmp_path / "plot.toml"),
    )  # fmt: skip
    assert res.code == 2
    assert "--out must end in" in res.err


def test_binary_plan_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by the fuzzer: a Parquet file given as PLAN.toml raised UnicodeDecodeError.
    path = tmp_path / "plan.parquet"
    path.write_bytes(b"PAR1\xac\x00\xff")
    for command in ("plan", "run"):
        res = run_cli(capsys, command, str(path))
        assert res.code == 2
        assert "not a text" in res.err


def test_run_out_is_checked_before_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    res = run_cli(capsys, "run", str(_plan(tmp_path)), "--out", str(blocker), "--allow-unmet")
    assert res.code == 2
    assert "--out must be a directory" in res.err


def test_reproduce_unknown_name_lists_the_names(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "reproduce", "nope", "--out", "/proc/none")
    assert res.code == 2
    assert "ladjel-fig3" in res.err


def test_every_numeric_option_documents_its_range() -> None:
    import typer

    from crowdhide.cli import build_app

    root = typer.main.get_command(build_app())
    missing = []
    for cmd in discover():
        click_cmd = root
        for part in cmd.path:
            click_cmd = click_cmd.commands[part]  # type: ignore[attr-defined]
        for p in click_cmd.params:
            kind = next(q.kind for q in cmd.params if q.name == p.name)
            if kind in ("int", "real") and "Range:" not in (getattr(p, "help", "") or ""):
                missing.append(f"{cmd.id} {p.opts[0]}")
    assert not missing, missing


def test_qif_help_does_not_promise_unreachable_n(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "qif", "vulnerability", "--help")
    assert "1e9 accepted" not in res.out
    assert "budget" in res.out


def test_netdp_audit_help_shows_the_eps0_limit(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "netdp", "audit", "--help")
    assert "(0, 1)" in " ".join(res.out.split())


def test_readme_verbs_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ids = {c.id for c in discover()}
    areas = {i.split()[0] for i in ids}
    rows = re.findall(r"^\| `([a-z]+)` \| (.+?) \|", text, flags=re.M)
    checked = 0
    for area, verbs in rows:
        if area not in areas or area in ("run", "plan", "reproduce"):
            continue
        for verb in re.findall(r"`([a-z]+)`", verbs):
            assert f"{area} {verb}" in ids, f"README lists '{area} {verb}'"
            checked += 1
    assert checked >= 10


# ---------------------------------------------------------------- 3. error types


def test_error_hierarchy() -> None:
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(ResourceLimitError, CrowdhideError)
    assert issubclass(UnmetTargetError, CrowdhideError)


@pytest.mark.parametrize(
    "exc", [KeyError("boom"), TypeError("boom"), ZeroDivisionError("boom"), OverflowError("x")]
)
def test_unexpected_exceptions_are_reported_as_bugs(
    exc: Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        raise exc
    except Exception as caught:
        code = _handle(caught)
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" in err
    assert "please report it" in err


def test_value_error_from_a_dependency_is_a_bug(capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    try:
        np.zeros(3).reshape(2)
    except ValueError as caught:
        code = _handle(caught)
    assert code == 1
    assert "please report it" in capsys.readouterr().err


def test_user_errors_exit_2_and_unmet_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert _handle(InvalidParameterError("n must be >= 1, got 0")) == 2
    assert _handle(UnmetTargetError("certified 2 > 1")) == 3
    assert _handle(FileNotFoundError(2, "No such file", "x.toml")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_bug_in_a_command_shows_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import crowdhide.accounting.scrambler.local as scr

    def broken(**kwargs: object) -> float:
        raise KeyError("internal")

    monkeypatch.setattr(scr, "local_randomizer_epsilon", broken)
    res = run_cli(capsys, "local", "epsilon", "--targets", "5", "--sigma", "0.5")
    assert res.code == 1
    assert "Traceback" in res.err
    assert "please report it" in res.err


def test_exit_codes_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(run_cli(capsys, "--help").out.split())
    assert "Exit codes" in out
    assert "3 privacy target not met" in out


# ------------------------------------------------------------------- 4. progress


def test_progress_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from crowdhide.cli._engine_progress import progress_wanted

    assert not progress_wanted(False)  # pytest's captured stderr is not a terminal
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert progress_wanted(False)
    assert not progress_wanted(True)
