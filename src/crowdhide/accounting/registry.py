"""Bounds as registry objects, and one way to evaluate them: one bound, all of them, the best.

An accountant in crowdhide is a :class:`Registry` of :class:`Bound` objects over one frozen
parameter type ``P`` (e.g. "n shuffled ε0-LDP reports"). A bound knows

* its ``name``, its ``kind`` (``"upper"``, ``"exact"``, ``"lower"``, ``"estimate"``: see
  :mod:`crowdhide.accounting.statement`) and a ``citation``;
* :meth:`Bound.applies` — ``None`` when its conditions hold for ``params``, else the reason;
* :meth:`Bound.curve` — its privacy curve for ``params``; ε(δ) and δ(ε) both come from it.

:meth:`Registry.statement`, :meth:`Registry.all` and :meth:`Registry.best` turn that into
:class:`~crowdhide.accounting.statement.PrivacyStatement` objects, for an ε query (at a
given δ) or a δ query (at a given ε). ``best`` is the smallest certificate, with the largest
lower bound attached as ``lower``, so the truth is bracketed in one object.

Examples
--------
>>> import math
>>> from dataclasses import dataclass
>>> from crowdhide.accounting.curves import DiscretePairCurve
>>> @dataclass(frozen=True)
... class Coin:
...     eps0: float
>>> class RandomizedResponse:
...     name, kind, citation = "rr", "exact", "Warner 1965"
...     def applies(self, params: Coin) -> str | None:
...         return None if params.eps0 > 0 else "needs eps0 > 0"
...     def curve(self, params: Coin) -> DiscretePairCurve:
...         p = math.exp(params.eps0) / (1 + math.exp(params.eps0))
...         return DiscretePairCurve.from_probabilities([p, 1 - p], [1 - p, p])
>>> coins = Registry([RandomizedResponse()], what="coin bound")
>>> s = coins.best(Coin(eps0=1.0), delta=1e-9)
>>> s.source, s.kind, round(s.epsilon, 9)
('rr', 'exact', 1.0)
>>> moot = coins.statement("rr", Coin(eps0=0.0), delta=1e-9)
>>> moot.notes, moot.delta, math.isnan(moot.epsilon)  # the asked δ is kept
(('needs eps0 > 0',), 1e-09, True)
>>> coins["nope"]
Traceback (most recent call last):
...
crowdhide.errors.InvalidParameterError: coin bound must be one of ('rr',), got 'nope'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, is_dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = ["Bound", "Registry", "attach_lower", "best_certificate", "best_of"]

P = TypeVar("P")
P_contra = TypeVar("P_contra", contravariant=True)

#: An upper bound on δ that underflows a double is reported as this, never as 0.
_SMALLEST_DELTA = 5e-324


class Bound(Protocol[P_contra]):
    """One bound or evaluator of an accountant (structural type: any object with these).

    See Also
    --------
    Registry : An ordered collection of bounds.
    """

    @property
    def name(self) -> str:
        """Stable identifier, used by ``bound=`` options."""

    @property
    def kind(self) -> Kind:
        """What its numbers are: ``"upper"``, ``"exact"``, ``"lower"`` or ``"estimate"``."""

    @property
    def citation(self) -> str:
        """Where it comes from."""

    def applies(self, params: P_contra) -> str | None:
        """``None`` when the bound's conditions hold for ``params``, else why they do not."""

    def curve(self, params: P_contra) -> PrivacyCurve:
        """The bound's privacy curve δ(ε) for ``params`` (only called when it applies)."""


def _inputs(params: object) -> Mapping[str, Any]:
    if is_dataclass(params) and not isinstance(params, type):
        return asdict(params)
    return {}


class Registry(Generic[P]):
    """An ordered, named collection of bounds over one parameter type.

    Parameters
    ----------
    bounds
        The bounds, in the order in which they are listed and tried.
    what
        What a name selects (used in error messages, e.g. ``"shuffle bound"``).
    inputs
        How to record ``params`` in a statement's ``inputs`` (default: the dataclass fields).

    See Also
    --------
    Bound : What it holds.
    best_of : Picks the smallest certificate among several statements.
    """

    def __init__(
        self,
        bounds: Iterable[Bound[P]],
        *,
        what: str,
        inputs: Callable[[P], Mapping[str, Any]] = _inputs,
    ) -> None:
        self._bounds = {b.name: b for b in bounds}
        self._what = what
        self._inputs = inputs

    @property
    def names(self) -> tuple[str, ...]:
        """Bound names, in order."""
        return tuple(self._bounds)

    def __iter__(self) -> Iterator[Bound[P]]:
        return iter(self._bounds.values())

    def __len__(self) -> int:
        return len(self._bounds)

    def __contains__(self, name: object) -> bool:
        return name in self._bounds

    def __getitem__(self, name: str) -> Bound[P]:
        try:
            return self._bounds[name]
        except KeyError:
            raise InvalidParameterError(
                f"{self._what} must be one of {self.names}, got {name!r}"
            ) from None

    def statement(
        self,
        name: str,
        params: P,
        *,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> PrivacyStatement:
        """Evaluate one bound: ε at ``delta`` or δ at ``epsilon`` (exactly one of them).

        A bound whose conditions fail gives a statement with ``conditions_met=False`` and the
        reason in ``notes`` (the answer is ``nan``, the asked number is kept), never an
        exception.
        """
        if (delta is None) == (epsilon is None):
            raise InvalidParameterError(
                f"give exactly one of delta and epsilon, got delta={delta!r}, epsilon={epsilon!r}"
            )
        bound = self[name]
        inputs = self._inputs(params)
        reason = bound.applies(params)
        if reason is not None:
            # the asked ε (or δ) is kept: a "does not apply" answer still echoes the question
            return PrivacyStatement.not_applicable(
                source=bound.name,
                reason=reason,
                kind=bound.kind,
                inputs=inputs,
                epsilon=epsilon,
                delta=delta,
            )
        curve = bound.curve(params)
        notes = curve.notes
        if delta is not None:
            eps, dlt = curve.epsilon(delta), float(delta)
            if math.isinf(eps) and bound.kind != "lower":
                # An infinite ε is a valid answer, but never a silent one.
                notes += (
                    f"no finite epsilon: this bound's delta stays above {dlt:g} at every "
                    "epsilon (a larger delta may give a finite epsilon)",
                )
        else:
            assert epsilon is not None
            eps, dlt = float(epsilon), curve.delta(epsilon)
            if dlt == 0.0 and bound.kind != "lower" and curve.log_delta(eps) > -math.inf:
                # below the smallest double (e.g. e^-1230): 0 would claim less than the truth
                dlt = _SMALLEST_DELTA
                notes += ("delta below the smallest positive double; rounded up to 5e-324",)
        return PrivacyStatement(
            epsilon=eps, delta=dlt, kind=bound.kind, source=bound.name, inputs=inputs, notes=notes
        )

    def all(
        self,
        params: P,
        *,
        delta: float | None = None,
        epsilon: float | None = None,
        names: Iterable[str] | None = None,
    ) -> tuple[PrivacyStatement, ...]:
        """Every bound's statement (or those in ``names``), in registry order."""
        chosen = self.names if names is None else tuple(names)
        return tuple(self.statement(n, params, delta=delta, epsilon=epsilon) for n in chosen)

    def best(
        self,
        params: P,
        *,
        delta: float | None = None,
        epsilon: float | None = None,
        names: Iterable[str] | None = None,
    ) -> PrivacyStatement:
        """The tightest certificate, with the largest lower bound attached as ``lower``.

        For an ε query the certificate with the smallest ε wins; for a δ query, the smallest
        δ. When no bound certifies anything, the first statement is returned with a note.
        """
        statements = self.all(params, delta=delta, epsilon=epsilon, names=names)
        return best_of(statements, by="epsilon" if delta is not None else "delta")


def best_of(statements: Iterable[PrivacyStatement], *, by: str) -> PrivacyStatement:
    """The smallest certificate among ``statements`` by ``"epsilon"`` or ``"delta"``, with
    the largest valid lower bound among them attached as ``lower``.

    Parameters
    ----------
    statements
        Statements of one question (upper and lower bounds, valid or not).
    by
        ``"epsilon"`` or ``"delta"``: which number to minimise.

    Returns
    -------
    PrivacyStatement
        The smallest certificate, its ``lower`` the largest valid lower bound.

    See Also
    --------
    Registry : Evaluates its bounds and picks with this rule.

    Examples
    --------
    >>> a = PrivacyStatement(epsilon=0.9, delta=1e-6, source="a")
    >>> b = PrivacyStatement(epsilon=0.7, delta=1e-6, source="b")
    >>> low = PrivacyStatement(epsilon=0.5, delta=1e-6, kind="lower", source="lb")
    >>> s = best_of([a, b, low], by="epsilon")
    >>> s.source, s.lower.source
    ('b', 'lb')
    """
    if by not in ("epsilon", "delta"):
        raise InvalidParameterError(f"by must be 'epsilon' or 'delta', got {by!r}")
    items = list(statements)
    if not items:
        raise InvalidParameterError("best_of needs at least one statement, got none")

    def value(s: PrivacyStatement) -> float:
        v = s.epsilon if by == "epsilon" else s.delta
        return math.inf if math.isnan(v) else v

    certificates = [s for s in items if s.is_certificate]
    lowers = [s for s in items if s.kind == "lower" and s.conditions_met]
    lower = max(lowers, key=value) if lowers else None
    if not certificates:
        return items[0].with_notes("no bound gives a certificate for these parameters")
    winner = min(certificates, key=value)
    if lower is None or winner.lower is not None:
        return winner
    return replace(winner, lower=lower)


def attach_lower(
    rows: Sequence[PrivacyStatement],
    lower: str,
    evaluate: Callable[[str], PrivacyStatement],
) -> list[PrivacyStatement]:
    """``rows`` with the statement of the lower bound named ``lower`` attached as ``lower``
    to each (taken from ``rows`` if there, else ``evaluate(lower)``); unchanged when that
    bound's conditions fail.

    Examples
    --------
    >>> low = PrivacyStatement(epsilon=0.5, delta=1e-6, kind="lower", source="lb")
    >>> rows = [PrivacyStatement(epsilon=0.9, delta=1e-6, source="a")]
    >>> attach_lower(rows, "lb", lambda name: low)[0].lower.source
    'lb'
    """
    low = next((r for r in rows if r.source == lower), None) or evaluate(lower)
    if not low.conditions_met:
        return list(rows)
    return [replace(r, lower=low) for r in rows]


def best_certificate(
    evaluate: Callable[[str], PrivacyStatement],
    candidates: Iterable[str],
    *,
    by: str,
    lower: str | None = None,
) -> PrivacyStatement:
    """The one "best" of every accountant: the smallest certificate by ``"epsilon"`` or
    ``"delta"`` among the ``candidates``, each evaluated once by ``evaluate(name)``.

    ``lower`` names a lower bound, evaluated too and attached as ``lower`` (also to an answer
    that certifies nothing). When no candidate certifies, the answer is the first candidate
    whose conditions hold (else the first), with a note.

    Examples
    --------
    >>> table = {
    ...     "a": PrivacyStatement(epsilon=0.9, delta=1e-6, source="a"),
    ...     "b": PrivacyStatement(epsilon=0.7, delta=1e-6, source="b"),
    ...     "lb": PrivacyStatement(epsilon=0.5, delta=1e-6, kind="lower", source="lb"),
    ... }
    >>> s = best_certificate(table.__getitem__, ["a", "b"], by="epsilon", lower="lb")
    >>> s.source, s.lower.source
    ('b', 'lb')
    """
    rows = [evaluate(name) for name in candidates]
    applicable = [r for r in rows if r.conditions_met] or rows
    if lower is None:
        return best_of(applicable, by=by)
    low = evaluate(lower)
    best = best_of([*applicable, low], by=by)
    if best.lower is not None:
        return best
    return attach_lower([best], lower, lambda name: low)[0]
