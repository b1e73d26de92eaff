"""The top level of ``crowdhide``: light to import, every name loads, every answer equals the
command line's, and answers read well (one-line reprs rounded to the safe side, HTML cards,
DataFrames)."""

from __future__ import annotations

import doctest
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import crowdhide
from crowdhide._json import jsonable
from crowdhide.accounting.statement import format_bound
from tests.cli_helpers import run_cli

HEAVY = ("numpy", "scipy", "pandas", "duckdb", "matplotlib", "typer", "rich")


def _json(record: Any) -> Any:
    """``record`` as the CLI's JSON would carry it (tuples → lists, nan → null ...)."""
    return json.loads(json.dumps(jsonable(record)))


# -- the front door ---------------------------------------------------------------------


def test_import_crowdhide_loads_no_heavy_dependency() -> None:
    code = f"import sys, crowdhide; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


def test_import_time_lists_only_crowdhide_and_stdlib() -> None:
    """``python -X importtime -c "import crowdhide"`` (the issue's own measure)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import crowdhide"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stderr  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in err.splitlines()}
    assert "crowdhide" in imported
    assert not imported & set(HEAVY)


def test_every_public_name_loads_with_an_example() -> None:
    assert set(crowdhide.__all__) == {"__version__", *crowdhide._LAZY}
    for name in crowdhide._LAZY:
        value = getattr(crowdhide, name)
        assert name in dir(crowdhide)
        if isinstance(value, type) and issubclass(value, Exception):
            value = sys.modules[value.__module__]  # the errors share one module example
        assert ">>> " in (value.__doc__ or ""), f"{name} has no runnable example"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        crowdhide.nothing  # noqa: B018


def test_errors_are_one_family() -> None:
    errors = [n for n in crowdhide._LAZY if n.endswith("Error")]
    assert len(errors) >= 10
    assert all(issubclass(getattr(crowdhide, n), crowdhide.CrowdhideError) for n in errors)


# -- the same answer as the command line --------------------------------------------------


@pytest.fixture(scope="module")
def oue_statement() -> crowdhide.PrivacyStatement:
    """One query (OUE, three rounds) that two tests read: the CLI's answer and the repr."""
    return crowdhide.shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, mechanism="oue", d=8, rounds=3)


def test_shuffle_epsilon_equals_cli(
    capsys: pytest.CaptureFixture[str], oue_statement: crowdhide.PrivacyStatement
) -> None:
    ours = oue_statement
    cli = run_cli(capsys, "shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--delta", "1e-6",
                  "--mechanism", "oue", "--d", "8", "--rounds", "3", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    assert cli.json() == _json(ours.to_dict())


def test_shuffle_delta_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    ours = crowdhide.shuffle_delta(eps0=2.0, n=500, epsilon=0.5, k=4, sample_rate=0.5)
    cli = run_cli(capsys, "shuffle", "delta", "--eps0", "2", "--n", "500", "--epsilon", "0.5",
                  "--k", "4", "--sample-rate", "0.5", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    assert cli.json() == _json(ours.to_dict())


def _scrambler_record(statement: crowdhide.PrivacyStatement) -> dict[str, Any]:
    """The CLI's scrambler record: the statement plus is_certificate, notes joined."""
    record = _json(statement.to_dict())
    return {**record, "notes": "; ".join(statement.notes), "is_certificate": True}


@pytest.mark.parametrize("what", ["epsilon", "delta"])
def test_scrambler_equals_cli(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    common: dict[str, Any] = {"targets": 20, "sigma": 0.2, "n": 100, "dummies": 50}
    asked = {"delta": 1e-4} if what == "epsilon" else {"epsilon": 2.0}
    ours = getattr(crowdhide, f"scrambler_{what}")(**common, **asked)
    args = [f"--{k}={v}" for k, v in {**common, **asked}.items()]
    cli = run_cli(capsys, "scrambler", what, *args, "--json")
    assert cli.code == 0, cli.err
    assert cli.json() == _scrambler_record(ours)


@pytest.mark.parametrize("given", [{"n": 10_000}, {"eps0": 2.0}])
def test_calibrate_equals_cli_shuffle_calibrate(
    given: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ours = crowdhide.calibrate(epsilon=0.5, delta=1e-6, **given)
    ((key, value),) = given.items()
    cli = run_cli(capsys, "shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6",
                  f"--{key}", str(value), "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    record = cli.json()
    assert record["solved_for"] == ours.solved_for
    assert record[ours.solved_for] == getattr(ours, ours.solved_for)
    assert (record["epsilon"], record["delta"], record["source"]) == (
        ours.privacy.epsilon, ours.privacy.delta, ours.privacy.source)  # fmt: skip


def test_calibrate_equals_cli_scrambler_calibrate(capsys: pytest.CaptureFixture[str]) -> None:
    ours = crowdhide.calibrate(epsilon=2.0, delta=1e-4, targets=20)
    cli = run_cli(capsys, "scrambler", "calibrate", "--targets", "20", "--epsilon", "2",
                  "--delta", "1e-4", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    record, found = cli.json(), ours.countermeasures
    assert found is not None
    chosen = {k: record[k] for k in ("scheme", "sigma", "n", "dummies", "local_dummies")}
    assert chosen == {k: getattr(found, k) for k in chosen}
    assert (record["epsilon"], record["source"]) == (found.privacy.epsilon, found.privacy.source)


def test_compose_equals_ledger_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [crowdhide.PrivacyStatement(epsilon=e, delta=1e-6) for e in (1.0, 0.5, 0.5, 2.0)]
    book = crowdhide.Ledger(tmp_path / "ledger.json")
    for i, run in enumerate(runs):
        book.charge("clinic", run, run=str(i), budget=(10.0, 1e-4))
    cli = run_cli(capsys, "ledger", "show", str(tmp_path / "ledger.json"), "--json")
    assert cli.code == 0, cli.err
    (row,) = cli.json()
    total = crowdhide.compose(runs, delta=1e-4)
    assert (total.epsilon, total.delta) == (row["epsilon_spent"], row["at_delta"])
    assert total.source == f"compose:{row['method']}"
    assert total.inputs["basic"] == row["basic_epsilon"] == 4.0


def test_certify_plan_equals_cli_plan(capsys: pytest.CaptureFixture[str]) -> None:
    report = crowdhide.certify_plan("example:diabetes")
    cli = run_cli(capsys, "plan", "example:diabetes", "--json")
    assert cli.code == 0, cli.err
    expected = cli.json()
    assert expected.pop("inputs")["plan"] == "example:diabetes"  # + every option it used
    assert expected == _json(report.to_dict())
    assert report == crowdhide.certify_plan(crowdhide.load_plan("example:diabetes"))


@pytest.fixture(scope="module")
def diabetes_run() -> Any:
    """``run_plan("example:diabetes")`` in memory, once: two slow tests read it (a
    deterministic run: the CLI's run gives the same report, checked below)."""
    return crowdhide.run_plan("example:diabetes")


@pytest.mark.slow
def test_run_plan_equals_cli_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], diabetes_run: Any
) -> None:
    """In memory by default (no files kept); with ``out_dir`` the same files as the CLI."""
    cli = run_cli(capsys, "run", "example:diabetes", "--out", str(tmp_path / "cli"), "--json")
    assert cli.code == 0, cli.err
    expected = cli.json()
    ours = diabetes_run
    assert dict(ours.files) == {}
    mine = _json(ours.to_dict())
    for key in ("timings", "files", "inputs", "provenance"):  # when, where, how started
        expected.pop(key), mine.pop(key, None)
    assert mine == expected
    written = crowdhide.run_plan("example:diabetes", tmp_path / "api")
    assert set(written.files) == set(cli.json()["files"])
    assert (tmp_path / "api" / "report.html").exists()


# -- answers that read well -------------------------------------------------------------


@pytest.mark.parametrize("digits", [2, 4])
def test_format_bound_never_rounds_to_the_unsafe_side(digits: int) -> None:
    values = [k * 10.0**e / 7.0 for k in range(1, 60) for e in range(-300, 300, 17)]
    values += [0.1, 0.3, 1e-6, 0.10201, 2.0 / 3.0, 5e-324, 1.7976931348623157e308]
    for v in values:
        assert float(format_bound(v, digits=digits)) >= v
        assert float(format_bound(v, up=False, digits=digits)) <= v
    assert format_bound(0.10201) == "0.1021"  # plain rounding would show 0.102 < ε


def test_statement_repr_is_one_short_line(oue_statement: crowdhide.PrivacyStatement) -> None:
    s = oue_statement
    text = repr(s)
    assert "\n" not in text
    assert len(text) < 120
    assert "mappingproxy" not in text
    assert text == "PrivacyStatement(ε=0.2275, δ=1e-06, kind='upper', source='mechanism:oue')"
    lower = crowdhide.PrivacyStatement(epsilon=0.10209, delta=1e-6, kind="lower")
    assert "ε=0.102," in repr(lower)  # a lower bound is shown rounded down
    met = s.with_target(epsilon=0.2, delta=1e-6)
    assert repr(met).endswith("target_met=False)")
    assert "NOT met" in met._repr_html_()
    assert "0.2275" in met._repr_html_()


def test_curve_repr_names_the_curve() -> None:
    from crowdhide.accounting import DiscretePairCurve

    rr = DiscretePairCurve.from_probabilities([0.75, 0.25], [0.25, 0.75])
    assert repr(rr).startswith("<DiscretePairCurve: privacy curve")
    assert " at 0x" not in repr(rr)


def test_plan_and_run_reprs_are_short(capsys: pytest.CaptureFixture[str]) -> None:
    spec = crowdhide.load_plan("example:diabetes")
    assert repr(spec) == (
        "RunSpec(name='diabetes', query='aggregate', rows=20000, target=(ε=2.0, δ=0.0001), "
        "backend='local')"
    )
    report = crowdhide.certify_plan(spec)
    assert repr(report).startswith("PlanReport(name='diabetes', ε=")
    assert len(repr(report)) < 120
    assert "Plan diabetes" in report._repr_html_()


@pytest.fixture(scope="module")
def kmeans_run() -> Any:
    return crowdhide.run_plan("example:kmeans")


@pytest.mark.slow
def test_run_report_repr_html_and_tables(kmeans_run: Any) -> None:
    text = repr(kmeans_run)
    assert text.startswith("RunReport(name='kmeans', ε=")
    assert len(text) < 160
    assert "Run kmeans" in kmeans_run._repr_html_()
    with pytest.raises(crowdhide.InvalidParameterError, match="table='estimates'"):
        kmeans_run.to_pandas()


@pytest.mark.slow
def test_to_pandas_gives_the_tables_and_names_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch, diabetes_run: Any
) -> None:
    report = diabetes_run
    assert set(report.tables()) >= {"result", "exact", "estimates", "traffic"}
    pandas = pytest.importorskip("pandas")
    frame = report.to_pandas("exact")
    assert isinstance(frame, pandas.DataFrame)
    present = [{k: v for k, v in r.items() if v == v} for r in frame.to_dict("records")]
    assert present == report.answer.to_dict()["exact"]  # absent cells are NaN in pandas
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(crowdhide.MissingExtraError, match=r"crowdhide\[pandas\]"):
        report.to_pandas()
    assert math.isfinite(report.privacy.epsilon)


def _quickstart_blocks() -> list[str]:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quickstart (Python)\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_readme_quickstart_runs_and_shows_each_job_in_three_lines() -> None:
    blocks = _quickstart_blocks()
    assert len(blocks) == 3
    assert all(sum(line.startswith(">>> ") for line in b.splitlines()) <= 3 for b in blocks)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    session = "\n".join(blocks)  # one session: the later blocks use the first's import
    runner.run(parser.get_doctest(session, {}, "README quickstart", "README.md", 0))
    assert runner.summarize(verbose=False).failed == 0
