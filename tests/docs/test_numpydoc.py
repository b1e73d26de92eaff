"""numpydoc validation of the public API: every public name documents what it takes and gives.

The public names are crowdhide's top-level ``__all__`` and the ``__all__`` of every public
package (a subpackage or module of ``crowdhide`` whose name does not start with ``_``); a
constant in ``__all__`` is not a callable and has no sections to check. Each function and
class goes through ``numpydoc.validate.validate`` and must be free of the checks in
``ENFORCED``. Types live in the signatures (full type hints, rendered by the site), so the
docstrings name the parameters without repeating their types: PR04 and the like are not
enforced.

``FROZEN`` names are defined in modules another branch is splitting this wave
(``accounting/shuffle.py``, ``accounting/scrambler.py``, ``accounting/shuffle_mechanisms.py``);
their docstrings are fixed after that merge. ``PENDING`` is the remainder still to document:
a ratchet, the exact set of failing checks per name, so a name that gets fixed must leave the
list and a new failure cannot hide in it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator

import pytest

import crowdhide

validate = pytest.importorskip("numpydoc.validate", reason="pip install -e '.[docs]'").validate

#: GL08 no docstring, PR01 a parameter not documented, PR02 a documented parameter that does
#: not exist, RT01 no Returns section, SA01 no See Also section.
ENFORCED = frozenset({"GL08", "PR01", "PR02", "RT01", "SA01"})

#: Defined in modules being split on another branch (s14-wings): fixed after that merge.
FROZEN: dict[str, str] = {}

#: Still to document (the exact failing checks): shrink it, never grow it.
PENDING: dict[str, str] = {}


def public_packages() -> list[str]:
    """``crowdhide`` and its public subpackages and modules that declare ``__all__``."""
    names = ["crowdhide"]
    for info in pkgutil.iter_modules(crowdhide.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"crowdhide.{info.name}")
        if hasattr(module, "__all__"):
            names.append(module.__name__)
    return names


def public_objects() -> Iterator[tuple[str, object]]:
    """Every public function and class once, by the dotted path of its definition."""
    seen: set[str] = set()
    for package in public_packages():
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            path = f"{obj.__module__}.{obj.__qualname__}"
            if path not in seen:
                seen.add(path)
                yield path, obj


def failures(path: str, obj: object = None) -> set[str]:
    """The enforced checks that ``path`` fails.

    A ``typing.Protocol`` is a structural type, never instantiated: its ``(*args, **kwargs)``
    signature has no parameters to document (PR01 does not apply).
    """
    found = {code for code, _ in validate(path)["errors"]} & ENFORCED
    if getattr(obj, "_is_protocol", False):
        found.discard("PR01")
    return found


def test_public_packages_are_covered() -> None:
    packages = public_packages()
    for package in ("crowdhide.api", "crowdhide.interop", "crowdhide.protocols", "crowdhide.qif"):
        assert package in packages
    assert sum(1 for _ in public_objects()) > 150


@pytest.mark.parametrize(("path", "obj"), [pytest.param(p, o, id=p) for p, o in public_objects()])
def test_public_docstring_is_complete(path: str, obj: object) -> None:
    failing = failures(path, obj)
    allowed = set((FROZEN.get(path) or PENDING.get(path) or "").split())
    assert failing <= allowed, f"{path}: {sorted(failing - allowed)} ({sorted(ENFORCED)})"
    if path in PENDING:
        assert failing == allowed, f"{path} now passes {sorted(allowed - failing)}: update PENDING"


def test_allow_lists_name_public_objects() -> None:
    paths = {p for p, _ in public_objects()}
    assert set(FROZEN) <= paths
    assert set(PENDING) <= paths
    assert not set(FROZEN) & set(PENDING)


def _bare(x: int) -> int:
    """Add one."""
    return x + 1


def _complete(x: int) -> int:
    """Add one.

    Parameters
    ----------
    x
        The number.

    Returns
    -------
    int
        ``x + 1``.

    See Also
    --------
    _bare : The same, undocumented.
    """
    return x + 1


def test_the_checks_can_fail() -> None:
    assert failures(f"{__name__}._bare") == {"PR01", "RT01", "SA01"}
    assert failures(f"{__name__}._complete") == set()
