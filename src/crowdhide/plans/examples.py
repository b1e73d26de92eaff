"""The example plans shipped inside the package: ``crowdhide run example:diabetes``.

They live in ``crowdhide/examples/*.toml`` (package data, so an installed wheel has them);
:func:`~crowdhide.plans.spec.load_spec` reads ``example:NAME`` as the packaged
``NAME.toml``. The first comment line of each file is its one-line summary.

Examples
--------
>>> example_names()
('diabetes', 'kmeans')
>>> resolve_plan("example:kmeans").name
'kmeans.toml'
>>> str(resolve_plan("my/plan.toml"))
'my/plan.toml'
"""

from __future__ import annotations

from pathlib import Path

from crowdhide.errors import DataError

__all__ = ["EXAMPLE_PREFIX", "example_names", "example_path", "example_summary", "resolve_plan"]

#: A plan argument starting with this names a shipped example instead of a file.
EXAMPLE_PREFIX = "example:"
_FOLDER = Path(__file__).resolve().parent.parent / "examples"


def example_names() -> tuple[str, ...]:
    """Names of the shipped example plans, sorted."""
    return tuple(sorted(p.stem for p in _FOLDER.glob("*.toml")))


def example_path(name: str) -> Path:
    """The packaged file of example ``name``; a :class:`~crowdhide.errors.DataError` naming
    the known examples if there is none."""
    known = example_names()
    if name not in known:
        raise DataError(
            f"no example plan named {name!r}; the examples are {', '.join(known)} "
            "(crowdhide examples list)"
        )
    return _FOLDER / f"{name}.toml"


def example_summary(name: str) -> str:
    """The first comment line of example ``name`` without its ``# NAME:`` prefix.

    >>> example_summary("diabetes").startswith("AVG(insulin)")
    True
    """
    first = example_path(name).read_text(encoding="utf-8").splitlines()[0]
    text = first.lstrip("#").strip()
    return text.removeprefix(f"{name}:").strip()


def resolve_plan(plan: Path | str) -> Path:
    """``example:NAME`` → the packaged example file; anything else is a path, unchanged."""
    text = str(plan)
    if text.startswith(EXAMPLE_PREFIX):
        return example_path(text.removeprefix(EXAMPLE_PREFIX))
    return Path(plan)
