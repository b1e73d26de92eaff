"""Two echo gaps the fuzz audit found (issue #28: no option is silently ignored).

1. A bound that does not apply answered ``nan`` for both ε and δ, so the asked quantity
   (``--epsilon`` of a δ query, ``--delta`` of an ε query) was printed as ``-``/``null``:
   ``shuffle delta --relation add_remove --epsilon 0.5`` and ``--epsilon 0.7`` printed the
   same table. A "not applicable" statement now keeps the asked number.
2. ``--allow-unmet`` only showed when the target was missed: with the target met, the
   output with and without the flag was the same. Every command taking it now echoes it.

Each case runs the command twice, changing only the option under test, and asks that both
the ``--json`` and the terminal outputs differ (and that the JSON shows the value given).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_option_walk import SMALL_PLAN
from tests.cli_helpers import CliResult, run_cli

SCRAMBLER_LARGE = ("--targets", "10", "--sigma", "0", "--n", "10", "--dummies", "0")

#: (command words and base options, the asked option, its two values): each base answers
#: "not applicable" (conditions_met false) at both values.
NOT_APPLICABLE: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    # composed accountant: add_remove without subsampling shows the report count
    "shuffle delta composed": (
        ("shuffle", "delta", "--eps0", "1", "--n", "1000", "--relation", "add_remove"),
        "--epsilon",
        "0.5",
        "0.7",
    ),
    "shuffle epsilon composed": (
        ("shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--relation", "add_remove"),
        "--delta",
        "1e-6",
        "1e-7",
    ),
    # one bound's parameter conditions (Registry.applies): erlingsson2019 needs n >= 1000
    "shuffle delta bound conditions": (
        ("shuffle", "delta", "--eps0", "1", "--n", "10", "--bound", "erlingsson2019"),
        "--epsilon",
        "0.5",
        "0.7",
    ),
    # a condition on the queried number itself (raised while evaluating): δ = e^{-n(ε/12ε0)²}
    # is above 0.01 at these small ε
    "shuffle delta query conditions": (
        ("shuffle", "delta", "--eps0", "0.4", "--n", "1000", "--bound", "erlingsson2019"),
        "--epsilon",
        "0.001",
        "0.002",
    ),
    # scrambler: the exhaustive evaluator does not apply to an instance this large
    "scrambler delta exact": (
        ("scrambler", "delta", *SCRAMBLER_LARGE, "--method", "exact"),
        "--epsilon",
        "0.7",
        "0.8",
    ),
}


def _json_rows(result: CliResult) -> list[dict[str, object]]:
    data = result.json()
    return data if isinstance(data, list) else [data]


@pytest.mark.parametrize("case", list(NOT_APPLICABLE))
def test_a_not_applicable_answer_echoes_the_asked_number(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base, option, first, second = NOT_APPLICABLE[case]
    texts = []
    for value in (first, second):
        result = run_cli(capsys, *base, option, value, "--json")
        assert result.code == 0, result.err
        (row,) = _json_rows(result)
        assert row["conditions_met"] is False, row
        assert row[option.removeprefix("--")] == float(value), row  # the asked number
        other = "delta" if option == "--epsilon" else "epsilon"
        assert row[other] is None, row  # the answer the bound cannot give stays empty
        text = run_cli(capsys, *base, option, value)
        assert text.code == 0, text.err
        texts.append(text.out)
    assert texts[0] != texts[1], f"{case}: {option} {first} and {second} print the same table"


def _bits(tmp_path: Path) -> str:
    path = tmp_path / "bits.csv"
    rows = [f"{int(i % 3 == 0)},{i % 3}" for i in range(3000)]
    path.write_text("flag,cat\n" + "\n".join(rows) + "\n")
    return str(path)


#: Commands taking --allow-unmet, with a base whose target is met. ``{bits}``, ``{plan}``
#: and ``{tmp}`` are filled per test.
MET: dict[str, tuple[str, ...]] = {
    "scrambler calibrate": (
        "scrambler", "calibrate", "--targets", "100", "--epsilon", "2", "--delta", "1e-6",
    ),
    "shuffle calibrate": (
        "shuffle", "calibrate", "--epsilon", "1", "--delta", "1e-6", "--n", "10000",
    ),
    "netdp calibrate": (
        "netdp", "calibrate", "--topology", "complete", "--task", "sgd", "--n", "50",
        "--steps", "100", "--epsilon", "1", "--delta", "1e-6",
    ),
    "protocol sum": (
        "protocol", "sum", "--data", "{bits}", "--column", "flag", "--epsilon", "2",
        "--delta", "1e-6", "--seed", "1",
    ),
    "protocol histogram": (
        "protocol", "histogram", "--data", "{bits}", "--column", "cat", "--epsilon", "2",
        "--delta", "1e-6", "--seed", "1",
    ),
    "run": ("run", "{plan}", "--out", "{tmp}/run"),
}  # fmt: skip


@pytest.mark.parametrize("command", list(MET))
def test_allow_unmet_is_echoed_when_the_target_is_met(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(SMALL_PLAN)
    fill = {"bits": _bits(tmp_path), "plan": str(plan), "tmp": str(tmp_path)}
    args = [a.format(**fill) for a in MET[command]]
    outputs: dict[str, list[str]] = {"json": [], "text": []}
    for flag in ((), ("--allow-unmet",)):
        result = run_cli(capsys, *args, *flag, "--json")
        assert result.code == 0, result.err
        record = result.json()
        echoed = record["inputs"] if command == "run" else record
        assert echoed["allow_unmet"] is bool(flag), echoed
        assert record["target_met"] is True, f"{command}: the base must meet its target"
        outputs["json"].append(result.out.replace(str(tmp_path), "<TMP>"))
        text = run_cli(capsys, *args, *flag)
        assert text.code == 0, text.err
        outputs["text"].append(text.out.replace(str(tmp_path), "<TMP>"))
    for form, (without, with_flag) in outputs.items():
        assert without != with_flag, f"{command}: --allow-unmet changes nothing in the {form}"


NETDP_RING = ("netdp", "epsilon", "--topology", "ring", "--task", "histogram", "--n", "20")


def test_netdp_epsilon_echoes_its_inputs_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    # Found by a text-mode option walk: the table showed only the answer, which a changed
    # --domain-size can leave the same (ε capped at the local baseline).
    base = (*NETDP_RING, "--eps0", "1", "--delta", "1e-6", "--rounds", "2")
    texts = []
    for value in ("10", "5"):
        result = run_cli(capsys, *base, "--domain-size", value, "--json")
        assert result.code == 0, result.err
        record = result.json()
        assert record["domain_size"] == int(value)
        # the user's --eps0, not the bound's derived per-user ε0 of the same name
        assert record["eps0"] == 1.0
        assert record["derived_eps0"] < 1.0
        texts.append(run_cli(capsys, *base, "--domain-size", value).out)
    assert texts[0] != texts[1], "--domain-size 10 and 5 print the same table"


SCR_ALL = ("scrambler", "delta", "--targets", "5", "--sigma", "0.3", "--n", "20")


def test_scrambler_every_evaluator_echoes_its_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    # At ε = 50 every evaluator answers δ = 0: the table of --method all was the same for
    # any --dummies; the Monte-Carlo seed was echoed nowhere.
    texts = []
    for dummies in ("5", "6"):
        result = run_cli(
            capsys, *SCR_ALL, "--dummies", dummies, "--epsilon", "50", "--method", "all"
        )
        assert result.code == 0, result.err
        texts.append(result.out)
    assert texts[0] != texts[1]
    assert "dummies=6" in " ".join(texts[1].split())
    for method in ("montecarlo", "all"):
        result = run_cli(
            capsys, *SCR_ALL, "--dummies", "5", "--epsilon", "50", "--method", method,
            "--seed", "3", "--samples", "100", "--json",
        )  # fmt: skip
        assert result.code == 0, result.err
        (row,) = [r for r in _json_rows(result) if r["source"] == "montecarlo"]
        assert row["inputs"]["seed"] == 3, row
        assert row["inputs"]["samples"] == 100, row
