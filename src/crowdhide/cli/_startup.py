"""Start-up time of the command line: numpy submodules that nothing on it uses load lazily.

``import scipy.special`` (needed by the accountants: incomplete beta, ``logsumexp``) makes a
copy of the numpy namespace for its array-API layer, and reading every public attribute of
numpy imports each of numpy's lazily attached submodules — ``numpy.f2py`` (the Fortran
wrapper generator), ``numpy.testing`` (which pulls in ``unittest``), ``numpy.ma``, ... — about
half of the time ``import scipy.special`` takes. The command line registers those submodules
with :class:`importlib.util.LazyLoader` before anything imports scipy: the copy then holds a
module object whose code runs on the first attribute access, so a command that really uses
one (``np.ma.MaskedArray`` in a data path, ``np.polynomial`` in the Gaussian profile) gets
the same module, fully executed, at that point. Only the entry point does this (a process
wide choice); importing crowdhide as a library changes nothing. (Python 3.11's lazy loader
is not thread-safe on first use; the command line uses these modules on its main thread,
and worker processes load them on their own.) It happens when scipy is
first imported (:func:`defer_before_scipy`), so a command that needs neither numpy nor scipy
does not import numpy for it.
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["LAZY_MODULES", "defer_before_scipy", "defer_rarely_used_modules"]

#: Submodules of numpy that numpy itself attaches lazily (``numpy.__getattr__``) and that
#: scipy's namespace copy would otherwise import (``numpy.random``: the accounting commands
#: draw no random numbers; the others load it on first use).
LAZY_MODULES = (
    "numpy.f2py",
    "numpy.random",
    "numpy.testing",
    "numpy.ma",
    "numpy.polynomial",
    "numpy.ctypeslib",
    "numpy.char",
    "numpy.rec",
)


def defer_rarely_used_modules(names: tuple[str, ...] = LAZY_MODULES) -> list[str]:
    """Register each module of ``names`` that is not imported yet as a lazy module.

    The module is found (its spec) now and executed on first attribute access; it is bound
    on its parent package like a normal import. A module already imported, or one that
    cannot be found, is left alone. Returns the names made lazy.

    Examples
    --------
    >>> import json
    >>> defer_rarely_used_modules(("json",))  # imported already: left alone
    []
    """
    deferred = []
    for name in names:
        if name in sys.modules:
            continue
        parent_name, _, child = name.rpartition(".")
        if parent_name:
            parent = importlib.import_module(parent_name)
            if child in vars(parent):  # already attached (imported under another name)
                continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        if parent_name:
            setattr(sys.modules[parent_name], child, module)
        deferred.append(name)
    return deferred


class _AlreadyLoaded:
    """Loader handing back a module that is already in ``sys.modules``, unchanged."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set it to the spec of this loader


class _StartupFinder:
    """A meta path finder for the two moments that need care; it finds nothing else.

    * The first import of scipy: defer :data:`LAZY_MODULES` (then let the normal finders
      import scipy).
    * ``import numpy.ma.core`` while ``numpy.ma`` is still lazy: the import system reads
      ``numpy.ma.__path__``, which runs ``numpy/ma/__init__.py``, which imports
      ``numpy.ma.core`` — and the import system, having checked ``sys.modules`` before that,
      would then execute ``numpy.ma.core`` a second time (two ``MaskedArray`` classes). For a
      module below a deferred one that is in ``sys.modules`` by the time the finders are
      asked, this finder answers with that module itself.
    """

    def __init__(self) -> None:
        self.deferred: tuple[str, ...] = ()
        self.waiting = True

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if self.waiting and fullname == "scipy":
            self.waiting = False
            self.deferred = tuple(defer_rarely_used_modules())
        module = sys.modules.get(fullname)
        if module is None or target is not None:  # (a reload passes its module as target)
            return None
        if not any(fullname.startswith(name + ".") for name in self.deferred):
            return None
        # (``importlib.abc`` is not imported for the base class: start-up time.)
        return ModuleSpec(fullname, cast("Loader", _AlreadyLoaded(module)))


def defer_before_scipy() -> None:
    """Defer :data:`LAZY_MODULES` just before scipy is first imported (nothing if it is)."""
    if "scipy" in sys.modules or any(isinstance(f, _StartupFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _StartupFinder())
