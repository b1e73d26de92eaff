"""``shuffle epsilon`` / ``delta`` and ``scrambler epsilon`` / ``delta`` without typer
(``crowdhide.cli._fast``) behave exactly as through Typer: the same options, values,
refusals, output, messages and exit codes."""

from __future__ import annotations

import errno
import math
import sys
from typing import Any

import pytest
import typer
import typer.main

import crowdhide.cli
from crowdhide.cli import _fast, build_app, main

COMMANDS = [
    ("shuffle", "epsilon"),
    ("shuffle", "delta"),
    ("scrambler", "epsilon"),
    ("scrambler", "delta"),
]
#: Values tried on every option: the edges of every range, near misses, forms.
VALUES = [
    "0", "-0", "1e-300", "9e-301", "1e-6", "0.5", "1", "1.0", " 1 ", "1_000", "1e3", "2",
    "4.0", "4.5", "50", "50.000001", "51", "1e5", "100001", "1e6", "1000001", "1e9",
    "1000000001", "nan", "inf", "-inf", "x", "", "0x10", "krr", "-1",
]  # fmt: skip


def _click_command(command: tuple[str, str]) -> Any:
    root = typer.main.get_command(build_app([command[0]]))
    return root.commands[command[0]].commands[command[1]]  # type: ignore[attr-defined]


def _click_value(param: Any, text: str) -> Any:
    """What click passes for ``text`` (``"refused"`` if it refuses it)."""
    try:
        return param.type_cast_value(None, text)
    except Exception as exc:  # click's BadParameter, whichever click Typer ships
        if not hasattr(exc, "format_message"):
            raise
        return "refused"


def _fast_value(parse: Any, text: str) -> Any:
    try:
        return text if parse is str else parse(text)
    except _fast.OptionValueError:
        return "refused"


def _same(a: Any, b: Any) -> bool:
    return (a == b and type(a) is type(b)) or (a != a and b != b and math.isnan(a))


@pytest.mark.parametrize("command", COMMANDS)
def test_options_match_the_typer_command(command: tuple[str, str]) -> None:
    params = {p.opts[0]: p for p in _click_command(command).params if p.opts[0] != "--help"}
    options = _fast.command_options(command)
    assert list(options) == list(params)  # the same options, in signature order
    for flag, (name, parse, default) in options.items():
        param = params[flag]
        assert (param.name, param.opts, param.secondary_opts) == (name, [flag], [])
        assert param.is_flag == (parse is None), flag
        assert param.required == (default is _fast.REQUIRED), flag
        if default is not _fast.REQUIRED:  # Typer passes defaults through the parser too
            got = param.type_cast_value(None, param.default)
            assert _same(got, default), (flag, got, default)
        if parse is None:
            continue
        for text in VALUES:
            want, got = _click_value(param, text), _fast_value(parse, text)
            assert _same(got, want), (flag, text, got, want)


def test_a_changed_range_would_be_caught() -> None:
    """The comparison above sees a range end moved: --eps0 capped at 49 instead of 50."""
    param = {p.opts[0]: p for p in _click_command(COMMANDS[0]).params}["--eps0"]
    wrong = _fast.real_parser(0.0, 49.0, True, False)
    assert any(not _same(_fast_value(wrong, t), _click_value(param, t)) for t in VALUES)


KRR = ["shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--k", "4"]
SCRAMBLER = [
    "scrambler", "epsilon", "--targets", "20", "--sigma", "0.5", "--n", "100", "--dummies", "50",
    "--delta", "1e-4",
]  # fmt: skip
SCRAMBLER_DELTA = ["scrambler", "delta", *SCRAMBLER[2:-2], "--epsilon", "1"]


@pytest.mark.parametrize(
    "args",
    [
        [*KRR, "--help"],
        [*KRR, "--k", "5"],  # repeated: click keeps the last, Typer decides
        [*KRR, "--json=1"],  # a flag takes no value
        [*KRR, "--json", "extra"],
        [*KRR, "--", "--json"],
        [*KRR, "--bound"],  # no value
        [*KRR, "--mechanism", "-x"],  # click would take it as the value: Typer decides
        [*KRR, "--eps", "2"],
        [*KRR[:4], *KRR[6:]],  # --n missing
        [*KRR[:3], "0", *KRR[4:]],  # refused value
        ["shuffle", "epsilon"],
        ["shuffle", "calibrate", "--epsilon", "1", "--delta", "1e-6", "--n", "100"],
        ["shuffle"],
        ["--help"],
        [*SCRAMBLER, "--samples", "10"],  # Monte-Carlo only: Typer refuses it
        [*SCRAMBLER, "--method", "hoeffding", "--seed=3"],
        [*SCRAMBLER, "--capped", "--capped"],
        [*SCRAMBLER[:-2]],  # --delta missing
        [*SCRAMBLER_DELTA, "--delta", "1e-4"],
        ["scrambler", "calibrate", "--targets", "20", "--epsilon", "1", "--delta", "1e-6"],
    ],
)
def test_anything_but_valid_known_options_goes_to_typer(args: list[str]) -> None:
    assert _fast.fast_command(args) is None


def test_shell_completion_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fast.fast_command(KRR) is not None
    monkeypatch.setenv(_fast.COMPLETION_VARIABLE, "bash_complete")
    assert _fast.fast_command(KRR) is None


def _both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """``(code, stdout, stderr)`` of ``crowdhide *args``, fast path first, then Typer's."""
    runs = []
    for fast in (True, False):
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(crowdhide.cli, "fast_command", lambda args: None)
            code = main(args)
        out, err = capsys.readouterr()
        runs.append((code, out, err))
    return runs[0], runs[1]


@pytest.mark.parametrize(
    "args",
    [
        [*KRR, "--json"],
        ["--json", *KRR[2:]],  # no command: refused by Typer in both
        ["shuffle", "epsilon", "--json", "--k=4", "--delta=1e-6", "--n", "1e3", "--eps0", " 2 "],
        KRR,  # table
        [*KRR, "--bound", "all", "--json"],
        [*KRR, "--bound", "nosuch", "--json"],  # the library refuses: same message
        [*KRR, "--relation", "bogus"],
        [*KRR, "--rounds", "1", "--sample-rate", "1", "--json"],  # given, at their defaults
        ["shuffle", "delta", "--eps0", "1", "--n", "1000", "--epsilon", "0.3", "--json"],
        ["shuffle", "delta", "--eps0", "1", "--n", "1000", "--epsilon", "0", "--k", "3"],
        [*KRR[:8], "--mechanism", "nosuch", "--d", "4", "--json"],
        [*KRR[:8], "--mechanism", "oue", "--json"],  # --d needed: named
        [*KRR[:8], "--mechanism", "krr", "--d", "4", "--k", "4", "--json"],
        [*KRR[:3], "0", *KRR[4:]],  # refused by click, through Typer in both
        [*SCRAMBLER, "--json"],
        [*SCRAMBLER, "--method", "hoeffding"],  # table
        [*SCRAMBLER, "--method", "all", "--json"],
        [*SCRAMBLER, "--method", "all"],  # table with every input echoed
        [*SCRAMBLER, "--method=montecarlo", "--samples", "200", "--seed", "3", "--json"],
        [*SCRAMBLER, "--method", "all", "--samples", "100", "--capped", "--json"],
        [*SCRAMBLER, "--method", "nosuch", "--json"],  # the library refuses: same message
        [*SCRAMBLER, "--method", "exact", "--samples", "10"],  # Typer refuses in both
        [*SCRAMBLER_DELTA, "--json"],
        [*SCRAMBLER_DELTA, "--method", "bennett", "--capped"],
        [*SCRAMBLER_DELTA[:5], "1.5", *SCRAMBLER_DELTA[6:]],  # σ > 1: refused by click
    ],
)
def test_same_output_and_exit_code_as_through_typer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    fast, slow = _both(capsys, monkeypatch, args)
    assert fast == slow


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (KeyboardInterrupt(), 130),
        (EOFError(), 1),
        (RuntimeError("a bug"), 1),
        (OSError(errno.ENOENT, "No such file", "x.csv"), 2),
        (ValueError("k must be <= 9, got 10"), 1),  # raised outside crowdhide: a bug
    ],
)
def test_same_exits_when_the_answer_raises(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: BaseException,
    code: int,
) -> None:
    def raise_it(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr("crowdhide.cli._shuffle_answer.answer", raise_it)
    monkeypatch.setattr("crowdhide.cli.shuffle.answer", raise_it)
    fast, slow = _both(capsys, monkeypatch, [*KRR, "--json"])
    assert fast[0] == slow[0] == code
    assert fast[1] == slow[1] == ""
    # a bug's traceback has different frames; its last lines are the same
    assert fast[2].splitlines()[-2:] == slow[2].splitlines()[-2:]


def test_broken_pipe_exits_1_quietly_as_through_typer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr("crowdhide.cli._shuffle_answer.answer", broken)
    monkeypatch.setattr("crowdhide.cli.shuffle.answer", broken)
    wrapped = []
    for fast in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", sys.stdout)  # restored afterwards
            patch.setattr(sys, "stderr", sys.stderr)
            if not fast:
                patch.setattr(crowdhide.cli, "fast_command", lambda args: None)
            with pytest.raises(SystemExit) as exit_info:
                main([*KRR, "--json"])
            wrapped.append(type(sys.stdout).__name__)
        assert exit_info.value.code == 1
    assert wrapped == ["PacifyFlushWrapper", "PacifyFlushWrapper"]
