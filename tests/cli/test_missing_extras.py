"""A missing optional extra is exit 2 with the install line, never exit 1 "a bug".

Absence is simulated, not uninstalled: each command runs in a fresh interpreter whose
``sitecustomize`` (in a temporary folder on ``PYTHONPATH``) puts a meta-path finder first
that refuses the blocked top-level modules the way Python does when they are not installed
(``ModuleNotFoundError`` with ``name`` set).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crowdhide._extras import require
from crowdhide.errors import MissingExtraError

SRC = str(Path(__file__).resolve().parents[2] / "src")

_BLOCKER = """
import os, sys
from importlib.abc import MetaPathFinder

BLOCKED = {m for m in os.environ.get("CROWDHIDE_TEST_BLOCK", "").split(",") if m}


class _Blocker(MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, _Blocker())
"""

SMALL_PLAN = """
name = "small"
[data]
generator = "diabetes"
rows = 2000
seed = 1
[query]
kind = "aggregate"
sql = "SELECT age_range, AVG(insulin), COUNT(*) FROM D GROUP BY age_range"
compute_nodes = 4
[privacy]
epsilon = 8.0
delta = 1e-4
[run]
plots = {plots}
"""

DIGITS_PLAN = """
name = "digits"
[data]
generator = "digits"
rows = 300
[query]
kind = "kmeans"
k = 3
iterations = 1
[countermeasures]
sigma = 0.5
n = 50
d = 5
[privacy]
delta = 1e-4
[run]
plots = false
"""


def _crowdhide(tmp: Path, block: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m crowdhide *args`` with the modules in ``block`` (comma-separated) absent."""
    site = tmp / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), SRC]),
        "CROWDHIDE_TEST_BLOCK": block,
    }
    return subprocess.run(
        [sys.executable, "-m", "crowdhide", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=300,
    )


def _assert_missing(done: subprocess.CompletedProcess[str], extra: str, package: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert package in lines[0]
    assert f"pip install 'crowdhide[{extra}]'" in lines[0]


def _plan(tmp: Path, text: str) -> str:
    path = tmp / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The simulation itself: the blocked module cannot be imported, the others can."""
    code = "import importlib.util as u; print(u.find_spec('numpy') is not None); import matplotlib"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site), "CROWDHIDE_TEST_BLOCK": "matplotlib"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "True"
    assert "ModuleNotFoundError: No module named 'matplotlib'" in done.stderr


def test_shuffle_plot_without_matplotlib(tmp_path: Path) -> None:
    args = ("shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--out", "eps.png")
    args += ("--n-max", "1000", "--points", "2")
    _assert_missing(_crowdhide(tmp_path, "matplotlib", *args), "plot", "matplotlib")
    assert not (tmp_path / "eps.png").exists()
    # The same command with matplotlib present works: the test can tell the difference.
    done = _crowdhide(tmp_path, "", *args, "--json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "eps.png").stat().st_size > 0


def test_reproduce_without_matplotlib(tmp_path: Path) -> None:
    done = _crowdhide(tmp_path, "matplotlib", "reproduce", "cheu-error", "--quick", "--out", "r")
    _assert_missing(done, "plot", "matplotlib")
    # Listing the reproductions needs no plotting.
    assert _crowdhide(tmp_path, "matplotlib", "reproduce", "list", "--json").returncode == 0


def test_ray_backend_without_ray(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SMALL_PLAN.format(plots="false"))
    done = _crowdhide(tmp_path, "ray", "run", plan, "--backend", "ray", "--out", "out")
    _assert_missing(done, "ray", "ray")


def test_digits_without_scikit_learn(tmp_path: Path) -> None:
    done = _crowdhide(tmp_path, "sklearn", "plan", _plan(tmp_path, DIGITS_PLAN), "--json")
    _assert_missing(done, "data", "scikit-learn")


def test_run_without_matplotlib_skips_the_pictures_and_says_why(tmp_path: Path) -> None:
    """Plots are optional in `run`: it succeeds, and the report names the missing extra."""
    plan = _plan(tmp_path, SMALL_PLAN.format(plots="true"))
    done = _crowdhide(tmp_path, "matplotlib", "run", plan, "--out", "out", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert any("pip install 'crowdhide[plot]'" in n for n in report["notes"])
    assert "plots" not in report["files"]
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "No pictures: the pictures of report.html needs matplotlib" in page


def test_a_broken_installation_is_not_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ImportError raised inside an installed module (about another module) propagates."""

    def broken(name: str) -> None:
        raise ImportError("libsomething.so: cannot open shared object file", name="_c_ext")

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ImportError) as info:
        require("matplotlib", purpose="a test")
    assert not isinstance(info.value, MissingExtraError)


def test_missing_extra_names_extra_and_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(importlib, "import_module", absent)
    with pytest.raises(MissingExtraError) as info:
        require("sklearn.datasets", purpose="source='digits'")
    err = info.value
    assert (err.extra, err.module) == ("data", "sklearn")
    assert str(err) == (
        "source='digits' needs scikit-learn, which is not installed: pip install 'crowdhide[data]'"
    )
