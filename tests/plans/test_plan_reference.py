"""docs/plan-reference.md: every example runs, every key is documented and parses."""

from __future__ import annotations

import gzip
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from crowdhide.plans.spec import _SECTIONS, parse_spec
from tests.cli_helpers import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "plan-reference.md"
TEXT = DOC.read_text(encoding="utf-8")
FILES = re.findall(r"<!-- file: (\S+) -->\n```csv\n(.*?)```", TEXT, re.S)
EXAMPLES = re.findall(
    r'<!-- example: (run|error|unmet)(?: "([^"]*)")? -->\n```toml\n(.*?)```', TEXT, re.S
)
KEY_ROWS = re.findall(r"^\| `([a-z_]+(?:\.[a-z_]+)?)` \|.*\| `([^`]+)` \|$", TEXT, re.M)


def _write_files(folder: Path) -> None:
    import duckdb

    for name, content in FILES:
        path = folder / name
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(content.encode()))
        else:
            path.write_text(content, encoding="utf-8")
    csv = folder / "visits.csv"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM '{csv}') TO '{folder / 'visits.parquet'}' (FORMAT PARQUET)")
    con.close()


def test_every_toml_block_is_an_example() -> None:
    assert len(EXAMPLES) == TEXT.count("```toml") >= 7


@pytest.mark.parametrize(
    ("kind", "expect", "body"), EXAMPLES, ids=[tomllib.loads(e[2])["name"] for e in EXAMPLES]
)
def test_example_runs(
    kind: str,
    expect: str,
    body: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _write_files(tmp_path)
    plan = tmp_path / "plan.toml"
    plan.write_text(body, encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "80")
    result = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "out"))
    if kind == "error":
        assert result.code == 2
        assert expect in result.err
        return
    if kind == "unmet":  # refused with exit 3 and nothing run; --allow-unmet runs it
        assert result.code == 3, result.err
        assert expect in result.err
        assert not (tmp_path / "out" / "report.html").exists()
        result = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "out"), "--allow-unmet")
    assert result.code == 0, result.err
    assert (tmp_path / "out" / "report.html").exists()
    if expect:
        assert expect in result.out


def test_every_key_is_documented() -> None:
    documented = {k for k, _ in KEY_ROWS}
    expected = {"name"} | {f"{s}.{k}" for s, keys in _SECTIONS.items() for k in keys}
    assert documented == expected


BASE: dict[str, Any] = {
    "data": {"generator": "aggregate", "rows": 100},
    "query": {"sql": "SELECT g1, SUM(v) FROM D GROUP BY g1"},
    "privacy": {"epsilon": 1.0},
}


@pytest.mark.parametrize(("key", "example"), KEY_ROWS, ids=[k for k, _ in KEY_ROWS])
def test_key_example_parses(key: str, example: str) -> None:
    raw: dict[str, Any] = {s: dict(v) for s, v in BASE.items()}
    value = tomllib.loads(example)
    if "." not in key:
        raw.update(value)
    else:
        section = key.split(".")[0]
        raw.setdefault(section, {}).update(value)
        if key == "data.path":
            del raw["data"]["generator"]
        if key in ("query.kind", "query.k", "query.iterations", "data.mnist_dir"):
            raw["query"]["kind"] = "kmeans"
            raw["data"]["generator"] = "auto"
        if key == "countermeasures.d":
            raw["countermeasures"]["n"] = 10
        if key == "run.address":
            raw["run"]["backend"] = "ray"
        if key in ("data.held_by", "data.columns"):  # a schema: no generator, domains given
            raw["data"] = {"held_by": "nodes", "rows": 100, "columns": ["g1", "v"], **value}
            raw["query"]["domains"] = {"g1": [0, 1]}
    spec = parse_spec(raw)
    assert spec is not None
