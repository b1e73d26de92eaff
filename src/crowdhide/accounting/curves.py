"""Privacy curves δ(ε) and the exact curve of a pair of discrete distributions.

A *privacy curve* of a mechanism M under a neighbouring relation is the function

    δ(ε) = sup over neighbouring (x, x') of H_{e^ε}(M(x) || M(x')),
    H_a(P || Q) = Σ_o max(0, P(o) − a Q(o)),

the hockey-stick divergence (Balle, Barthe, Gaboardi 2018). It is non-increasing and convex
in ``e^ε``, so ε(δ) is well defined as the smallest ε with δ(ε) <= δ.

:class:`DiscretePairCurve` computes it exactly for one neighbouring pair given as
log-probability arrays. It is the ground truth that every amplification bound in crowdhide
is tested against.
"""

from __future__ import annotations

import abc
import math

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_probability, check_real
from crowdhide.accounting.logmath import log1mexp, logsumexp
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.statement import PrivacyStatement, format_bound
from crowdhide.errors import InvalidParameterError

__all__ = ["DiscretePairCurve", "PrivacyCurve", "RoundedCurve", "SmallestCurve"]

#: The δ at which a curve's notebook table shows ε.
_HTML_DELTAS = (1e-3, 1e-5, 1e-6, 1e-9)


class PrivacyCurve(abc.ABC):
    """A privacy curve: ``delta(epsilon)`` and its inverse ``epsilon(delta)``.

    Subclasses implement :meth:`log_delta`; they may override :meth:`epsilon` when the
    inverse has a faster or more accurate form. Every value is an *upper bound* on the true
    curve of the mechanism it describes unless the subclass says it is exact.

    See Also
    --------
    DiscretePairCurve : The exact curve of one pair of distributions.
    PldCurve : A curve held as a privacy-loss distribution.
    """

    def __repr__(self) -> str:
        """One line naming the curve (evaluating it may be costly: ask ``.epsilon(δ)``)."""
        notes = f", {len(self.notes)} note(s)" if self.notes else ""
        return f"<{type(self).__name__}: privacy curve, .epsilon(delta) / .delta(epsilon){notes}>"

    def _repr_html_(self) -> str:
        """A small table of ε(δ) at a few δ, rounded up (notebooks; evaluates the curve).

        Examples
        --------
        >>> rr = DiscretePairCurve(np.log([0.75, 0.25]), np.log([0.25, 0.75]))
        >>> rr
        <DiscretePairCurve: privacy curve, .epsilon(delta) / .delta(epsilon)>
        >>> "<tr><td>1e-06</td><td>1.099</td></tr>" in rr._repr_html_()  # ln 3 = 1.0986...
        True
        """
        from html import escape

        cells = "".join(
            f"<tr><td>{d:g}</td><td>{format_bound(self.epsilon(d))}</td></tr>" for d in _HTML_DELTAS
        )
        notes = "".join(f"<li>{escape(n)}</li>" for n in self.notes)
        return (
            f"<b>{escape(type(self).__name__)}</b> (privacy curve; ε rounded up)"
            f"<table><tr><th>δ</th><th>ε(δ)</th></tr>{cells}</table>"
            + (f"<ul>{notes}</ul>" if notes else "")
        )

    @abc.abstractmethod
    def log_delta(self, epsilon: float) -> float:
        """Return ``log δ(ε)`` (``-inf`` when δ(ε) = 0)."""

    def epsilon_upper_hint(self) -> float:
        """An ε at which δ(ε) is as small as it gets (used to bracket :meth:`epsilon`)."""
        return 64.0

    @property
    def notes(self) -> tuple[str, ...]:
        """What a reader of this curve's numbers should know (e.g. that its grid was
        coarsened); copied into every statement made from it."""
        return ()

    def delta(self, epsilon: float) -> float:
        """Return δ(ε).

        Parameters
        ----------
        epsilon
            ε >= 0.
        """
        eps = check_real("epsilon", epsilon, low=0.0)
        return float(math.exp(self.log_delta(eps)))

    def epsilon(self, delta: float) -> float:
        """Return the smallest ε (to 1e-12 relative) with δ(ε) <= ``delta``.

        The returned ε always satisfies δ(ε) <= ``delta`` (the root is taken from the safe
        side), so it is a valid guarantee. Returns ``inf`` when no finite ε achieves
        ``delta``.

        Parameters
        ----------
        delta
            Target δ, ``0 < delta < 1``; values down to 1e-300 are handled in log space.
        """
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        if self.log_delta(0.0) <= target:
            return 0.0
        hi = self.epsilon_upper_hint()
        while self.log_delta(hi) > target:
            if hi > 1e6:
                return math.inf
            hi *= 2.0
        return safe_root(self.log_delta, target, 0.0, hi)

    def guarantee(self, delta: float, *, source: str = "") -> PrivacyStatement:
        """The upper-bound :class:`~crowdhide.accounting.statement.PrivacyStatement`
        ``(epsilon(delta), delta)`` of this curve, attributed to ``source``."""
        return PrivacyStatement(
            epsilon=self.epsilon(delta), delta=float(delta), kind="upper", source=source
        )


class SmallestCurve(PrivacyCurve):
    """The smallest of several *upper-bound* curves of one mechanism: each is a certificate,
    so the least of them is one too, δ for δ and ε for ε (each member's own ε(δ) is used, so
    a member with a fast or bracketed inverse keeps it).

    Examples
    --------
    >>> a = DiscretePairCurve([math.log(0.7), math.log(0.3)], [math.log(0.3), math.log(0.7)])
    >>> b = DiscretePairCurve([math.log(0.6), math.log(0.4)], [math.log(0.4), math.log(0.6)])
    >>> SmallestCurve([a, b]).delta(0.0) == b.delta(0.0)
    True
    """

    def __init__(self, members: list[PrivacyCurve]) -> None:
        if not members:
            raise InvalidParameterError("SmallestCurve needs at least one member curve")
        self._members = members

    def log_delta(self, epsilon: float) -> float:
        return min(m.log_delta(epsilon) for m in self._members)

    def epsilon(self, delta: float) -> float:
        return min(m.epsilon(delta) for m in self._members)

    def epsilon_upper_hint(self) -> float:
        return min(m.epsilon_upper_hint() for m in self._members)


class RoundedCurve(PrivacyCurve):
    """A computed curve rounded to the safe side by the allowances of its error model.

    Two allowances move every answer away from the truth (up for certificates, down for
    ``lower`` bounds): a ``relative`` one on δ, for relative errors of the probabilities,
    and an absolute ``loss_error`` ``η`` on ε, for errors of the privacy losses ``ln P/Q``
    (or of the thresholds a count must pass): near a largest loss the terms are ``P (1 −
    e^{ε − L})`` with ``L − ε`` as small as 1e-14, so a loss error ``η`` is ``η/(L − ε)``
    relative there and no relative margin covers it (issue 28). When every loss is within
    ``η`` the computed curve at ``ε − η`` is at least the true one at ``ε``, term by term
    (δ is non-increasing), and at ``ε + η`` at most it. So a certificate reports ``(1 + m)
    δ_c(ε − η)`` and a lower bound ``(1 − m) δ_c(ε + η)``; ε(δ) is solved at the target
    moved the same way and then moved by ``η``. With ``cap`` (a pure ε every pair
    satisfies), δ(ε >= cap) = 0 and ε <= cap: a certificate's cap must be at least the exact
    pure ε, so a computed one is first raised (:func:`~crowdhide.accounting.logmath.pure_cap_up`,
    :func:`~crowdhide.accounting.logmath.product_up`).

    Examples
    --------
    >>> rr = DiscretePairCurve(np.log([0.75, 0.25]), np.log([0.25, 0.75]))
    >>> up = RoundedCurve(rr, relative=1e-9, loss_error=1e-12, lower=False)
    >>> low = RoundedCurve(rr, relative=1e-9, loss_error=1e-12, lower=True)
    >>> low.delta(0.5) < rr.delta(0.5) < up.delta(0.5)
    True
    >>> low.epsilon(1e-9) < rr.epsilon(1e-9) < up.epsilon(1e-9)
    True
    """

    def __init__(
        self,
        inner: PrivacyCurve,
        *,
        relative: float,
        loss_error: float,
        lower: bool,
        cap: float = math.inf,
    ) -> None:
        self.inner, self._lower, self._cap = inner, lower, cap
        self._relative = relative
        self._scale = 1.0 - relative if lower else 1.0 + relative
        self._shift = loss_error if lower else -loss_error

    def _shifted(self, eps: float) -> float | None:
        """Where the inner curve is evaluated for ε (None: δ is 0 there)."""
        at = max(eps + self._shift, 0.0)
        return None if eps >= self._cap or at >= self._cap else at

    def log_delta(self, epsilon: float) -> float:
        at = self._shifted(epsilon)
        if at is None:
            return -math.inf
        return min(self.inner.log_delta(at) + math.log(self._scale), 0.0)

    def delta(self, epsilon: float) -> float:
        at = self._shifted(check_real("epsilon", epsilon, low=0.0))
        if at is None:
            return 0.0
        return min(self.inner.delta(at) * self._scale, 1.0)

    def epsilon(self, delta: float) -> float:
        d = check_probability("delta", delta, allow_zero=False, allow_one=False)
        target = d * (1.0 + self._relative if self._lower else 1.0 - self._relative)
        eps = self._inner_epsilon(min(target, 1.0 - 1e-16), d)
        if eps == 0.0:  # δ(0) is a total variation: losses near 0 weigh nothing there
            return 0.0
        return min(max(eps - self._shift, 0.0), self._cap)

    def epsilon_upper_hint(self) -> float:
        return min(self.inner.epsilon_upper_hint() + abs(self._shift), self._cap)

    def _inner_epsilon(self, target: float, delta: float) -> float:
        """The inner curve's ε at ``target`` (its δ moved to the safe side of the asked
        ``delta``); a subclass may search it from a start computed for ``delta``."""
        return self.inner.epsilon(target)


class DiscretePairCurve(PrivacyCurve):
    """Exact privacy curve of one neighbouring pair of discrete distributions.

    ``δ(ε) = max(H_{e^ε}(P || Q), H_{e^ε}(Q || P))``, evaluated term by term in log space as
    ``Σ_{L(o) > ε} P(o) (1 − e^{ε − L(o)})`` with ``L = ln P − ln Q``, so it stays accurate for
    δ down to 1e-300 and needs no cancellation between large partial sums.

    Parameters
    ----------
    log_p, log_q
        Log-probabilities of the two distributions on a common finite support (``-inf`` for
        impossible outcomes). Each must sum to 1 within 1e-9 (in probability).
    symmetric
        If True (default) the curve is the maximum over both directions, as the DP definition
        requires for an unordered neighbouring pair; if False only ``H(P || Q)`` is used.

    See Also
    --------
    PrivacyCurve : The interface it implements.
    to_pld : Its PLD, for composition.

    Examples
    --------
    Binary randomized response with ε0 = ln 3 is exactly ln(3)-DP:

    >>> import numpy as np
    >>> rr = DiscretePairCurve(np.log([0.75, 0.25]), np.log([0.25, 0.75]))
    >>> round(rr.epsilon(1e-12), 9) == round(float(np.log(3)), 9)
    True
    >>> rr.delta(0.0)
    0.5
    """

    def __init__(
        self, log_p: npt.ArrayLike, log_q: npt.ArrayLike, *, symmetric: bool = True
    ) -> None:
        lp = np.asarray(log_p, dtype=np.float64).ravel()
        lq = np.asarray(log_q, dtype=np.float64).ravel()
        if lp.shape != lq.shape:
            raise InvalidParameterError(
                f"log_p and log_q must have the same length, got {lp.size} and {lq.size}"
            )
        if lp.size == 0:
            raise InvalidParameterError("log_p must not be empty, got an empty array")
        for name, arr in (("log_p", lp), ("log_q", lq)):
            if np.isnan(arr).any() or (arr == np.inf).any():
                raise InvalidParameterError(
                    f"{name} must contain log-probabilities, got NaN or +inf"
                )
            if (arr > 1e-12).any():
                raise InvalidParameterError(
                    f"{name} must be <= 0 (log-probabilities), got {arr.max()!r}"
                )
            total = float(logsumexp(arr))
            if abs(total) > 1e-9:
                raise InvalidParameterError(
                    f"{name} must describe a distribution (sum of probabilities 1), "
                    f"got sum {math.exp(total)!r}"
                )
        keep = (lp > -np.inf) | (lq > -np.inf)
        self._log_p, self._log_q = lp[keep], lq[keep]
        self._symmetric = bool(symmetric)
        self._forward = _OneDirection(lp[keep], lq[keep])
        self._backward = _OneDirection(lq[keep], lp[keep]) if symmetric else None

    @classmethod
    def from_probabilities(
        cls, p: npt.ArrayLike, q: npt.ArrayLike, *, symmetric: bool = True
    ) -> DiscretePairCurve:
        """Build the curve from probability arrays instead of log-probabilities."""
        with np.errstate(divide="ignore"):
            return cls(
                np.log(np.asarray(p, dtype=float)),
                np.log(np.asarray(q, dtype=float)),
                symmetric=symmetric,
            )

    def support_log_probabilities(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The pair ``(log_p, log_q)`` on the common support (outcomes impossible under both
        distributions removed)."""
        return self._log_p.copy(), self._log_q.copy()

    @property
    def symmetric(self) -> bool:
        """Whether both directions are taken into account."""
        return self._symmetric

    def directions(self) -> tuple[_OneDirection, ...]:
        """The one-directional divergences this curve is the maximum of."""
        if self._backward is None:
            return (self._forward,)
        return (self._forward, self._backward)

    def log_delta(self, epsilon: float) -> float:
        return max(d.log_delta(epsilon) for d in self.directions())

    def log_delta_forward(self, epsilon: float) -> float:
        """``log H_{e^ε}(P || Q)`` only."""
        return self._forward.log_delta(epsilon)

    def epsilon_upper_hint(self) -> float:
        return max(max(d.max_finite_loss, 0.0) for d in self.directions()) + 1e-9

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        if any(d.log_infinite_mass > target for d in self.directions()):
            return math.inf
        if self.log_delta(0.0) <= target:
            return 0.0
        return safe_root(self.log_delta, target, 0.0, self.epsilon_upper_hint())

    @property
    def max_loss(self) -> float:
        """The largest privacy loss |ln P/Q| over the support (``inf`` if supports differ)."""
        return max(d.max_loss for d in self.directions())


class _OneDirection:
    """``H_{e^ε}(P || Q)`` with outcomes sorted by decreasing privacy loss."""

    __slots__ = ("_log_p", "_loss", "log_infinite_mass", "max_finite_loss", "max_loss")

    def __init__(self, log_p: npt.NDArray[np.float64], log_q: npt.NDArray[np.float64]) -> None:
        with np.errstate(invalid="ignore"):
            loss = log_p - log_q
        loss = np.where(log_p == -np.inf, -np.inf, loss)
        infinite = loss == np.inf
        self.log_infinite_mass = float(logsumexp(log_p[infinite])) if infinite.any() else -np.inf
        finite = ~infinite & (loss > 0.0)
        order = np.argsort(-loss[finite], kind="stable")
        self._loss = np.ascontiguousarray(loss[finite][order])
        self._log_p = np.ascontiguousarray(log_p[finite][order])
        self.max_finite_loss = float(self._loss[0]) if self._loss.size else 0.0
        self.max_loss = math.inf if infinite.any() else self.max_finite_loss

    def log_delta(self, epsilon: float) -> float:
        # Only outcomes with loss > ε contribute; they form a prefix of the sorted arrays.
        active = int(np.searchsorted(-self._loss, -epsilon, side="left"))
        if active == 0:
            return self.log_infinite_mass
        terms = self._log_p[:active] + log1mexp(epsilon - self._loss[:active])
        finite_part = float(logsumexp(terms))
        return float(np.logaddexp(finite_part, self.log_infinite_mass))
