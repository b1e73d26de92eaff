"""The run report says how the tls round length was chosen, not only its value.

A default round length is derived from the plan and frame costs measured on this machine as
the run begins, so it changes with the plan and with the machine's load;
``network.round_seconds_from`` echoes the derivation with the measured figures, or that
the length was given.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crowdhide.backends.tls.rounds import default_round_seconds, round_length
from crowdhide.plans.examples import example_path
from tests.cli_helpers import run_cli

pytestmark = pytest.mark.net


def _plan(tmp_path: Path, rows: int) -> Path:
    text = example_path("diabetes").read_text(encoding="utf-8")
    text = text.replace("rows = 20000", f"rows = {rows}")
    assert f"rows = {rows}" in text
    plan = tmp_path / "diabetes.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    return plan


def test_the_derivation_reproduces_the_length() -> None:
    import numpy as np

    from crowdhide.engine.library import named
    from crowdhide.engine.plan import PlanBuilder

    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(300, dtype=np.int64)})
    b.result("R", process=named("compute.count", route="S->R", size=1))
    b.route("S", "R", by=named("route.column", column="g"))
    plan = b.build()
    for per_frame in (1e-4, 7e-4, 3e-3):
        seconds, basis = round_length(plan, per_frame=per_frame)
        assert seconds == default_round_seconds(plan, per_frame=per_frame)
        found = re.match(
            r"default: 2 x \(0\.5 s \+ (\d+) frames of the busiest round x (\S+) ms", basis
        )
        assert found is not None, basis
        frames, cost = int(found[1]), float(found[2]) * 1e-3
        assert frames == 300
        assert seconds == pytest.approx(2 * (0.5 + frames * cost), rel=5e-3)


def test_the_run_report_echoes_how_the_round_length_was_chosen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = _plan(tmp_path, 600)
    common = ("run", str(plan), "--block-size", "300", "--json", "--allow-unmet")
    tls = ("--backend", "tls", "--hosts", "2")
    default = run_cli(capsys, *common, "--out", str(tmp_path / "d"), *tls)
    assert default.code == 0, default.err
    net = default.json()["network"]
    basis = net["round_seconds_from"]
    found = re.match(r"default: 2 x \(0\.25 s \+ 3\.0 x (\S+) s, the busiest host's", basis)
    assert found is not None, basis
    assert net["round_seconds"] == pytest.approx(2 * (0.25 + 3.0 * float(found[1])), abs=0.01)
    given = run_cli(capsys, *common, "--out", str(tmp_path / "g"), *tls, "--round-seconds", "4.5")
    assert given.code == 0, given.err
    net = given.json()["network"]
    assert net["round_seconds"] == 4.5
    assert net["round_seconds_from"] == "given (round_seconds)"
