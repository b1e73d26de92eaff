"""The plain install is the accountants: no DuckDB, cryptography or cloudpickle unless asked.

``pip install crowdhide`` must answer every accounting question; the engine (DuckDB) and the
network (cryptography) are the ``engine`` and ``net`` extras, and a command that needs a
missing one is exit 2 with the install line, before it makes anything. Absence is simulated
by the blocker of ``tests/cli/test_missing_extras.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli.test_missing_extras import (
    _BLOCKER,
    SMALL_PLAN,
    SRC,
    _assert_missing,
    _crowdhide,
    _plan,
)

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: Every optional top-level module: none is needed for accounting.
OPTIONAL = "duckdb,cryptography,cloudpickle,matplotlib,ray,pandas,sklearn,pyarrow,opendp"


def _python(tmp: Path, block: str, code: str) -> subprocess.CompletedProcess[str]:
    site = tmp / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), SRC])}
    env["CROWDHIDE_TEST_BLOCK"] = block
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_the_core_dependencies_are_the_accountants_and_the_cli() -> None:
    names = {dep.split(">=")[0].lower() for dep in PROJECT["dependencies"]}
    assert names == {"numpy", "scipy", "dp-accounting", "typer", "rich"}
    extras = PROJECT["optional-dependencies"]
    assert extras["engine"] == ["duckdb>=2.0.0"]
    assert extras["net"] == ["cryptography>=42.0.0"]
    # The README's test line installs dev: it must bring every extra the tests need.
    assert any("engine" in dep and "net" in dep for dep in extras["dev"])


def test_accounting_cli_without_any_extra(tmp_path: Path) -> None:
    args = ("shuffle", "epsilon", "--eps0", "2", "--n", "10000", "--delta", "1e-6", "--k", "4")
    done = _crowdhide(tmp_path, OPTIONAL, *args, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["epsilon"] < 0.1022


@pytest.mark.slow
def test_accounting_api_without_any_extra_imports_none(tmp_path: Path) -> None:
    code = """
import sys
import crowdhide
from crowdhide.interop import dp_accounting_pld, flower_shuffled_epsilon
s = crowdhide.shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-6, k=4)
c = crowdhide.compose([s] * 3, delta=1e-5)
f = flower_shuffled_epsilon(clients=500, eps0=1.0, rounds=2, delta=1e-6)
pld = dp_accounting_pld(eps0=2.0, n=10_000, k=4)
from crowdhide.cli import main
main(["scrambler", "epsilon", "--targets", "20", "--sigma", "0.2", "--n", "100",
      "--dummies", "50", "--delta", "1e-4", "--json"])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"duckdb", "cryptography", "cloudpickle"})
print("HEAVY", heavy)
"""
    done = _python(tmp_path, OPTIONAL, code)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


def test_startup_imports_no_engine_or_network(tmp_path: Path) -> None:
    code = """
import sys
from crowdhide.cli import build_app
build_app()
print(sorted({m.split(".")[0] for m in sys.modules} & {"duckdb", "cryptography", "cloudpickle"}))
"""
    done = _python(tmp_path, "", code)  # nothing blocked: they are installed, and not loaded
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_plan_and_run_without_duckdb_name_the_engine_extra(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SMALL_PLAN.format(plots="false"))
    _assert_missing(_crowdhide(tmp_path, "duckdb", "plan", plan), "engine", "duckdb")
    _assert_missing(_crowdhide(tmp_path, "duckdb", "run", plan, "--out", "out"), "engine", "duckdb")
    assert not (tmp_path / "out").exists()
    # With DuckDB the same plan certifies: the test can tell the difference.
    assert _crowdhide(tmp_path, "", "plan", plan, "--json").returncode == 0


def test_net_without_cryptography_names_the_net_extra(tmp_path: Path) -> None:
    done = _crowdhide(tmp_path, "cryptography", "net", "pki", "--hosts", "2", "--out", "pki")
    _assert_missing(done, "net", "cryptography")
    assert not (tmp_path / "pki").exists()


#: Modules the k-RR query (``shuffle epsilon --k 4``) must not load (issue 32: start-up):
#: composition, decimal and fractions cost ~13 ms and it needs none of them; rich and
#: dp_accounting are loaded only by the commands that print tables or compose PLDs.
KRR_QUERY_NEEDS_NONE_OF = (
    "crowdhide.accounting.composition",
    "decimal",
    "fractions",
    "rich",
    "dp_accounting",
    "scipy.optimize",
    "scipy.stats",
    "scipy.integrate",
)


def test_krr_query_imports_only_what_it_uses() -> None:
    code = """
import sys
from crowdhide.cli import main
main(["shuffle", "epsilon", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--k", "4",
      "--json"])
wanted = sys.argv[1].split(",")
print("LOADED", sorted(m for m in wanted if m in sys.modules))
"""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code, ",".join(KRR_QUERY_NEEDS_NONE_OF)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.split("LOADED")[0])["epsilon"] > 0.0
    assert done.stdout.strip().endswith("LOADED []"), done.stdout


def test_accounting_package_names_load_on_first_use() -> None:
    code = """
import sys
import crowdhide.accounting as acc
before = "crowdhide.accounting.composition" in sys.modules
from crowdhide.accounting import compose_curves, PrivacyStatement
after = "crowdhide.accounting.composition" in sys.modules
print(before, after, compose_curves.__module__, PrivacyStatement.__module__, "to_pld" in dir(acc))
"""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "False",
        "True",
        "crowdhide.accounting.composition",
        "crowdhide.accounting.statement",
        "True",
    ]
