"""Start-up of the command line: what it imports, and that the fast paths change nothing.

Structural checks, not timings (timings are in ``benchmarks/bench_startup.py``): each runs
the entry point in a fresh interpreter and inspects ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from crowdhide.cli import _app_for, build_app

SRC = str(Path(__file__).resolve().parents[2] / "src")
KRR = ["shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--k", "4", "--json"]
#: Never imported at start-up (each is imported inside the functions that use it).
HEAVY = ("scipy.optimize", "dp_accounting", "ray", "duckdb", "matplotlib", "cryptography")
_RUN_MAIN = """
import contextlib, io, json, sys
from crowdhide.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _modules_after(argv: list[str]) -> set[str]:
    result = json.loads(_python(_RUN_MAIN, json.dumps(argv)))
    assert result["code"] == 0
    return set(result["modules"])


def test_help_imports_neither_numpy_nor_scipy() -> None:
    loaded = _modules_after(["--help"])
    assert not loaded & {"numpy", "scipy", "pydantic", *HEAVY}


def test_building_the_app_imports_no_numerics() -> None:
    code = "import json, sys, crowdhide.cli as c; c.build_app(); print(json.dumps([*sys.modules]))"
    loaded = set(json.loads(_python(code)))
    assert "crowdhide.cli.shuffle" in loaded  # every area is registered
    assert not loaded & {"numpy", "scipy", *HEAVY}


def test_krr_query_keeps_heavy_and_rarely_used_modules_out() -> None:
    loaded = _modules_after(KRR)
    assert {"scipy.special", "crowdhide.accounting.shuffle.generic"} <= loaded  # it did the work
    assert not loaded & set(HEAVY)
    # Nor what only other queries use (issue 32: ~20 ms of rich, the generic certificate,
    # binary RR, the mechanisms' table), nor NumPy's test and Fortran helpers beyond what
    # SciPy itself loads.
    assert not loaded & {
        "rich",
        "crowdhide.accounting.shuffle.variation_ratio",
        "crowdhide.accounting.shuffle.binary_rr",
        "crowdhide.accounting.shuffle.randomizers",
    }
    reference = set(json.loads(_python(_REFERENCE)))
    assert {m for m in loaded if m.startswith("numpy.")} <= reference
    # The query is answered without typer (crowdhide.cli._fast) and without any area module.
    assert "typer" not in loaded
    assert not {m for m in loaded if m.startswith("crowdhide.cli.")} - {
        "crowdhide.cli._emit",
        "crowdhide.cli._fast",
        "crowdhide.cli._shuffle_answer",
        "crowdhide.cli._values",
    }


#: What issue 32 allows a query to import at no charge: NumPy and scipy.special.
_REFERENCE = "import json, sys, numpy, scipy.special; print(json.dumps([*sys.modules]))"


def _third_party(modules: set[str]) -> set[str]:
    """The modules neither crowdhide's nor the standard library's."""
    own = {"crowdhide", *sys.stdlib_module_names}
    return {m for m in modules if m.split(".")[0] not in own}


_QUERY = ["shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--delta", "1e-6"]


@pytest.mark.parametrize(
    "extra",
    [[], ["--mechanism", "oue", "--d", "16"], ["--k", "10"]],
    ids=["generic", "oue", "krr10"],
)
def test_single_round_queries_import_nothing_beyond_numpy_and_scipy_special(
    extra: list[str],
) -> None:
    # Issue 32: what a query adds to the reference must be crowdhide's own or the standard
    # library's (crowdhide's imports cost ~40-60 ms CPU; the rest of the excess is the
    # bounds' computation).
    loaded = _modules_after([*_QUERY, *extra, "--json"])
    reference = set(json.loads(_python(_REFERENCE)))
    assert _third_party(loaded - reference) == set()


#: What a composed (--rounds) query or a walk audit must not import (s35-pmf, issue 32):
#: dp_accounting (1.2 s of a 2.3-2.7 s process) and the SciPy modules its package imports.
PLD_HEAVY = {"dp_accounting", "scipy.signal", "scipy.stats", "scipy.optimize"}


def test_composition_query_imports_neither_dp_accounting_nor_scipy_signal() -> None:
    # crowdhide holds and composes its PLDs itself (accounting.pld_pmf); its FFTs need
    # scipy.fft (~45 ms), nothing else beyond the reference.
    loaded = _modules_after([*_QUERY, "--rounds", "10", "--json"])
    assert not loaded & PLD_HEAVY
    floor = _REFERENCE.replace("scipy.special;", "scipy.special, scipy.fft;")
    assert _third_party(loaded - set(json.loads(_python(floor)))) == set()


def test_library_composed_query_imports_no_dp_accounting() -> None:
    code = (
        "import json, sys, crowdhide; "
        "s = crowdhide.shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, rounds=10); "
        "print(json.dumps([s.epsilon, sorted(sys.modules)]))"
    )
    epsilon, modules = json.loads(_python(code))
    assert 0.5 < epsilon < 0.52  # the composed answer (0.51508), not the basic composition
    assert not set(modules) & PLD_HEAVY


def test_walk_audit_imports_no_dp_accounting() -> None:
    # netdp audit composes per-cycle PLDs (netdp.walk_pld) with crowdhide's own PMFs too
    argv = ["netdp", "audit", "--topology", "complete", "--n", "20", "--steps", "100"]
    loaded = _modules_after([*argv, "--eps0", "0.5", "--delta", "1e-6", "--json"])
    assert not loaded & PLD_HEAVY


def test_help_markup_is_escaped_as_rich_would() -> None:
    """crowdhide escapes its help text without importing rich; rich's own escape is the
    reference, on every help string of the app and on the edge cases of its tag syntax."""
    from rich.markup import escape

    from crowdhide.cli import _escape_markup

    texts = ["[privacy]", "\\[b]", "a\\\\[x] y", "[#fff] [/] [@click]", "[A] [1]", "x\\", ""]
    texts += ["x\\\\", "[a[b]]", "[[b]]", "]["]
    root = typer.main.get_command(build_app())
    stack = [root]
    while stack:
        command = stack.pop()
        texts += [getattr(command, a) or "" for a in ("help", "epilog", "short_help")]
        texts += [getattr(p, "help", None) or "" for p in command.params]
        stack += list(getattr(command, "commands", {}).values())
    assert len(texts) > 100
    for text in texts:
        assert _escape_markup(text) == escape(text), text


SCRAMBLER = [
    "scrambler", "epsilon", "--targets", "20", "--sigma", "0.5", "--n", "100",
    "--dummies", "50", "--delta", "1e-4", "--json",
]  # fmt: skip


@pytest.mark.parametrize("method", ["best", "hoeffding"])
def test_scrambler_query_does_not_import_scipy_stats(method: str) -> None:
    # scipy.stats costs ~0.5 s; the binomial tails come from accounting.binomial_tails.
    loaded = _modules_after([*SCRAMBLER, "--method", method])
    assert "crowdhide.accounting.scrambler.bounds" in loaded  # it did the work
    assert not loaded & {"scipy.stats", "rich", *HEAVY}


def _command_paths(group: typer.core.TyperGroup, prefix: list[str]) -> list[list[str]]:
    paths = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, typer.core.TyperGroup):
            paths += _command_paths(command, [*prefix, name])
        else:
            paths.append([*prefix, name])
    return paths


def test_app_of_one_area_gives_the_same_help_as_the_full_app() -> None:
    full = build_app()
    root = typer.main.get_command(full)
    assert isinstance(root, typer.core.TyperGroup)
    runner = CliRunner()
    for area in root.commands:
        slim = _app_for([area])
        slim_root = typer.main.get_command(slim)
        assert isinstance(slim_root, typer.core.TyperGroup)
        if area == "local":  # registered by the scrambler module: gets the full app
            assert set(slim_root.commands) == set(root.commands)
            continue
        # The area's module only (the scrambler module also registers ``local``).
        assert area in slim_root.commands
        assert len(slim_root.commands) <= 2
        command = root.commands[area]
        paths = (
            _command_paths(command, [area])
            if isinstance(command, typer.core.TyperGroup)
            else [[area]]
        )
        for path in paths:
            want = runner.invoke(full, [*path, "--help"], prog_name="crowdhide")
            got = runner.invoke(slim, [*path, "--help"], prog_name="crowdhide")
            assert (got.exit_code, got.output) == (want.exit_code, want.output), path


@pytest.mark.parametrize("first", ["--help", "shufle", "local", ""])
def test_commands_not_named_after_an_area_get_every_area(first: str) -> None:
    root = typer.main.get_command(_app_for([first] if first else []))
    assert isinstance(root, typer.core.TyperGroup)
    assert set(root.commands) == set(typer.main.get_command(build_app()).commands)  # type: ignore[attr-defined]


def test_app_for_a_command_converts_that_command_only_with_the_same_help() -> None:
    # `crowdhide shuffle epsilon ...` converts epsilon's options only (issue 32: ~5 ms per
    # command); every command's help is the full application's, and the shared group objects
    # keep all their commands.
    full = build_app()
    root = typer.main.get_command(full)
    assert isinstance(root, typer.core.TyperGroup)
    runner = CliRunner()
    paths = [p for area, c in root.commands.items() if isinstance(c, typer.core.TyperGroup)
             for p in _command_paths(c, [area]) if len(p) >= 2]  # fmt: skip
    assert ["shuffle", "epsilon"] in paths
    for path in paths:
        want = runner.invoke(full, [*path, "--help"], prog_name="crowdhide")
        got = runner.invoke(_app_for([*path, "--help"]), [*path, "--help"], prog_name="crowdhide")
        assert (got.exit_code, got.output) == (want.exit_code, want.output), path
    slim = typer.main.get_command(_app_for(KRR))
    shuffle = slim.commands["shuffle"]  # type: ignore[attr-defined]
    assert list(shuffle.commands) == ["epsilon"]
    again = typer.main.get_command(_app_for(["shuffle", "--help"]))
    assert set(again.commands["shuffle"].commands) == {"epsilon", "delta", "calibrate", "plot"}  # type: ignore[attr-defined]


def test_app_for_an_unknown_command_keeps_the_group() -> None:
    runner = CliRunner()
    args = ["shuffle", "epsilonx"]
    got = runner.invoke(_app_for(args), args, prog_name="crowdhide")
    assert got.exit_code == 2
    assert "No such command 'epsilonx'" in got.output


@pytest.mark.parametrize(
    "argv",
    [
        [*SCRAMBLER, "--method", "hoeffding"],
        ["scrambler", "delta", *SCRAMBLER[2:-3], "--epsilon", "1", "--method", "all", "--json"],
        [*SCRAMBLER, "--method", "montecarlo", "--samples", "100", "--seed", "3"],
    ],
    ids=["epsilon", "delta-all", "montecarlo"],
)
def test_scrambler_query_is_answered_without_typer(argv: list[str]) -> None:
    # Issue 32: typer, its click and the option conversion cost ~30-45 ms CPU, most of
    # what the scrambler query added above the target (cli._fast answers it).
    loaded = _modules_after(argv)
    assert "crowdhide.accounting.scrambler.bounds" in loaded  # it did the work
    assert "typer" not in loaded
    assert not {m for m in loaded if m.startswith("crowdhide.cli.")} - {
        "crowdhide.cli._emit",
        "crowdhide.cli._engine_progress",
        "crowdhide.cli._fast",
        "crowdhide.cli._scrambler_answer",
        "crowdhide.cli._values",
    }
