"""The one place that imports crowdhide's optional dependencies.

:func:`require` imports a module that an extra provides; when it is missing it raises
:class:`~crowdhide.errors.MissingExtraError` naming what needed it and the ``pip install``
line, which the command line reports on one line with exit code 2 (not as a crash).

Examples
--------
>>> require("matplotlib", purpose="a doctest").__name__
'matplotlib'
>>> EXTRAS["matplotlib"]
('plot', 'matplotlib')
"""

from __future__ import annotations

import importlib
from types import ModuleType

from crowdhide.errors import MissingExtraError

__all__ = ["EXTRAS", "install_line", "require"]

#: Top-level module → (extra that provides it, distribution name to show the user).
EXTRAS: dict[str, tuple[str, str]] = {
    "cryptography": ("net", "cryptography"),
    "duckdb": ("engine", "duckdb"),
    "matplotlib": ("plot", "matplotlib"),
    "opendp": ("opendp", "opendp"),
    "pandas": ("pandas", "pandas"),
    "ray": ("ray", "ray"),
    "sklearn": ("data", "scikit-learn"),
}


def install_line(extra: str) -> str:
    """The command that installs ``extra``.

    >>> install_line("plot")
    "pip install 'crowdhide[plot]'"
    """
    return f"pip install 'crowdhide[{extra}]'"


def require(module: str, *, purpose: str) -> ModuleType:
    """Import ``module`` (a key of :data:`EXTRAS`, or a submodule of one) and return it.

    Parameters
    ----------
    module
        Module to import, e.g. ``"matplotlib"`` or ``"sklearn.datasets"``.
    purpose
        What needs it, for the message (``"shuffle plot"``, ``"backend 'ray'"``).

    Raises
    ------
    MissingExtraError
        The module's distribution is not installed. An ``ImportError`` from *inside* an
        installed module (a broken installation) propagates unchanged: it is not a
        missing extra and must not be reported as one.
    """
    top = module.split(".")[0]
    extra, distribution = EXTRAS[top]  # a KeyError here is a bug: list the module above
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise MissingExtraError(
            f"{purpose} needs {distribution}, which is not installed: {install_line(extra)}",
            extra=extra,
            module=top,
        ) from None
