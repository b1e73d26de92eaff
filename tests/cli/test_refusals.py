"""Issue #28: options and paths the CLI would silently misuse are refused (exit 2, one line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import CliResult, run_cli

PLAN = """
name = "small"
[data]
generator = "diabetes"
rows = 200
[query]
kind = "aggregate"
sql = "SELECT age_range, COUNT(*) FROM D GROUP BY age_range"
compute_nodes = 2
[countermeasures]
sigma = 0.0
[run]
plots = false
"""


def _plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN, encoding="utf-8")
    return path


def _one_line_exit_2(res: CliResult, *words: str) -> None:
    code, err = res.code, res.err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize("command", [["run", "PLAN"], ["data", "synth", "aggregate"]])
def test_an_empty_out_is_refused_not_the_current_folder(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = [str(_plan(tmp_path)) if a == "PLAN" else a for a in command]
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    res = run_cli(capsys, *args, "--out", "")
    _one_line_exit_2(res, "--out")
    assert list(work.iterdir()) == []


def test_data_synth_refuses_a_suffix_it_would_not_honour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.json"
    res = run_cli(capsys, "data", "synth", "aggregate", "--rows", "10", "--out", str(out))
    _one_line_exit_2(res, "--out", "x.json", ".parquet")
    assert not out.exists()


def test_data_synth_still_writes_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.parquet"
    res = run_cli(capsys, "data", "synth", "aggregate", "--rows", "10", "--out", str(out))
    assert res.code == 0, res.err
    assert out.read_bytes()[:4] == b"PAR1"


def test_data_synth_to_an_unwritable_folder_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # /proc refuses new files even to root (os.access says yes to root everywhere).
    res = run_cli(capsys, "data", "synth", "aggregate", "--rows", "10", "--out", "/proc/x.csv")
    _one_line_exit_2(res, "--out", "/proc")


@pytest.mark.parametrize(
    "option", [["--hosts", "3"], ["--pki", "."], ["--on-missing", "report"], ["--shared-seed"]]
)
@pytest.mark.parametrize("backend", [["--backend", "local"], []])
def test_tls_options_are_refused_on_other_backends(
    option: list[str],
    backend: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    res = run_cli(capsys, "run", str(_plan(tmp_path)), *backend, *option, "--out", str(out))
    _one_line_exit_2(res, option[0], "tls")
    assert not out.exists()


def test_net_pki_does_not_overwrite_a_ca_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pki"
    assert run_cli(capsys, "net", "pki", "--hosts", "1", "--out", str(out)).code == 0
    before = (out / "ca.pem").read_bytes()
    res = run_cli(capsys, "net", "pki", "--hosts", "1", "--out", str(out))
    _one_line_exit_2(res, "ca.pem", "--force")
    assert (out / "ca.pem").read_bytes() == before
    res = run_cli(capsys, "net", "pki", "--hosts", "1", "--out", str(out), "--force")
    assert res.code == 0, res.err
    assert (out / "ca.pem").read_bytes() != before


EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "crowdhide" / "examples"


def test_plan_fits_80_columns_and_says_the_target_check_in_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    res = run_cli(capsys, "plan", str(EXAMPLES / "diabetes.toml"))
    assert res.code == 0, res.err
    assert max(len(line) for line in res.out.splitlines()) <= 80
    assert "…" not in res.out  # no number or header cut
    assert "True" not in res.out
    assert "False" not in res.out
    assert "the target is met" in " ".join(res.out.split())
    assert "0.956" in res.out  # ε of the first cluster, rounded up (0.95595...)


@pytest.mark.parametrize(
    ("command", "text"),
    [(["run"], "[privacy]"), (["run"], "[run] block_size"), (["plan"], "[privacy]")],
)
def test_help_keeps_bracketed_words(
    command: list[str],
    text: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    res = run_cli(capsys, *command, "--help")
    assert res.code == 0
    assert text in " ".join(res.out.split())


@pytest.mark.parametrize("command", [["run"], ["plan"], ["net", "pki"], ["protocol", "histogram"]])
def test_flags_show_no_bool_value_in_help(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    res = run_cli(capsys, *command, "--help")
    assert res.code == 0
    assert "--json" in res.out
    assert "--help" in res.out
    assert "<bool>" not in res.out


def test_an_unreachable_ray_address_is_one_line_not_a_hang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")
    # Nothing listens on port 1 of the loopback: ray.init used to retry for > 300 s.
    args = ["run", str(_plan(tmp_path)), "--backend", "ray", "--address", "127.0.0.1:1"]
    res = run_cli(capsys, *args, "--out", str(tmp_path / "out"))
    _one_line_exit_2(res, "--address", "127.0.0.1:1", "no Ray cluster")


def _duckdb_interrupt() -> BaseException:
    import duckdb

    return duckdb.InterruptException("INTERRUPT Error: Interrupted!")


@pytest.mark.parametrize("stop", [KeyboardInterrupt, _duckdb_interrupt], ids=["python", "duckdb"])
def test_ctrl_c_during_the_exact_answer_is_one_line_exit_130(
    stop: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from crowdhide.plans.query import AggregateOverTable

    def interrupted(*args: object, **kwargs: object) -> None:
        raise stop()  # what SIGINT raises in Python, or inside a DuckDB query

    monkeypatch.setattr(AggregateOverTable, "answer", interrupted)
    res = run_cli(capsys, "run", str(_plan(tmp_path)), "--out", str(tmp_path / "out"))
    assert res.code == 130
    assert "Traceback" not in res.err
    assert res.err.strip().splitlines() == [
        "crowdhide: interrupted (Ctrl-C); files already written are incomplete"
    ]


@pytest.mark.parametrize("path", ["", ".", "/tmp"])
def test_ledger_show_names_a_folder_or_empty_file(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ledger show ''`` was a traceback (``PosixPath('.') has an empty name``)."""
    res = run_cli(capsys, "ledger", "show", path)
    _one_line_exit_2(res, "FILE must be a ledger file")


@pytest.mark.parametrize(
    "args",
    [
        ("scrambler", "epsilon", "--delta", "1e-4", "--samples", "100"),
        ("scrambler", "epsilon", "--delta", "1e-4", "--method", "exact", "--seed", "3"),
        ("scrambler", "delta", "--epsilon", "1", "--method", "hoeffding", "--samples", "100"),
    ],
)
def test_monte_carlo_options_are_refused_for_other_methods(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--samples``/``--seed`` changed nothing unless the Monte-Carlo estimate ran."""
    base = ("--targets", "8", "--sigma", "0.2", "--n", "50", "--dummies", "20")
    res = run_cli(capsys, *args[:2], *base, *args[2:])
    _one_line_exit_2(res, "--method montecarlo")


@pytest.mark.parametrize(
    "args",
    [
        ("qif", "vulnerability", "--k", "3", "--n", "4", "--eps0", "1", "--others-value", "1"),
        ("qif", "scrambler", "--targets", "4", "--sigma", "0.5", "--n", "3", "--others-value", "1"),
    ],
)
def test_others_value_is_refused_for_the_uninformed_adversary(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    res = run_cli(capsys, *args)
    _one_line_exit_2(res, "--others-value", "informed")


@pytest.mark.parametrize(("ray_loaded", "finalized"), [(True, False), (False, True)])
def test_an_interrupted_ray_run_exits_130_without_finalizing(
    ray_loaded: bool, finalized: bool
) -> None:
    """Ray's exit handlers could crash (SIGSEGV) after Ctrl-C: ``entry`` skips them then."""
    import subprocess
    import sys

    script = (
        "import atexit, sys, types\n"
        f"if {ray_loaded}: sys.modules['ray'] = types.ModuleType('ray')\n"
        "atexit.register(lambda: print('finalized', flush=True))\n"
        "from crowdhide import cli\n"
        "cli.main = lambda: cli.EXIT_INTERRUPTED\n"
        "cli.entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 130, done.stderr
    assert ("finalized" in done.stdout) is finalized
