"""Fuzz every command and option of the CLI (discovered from the app, so new commands count).

Invariants per invocation: exit code 0, 2 or 3 (unmet target); no traceback; JSON output has
no NaN/inf; invalid input is one line on stderr; every invocation ends within a time bound.

Default tier: ~12 examples per command (a few hundred in all, derandomized). Slow tier
(``--slow``): 100 per command (thousands). ``CROWDHIDE_FUZZ_SUMMARY=FILE`` writes the counts
(runs, exit codes, tracebacks, hangs) as JSON.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.fuzz_support import (
    Command,
    Files,
    argv_strategy,
    discover,
    invoke,
    make_files,
    problems,
)

COMMANDS = discover()
ALLOWED = frozenset({0, 2, 3})

STATS: collections.Counter[str] = collections.Counter()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Files]:
    root = tmp_path_factory.mktemp("fuzz")
    cwd = Path.cwd()
    os.chdir(root)  # commands with default output paths write here
    try:
        yield make_files(root)
    finally:
        os.chdir(cwd)
        target = os.environ.get("CROWDHIDE_FUZZ_SUMMARY")
        if target and STATS:
            Path(target).write_text(json.dumps(dict(sorted(STATS.items())), indent=2))


def _fuzz(cmd: Command, files: Files, data: st.DataObject) -> None:
    argv = data.draw(argv_strategy(cmd, files), label="argv")
    outcome = invoke(argv)  # work-bounded: fuzz_support.WORK_SECONDS of CPU
    STATS["runs"] += 1
    STATS[f"exit {outcome.code}"] += 1
    STATS["tracebacks"] += int("Traceback" in outcome.err)
    STATS["hangs"] += int(outcome.hang)
    STATS["max_seconds_x100"] = max(STATS["max_seconds_x100"], int(outcome.seconds * 100))
    found = problems(outcome, ALLOWED)
    assert not found, f"crowdhide {' '.join(argv)}: {found}\n{outcome.err[-3000:]}"


_COMMON = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}


def test_commands_are_discovered() -> None:
    ids = {c.id for c in COMMANDS}
    assert {"plan", "run", "scrambler epsilon", "netdp audit", "protocol histogram"} <= ids
    assert all(c.params for c in COMMANDS)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
@settings(max_examples=12, **_COMMON)  # type: ignore[arg-type]
@given(data=st.data())
def test_fuzz_cli(cmd: Command, files: Files, data: st.DataObject) -> None:
    _fuzz(cmd, files, data)


@pytest.mark.slow
@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
@settings(max_examples=100, **_COMMON)  # type: ignore[arg-type]
@given(data=st.data())
def test_fuzz_cli_slow(cmd: Command, files: Files, data: st.DataObject) -> None:
    _fuzz(cmd, files, data)
