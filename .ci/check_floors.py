"""Check that .ci/min-versions.txt pins every dependency of pyproject.toml to its declared floor.

Run by .ci/run before the minimum-versions leg, so that a floor raised or lowered in one file
but not the other fails CI instead of testing versions nobody declared.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _floors(requirements: list[str]) -> dict[str, str]:
    found = {}
    for req in requirements:
        # a floor, optionally with an upper cap (",<X": a release known to break or bloat)
        match = re.fullmatch(
            r"([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9.]*)(?:\s*,\s*<\s*[0-9][0-9.]*)?", req.strip()
        )
        if match is None:
            sys.exit(f"check_floors: dependency without a plain '>=' floor: {req!r}")
        found[match.group(1).lower()] = match.group(2)
    return found


def _extra_floors(extras: dict[str, list[str]]) -> dict[str, str]:
    """The '>=' floor of every plain requirement of the extras (self-references such as
    'crowdhide[net]' and requirements with extras of their own are left out)."""
    plain = re.compile(r"([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9.]*)(?:\s*,\s*<\s*[0-9][0-9.]*)?")
    found = {}
    for requirements in extras.values():
        for req in requirements:
            match = plain.fullmatch(req.strip())
            if match is not None:
                found[match.group(1).lower()] = match.group(2)
    return found


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = _floors(project["dependencies"])
    pinned = {}
    for line in (ROOT / ".ci" / "min-versions.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pinned[name.strip().lower()] = version.strip()
    problems = [
        f"{name}: pyproject says >={floor}, min-versions.txt pins {pinned.get(name)}"
        for name, floor in declared.items()
        if pinned.get(name) != floor
    ]
    # A pinned extra (cloudpickle, pytest-xdist, pyarrow) must be pinned at its declared floor
    # too; extras need not all be pinned (the leg installs only dev and plot).
    extras = _extra_floors(project.get("optional-dependencies", {}))
    problems += [
        f"{name}: pyproject's extras say >={extras.get(name)}, min-versions.txt pins {version}"
        for name, version in pinned.items()
        if name not in declared and extras.get(name) != version
    ]
    for problem in problems:
        print(f"check_floors: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
