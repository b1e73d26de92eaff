"""Names of a package loaded from their modules on first access (PEP 562).

A package keeps start-up light (issue 32: a command-line query pays only for what it uses)
by listing ``name -> module`` and binding the module-level ``__getattr__`` and ``__dir__``
this returns; type checkers see the names through ``if TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name of ``table`` is imported from its
    module on first access and stored in ``namespace`` (the package's ``globals()``), so
    later accesses skip the lookup.

    Examples
    --------
    >>> space: dict[str, Any] = {}
    >>> get, names = lazy_names("demo", {"sqrt": "math"}, space)
    >>> get("sqrt")(9.0), "sqrt" in space, names()
    (3.0, True, ['sqrt'])
    """

    def load(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later accesses skip this function
        return value

    def names() -> list[str]:
        return sorted({*namespace, *table})

    return load, names
