"""Fuzz what users combine: mutated plan files x data files x options x backends.

Each example takes a small valid plan (generated data, a CSV/Parquet file, K-means), applies
up to three mutations (edge values, wrong types, dropped or unknown keys and sections, cut or
junk text) over one data-file variant (empty, binary, non-finite, huge, misnamed, ...), draws
``plan``/``run`` options from the app itself, and runs it in-process under the work bound.
Invariants: exit 0, 2 or 3; no traceback; invalid input is one line on stderr; JSON is finite.

Default tier: 30 examples on the local backend. Slow tier: 150 more, plus a few valid plans on
the ``tls`` and ``ray`` backends (fresh processes: each starts its own hosts or cluster on
127.0.0.1), whose results must equal the local backend's.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.fuzz_plans import BASES, data_variants, dump_toml, plan_case, valid_case
from tests.cli.fuzz_support import (
    Command,
    Files,
    argv_strategy,
    discover,
    invoke,
    make_files,
    problems,
)

ALLOWED = frozenset({0, 2, 3})
ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    c.id: Command(c.path, tuple(p for p in c.params if not p.positional)) for c in discover()
}
_COMMON = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Files, dict[str, Path]]]:
    root = tmp_path_factory.mktemp("planfuzz")
    files = make_files(root)
    data = data_variants(root)
    cwd = Path.cwd()
    os.chdir(root)  # `run` writes results/<name> here unless --out says otherwise
    try:
        yield files, data
    finally:
        os.chdir(cwd)


def _local(argv: list[str]) -> list[str]:
    for i, token in enumerate(argv[:-1]):
        if token == "--backend" and argv[i + 1] not in ("local", "nope"):
            argv[i + 1] = "local"
    return argv


def _check(env: tuple[Files, dict[str, Path]], seed: int, data: st.DataObject) -> None:
    files, variants = env
    case = plan_case(random.Random(seed), variants)
    path = files.root / f"plan-{seed}.toml"
    path.write_text(case.text, encoding="utf-8")
    name = data.draw(st.sampled_from(("plan", "run")), label="command")
    opts = data.draw(argv_strategy(COMMANDS[name], files), label="options")[1:]
    argv = [name, str(path), *_local(opts)]
    outcome = invoke(argv)
    found = problems(outcome, ALLOWED)
    where = f"crowdhide {' '.join(argv)}\nmutations: {case.mutations}, data: {case.data}"
    assert not found, f"{where}: {found}\n{outcome.err[-3000:]}"


@settings(max_examples=30, **_COMMON)  # type: ignore[arg-type]
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_mutated_plans_and_data_files(
    env: tuple[Files, dict[str, Path]], seed: int, data: st.DataObject
) -> None:
    _check(env, seed, data)


@pytest.mark.slow
@settings(max_examples=150, **_COMMON)  # type: ignore[arg-type]
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_mutated_plans_and_data_files_slow(
    env: tuple[Files, dict[str, Path]], seed: int, data: st.DataObject
) -> None:
    _check(env, seed, data)


def test_mutations_are_applied_and_named() -> None:
    variants = {"valid.csv": Path("valid.csv")}
    cases = [plan_case(random.Random(s), variants) for s in range(200)]
    mutated = [c for c in cases if c.mutations]
    assert len(mutated) > 120
    for case in mutated:
        if not any("text cut" in m or "junk" in m for m in case.mutations):
            assert case.text != dump_toml(BASES[case.base]) or "dropped" in str(case.mutations)
    assert {c.base for c in cases} == set(BASES)


def _run(plan: Path, out: Path, *backend: str) -> tuple[int, object]:
    code = "import sys; from crowdhide.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["run", str(plan), "--out", str(out), "--json", "--allow-unmet", *backend]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 2), done.stderr[-3000:]
    if done.returncode == 2:
        assert done.stderr.count("\n") == 1, done.stderr
        return 2, done.stderr
    return 0, json.loads(done.stdout)


def _without_backend(result: object) -> object:
    # The backend's own section (hosts, shards, timings) differs by design; the answer must not.
    # So do the provenance (the command line names the backend) and the check against DuckDB
    # on the tuples used: the tls coordinator is not told which tuples were used.
    if isinstance(result, dict):
        drop = {"backend", "network", "net", "shards", "seconds", "timings", "out", "files", "run"}
        drop |= {"provenance", "vs_duckdb_on_used_tuples"}
        kept = {k: _without_backend(v) for k, v in result.items() if k not in drop}
        if isinstance(kept.get("execution"), dict):
            # Spawned tls hosts default to a smaller block size (every scrambler group spread
            # over the hosts; echoed here); the answer does not depend on it.
            kept["execution"].pop("block_size", None)
        if isinstance(kept.get("notes"), list):  # the tls run's randomness warning
            kept["notes"] = [n for n in kept["notes"] if "shared seed" not in str(n)]
            if not kept["notes"]:  # a report without notes has no notes key
                del kept["notes"]
        return kept
    if isinstance(result, list):
        return [_without_backend(v) for v in result]
    return result


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "module"),
    # tls keys each host's draws with its own secret unless told to share the seed
    [
        (("--backend", "tls", "--hosts", "2", "--shared-seed"), "cryptography"),
        (("--backend", "ray"), "ray"),
    ],
    ids=["tls", "ray"],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_valid_mutations_on_remote_backends_match_local(
    tmp_path: Path, backend: tuple[str, ...], module: str, seed: int
) -> None:
    pytest.importorskip(module)
    case = valid_case(random.Random(seed), data_variants(tmp_path))
    plan = tmp_path / "plan.toml"
    plan.write_text(case.text, encoding="utf-8")
    local_code, local = _run(plan, tmp_path / "local")
    remote_code, remote = _run(plan, tmp_path / "remote", *backend)
    assert remote_code == local_code, (case.mutations, remote)
    if local_code == 0:
        assert _without_backend(remote) == _without_backend(local), case.mutations
