"""The one answer to "how private?": a frozen privacy statement.

Every accountant, calibrator and run in crowdhide answers with a :class:`PrivacyStatement`:
an (ε, δ) pair together with what kind of number it is, which bound or evaluator produced
it, whether that bound's conditions hold, and the inputs it was computed for.

Three questions are kept apart on purpose:

* ``kind`` says what the pair *is*: ``"exact"`` (the true curve at this point, which is also
  a certificate), ``"upper"`` (a certificate: the mechanism is at least this private),
  ``"lower"`` (the truth is at least this bad) or ``"estimate"`` (an empirical or
  approximate figure, no promise either way);
* ``conditions_met`` says whether the producing bound's validity conditions hold, i.e.
  whether the pair means what ``kind`` says;
* ``target`` (optional) records a target the user asked for and whether the statement meets
  it. A statement can be a valid certificate that misses the target; :attr:`meets_target`
  never hides that.

Examples
--------
>>> s = PrivacyStatement(epsilon=0.8, delta=1e-6, kind="upper", source="feldman2023")
>>> s.is_certificate
True
>>> s.with_target(epsilon=1.0, delta=1e-6).meets_target
True
>>> s.with_target(epsilon=0.5, delta=1e-6).meets_target
False
>>> PrivacyStatement(epsilon=0.3, delta=1e-6, kind="lower").is_certificate
False
>>> PrivacyStatement(epsilon=-1.0, delta=0.0)
Traceback (most recent call last):
...
crowdhide.errors.InvalidParameterError: epsilon must be >= 0 (or inf, ...), got -1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, get_args

from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = ["KINDS", "Kind", "PrivacyStatement", "Target", "format_bound", "statement_card"]

#: What a statement's (ε, δ) is: the truth, a certificate, a lower bound or an estimate.
Kind = Literal["exact", "upper", "lower", "estimate"]
KINDS: tuple[str, ...] = get_args(Kind)

# Relative slack when comparing a certified ε with a target ε: calibrators solve for the
# target and return a value rounded to the safe side by ~1e-9 relative, which must still
# count as meeting it. δ is compared exactly.
_TARGET_RTOL = 1e-9


def format_bound(value: float, *, up: bool = True, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, rounded *up* (``up``) or down: a shown
    upper bound is never below the computed one, a shown lower bound never above.

    Examples
    --------
    >>> format_bound(0.10201), format_bound(0.10201, up=False), format_bound(1e-06)
    ('0.1021', '0.102', '1e-06')
    >>> format_bound(math.inf), format_bound(0.0), format_bound(1e-4), format_bound(1 / 3)
    ('inf', '0', '0.0001', '0.3334')
    """
    if not math.isfinite(value) or value == 0.0:
        return f"{value:g}"
    plain = f"{value:.{digits}g}"
    if float(plain) == value:  # the float's own shortest form (1e-4, not 0.0001001)
        return plain
    # decimal (and its C module) is loaded only here: a --json answer never formats a bound
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    exact = Decimal(value)  # every float is a finite decimal: round it without error
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(step, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    text = f"{float(rounded):.{digits}g}"
    # float() of a decimal on the safe side rounds to the nearest float: check it stayed there
    return text if (float(text) >= value if up else float(text) <= value) else repr(value)


def _check_number(name: str, value: Any, *, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)  # numpy scalars
        except (TypeError, ValueError):
            raise ParameterTypeError(f"{name} must be a real number, got {value!r}") from None
    number = float(value)
    if math.isnan(number):
        return number
    if number < 0.0 or number > high:
        limit = "inf" if math.isinf(high) else repr(high)
        raise InvalidParameterError(
            f"{name} must be >= 0 (or {limit}, or nan when conditions_met is False), got {value!r}"
        )
    return number


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A privacy target and whether a statement meets it.

    ``met`` is true only when the statement is a certificate whose ε and δ are both within
    the target (ε with a 1e-9 relative allowance for safe-side rounding).

    Parameters
    ----------
    epsilon, delta
        The target guarantee.
    met
        Whether the statement carrying this target meets it.

    See Also
    --------
    PrivacyStatement : Carries a target in its ``target`` field.
    """

    epsilon: float
    delta: float
    met: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, for JSON output."""
        return {"epsilon": self.epsilon, "delta": self.delta, "met": self.met}


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacyStatement:
    """An (ε, δ) statement about a mechanism, with its kind, source, conditions and inputs.

    The mechanism M is (ε, δ)-DP when, for every neighbouring pair (x, x') and every event S,
    ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ``.

    Parameters
    ----------
    epsilon
        ε >= 0; ``inf`` means no finite ε at this δ; ``nan`` only together with
        ``conditions_met=False`` (the bound does not apply).
    delta
        δ in [0, 1]; ``nan`` as for ε.
    kind
        One of :data:`KINDS` (default ``"upper"``).
    source
        Name of the bound, evaluator or run that produced the statement.
    conditions_met
        Whether the source's validity conditions hold (default True).
    notes
        Human-readable remarks: why a bound does not apply, how a number was obtained.
    inputs
        The parameters the statement was computed for (read-only mapping).
    lower
        Optionally, a rigorous lower bound on the truth at the same δ (for an ε statement)
        or the same ε (for a δ statement): the truth lies between ``lower`` and ``self``.
    target
        Optionally, the user's target and whether this statement meets it.

    See Also
    --------
    crowdhide.shuffle_epsilon : The accountant's answer, a statement.
    crowdhide.compose : The statement of several runs on the same people.

    Examples
    --------
    >>> s = PrivacyStatement(epsilon=1.0, delta=1e-6, source="gaussian", inputs={"sigma": 4.0})
    >>> s.inputs["sigma"], s.is_pure
    (4.0, False)
    >>> sorted(s.to_dict())  # doctest: +NORMALIZE_WHITESPACE
    ['conditions_met', 'delta', 'epsilon', 'inputs', 'kind', 'lower', 'meets_target',
     'notes', 'source', 'target']
    """

    epsilon: float
    delta: float
    kind: Kind = "upper"
    source: str = ""
    conditions_met: bool = True
    notes: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    lower: PrivacyStatement | None = None
    target: Target | None = None

    def __post_init__(self) -> None:
        eps = _check_number("epsilon", self.epsilon, high=math.inf)
        dlt = _check_number("delta", self.delta, high=1.0)
        if self.kind not in KINDS:
            raise InvalidParameterError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.conditions_met and (math.isnan(eps) or math.isnan(dlt)):
            raise InvalidParameterError(
                f"epsilon and delta may be nan only when conditions_met is False, "
                f"got epsilon={self.epsilon!r}, delta={self.delta!r}"
            )
        if isinstance(self.notes, str):
            raise ParameterTypeError(f"notes must be a tuple of strings, got {self.notes!r}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)
        object.__setattr__(self, "conditions_met", bool(self.conditions_met))
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))
        object.__setattr__(self, "inputs", MappingProxyType(dict(self.inputs)))

    # -- what the pair promises ---------------------------------------------------------

    @property
    def is_certificate(self) -> bool:
        """Whether (ε, δ) is a valid DP guarantee: an upper bound or the exact value whose
        conditions hold, with finite ε and δ < 1."""
        return (
            self.conditions_met
            and self.kind in ("upper", "exact")
            and math.isfinite(self.epsilon)
            and self.delta < 1.0
        )

    @property
    def is_pure(self) -> bool:
        """Whether δ = 0."""
        return self.delta == 0.0

    @property
    def is_trivial(self) -> bool:
        """Whether the statement promises nothing (ε = inf, δ >= 1 or not applicable)."""
        return not self.conditions_met or math.isinf(self.epsilon) or self.delta >= 1.0

    @property
    def meets_target(self) -> bool | None:
        """Whether the target is met (``None`` when no target was given)."""
        return None if self.target is None else self.target.met

    # -- how it reads -------------------------------------------------------------------

    def __repr__(self) -> str:
        """One line; ε and δ rounded to the safe side of ``kind`` (up for a certificate)."""
        up = self.kind != "lower"
        text = (
            f"PrivacyStatement(ε={format_bound(self.epsilon, up=up)}, "
            f"δ={format_bound(self.delta, up=up)}, kind={self.kind!r}, source={self.source!r}"
        )
        if not self.conditions_met:
            text += ", conditions_met=False"
        if self.target is not None:
            text += f", target_met={self.target.met}"
        return text + ")"

    def _repr_html_(self) -> str:
        """A small card (notebooks): ε, δ, kind, source, target, notes."""
        return statement_card(self, title="Privacy statement")

    # -- derived statements -------------------------------------------------------------

    def with_target(self, *, epsilon: float, delta: float) -> PrivacyStatement:
        """This statement with a target (ε, δ) recorded and checked.

        Examples
        --------
        >>> PrivacyStatement(epsilon=1.0, delta=0.0).with_target(epsilon=1.0, delta=1e-9).target
        Target(epsilon=1.0, delta=1e-09, met=True)
        """
        eps = _check_number("target epsilon", epsilon, high=math.inf)
        dlt = _check_number("target delta", delta, high=1.0)
        met = (
            self.is_certificate and self.epsilon <= eps * (1.0 + _TARGET_RTOL) and self.delta <= dlt
        )
        return replace(self, target=Target(epsilon=eps, delta=dlt, met=met))

    def with_notes(self, *notes: str) -> PrivacyStatement:
        """This statement with more notes appended."""
        return replace(self, notes=self.notes + tuple(notes))

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, for JSON output (non-finite floats are left to the JSON layer)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "kind": self.kind,
            "source": self.source,
            "conditions_met": self.conditions_met,
            "notes": list(self.notes),
            "inputs": dict(self.inputs),
            "lower": None if self.lower is None else self.lower.to_dict(),
            "target": None if self.target is None else self.target.to_dict(),
            "meets_target": self.meets_target,
        }

    @classmethod
    def not_applicable(
        cls,
        *,
        source: str,
        reason: str,
        kind: Kind = "upper",
        inputs: Mapping[str, Any] | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
    ) -> PrivacyStatement:
        """A statement saying that ``source`` does not apply, and why.

        ``epsilon`` / ``delta`` is the asked quantity (δ at a given ε, ε at a given δ): it is
        kept, so a "not applicable" answer still shows what was asked; the other number (the
        answer the bound cannot give) is ``nan``.

        Examples
        --------
        >>> s = PrivacyStatement.not_applicable(source="erlingsson2019", reason="needs n >= 1000")
        >>> s.conditions_met, s.notes, s.is_certificate
        (False, ('needs n >= 1000',), False)
        >>> s = PrivacyStatement.not_applicable(source="x", reason="r", epsilon=0.5)
        >>> s.epsilon, s.delta, s.is_certificate
        (0.5, nan, False)
        """
        return cls(
            epsilon=math.nan if epsilon is None else epsilon,
            delta=math.nan if delta is None else delta,
            kind=kind,
            source=source,
            conditions_met=False,
            notes=(reason,),
            inputs=inputs or {},
        )


def statement_card(
    statement: PrivacyStatement, *, title: str, rows: Mapping[str, str] | None = None
) -> str:
    """An HTML card of ``statement`` (and extra ``rows``), escaped, for ``_repr_html_``.

    Examples
    --------
    >>> html = statement_card(PrivacyStatement(epsilon=1.0, delta=1e-6, source="<x>"), title="T")
    >>> "&lt;x&gt;" in html, "<x>" in html
    (True, False)
    """
    from html import escape

    up = statement.kind != "lower"
    target = statement.target
    lines = {
        "ε": format_bound(statement.epsilon, up=up),
        "δ": format_bound(statement.delta, up=up),
        "kind": statement.kind + ("" if statement.conditions_met else " (conditions not met)"),
        "source": statement.source,
        **(
            {}
            if target is None
            else {
                "target": f"ε ≤ {target.epsilon:g}, δ ≤ {target.delta:g}: "
                + ("met" if target.met else "NOT met")
            }
        ),
        **(rows or {}),
    }
    cells = "".join(
        f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>"
        for k, v in lines.items()
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in statement.notes)
    return (
        "<div style='border:1px solid #ccc;border-radius:6px;padding:8px;display:inline-block'>"
        f"<b>{escape(title)}</b><table>{cells}</table>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + "</div>"
    )
