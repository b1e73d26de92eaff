"""Privacy accounting: privacy statements, bound registries, root finding, exact curves,
composition and amplification bounds.

The names below load their module on first use (PEP 562): importing one accountant, e.g.
``crowdhide.accounting.shuffle.generic`` for a k-RR query, runs this file first, and it must
not pull in the others (composition alone cost ~10 ms of a command's start-up; issue 32).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdhide._lazy import lazy_names

_LAZY: dict[str, str] = {
    "PldCurve": "crowdhide.accounting.composition",
    "advanced_composition": "crowdhide.accounting.composition",
    "basic_composition": "crowdhide.accounting.composition",
    "compose_curves": "crowdhide.accounting.composition",
    "heterogeneous_advanced_composition": "crowdhide.accounting.composition",
    "to_pld": "crowdhide.accounting.composition",
    "DiscretePairCurve": "crowdhide.accounting.curves",
    "PrivacyCurve": "crowdhide.accounting.curves",
    "Bound": "crowdhide.accounting.registry",
    "Registry": "crowdhide.accounting.registry",
    "best_of": "crowdhide.accounting.registry",
    "calibrate": "crowdhide.accounting.roots",
    "safe_root": "crowdhide.accounting.roots",
    "KINDS": "crowdhide.accounting.statement",
    "Kind": "crowdhide.accounting.statement",
    "PrivacyStatement": "crowdhide.accounting.statement",
    "Target": "crowdhide.accounting.statement",
}

__all__ = [
    "KINDS",
    "Bound",
    "DiscretePairCurve",
    "Kind",
    "PldCurve",
    "PrivacyCurve",
    "PrivacyStatement",
    "Registry",
    "Target",
    "advanced_composition",
    "basic_composition",
    "best_of",
    "calibrate",
    "compose_curves",
    "heterogeneous_advanced_composition",
    "safe_root",
    "to_pld",
]

if TYPE_CHECKING:  # what mypy and IDEs see; at run time __getattr__ loads them
    from crowdhide.accounting.composition import (
        PldCurve,
        advanced_composition,
        basic_composition,
        compose_curves,
        heterogeneous_advanced_composition,
        to_pld,
    )
    from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
    from crowdhide.accounting.registry import Bound, Registry, best_of
    from crowdhide.accounting.roots import calibrate, safe_root
    from crowdhide.accounting.statement import KINDS, Kind, PrivacyStatement, Target


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
