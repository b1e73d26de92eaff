"""Every option of every command matters: it changes the answer, the echoed inputs or the
exit code — never nothing (issue #28: ``shuffle epsilon --mechanism oue --rounds 100``
printed the one-round answer with exit 0).

:data:`WALK` gives each command (found by walking the Typer app, so a new command or option
without an entry fails :func:`test_every_option_is_walked_or_skipped_with_a_reason`) a cheap
valid base invocation and, per option, another valid value. The command is run in-process
twice with ``--json``; the test fails when exit code and JSON output (volatile keys such
as wall-clock times removed) are both unchanged. :data:`SKIPS` lists the options that only
affect presentation or where output goes, each with the reason; :data:`KNOWN_DROPPED` the
options still dropped in areas owned by other work (``xfail(strict=True)``: fixing one
makes the test fail until its entry is removed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

from crowdhide.cli import build_app
from tests.cli_helpers import CliResult, run_cli


@dataclass(frozen=True)
class Variant:
    """``args`` replace the option's value in the base (or are appended); ``base`` replaces
    the command's base invocation for this option; ``refused``: the variant is expected to
    be refused (exit 2) — a valid outcome for an option that does not apply."""

    args: tuple[str, ...]
    base: tuple[str, ...] | None = None
    refused: bool = False
    base_refused: bool = False


@dataclass(frozen=True)
class Command:
    base: tuple[str, ...]
    variants: dict[str, Variant] = field(default_factory=dict)
    slow: bool = False


def V(
    *args: str,
    base: tuple[str, ...] | None = None,
    refused: bool = False,
    base_refused: bool = False,
) -> Variant:
    return Variant(args, base, refused, base_refused)


SMALL_PLAN = '''
name = "walk"
[data]
generator = "diabetes"
rows = 1500
seed = 1
[query]
kind = "aggregate"
sql = """SELECT age_range, AVG(insulin) FROM D GROUP BY age_range"""
compute_nodes = 3
[privacy]
epsilon = 6.0
delta = 1e-4
[run]
plots = false
'''
# Fixed countermeasures that certify ε ≈ 2.1 against a target of 0.1: unmet (the planner
# would instead reach any target or refuse it, exit 2, and --allow-unmet would be moot).
UNMET_PLAN = SMALL_PLAN.replace(
    "[privacy]\nepsilon = 6.0",
    "[countermeasures]\nsigma = 0.2\nn = 50\nd = 5\n[privacy]\nepsilon = 0.1",
)

SHUFFLE_Q = ("--eps0", "1", "--n", "300")
SCR = ("--targets", "5", "--sigma", "0.3", "--n", "20", "--dummies", "5")
NETDP_C = ("--topology", "complete", "--task", "sgd", "--n", "50", "--steps", "100", "--epsilon",
           "1", "--delta", "1e-6")  # fmt: skip
NETDP_E = ("--topology", "ring", "--task", "sum", "--n", "20", "--eps0", "1", "--delta", "1e-6")
PROTO = ("--data", "{bits}", "--column", "flag", "--epsilon", "2", "--delta", "1e-6")

LEDGER_RUN = ("{plan}", "--out", "{tmp}/run", "--ledger", "{tmp}/l.json", "--budget-epsilon",
              "10", "--budget-delta", "1e-3")  # fmt: skip

WALK: dict[str, Command] = {
    "shuffle epsilon": Command(
        (*SHUFFLE_Q, "--delta", "1e-6"),
        {
            "--eps0": V("--eps0", "2"),
            "--n": V("--n", "400"),
            "--delta": V("--delta", "1e-5"),
            "--mechanism": V("--mechanism", "oue", "--d", "4"),
            "--d": V(
                "--d", "8", base=(*SHUFFLE_Q, "--delta", "1e-6", "--mechanism", "oue", "--d", "4")
            ),
            "--k": V("--k", "4"),
            "--bound": V("--bound", "feldman2021"),
            "--rounds": V("--rounds", "2"),
            "--sample-rate": V("--sample-rate", "0.5"),
            "--relation": V("--relation", "add_remove", "--sample-rate", "0.5"),
        },
    ),
    "shuffle delta": Command(
        (*SHUFFLE_Q, "--epsilon", "0.5"),
        {
            "--eps0": V("--eps0", "2"),
            "--n": V("--n", "400"),
            "--epsilon": V("--epsilon", "0.4"),
            "--mechanism": V("--mechanism", "laplace"),
            "--d": V(
                "--d", "8", base=(*SHUFFLE_Q, "--epsilon", "0.5", "--mechanism", "krr", "--d", "4")
            ),
            "--k": V("--k", "4"),
            "--bound": V("--bound", "feldman2021"),
            "--rounds": V("--rounds", "2"),
            "--sample-rate": V("--sample-rate", "0.5"),
            "--relation": V("--relation", "add_remove", "--sample-rate", "0.5"),
        },
    ),
    "shuffle calibrate": Command(
        ("--epsilon", "0.5", "--delta", "1e-6", "--n", "1000"),
        {
            "--epsilon": V("--epsilon", "0.6"),
            "--delta": V("--delta", "1e-5"),
            "--n": V("--n", "2000"),
            "--eps0": V("--eps0", "1", base=("--epsilon", "0.5", "--delta", "1e-6", "--eps0", "2")),
            "--k": V("--k", "3"),
            "--allow-unmet": V(
                "--allow-unmet", base=("--epsilon", "0.001", "--delta", "1e-12", "--eps0", "30")
            ),
        },
        slow=True,  # a calibration is ~20 s here
    ),
    "shuffle plot": Command(
        (
            "--eps0",
            "1",
            "--delta",
            "1e-6",
            "--out",
            "{tmp}/p.png",
            "--n-min",
            "100",
            "--n-max",
            "1000",
            "--points",
            "2",
        ),
        {
            "--eps0": V("--eps0", "2"),
            "--delta": V("--delta", "1e-5"),
            "--k": V("--k", "3"),
            "--n-min": V("--n-min", "200"),
            "--n-max": V("--n-max", "2000"),
            "--points": V("--points", "3"),
        },
        slow=True,
    ),
    "scrambler epsilon": Command(
        (*SCR, "--delta", "1e-6"),
        {
            "--targets": V("--targets", "6"),
            "--sigma": V("--sigma", "0.4"),
            "--n": V("--n", "30"),
            "--dummies": V("--dummies", "6"),
            "--delta": V("--delta", "1e-5"),
            "--capped": V("--capped", "--method", "exact"),
            "--method": V("--method", "hoeffding"),
            "--samples": V(
                "--samples",
                "200",
                base=(*SCR, "--delta", "1e-6", "--method", "montecarlo", "--samples", "100"),
            ),
            "--seed": V(
                "--seed",
                "1",
                base=(*SCR, "--delta", "1e-6", "--method", "montecarlo", "--samples", "100"),
            ),
        },
    ),
    "scrambler delta": Command(
        (*SCR, "--epsilon", "1"),
        {
            "--targets": V("--targets", "6"),
            "--sigma": V("--sigma", "0.4"),
            "--n": V("--n", "30"),
            "--dummies": V("--dummies", "6"),
            "--epsilon": V("--epsilon", "1.5"),
            "--capped": V("--capped", "--method", "exact"),
            "--method": V("--method", "hoeffding"),
            "--samples": V(
                "--samples",
                "200",
                base=(*SCR, "--epsilon", "1", "--method", "montecarlo", "--samples", "100"),
            ),
            "--seed": V(
                "--seed",
                "1",
                base=(*SCR, "--epsilon", "1", "--method", "montecarlo", "--samples", "100"),
            ),
        },
    ),
    "scrambler calibrate": Command(
        ("--targets", "5", "--epsilon", "1", "--delta", "1e-6", "--sources", "1000"),
        {
            "--targets": V("--targets", "6"),
            "--epsilon": V("--epsilon", "1.5"),
            "--delta": V("--delta", "1e-5"),
            "--max-channels": V("--max-channels", "50"),
            "--max-overhead": V("--max-overhead", "1.5"),
            "--max-consents": V("--max-consents", "0.01"),
            "--sources": V("--sources", "2000"),
            "--allow-unmet": V(
                "--allow-unmet",
                base=(
                    "--targets",
                    "5",
                    "--epsilon",
                    "1e-3",
                    "--delta",
                    "1e-12",
                    "--max-channels",
                    "1",
                ),
            ),
        },
        slow=True,
    ),
    "local epsilon": Command(
        ("--targets", "5", "--sigma", "0.3"),
        {
            "--targets": V("--targets", "6"),
            "--sigma": V("--sigma", "0.4"),
            "--dummies": V("--dummies", "3"),
        },
    ),
    "qif vulnerability": Command(
        ("--k", "3", "--n", "4", "--eps0", "1"),
        {
            "--k": V("--k", "4"),
            "--n": V("--n", "5"),
            "--eps0": V("--eps0", "2"),
            "--channel": V("--channel", "krr"),
            "--adversary": V("--adversary", "informed"),
            "--others-value": V(
                "--others-value",
                "1",
                base=("--k", "3", "--n", "4", "--eps0", "1", "--adversary", "informed"),
            ),
            "--others": V(
                "--others",
                "1,1,1",
                base=("--k", "3", "--n", "4", "--eps0", "1", "--adversary", "informed"),
            ),
        },
    ),
    "qif capacity": Command(
        ("--k", "3", "--n", "4", "--eps0", "1"),
        {
            "--k": V("--k", "4"),
            "--n": V("--n", "5"),
            "--eps0": V("--eps0", "2"),
            "--channel": V("--channel", "krr"),
        },
    ),
    "qif scrambler": Command(
        ("--targets", "3", "--sigma", "0.3", "--n", "3"),
        {
            "--targets": V("--targets", "2"),
            "--sigma": V("--sigma", "0.4"),
            "--n": V("--n", "4"),
            "--dummies": V("--dummies", "1"),
            "--adversary": V("--adversary", "informed"),
            "--others-value": V(
                "--others-value",
                "1",
                base=("--targets", "3", "--sigma", "0.3", "--n", "3", "--adversary", "informed"),
            ),
            "--others": V(
                "--others",
                "1,1,0",
                base=("--targets", "3", "--sigma", "0.3", "--n", "3", "--adversary", "informed"),
            ),
        },
    ),
    "netdp epsilon": Command(
        (*NETDP_E, "--rounds", "2"),
        {
            "--topology": V("--topology", "complete", "--steps", "40", refused=True),
            "--task": V("--task", "histogram"),
            "--n": V("--n", "30"),
            "--eps0": V("--eps0", "2"),
            "--delta": V("--delta", "1e-5"),
            "--rounds": V("--rounds", "3"),
            "--steps": V(
                "--steps", "50", base=(*NETDP_E[:1], "complete", *NETDP_E[2:], "--steps", "40")
            ),
            "--colluders": V(
                "--colluders", "2", base=(*NETDP_E[:1], "complete", *NETDP_E[2:], "--steps", "40")
            ),
            "--domain-size": V(
                "--domain-size",
                "5",
                base=(*NETDP_E[:3], "histogram", *NETDP_E[4:], "--rounds", "2"),
            ),
        },
    ),
    "netdp calibrate": Command(
        NETDP_C,
        {
            "--topology": V("--topology", "ring", refused=True),
            "--task": V("--task", "sum", refused=True),
            "--n": V("--n", "60"),
            "--steps": V("--steps", "120"),
            "--epsilon": V("--epsilon", "2"),
            "--delta": V("--delta", "1e-5"),
            "--lipschitz": V("--lipschitz", "2"),
            "--cap-factor": V("--cap-factor", "2"),
            # the target is always met (σ is calibrated to it): the flag is echoed
            "--allow-unmet": V("--allow-unmet"),
        },
        slow=True,
    ),
    "netdp audit": Command(
        (
            "--topology",
            "complete",
            "--n",
            "10",
            "--steps",
            "30",
            "--eps0",
            "0.5",
            "--delta",
            "1e-6",
        ),
        {
            "--topology": V("--topology", "ring", refused=True),
            "--n": V("--n", "12"),
            "--steps": V("--steps", "40"),
            "--eps0": V("--eps0", "0.7"),
            "--delta": V("--delta", "1e-5"),
            "--seed": V("--seed", "1"),
            "--colluders": V("--colluders", "2"),
            "--known-peers": V("--known-peers"),
            "--group-ratio": V("--group-ratio", "0"),
        },
        slow=True,
    ),
    "protocol sum": Command(
        (*PROTO, "--seed", "1"),
        {
            "--data": V("--data", "{bits2}"),
            "--column": V("--column", "flag2"),
            "--epsilon": V("--epsilon", "3"),
            "--delta": V("--delta", "1e-5"),
            "--lower": V(
                "--lower",
                "-1",
                base=(
                    *PROTO[:3],
                    "age",
                    *PROTO[4:],
                    "--seed",
                    "1",
                    "--protocol",
                    "real",
                    "--lower",
                    "0",
                    "--upper",
                    "100",
                ),
            ),
            "--upper": V(
                "--upper",
                "120",
                base=(
                    *PROTO[:3],
                    "age",
                    *PROTO[4:],
                    "--seed",
                    "1",
                    "--protocol",
                    "real",
                    "--lower",
                    "0",
                    "--upper",
                    "100",
                ),
            ),
            "--protocol": V("--protocol", "single"),
            "--calibration": V("--calibration", "paper", "--epsilon", "1"),
            "--messages": V(
                "--messages",
                "3",
                base=(
                    *PROTO[:3],
                    "age",
                    *PROTO[4:],
                    "--seed",
                    "1",
                    "--protocol",
                    "real",
                    "--lower",
                    "0",
                    "--upper",
                    "100",
                ),
            ),
            "--clip": V(
                "--clip",
                base=(
                    *PROTO[:3],
                    "age",
                    *PROTO[4:],
                    "--seed",
                    "1",
                    "--protocol",
                    "real",
                    "--lower",
                    "0",
                    "--upper",
                    "50",
                ),
                base_refused=True,
            ),
            "--seed": V("--seed", "2"),
            "--engine": V("--engine"),
            "--allow-unmet": V("--allow-unmet"),  # always met: echoed
        },
        slow=True,
    ),
    "protocol histogram": Command(
        (*PROTO[:3], "cat", *PROTO[4:], "--seed", "1"),
        {
            "--data": V("--data", "{bits2}"),
            "--column": V("--column", "flag"),
            "--epsilon": V("--epsilon", "3"),
            "--delta": V("--delta", "1e-5"),
            "--bins": V("--bins", "5"),
            "--estimator": V("--estimator", "debias"),
            "--seed": V("--seed", "2"),
            "--engine": V("--engine"),
            "--allow-unmet": V("--allow-unmet"),  # always met: echoed
        },
        slow=True,
    ),
    "data synth": Command(
        ("diabetes", "--rows", "50", "--out", "{tmp}/d.csv"),
        {
            "--rows": V("--rows", "60"),
            "--distribution": V("--distribution", "skewed"),
            "--seed": V("--seed", "1"),
        },
    ),
    "net pki": Command(
        # --force: the base and its variants write into the same folder (a CA is kept otherwise)
        ("--hosts", "1", "--out", "{tmp}/pki", "--force"),
        {
            "--hosts": V("--hosts", "2"),
            "--days": V("--days", "30"),
        },
        slow=True,
    ),
    "plan": Command(
        ("{plan}",),
        {"--allow-unmet": V("--allow-unmet", base=("{unmet}",))},
        slow=True,
    ),
    "run": Command(
        ("{plan}", "--out", "{tmp}/run"),
        {
            "--ledger": V("--ledger", "{tmp}/ledger.json"),
            "--budget-epsilon": V("--budget-epsilon", "20", base=LEDGER_RUN),
            "--budget-delta": V("--budget-delta", "1e-2", base=LEDGER_RUN),
            "--population": V(
                "--population",
                "walkers",
                base=("{plan}", "--out", "{tmp}/run", "--ledger", "{tmp}/l.json"),
            ),
            "--allow-unmet": V("--allow-unmet", base=("{unmet}", "--out", "{tmp}/run")),
            "--backend": V("--backend", "local"),
            "--shards": V("--shards", "2"),
            "--address": V("--address", "127.0.0.1:1", refused=True),  # local backend
            "--hosts": V("--hosts", "2", refused=True),
            "--on-missing": V("--on-missing", "report", refused=True),
            "--pki": V("--pki", "{tmp}", refused=True),
            "--block-size": V("--block-size", "100"),
            "--placement": V("--placement", "spread", refused=True),  # local backend
            "--round-seconds": V("--round-seconds", "2", refused=True),  # local backend
            "--shared-seed": V("--shared-seed", refused=True),  # local backend
        },
        slow=True,
    ),
    "reproduce": Command(
        ("list",),
        {
            "--seed": V("--seed", "1", refused=True),
            "--quick": V("--quick", refused=True),
            "--out": V("--out", "{tmp}/elsewhere", refused=True),
        },
    ),
    "ledger show": Command(("{ledger}",)),
    # only --json (commands of main's `examples` area: no option to walk)
    "examples list": Command(()),
    "examples show": Command(("diabetes",)),
    # Enrolment writes keys and certificates, not an answer to compare: every option is
    # listed in SKIPS and checked by tests/net/test_enrol.py.
    "net ca init": Command(()),
    "net ca sign": Command(()),
    "net directory": Command(()),
    "node init": Command(()),
    # A long-running daemon and the rows files it reads: tests/net/test_daemon.py and
    # tests/net/test_deploy_doc.py run them (every option listed in SKIPS).
    "node serve": Command(()),
    "net split": Command(()),
    # A data owner's rows file: tests/net/test_node_rows.py compares it with net split's and
    # checks the refusals (every option listed in SKIPS).
    "node rows": Command(()),
}

ENROLMENT = "enrolment writes keys and certificates, no answer to compare (test_enrol.py)"
OWNER = "writes an owner's rows file, echoed (tests/net/test_node_rows.py)"
DAEMON = "needs running node daemons (tests/net/test_daemon.py, tests/net/test_deploy_doc.py)"

#: Options that only change presentation or where files go, with the reason.
SKIPS: dict[str, str] = {
    "--json": "presentation: JSON instead of a table (the walk itself runs with --json)",
    "shuffle plot --out": "where the image is written (checked by the plot tests)",
    "data synth --out": "where the data is written (checked by the data tests)",
    "net pki --out": "where the PKI is written (checked by the net tests)",
    "net ca init --out": ENROLMENT,
    "net ca init --days": ENROLMENT,
    "net ca sign --ca": ENROLMENT,
    "net ca sign --days": ENROLMENT,
    "net directory --ca": ENROLMENT,
    "net directory --out": ENROLMENT,
    "node init --id": ENROLMENT,
    "node init --address": ENROLMENT,
    "node init --state": ENROLMENT,
    "node init --role": ENROLMENT,
    "node serve --listen": DAEMON,
    "node serve --data": DAEMON,
    "node serve --directory": DAEMON,
    "node serve --ca": DAEMON,
    "node serve --state": DAEMON,
    "node serve --idle-grace": "needs a stopped coordinator and running daemons "
    "(tests/net/test_coordinator_idle.py; its range: tests/net/test_idle.py)",
    "net split --nodes": DAEMON,
    "net split --block-size": DAEMON,
    "net split --out": DAEMON,
    "net split --coordinator-plan": "writes the coordinator's plan (echoed as "
    "coordinator_plan; tests/plans/test_held_plan.py)",
    "node rows --plan": OWNER,
    "node rows --csv": OWNER,
    "node rows --first": OWNER,
    "node rows --out": OWNER,
    "run --directory": DAEMON,
    "run --ca": DAEMON,
    "run --state": DAEMON,
    "net pki --force": "overwrite guard: without it an existing CA is refused "
    "(tests/cli/test_refusals.py)",
    "run --out": "where the report is written (checked by the run tests)",
}

#: Options still dropped, in areas owned by other work (see the issue-28 report).
KNOWN_DROPPED: dict[str, str] = {}

#: Base runs without files, shared by the options of a command (each is run once).
_BASE_RESULTS: dict[tuple[str, ...], CliResult] = {}
_VOLATILE = {"seconds", "elapsed", "elapsed_s", "wall_seconds", "time_s", "runtime"}


def _commands() -> dict[str, list[str]]:
    """Every leaf command of the app and its option names."""
    root = typer.main.get_command(build_app())
    found: dict[str, list[str]] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        opts = [p.opts[0] for p in cmd.params if p.param_type_name == "option"]
        found[" ".join(path)] = [o for o in opts if o != "--help"]

    walk(root, [])
    return found


def _cases() -> list[Any]:
    cases = []
    for name, cmd in WALK.items():
        for option in cmd.variants:
            key = f"{name} {option}"
            marks = [pytest.mark.slow] if cmd.slow else []
            if key in KNOWN_DROPPED:
                marks.append(pytest.mark.xfail(reason=KNOWN_DROPPED[key], strict=True))
            cases.append(pytest.param(name, option, marks=marks, id=key))
    return cases


def test_every_option_is_walked_or_skipped_with_a_reason() -> None:
    missing = []
    for name, options in _commands().items():
        if name not in WALK:
            missing.append(name)
            continue
        for option in options:
            walked = option in WALK[name].variants
            skipped = option in SKIPS or f"{name} {option}" in SKIPS
            if not (walked or skipped):
                missing.append(f"{name} {option}")
    assert not missing, f"no variant and no listed reason for: {missing}"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    bits, bits2 = tmp_path / "bits.csv", tmp_path / "bits2.csv"
    for path, period in ((bits, 3), (bits2, 4)):  # the same columns, other data
        rows = [
            f"{int(i % period == 0)},{int(i % 5 == 0)},{20 + i % 50},{i % period}"
            for i in range(3000)
        ]
        path.write_text("flag,flag2,age,cat\n" + "\n".join(rows) + "\n")
    plan = tmp_path / "plan.toml"
    plan.write_text(SMALL_PLAN)
    unmet = tmp_path / "unmet.toml"
    unmet.write_text(UNMET_PLAN)
    return {"tmp": str(tmp_path), "bits": str(bits), "bits2": str(bits2), "plan": str(plan),
            "unmet": str(unmet), "ledger": str(tmp_path / "ledger.json")}  # fmt: skip


def _fill(args: tuple[str, ...], files: dict[str, str]) -> list[str]:
    return [a.format(**files) if "{" in a else a for a in args]


def _apply(base: list[str], variant: list[str]) -> list[str]:
    """Replace the values of options of ``variant`` present in ``base``; append the rest."""
    out = list(base)
    i = 0
    while i < len(variant):
        opt = variant[i]
        has_value = i + 1 < len(variant) and not variant[i + 1].startswith("--")
        if opt in out and has_value:
            out[out.index(opt) + 1] = variant[i + 1]
        elif opt not in out:
            out += [opt, variant[i + 1]] if has_value else [opt]
        i += 2 if has_value else 1
    return out


def _normalized(text: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError:
        return text

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in _VOLATILE}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(data)


@pytest.mark.parametrize(("name", "option"), _cases())
def test_option_changes_the_answer_the_inputs_or_the_exit_code(
    name: str, option: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cmd = WALK[name]
    variant = cmd.variants[option]
    base = _fill(variant.base if variant.base is not None else cmd.base, files)
    changed = _apply(base, _fill(variant.args, files))
    words = name.split()
    key = (name, *base)
    first = _BASE_RESULTS.get(key) or run_cli(capsys, *words, *base, "--json")
    if not any("{" in a for a in (variant.base or cmd.base)):  # no per-test file in it
        _BASE_RESULTS[key] = first
    assert first.code in ((2,) if variant.base_refused else (0, 3)), (base, first.err)
    second = run_cli(capsys, *words, *changed, "--json")
    if variant.refused:
        assert second.code == 2, (changed, second.out[:300])
        assert len(second.err.strip().splitlines()) == 1, second.err
        return
    assert second.code in (0, 3), (changed, second.err)
    assert (first.code, _normalized(first.out)) != (second.code, _normalized(second.out)), (
        f"{option} changed neither the answer, the echoed inputs nor the exit code: {changed}"
    )


@pytest.mark.parametrize(("name", "option"), _cases())
def test_option_changes_the_terminal_output_too(
    name: str, option: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same walk without ``--json``: an option echoed only in the JSON is silently
    ignored at the terminal (found so: ``netdp epsilon --domain-size``, ``shuffle plot
    --delta``, ``run --shards``). Timings and the test's folder are removed, as the fuzz
    audit does."""
    from tests.cli.fuzz_audit import TIMING

    cmd = WALK[name]
    variant = cmd.variants[option]
    if variant.refused or variant.base_refused:
        pytest.skip("a refusal: one line on stderr, checked by the --json walk")
    base = _fill(variant.base if variant.base is not None else cmd.base, files)
    changed = _apply(base, _fill(variant.args, files))
    outputs = []
    for argv in (base, changed):
        result = run_cli(capsys, *name.split(), *argv)
        assert result.code in (0, 3), (argv, result.err)
        outputs.append((result.code, TIMING.sub("<T>", result.out.replace(files["tmp"], "<TMP>"))))
    assert outputs[0] != outputs[1], f"{option} changed nothing at the terminal: {changed}"
