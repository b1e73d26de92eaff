"""Install size of the built wheel: the core and each extra, in fresh virtual environments.

Usage::

    python benchmarks/bench_install_size.py [--quick] [--extras engine,net,plot,...]

Builds the wheel of this checkout (``pip wheel --no-deps``), creates a fresh venv the
ordinary way (``python -m venv``, which puts pip in it), installs the wheel with the venv's
own pip, measures ``du -sm`` of its site-packages, checks that ``crowdhide shuffle epsilon``
works, and lists the largest directories. Then, for every extra, a fresh venv with
``wheel[extra]`` gives what the extra adds. ``--quick`` measures the core only.

Two figures per install: all of site-packages, which includes the venv's own pip and
setuptools (27 MB with Python 3.11's venv, 17 MB of pip alone from 3.12), and what the
install added to a fresh venv. The floor row installs only dp-accounting (with numpy and
scipy), which the accountants need. Bytecode that pip compiles at install time is counted (a
real install has it). Target (issue 30): the core
``pip install <wheel>`` is <= 270 MB and gives a working ``crowdhide shuffle epsilon``.

Check the core figure independently with::

    python -m venv /tmp/v && /tmp/v/bin/pip install dist/crowdhide-*.whl && \\
        du -sm /tmp/v/lib/python3*/site-packages
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("engine", "net", "plot", "pandas", "data", "opendp")
TARGET_MB = 270


def _run(cmd: list[str], **kw: object) -> str:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    return str(out.stdout)


def build_wheel(dest: Path) -> Path:
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dest), str(ROOT)])
    [wheel] = dest.glob("crowdhide-*.whl")
    return wheel


def fresh_install(venv: Path, requirement: str | None) -> Path:
    """A new venv holding ``requirement`` and its dependencies; returns its site-packages."""
    _run([sys.executable, "-m", "venv", str(venv)])
    if requirement is not None:
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement])
    [site] = (venv / "lib").glob("python3*/site-packages")
    return site


def size_mb(path: Path) -> int:
    return int(_run(["du", "-sm", str(path)]).split()[0])


def largest(site: Path, top: int) -> list[tuple[int, str]]:
    sizes = [(size_mb(p), p.name) for p in site.iterdir() if p.is_dir()]
    return sorted(sizes, reverse=True)[:top]


def shuffle_works(venv: Path) -> str:
    query = ["--eps0", "1", "--n", "1000", "--delta", "1e-6", "--k", "4", "--json"]
    out = _run([str(venv / "bin" / "crowdhide"), "shuffle", "epsilon", *query])
    return out.strip().replace("\n", " ")[:70]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the core only")
    parser.add_argument("--extras", default=",".join(EXTRAS))
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheel = build_wheel(tmp / "dist")
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e3:.0f} kB")
        empty = size_mb(fresh_install(tmp / "empty", None))
        print(f"a fresh venv (its pip and setuptools): {empty} MB")
        core_site = fresh_install(tmp / "core", str(wheel))
        core = size_mb(core_site)
        print(f"\n{'install':<36} {'site-packages MB':>17} {'added MB':>9}")
        print(f"{'core: pip install <wheel>':<36} {core:>17} {core - empty:>9}")
        if not args.quick:
            floor = size_mb(fresh_install(tmp / "floor", "dp-accounting"))
            print(f"{'floor: dp-accounting, numpy, scipy':<36} {floor:>17} {floor - empty:>9}")
        for label, mb in (("site-packages", core), ("added by the install", core - empty)):
            verdict = "met" if mb <= TARGET_MB else "NOT met"
            print(f"target <= {TARGET_MB} MB, counting {label}: {verdict}")
        print(f"crowdhide shuffle epsilon: {shuffle_works(tmp / 'core')}")
        print("\nlargest directories of the core install (MB):")
        for mb, name in largest(core_site, args.top):
            print(f"  {mb:>6}  {name}")
        if args.quick:
            return
        print(f"\n{'extra':<10} {'total MB':>9} {'adds MB':>8}")
        for extra in [e for e in args.extras.split(",") if e]:
            site = fresh_install(tmp / f"x-{extra}", f"{wheel}[{extra}]")
            total = size_mb(site)
            print(f"{extra:<10} {total:>9} {total - core:>8}")
            _run(["rm", "-rf", str(tmp / f"x-{extra}")])


if __name__ == "__main__":
    main()
