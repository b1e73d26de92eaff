"""What a user of the released package relies on: one version, complete metadata, README
links that work on PyPI, ``--version``, shell completion, the example plans in the wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

import crowdhide
from crowdhide.plans.examples import example_names, example_path
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
REPOSITORY = PROJECT["urls"]["Repository"]


def test_version_has_one_source() -> None:
    assert "version" not in PROJECT
    assert "version" in PROJECT["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "crowdhide.__version__"
    }
    assert str(Version(crowdhide.__version__)) == crowdhide.__version__


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "--version")
    assert res.code == 0
    assert res.out == f"crowdhide {crowdhide.__version__}\n"


def test_metadata_is_complete_and_classifiers_exist() -> None:
    from trove_classifiers import classifiers

    assert PROJECT["classifiers"]
    assert [c for c in PROJECT["classifiers"] if c not in classifiers] == []
    assert {"Homepage", "Repository", "Documentation", "Changelog", "Issues"} <= set(
        PROJECT["urls"]
    )
    assert PROJECT["keywords"]
    # The release tools are in the dev extra (the wheel test below uses them).
    dev = " ".join(PROJECT["optional-dependencies"]["dev"])
    assert "build" in dev
    assert "twine" in dev


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_links_work_outside_the_repository() -> None:
    """PyPI renders README.md: relative links break there; repository links must resolve."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links
    assert [u for u in links if not u.startswith(("https://", "http://"))] == []
    prefix = f"{REPOSITORY}/blob/main/"
    ours = [u for u in links if u.startswith(prefix)]
    assert len(ours) >= 15
    for url in ours:
        path, _, anchor = url.removeprefix(prefix).partition("#")
        target = ROOT / path
        assert target.is_file(), url
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, url


def test_shell_completion_completes_areas_verbs_and_options() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "_CROWDHIDE_COMPLETE": "complete_bash"}

    def complete(words: str) -> list[str]:
        cword = str(len(words.split()) - 1)
        done = subprocess.run(
            [sys.executable, "-m", "crowdhide"],
            env={**env, "COMP_WORDS": words, "COMP_CWORD": cword},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("crowdhide shu") == ["shuffle"]
    assert "epsilon" in complete("crowdhide shuffle ep")
    assert "--eps0" in complete("crowdhide shuffle epsilon --ep")
    shown = subprocess.run(
        [sys.executable, "-m", "crowdhide", "--show-completion"],
        env={**env, "_CROWDHIDE_COMPLETE": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "_CROWDHIDE_COMPLETE" in shown.stdout


def test_examples_listed_shown_and_unknown_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert set(example_names()) >= {"diabetes", "kmeans"}
    res = run_cli(capsys, "examples", "list", "--json")
    assert res.code == 0
    assert [r["name"] for r in res.json()] == list(example_names())
    assert res.json()[0]["run"] == f"crowdhide run example:{example_names()[0]}"
    res = run_cli(capsys, "examples", "show", "diabetes")
    assert res.out == example_path("diabetes").read_text(encoding="utf-8")
    for args in (("examples", "show", "nope"), ("plan", "example:nope")):
        res = run_cli(capsys, *args)
        assert res.code == 2
        assert "no example plan named 'nope'" in res.err
        assert "diabetes, kmeans" in res.err


def test_plan_by_example_name_equals_plan_by_file(capsys: pytest.CaptureFixture[str]) -> None:
    by_name = run_cli(capsys, "plan", "example:kmeans", "--json")
    by_file = run_cli(capsys, "plan", str(example_path("kmeans")), "--json")
    assert by_name.code == by_file.code == 0
    strip = ("inputs",)
    assert {k: v for k, v in by_name.json().items() if k not in strip} == {
        k: v for k, v in by_file.json().items() if k not in strip
    }


@pytest.mark.slow
def test_built_wheel_and_sdist_ship_the_example_plans(tmp_path: Path) -> None:
    """``python -m build`` on a copy of the project (the checkout stays clean)."""
    work = tmp_path / "project"
    work.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, work / name)
    shutil.copytree(
        ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(work)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    version = crowdhide.__version__
    assert wheel.name == f"crowdhide-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        metadata = whl.read(f"crowdhide-{version}.dist-info/METADATA").decode("utf-8")
    for example in example_names():
        assert f"crowdhide/examples/{example}.toml" in names
    assert "crowdhide/py.typed" in names
    assert f"Version: {version}" in metadata
    assert f"Project-URL: Repository, {REPOSITORY}" in metadata
    assert metadata.count("Classifier: ") == len(PROJECT["classifiers"])
    with tarfile.open(sdist) as tar:
        members = set(tar.getnames())
    for example in example_names():
        assert f"crowdhide-{version}/src/crowdhide/examples/{example}.toml" in members
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_changelog_top_release_is_this_version() -> None:
    """The newest dated entry of CHANGELOG.md names the package's version: a release's notes
    are written before it is tagged, never after."""
    text = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})$", text, flags=re.MULTILINE)
    assert releases, "no dated release entry in CHANGELOG.md"
    assert releases[0][0] == crowdhide.__version__
