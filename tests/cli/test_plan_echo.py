"""``crowdhide plan`` never silently ignores a plan-file key or a flag.

The option walk (:mod:`tests.cli.test_option_walk`) covers the command-line options; this
walks the plan-file keys ``plan`` does not use for its certificate (the data seed, a K-means
plan's compute nodes, everything under ``[run]``): changing one must change the JSON output
(the echoed ``inputs``) and the terminal output alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_option_walk import SMALL_PLAN, UNMET_PLAN
from tests.cli_helpers import CliResult, run_cli

KMEANS_PLAN = """
name = "km"
[data]
generator = "synthetic"
rows = 300
seed = 3
[query]
kind = "kmeans"
k = 3
iterations = 2
[countermeasures]
sigma = 0.5
n = 20
d = 5
[privacy]
delta = 1e-4
[run]
plots = false
"""

#: (base plan, the key's line in it or the section it is added to, the changed line).
KEYS: dict[str, tuple[str, str, str]] = {
    "data.seed": (SMALL_PLAN, "seed = 1", "seed = 2"),
    # the fuzz audit found data.intervals changing only the JSON (the message size)
    "data.intervals": (SMALL_PLAN, "seed = 1", "seed = 1\nintervals = 7"),
    "data.distribution": (SMALL_PLAN, "seed = 1", 'seed = 1\ndistribution = "skewed"'),
    "data.skew": (SMALL_PLAN, "seed = 1", "seed = 1\nskew = 2.0"),
    "run.seed": (SMALL_PLAN, "[run]", "[run]\nseed = 5"),
    "run.block_size": (SMALL_PLAN, "[run]", "[run]\nblock_size = 100"),
    "run.shards": (SMALL_PLAN, "[run]", "[run]\nshards = 2"),
    "run.transcript_csv_max_rows": (SMALL_PLAN, "[run]", "[run]\ntranscript_csv_max_rows = 10"),
    "run.round_seconds": (SMALL_PLAN, "[run]", "[run]\nround_seconds = 2.5"),
    "run.shared_seed": (SMALL_PLAN, "[run]", "[run]\nshared_seed = true"),
    "run.plots": (SMALL_PLAN, "plots = false", "plots = true"),
    "run.backend": (SMALL_PLAN, "[run]", '[run]\nbackend = "ray"\naddress = "127.0.0.1:1"'),
    "query.compute_nodes (K-means)": (
        KMEANS_PLAN,
        "iterations = 2",
        "iterations = 2\ncompute_nodes = 4",
    ),
}


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *flags: str) -> CliResult:
    path = tmp_path / f"plan{abs(hash((text, flags)))}.toml"
    path.write_text(text)
    result = run_cli(capsys, "plan", str(path), *flags)
    # The plan's own path differs between the two files: not what is compared.
    result.out = result.out.replace(str(path), "<PLAN>")
    return result


def _without_path(out: str) -> Any:
    data = json.loads(out)
    data["inputs"].pop("plan")
    return data


@pytest.mark.slow
@pytest.mark.parametrize("key", list(KEYS))
def test_a_changed_plan_key_changes_the_plan_output(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, old, new = KEYS[key]
    assert old in base
    changed = base.replace(old, new, 1)
    first, second = (_plan(tmp_path, capsys, t, "--json") for t in (base, changed))
    assert first.code == second.code == 0, (first.err, second.err)
    assert _without_path(first.out) != _without_path(second.out), key
    first, second = (_plan(tmp_path, capsys, t) for t in (base, changed))
    assert first.out != second.out, f"{key}: the terminal output is the same"


def test_plan_echoes_the_seeds_and_the_flag_in_both_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _plan(tmp_path, capsys, SMALL_PLAN, "--json", "--allow-unmet")
    assert result.code == 0, result.err
    inputs = result.json()["inputs"]
    assert inputs["allow_unmet"] is True
    assert inputs["data"]["seed"] == 1
    assert inputs["data"]["generator"] == "diabetes"
    assert inputs["query"] == {"compute_nodes": 3}
    assert inputs["run"]["seed"] == 0
    text = _plan(tmp_path, capsys, SMALL_PLAN).out
    flat = " ".join(text.split())  # the echo line wraps at the terminal width
    for part in ("--allow-unmet=no", "data.seed=1", "query.compute_nodes=3", "run.seed=0"):
        assert part in flat.replace("= ", "="), part


def test_allow_unmet_turns_exit_3_into_exit_0_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = _plan(tmp_path, capsys, UNMET_PLAN, "--json")
    assert refused.code == 3
    assert refused.json()["target_met"] is False
    allowed = _plan(tmp_path, capsys, UNMET_PLAN, "--json", "--allow-unmet")
    assert allowed.code == 0
    assert "target not met (--allow-unmet)" in allowed.err


def test_net_pki_echoes_force_even_when_there_is_nothing_to_replace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by the fuzz audit: `net pki --force` into a fresh folder printed exactly what
    # `net pki` printed (the flag changed nothing, silently).
    outs = []
    for flags in ((), ("--force",)):
        folder = tmp_path / f"pki{len(flags)}"
        r = run_cli(capsys, "net", "pki", "--hosts", "1", "--out", str(folder), "--json", *flags)
        assert r.code == 0, r.err
        record = r.json()
        assert record.pop("force") is bool(flags)
        outs.append(r.out.replace(str(folder), "<OUT>"))
    assert outs[0] != outs[1]
