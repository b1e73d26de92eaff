"""Collection rules for the whole tree: ``tests/`` and the doctests of ``src/crowdhide``.

``--doctest-modules`` imports every module under ``src/crowdhide``; a module that imports an
optional extra at its top cannot be imported without it, so its doctests are skipped when the
extra is absent (the tests that need the extra skip themselves with ``pytest.importorskip``).
This file sits at the root because a conftest under ``tests/`` does not see ``src/``.
"""

from __future__ import annotations

import importlib.util

#: Module file or package folder (relative to this folder) -> the top-level import it needs,
#: and the extra.
NEEDS_EXTRA: dict[str, tuple[str, str]] = {
    "src/crowdhide/backends/ray.py": ("ray", "ray"),
    "src/crowdhide/backends/tls": ("cryptography", "net"),
}

collect_ignore = [
    path
    for path, (module, _extra) in NEEDS_EXTRA.items()
    if importlib.util.find_spec(module) is None
]
