"""Plan-file and data-file fuzzing: small valid plans, data files, and their mutations.

A case is a base plan (generated data, a CSV/Parquet file, K-means) with one to three
mutations (a key set to an edge value or a wrong type, a key dropped, an unknown key or section,
a raw-text cut or junk) and one data-file variant (valid, empty, binary, non-finite, huge values,
missing column, header only, many groups, misnamed extension). Plans are written as TOML by
:func:`dump_toml`, so every mutation is a structured change that can be named in a report.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SMALL_PLAN = '''
name = "fuzz"
[data]
generator = "diabetes"
rows = 600
seed = 1
[query]
kind = "aggregate"
sql = """SELECT age_range, AVG(insulin), COUNT(*) FROM D GROUP BY GROUPING SETS ((age_range))"""
compute_nodes = 3
[privacy]
epsilon = 6.0
delta = 1e-4
[run]
plots = false
'''

UNMET_PLAN = SMALL_PLAN.replace(
    "[privacy]\nepsilon = 6.0",
    "[countermeasures]\nsigma = 0.2\nn = 50\nd = 5\n[privacy]\nepsilon = 0.1",
)

#: Base plans as dictionaries; ``@data`` is replaced by the data file of the case.
BASES: dict[str, dict[str, Any]] = {
    "generated": {
        "name": "gen",
        "data": {"generator": "aggregate", "rows": 200, "attributes": 1, "intervals": 3, "seed": 2},
        "query": {"sql": "SELECT g1, COUNT(*), AVG(v) FROM D GROUP BY g1", "compute_nodes": 3},
        "countermeasures": {"sigma": 0.2, "n": 6, "d": 3},
        "privacy": {"epsilon": 8.0, "delta": 1e-4},
        "run": {"seed": 0, "plots": False},
    },
    "diabetes": {
        "name": "diab",
        "data": {"generator": "diabetes", "rows": 400, "seed": 1},
        "query": {
            "kind": "aggregate",
            "sql": "SELECT age_range, AVG(insulin), COUNT(*) FROM D "
            "GROUP BY GROUPING SETS ((age_range))",
            "compute_nodes": 3,
        },
        "privacy": {"epsilon": 6.0, "delta": 1e-4},
        "run": {"plots": False},
    },
    "file": {
        "name": "file",
        "data": {"path": "@data"},
        "query": {"sql": "SELECT g1, COUNT(*), SUM(v) FROM D GROUP BY g1", "compute_nodes": 2},
        "countermeasures": {"sigma": 0.1, "n": 4, "d": 2},
        "run": {"plots": False},
    },
    "kmeans": {
        "name": "km",
        "data": {"generator": "synthetic", "rows": 300, "seed": 3},
        "query": {"kind": "kmeans", "k": 3, "iterations": 2},
        "countermeasures": {"sigma": 0.5, "n": 20, "d": 5},
        "privacy": {"delta": 1e-4},
        "run": {"plots": False, "seed": 0},
    },
}

#: Values a mutated key takes: edge numbers, wrong types, TOML's own non-finite floats.
EDGE_VALUES: tuple[Any, ...] = (
    0, 1, -1, 2, 7, 0.5, 1e-300, 1e-12, 1e9, 1e18, 2**70, math.inf, -math.inf, math.nan,
    "", "x", "nope", True, False, [], [1, 2], {"a": 1},
)  # fmt: skip

UNKNOWN_KEYS = ("colour", "rows_", "epsilon", "sql", "seed", "backend")
SECTIONS = ("data", "query", "countermeasures", "privacy", "run", "constraints", "bogus")


def _data_rows(rng: random.Random, n: int, groups: int, value: Callable[[int], str]) -> str:
    return "".join(f"{rng.randrange(groups)},{value(i)}\n" for i in range(n))


def data_variants(root: Path) -> dict[str, Path]:
    """Write the data-file variants under ``root``; name -> path."""
    rng = random.Random(7)
    texts: dict[str, str | bytes] = {
        "valid.csv": "g1,v\n" + _data_rows(rng, 60, 3, lambda i: f"{(i * 7) % 11}.5"),
        "many_groups.csv": "g1,v\n" + _data_rows(rng, 400, 300, lambda i: str(i % 5)),
        "header_only.csv": "g1,v\n",
        "empty.csv": "",
        "binary.csv": b"\x00\x01\x02\xff\xfe binary",
        "inf.csv": "g1,v\n0,1\n1,inf\n0,2\n",
        "nan.csv": "g1,v\n0,1\n1,nan\n0,2\n",
        "huge.csv": "g1,v\n" + "".join(f"{i % 2},1e308\n" for i in range(8)),
        "text_values.csv": "g1,v\n0,a\n1,b\n",
        "missing_column.csv": "g1,w\n0,1\n1,2\n",
        "no_header.csv": "0,1\n1,2\n0,3\n",
        "ragged.csv": "g1,v\n0,1,9\n1\n",
        "csv_named.json": "g1,v\n0,1\n1,2\n",
    }
    out: dict[str, Path] = {}
    for name, text in texts.items():
        path = root / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        out[name] = path
    (root / "folder.csv").mkdir(exist_ok=True)
    out["folder.csv"] = root / "folder.csv"
    out["missing.csv"] = root / "missing.csv"
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"g1": [0, 1, 2, 0, 1], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
        pq.write_table(table, root / "valid.parquet")
        out["valid.parquet"] = root / "valid.parquet"
    except ImportError:  # the data extra is absent: no Parquet variant
        pass
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_fmt(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def dump_toml(plan: dict[str, Any]) -> str:
    """TOML text of a plan: top-level scalars, then one table per section."""
    lines = [f"{k} = {_fmt(v)}" for k, v in plan.items() if not isinstance(v, dict)]
    for section, body in plan.items():
        if isinstance(body, dict):
            lines.append(f"[{section}]")
            lines += [f"{k} = {_fmt(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PlanCase:
    """A mutated plan: its text, the mutations applied (for the report), its data file."""

    base: str
    text: str
    mutations: tuple[str, ...]
    data: str


def _keys(plan: dict[str, Any]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for key, value in plan.items():
        if isinstance(value, dict):
            found += [(key, inner) for inner in value]
        else:
            found.append((key,))
    return found


def _set(plan: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    if len(key) == 1:
        plan[key[0]] = value
    else:
        section = plan.setdefault(key[0], {})
        if isinstance(section, dict):
            section[key[1]] = value


def _delete(plan: dict[str, Any], key: tuple[str, ...]) -> None:
    if len(key) == 1:
        plan.pop(key[0], None)
    elif isinstance(plan.get(key[0]), dict):
        plan[key[0]].pop(key[1], None)


def mutate(plan: dict[str, Any], rng: random.Random) -> str:
    """Apply one structured mutation in place; return its description."""
    keys = _keys(plan)
    kind = rng.choice(("edge", "edge", "edge", "nudge", "drop", "unknown", "section"))
    if kind == "section" and plan:
        section = rng.choice(SECTIONS)
        if section in plan and rng.random() < 0.5:
            del plan[section]
            return f"section {section} dropped"
        name, value = rng.choice(UNKNOWN_KEYS), rng.choice(EDGE_VALUES)
        if section in plan:  # already there: the new section is a repeated key in it
            _set(plan, (section, name), value)
            return f"{section}.{name} = {_fmt(value)} (added)"
        plan[section] = {name: value}
        return f"section {section} added"
    if kind == "unknown" or not keys:
        section = rng.choice(SECTIONS)
        added = (section, rng.choice(UNKNOWN_KEYS))
        value = rng.choice(EDGE_VALUES)
        _set(plan, added, value)
        return f"{'.'.join(added)} = {_fmt(value)} (added)"
    key = rng.choice(keys)
    if kind == "drop":
        _delete(plan, key)
        return f"{'.'.join(key)} dropped"
    current = plan[key[0]] if len(key) == 1 else plan[key[0]][key[1]]
    if kind == "nudge" and isinstance(current, (int, float)) and not isinstance(current, bool):
        value = nudged(current, rng)
    else:
        value = rng.choice([v for v in EDGE_VALUES if _fmt(v) != _fmt(current)])
    _set(plan, key, value)
    return f"{'.'.join(key)} = {_fmt(value)}"


def nudged(value: float, rng: random.Random) -> float:
    """A plausible different value of the same type (a valid change, for the twin oracle)."""
    factor = rng.choice((0.5, 0.9, 1.1, 2.0))
    if isinstance(value, int):
        changed = max(1, round(value * factor)) if value > 0 else value + 1
        return changed if changed != value else value + 1
    return float(value * factor)


def plan_case(rng: random.Random, data: dict[str, Path], *, raw: bool = True) -> PlanCase:
    """A random mutated plan over a random data variant."""
    import copy

    base = rng.choice(sorted(BASES))
    plan = copy.deepcopy(BASES[base])
    data_name = rng.choice(sorted(data))
    if base == "file":
        plan["data"]["path"] = str(data[data_name])
        if data_name == "no_header.csv":
            plan["query"]["sql"] = "SELECT column0, COUNT(*) FROM D GROUP BY column0"
    mutations = [mutate(plan, rng) for _ in range(rng.choice((0, 1, 1, 1, 2, 3)))]
    text = dump_toml(plan)
    if raw and rng.random() < 0.05:
        cut = rng.randrange(len(text))
        text, mutations = text[:cut], [*mutations, f"text cut at {cut}"]
    elif raw and rng.random() < 0.03:
        text, mutations = text + "\n\x00junk = ]\n", [*mutations, "junk appended"]
    return PlanCase(base, text, tuple(mutations), data_name if base == "file" else "-")


def valid_case(rng: random.Random, data: dict[str, Path]) -> PlanCase:
    """A plan with one plausible change (a numeric key nudged): for the remote backends."""
    import copy

    base = rng.choice(sorted(BASES))
    plan = copy.deepcopy(BASES[base])
    if base == "file":
        plan["data"]["path"] = str(data["valid.csv"])
    keys = [
        (s, k)
        for s, body in plan.items()
        if isinstance(body, dict)
        for k, v in body.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "rows"
    ]
    section, key = rng.choice(keys)
    plan[section][key] = nudged(plan[section][key], rng)
    change = f"{section}.{key} = {_fmt(plan[section][key])}"
    return PlanCase(base, dump_toml(plan), (change,), "valid.csv" if base == "file" else "-")
