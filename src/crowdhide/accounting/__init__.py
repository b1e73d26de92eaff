"""Privacy accounting: guarantees, exact privacy curves, composition, amplification bounds."""

from crowdhide.accounting.composition import (
    PldCurve,
    advanced_composition,
    basic_composition,
    compose_curves,
    heterogeneous_advanced_composition,
    to_pld,
)
from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
from crowdhide.accounting.guarantee import DpGuarantee

__all__ = [
    "DiscretePairCurve",
    "DpGuarantee",
    "PldCurve",
    "PrivacyCurve",
    "advanced_composition",
    "basic_composition",
    "compose_curves",
    "heterogeneous_advanced_composition",
    "to_pld",
]
