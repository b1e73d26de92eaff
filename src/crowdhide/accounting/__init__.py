"""Privacy accounting: privacy statements, bound registries, root finding, exact curves,
composition and amplification bounds."""

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
