"""Issue #27: ``[data] held_by = "nodes"`` — a coordinator's plan that holds no row.

Each key of the schema is checked (missing, contradictory, malformed: one error naming the
key and its value; the CLI: one line, exit 2), the plan is built from the schema, the public
domains and the row count alone (the same plan and certificate as the simulation's, its
sources holding no row), it is refused up front on every backend but ``tls --directory``,
and ``net split --coordinator-plan`` writes it for the population it splits.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.backends.tls.node_rows import NodeRows
from crowdhide.engine.blocks import BlockRows
from crowdhide.engine.library import ref_of
from crowdhide.errors import CrowdhideError, InvalidParameterError
from crowdhide.plans.aggregate import (
    AggregateQuery,
    aggregate_plan,
    aggregate_schema_plan,
    domains_digest,
)
from crowdhide.plans.query import load_query
from crowdhide.plans.runner import prepare
from crowdhide.plans.spec import _ROW_SOURCE_KEYS, held_plan_text, load_spec, parse_spec
from tests.cli_helpers import run_cli

SQL = "SELECT g1, g2, SUM(v), COUNT(*) FROM D GROUP BY GROUPING SETS ((g1), (g1, g2))"


def held(**data: Any) -> dict[str, Any]:
    """A schema-only plan; ``data`` overrides ``[data]`` keys (``None`` removes one)."""
    base = {"held_by": "nodes", "rows": 500, "columns": ["g1", "g2", "v"]}
    base.update(data)
    return {
        "name": "held",
        "data": {k: v for k, v in base.items() if v is not None},
        "query": {"sql": SQL, "compute_nodes": 3, "domains": {"g1": [0, 1, 2], "g2": [0, 1]}},
        "privacy": {"epsilon": 1.0},
    }


def test_a_schema_only_plan_parses_and_holds_no_row() -> None:
    spec = parse_spec(held())
    assert (spec.data.held_by, spec.data.rows, spec.data.columns) == (
        "nodes",
        500,
        ("g1", "g2", "v"),
    )
    query = load_query(spec)
    assert query.table is None  # type: ignore[attr-defined]
    source = query.plan.group("S")
    assert source.size == 500
    assert isinstance(source.data, BlockRows)
    assert source.data.parts == {}
    assert "held by the node daemons" in query.data_source


def test_the_schema_plan_is_the_simulation_plan_and_certifies_alike() -> None:
    """The same groups, routes and programs as a plan over rows that span the domains."""
    rng = np.random.default_rng(1)
    table = {
        "g1": rng.integers(0, 3, 500),
        "g2": rng.integers(0, 2, 500),
        "v": rng.normal(size=500),
    }
    query = AggregateQuery.from_sql(SQL)
    domains = {"g1": [0, 1, 2], "g2": [0, 1]}
    full = aggregate_plan(table, query, compute_nodes=3, domains=domains)
    schema = aggregate_schema_plan(
        500, query, columns=["g1", "g2", "v"], domains=domains, compute_nodes=3
    )
    assert schema.plan == full.plan
    assert [list(g.data or {}) for g in schema.plan.groups] == [
        list(g.data or {}) for g in full.plan.groups
    ]
    assert [[d.tolist() for d in s] for s in schema.domains] == [
        [d.tolist() for d in s] for s in full.domains
    ]
    simulated = held(held_by=None, rows=500, columns=None, generator="aggregate")
    simulated["data"]["attributes"] = 2
    simulated["data"]["intervals"] = 3
    simulated["query"]["domains"] = {"g1": [0, 1, 2], "g2": [0, 1, 2]}
    ours = dict(held())
    ours["query"] = {**ours["query"], "domains": {"g1": [0, 1, 2], "g2": [0, 1, 2]}}
    a, b = prepare(parse_spec(ours)), prepare(parse_spec(simulated))
    assert a.privacy.epsilon == b.privacy.epsilon
    assert a.privacy.delta == b.privacy.delta


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"held_by": "daemons"}, "data.held_by must be 'nodes'"),
        ({"rows": None}, "data.rows is required"),
        ({"rows": 0}, "data.rows"),
        ({"columns": None}, "data.columns is required"),
        ({"columns": []}, "data.columns must be a non-empty list"),
        ({"columns": ["g1", "g1"]}, "data.columns must be a non-empty list"),
        ({"columns": "g1"}, "data.columns must be a non-empty list"),
        ({"columns": ["g1", "g2"]}, "data.columns ['g1', 'g2'] lacks column(s) ['v']"),
    ],
)
def test_each_schema_key_is_checked(data: dict[str, Any], named: str) -> None:
    with pytest.raises(CrowdhideError) as info:
        load_query(parse_spec(held(**data)))
    assert named in str(info.value)
    assert str(info.value).splitlines() == [str(info.value)]  # one line


@pytest.mark.parametrize("key", _ROW_SOURCE_KEYS)
def test_a_row_source_key_contradicts_held_by(key: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        parse_spec(held(**{key: "x"}))
    assert f"data.{key} = 'x' contradicts data.held_by = 'nodes'" in str(info.value)
    assert info.value.parameter == f"data.{key}"


@pytest.mark.parametrize(
    ("domains", "named"),
    [
        (None, "query.domains is required with data.held_by"),
        ({"g1": [0, 1, 2]}, "query.domains has no domain for grouping column(s) ['g2']"),
        (
            {"g1": [0, 1], "g2": [0, 1], "v": [1.0]},
            "query.domains names column(s) the query does not group by: grouping column(s) ['v']",
        ),
    ],
)
def test_the_domains_are_required_for_every_grouping_column(
    domains: dict[str, Any] | None, named: str
) -> None:
    raw = held()
    raw["query"]["domains"] = domains
    if domains is None:
        del raw["query"]["domains"]
    with pytest.raises(InvalidParameterError) as info:
        load_query(parse_spec(raw))
    assert named in str(info.value)


def test_kmeans_and_columns_without_held_by_are_refused() -> None:
    raw = held()
    raw["query"] = {"kind": "kmeans", "domains": {"g1": [0]}}
    with pytest.raises(InvalidParameterError, match=r"query\.kind = 'aggregate' only"):
        parse_spec(raw)
    with pytest.raises(InvalidParameterError, match=r"data\.columns applies to data\.held_by"):
        parse_spec(held(held_by=None, generator="aggregate"))


def write(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(
        held_plan_text(
            raw,
            rows=raw["data"]["rows"],
            columns=raw["data"]["columns"],
            domains=raw["query"]["domains"],
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ((), "the local backend would need the rows"),
        (("--backend", "ray"), "the ray backend would need the rows"),
        (("--backend", "tls", "--hosts", "2"), "the tls hosts spawned by this run would need"),
    ],
)
def test_a_held_plan_runs_only_on_node_daemons(
    options: tuple[str, ...], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write(tmp_path / "held.toml", held())
    result = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "out"), *options)
    assert result.code == 2
    line = result.err.strip()
    assert line.splitlines() == [line]
    assert "Traceback" not in line
    assert "data.held_by = 'nodes'" in line
    assert "--backend tls --directory" in line
    assert named in line
    assert not (tmp_path / "out").exists()  # refused before any work


def test_a_bad_key_is_one_cli_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        '[data]\nheld_by = "nodes"\nrows = 10\ncolumns = ["g1", "v"]\ngenerator = "aggregate"\n'
        '[query]\nsql = "SELECT g1, SUM(v) FROM D GROUP BY g1"\ndomains = { g1 = [0] }\n'
        "[privacy]\nepsilon = 1.0\n",
        encoding="utf-8",
    )
    result = run_cli(capsys, "plan", str(path))
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "crowdhide: error: data.generator = 'aggregate' contradicts data.held_by = 'nodes': "
        "this process reads no rows (the node daemons hold them); remove it"
    ]


def test_net_split_writes_the_coordinator_plan_of_its_population(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The written plan: no row source, the domains the files were coded with, the same
    certificate as the simulation; its domains code every row of the files."""
    example = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"
    sim = tmp_path / "plan.toml"
    sim.write_text(example.read_text(encoding="utf-8").replace("20000", "300"), encoding="utf-8")
    out = tmp_path / "coordinator.toml"
    result = run_cli(
        capsys, "net", "split", str(sim), "--nodes", "3", "--block-size", "50",
        "--out", str(tmp_path / "rows"), "--coordinator-plan", str(out), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.json()["coordinator_plan"] == str(out)
    raw = tomllib.loads(out.read_text(encoding="utf-8"))
    assert raw["data"] == {
        "held_by": "nodes",
        "rows": 300,
        "columns": ["age_range", "bmi", "insulin"],
    }
    simulated = load_query(load_spec(sim))
    setup = simulated.setup  # type: ignore[attr-defined]
    assert raw["query"]["domains"]["age_range"] == setup.domains[0][0].tolist()
    assert raw["query"]["domains"]["bmi"] == setup.domains[1][0].tolist()
    a, b = prepare(load_spec(out)), prepare(load_spec(sim))
    assert a.plan == b.plan
    # The files carry the digest of the domains their codes are over: the plan's.
    refs = [ref_of(r.by) for r in a.plan.routes if r.kind == "data"]
    planned = {f"S/__key{r.params['g']}": r.params["domains"] for r in refs if r is not None}
    assert NodeRows.load(tmp_path / "rows" / "rows-1.npz").digests == planned
    assert planned == {f"S/__key{g}": domains_digest(d) for g, d in enumerate(setup.domains)}
    assert a.privacy.epsilon == b.privacy.epsilon
    # A schema plan has no rows to split; K-means has no schema plan.
    again = run_cli(capsys, "net", "split", str(out), "--out", str(tmp_path / "r2"))
    assert again.code == 2
    assert "there are no rows here to split" in again.err


def test_a_coordinator_with_data_on_node_daemons_is_noted_as_a_simulation() -> None:
    from crowdhide.plans.runner import _backend_notes

    network = {"directory": "directory.toml"}
    record = {"coordinator_observes": ["counts"], "complete": True}
    simulated = held(held_by=None, columns=None, generator="aggregate")
    notes = _backend_notes(parse_spec(simulated), "tls", network, record)
    assert [n for n in notes if n.startswith("SIMULATION: this coordinator generated")]
    notes = _backend_notes(parse_spec(held()), "tls", network, record)
    assert not [n for n in notes if n.startswith("SIMULATION")]
