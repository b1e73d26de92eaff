"""A paper's claim and crowdhide's verdict on it, computed from measured numbers.

Every reproduction lists the claims of its paper that it tests (:class:`Claim`: paper, section,
quoted or paraphrased text) and judges each with one of the functions below, which turn the
measured numbers into a :class:`Verdict` under a tolerance stated in the verdict itself. A
verdict is never written by hand: the outcome follows from the numbers, so a rerun with other
numbers can change it.

Outcomes: ``holds`` (within the tolerance), ``holds with different magnitude`` (the direction
or order the paper states is right but the size is outside the tolerance) and ``does not hold``.

Examples
--------
>>> c = Claim("Cheu et al.", "Sec. 4", "error is O(sqrt(log(1/delta))/eps)")
>>> match(c, measured=1.05, paper=1.0, rtol=0.1, what="error ratio").outcome
'holds'
>>> better(c, low=1.0, high=3.0, paper_ratio=2.0, rtol=0.2, what="ε").outcome
'holds with different magnitude'
>>> better(c, low=1.0, high=0.9, what="ε").outcome
'does not hold'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from crowdhide.errors import InvalidParameterError

__all__ = [
    "HOLDS",
    "MAGNITUDE",
    "NOT_HOLD",
    "Claim",
    "Outcome",
    "Verdict",
    "all_of",
    "better",
    "match",
    "match_all",
    "verdict_lines",
]

Outcome = Literal["holds", "holds with different magnitude", "does not hold"]
HOLDS: Outcome = "holds"
MAGNITUDE: Outcome = "holds with different magnitude"
NOT_HOLD: Outcome = "does not hold"


@dataclass(frozen=True)
class Claim:
    """A claim of a paper: who (``paper``), where (``section``: section, figure or table) and
    what (``text``, quoted or paraphrased)."""

    paper: str
    section: str
    text: str


@dataclass(frozen=True)
class Verdict:
    """crowdhide's verdict on ``claim``: the outcome, the measured numbers (``measured``, one
    line), the tolerance used and, when the outcome is not ``holds``, why. ``paper_value`` and
    ``value`` are the two numbers set side by side in the claim table (short forms of the
    paper's and of crowdhide's)."""

    claim: Claim
    outcome: Outcome
    measured: str
    tolerance: str
    reason: str = ""
    paper_value: str = ""
    value: str = ""

    def line(self) -> str:
        """One printable line: outcome, claim, measured numbers, tolerance and reason."""
        why = f"; {self.reason}" if self.reason else ""
        return (
            f"{self.outcome.upper()}: {self.claim.paper}, {self.claim.section}: "
            f"“{self.claim.text}” — measured {self.measured} (tolerance {self.tolerance}){why}"
        )

    def record(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dictionary."""
        return {
            "paper": self.claim.paper,
            "section": self.claim.section,
            "claim": self.claim.text,
            "verdict": self.outcome,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "reason": self.reason,
            "paper_value": self.paper_value,
            "crowdhide_value": self.value,
        }


def _rel(measured: float, paper: float) -> float:
    if paper == measured:
        return 0.0
    if paper == 0.0 or not math.isfinite(measured):
        return math.inf
    return abs(measured - paper) / abs(paper)


def match(
    claim: Claim,
    *,
    measured: float,
    paper: float,
    rtol: float,
    what: str,
    loose: float | None = None,
    reason: str = "",
) -> Verdict:
    """Judge a claimed value: ``holds`` when ``measured`` is within ``rtol`` (relative) of the
    paper's ``paper``; ``holds with different magnitude`` within ``loose`` (relative; default:
    within a factor 10 and of the same sign); else ``does not hold``. ``reason`` is added when
    the outcome is not ``holds``."""
    rel = _rel(measured, paper)
    if rel <= rtol:
        outcome: Outcome = HOLDS
    elif (rel <= loose) if loose is not None else _same_order(measured, paper):
        outcome = MAGNITUDE
    else:
        outcome = NOT_HOLD
    band = f"±{rtol * 100:.3g}%"
    band += f", magnitude ±{loose * 100:.3g}%" if loose is not None else ", magnitude ×10"
    detail = f"{what} {measured:.4g} vs paper {paper:.4g} ({_signed(measured, paper)})"
    why = "" if outcome == HOLDS else reason
    return Verdict(claim, outcome, detail, band, why, f"{paper:.4g}", f"{measured:.4g}")


def _same_order(measured: float, paper: float) -> bool:
    if not (math.isfinite(measured) and math.isfinite(paper)) or measured * paper <= 0:
        return False
    return 0.1 <= measured / paper <= 10.0


def _signed(measured: float, paper: float) -> str:
    rel = _rel(measured, paper)
    if not math.isfinite(rel):
        return "no relative difference"
    ratio = measured / paper
    if ratio > 11.0 or 0.0 < ratio < 0.1:  # orders of magnitude: a factor reads better
        return f"×{ratio:.3g}"
    return f"{'+' if measured >= paper else '-'}{rel:.1%}"


def match_all(
    claim: Claim,
    pairs: Sequence[tuple[str, float, float]],
    *,
    rtol: float,
    what: str,
    reason: str = "",
) -> Verdict:
    """Judge a claimed table or curve, given as ``(label, measured, paper)`` triples: ``holds``
    when every value is within ``rtol``; ``holds with different magnitude`` when each is
    within a factor 10 with the same sign; else ``does not hold``. The measured line names
    the worst point."""
    if not pairs:
        raise InvalidParameterError("pairs must not be empty")
    worst = max(pairs, key=lambda p: _rel(p[1], p[2]))
    rel = _rel(worst[1], worst[2])
    if rel <= rtol:
        outcome: Outcome = HOLDS
    elif all(_same_order(m, p) for _, m, p in pairs):
        outcome = MAGNITUDE
    else:
        outcome = NOT_HOLD
    within = sum(_rel(m, p) <= rtol for _, m, p in pairs)
    detail = (
        f"{what}: {within}/{len(pairs)} points within tolerance; worst {worst[0]}: "
        f"{worst[1]:.4g} vs paper {worst[2]:.4g} ({_signed(worst[1], worst[2])})"
    )
    band = f"±{rtol * 100:.3g}% each"
    return Verdict(
        claim,
        outcome,
        detail,
        band,
        "" if outcome == HOLDS else reason,
        f"{worst[0]}: {worst[2]:.4g}",
        f"{worst[1]:.4g} ({within}/{len(pairs)} points within ±{rtol * 100:.3g}%)",
    )


def better(
    claim: Claim,
    *,
    low: float,
    high: float,
    what: str,
    paper_ratio: float | None = None,
    rtol: float = 0.5,
    margin: float = 0.0,
    reason: str = "",
) -> Verdict:
    """Judge an ordering claim "``low`` is below ``high``" (e.g. a loss, an error).

    ``does not hold`` unless ``high / low > 1 + margin``. When the paper states the size of the
    gap (``paper_ratio``, as ``high / low``), a measured ratio outside ``rtol`` (relative) of
    it gives ``holds with different magnitude``.
    """
    ratio = high / low if low > 0 else math.inf
    if not ratio > 1.0 + margin:
        outcome: Outcome = NOT_HOLD
    elif paper_ratio is not None and _rel(ratio, paper_ratio) > rtol:
        outcome = MAGNITUDE
    else:
        outcome = HOLDS
    detail = f"{what}: {low:.4g} vs {high:.4g} (ratio {ratio:.3g}"
    detail += f", paper {paper_ratio:.3g})" if paper_ratio is not None else ")"
    band = f"ratio > {1 + margin:.3g}" + (
        f", within ±{rtol * 100:.3g}% of the paper's" if paper_ratio is not None else ""
    )
    paper = f"ratio {paper_ratio:.3g}" if paper_ratio is not None else "ratio > 1"
    value = f"ratio {ratio:.3g} ({low:.4g} vs {high:.4g})"
    return Verdict(claim, outcome, detail, band, "" if outcome == HOLDS else reason, paper, value)


def all_of(
    claim: Claim, checks: Sequence[tuple[str, bool]], *, what: str, reason: str = ""
) -> Verdict:
    """Judge a claim that must hold at every point: ``checks`` are ``(label, holds)`` pairs;
    ``holds`` when all do, else ``does not hold`` naming the first failing points."""
    if not checks:
        raise InvalidParameterError("checks must not be empty")
    failing = [label for label, ok in checks if not ok]
    detail = f"{what}: {len(checks) - len(failing)}/{len(checks)} points hold"
    if failing:
        detail += "; fails at " + ", ".join(failing[:3]) + (" ..." if len(failing) > 3 else "")
    outcome: Outcome = NOT_HOLD if failing else HOLDS
    value = f"{len(checks) - len(failing)}/{len(checks)} points"
    return Verdict(
        claim, outcome, detail, "every point", reason if failing else "", "every point", value
    )


def verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The printable lines of ``verdicts``, headed by a count of each outcome."""
    if not verdicts:
        return []
    counts = {o: sum(v.outcome == o for v in verdicts) for o in (HOLDS, MAGNITUDE, NOT_HOLD)}
    head = "claims: " + ", ".join(f"{k} {o}" for o, k in counts.items())
    return [head, *(v.line() for v in verdicts)]
