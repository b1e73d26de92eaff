"""R shuffled rounds certified one round at a time (internal): basic composition of a
single-round certificate — the FMT21 clone pair's, and ``best``'s own answer for any
ε0-LDP randomizer (:mod:`._own_round`) — and advanced composition of FMT21's
(:mod:`._advanced_rounds`), members of ``best`` for composed rounds.

R adaptive rounds, each (ε1, δ1)-DP under the same neighbouring relation, are
(R ε1, R δ1)-DP (basic composition; Dwork and Roth 2014, Theorem 3.16, adaptive form).
Each round of the composed question — the same n users, no sampling, ``substitute`` — is
one shuffle of n ε0-LDP reports, so the FMT21 clone pair's single-round certificate
(valid for every ε0-LDP randomizer, mechanisms and k-RR included) certifies it. The ε
query asks the round at ``δ1 <= δ/R`` and reports ``R ε1``; the δ query asks it at
``ε1 <= ε/R`` and reports ``R δ1``; each product rounded up, each quotient down.

Why this member (issue 32, measured on session 33's tree): the profile pair's composed
PLD carries an absolute allowance and a profile cut at a floor, so at small δ it answers
about ε0 or the cap ``R ε0`` — 10 rounds at ε0 = 1, n = 1e6, δ = 1e-20: 1.0099 against
0.1076 here; at δ = 1e-300, 10 rounds answered ``R ε0`` in every cell of the table, up to
680 times this member's ε. Where the pair is tight (δ >= 1e-10 in the table) this member
does not win and is skipped after one evaluation of the FMT21 curve
(:func:`~crowdhide.accounting.shuffle._best.epsilon_above`).
"""

from __future__ import annotations

import math

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["SOURCE", "RoundsApartCurve", "rounds_apart", "rounds_apart_curve"]

#: The statement's source: which composition and which single-round certificate.
SOURCE = "basic_composition:feldman2021"


def _up(x: float, steps: int = 2) -> float:
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def _down(x: float, steps: int = 2) -> float:
    for _ in range(steps):
        x = math.nextafter(x, 0.0)
    return x


class RoundsApartCurve(PrivacyCurve):
    """``δ(ε) = R δ1(ε/R)`` and ``ε(δ) = R ε1(δ/R)`` of a single-round certificate
    ``one`` (a safe-side curve), each quotient rounded down and each product up."""

    def __init__(
        self, one: PrivacyCurve, rounds: int, label: str = "the FMT21 clone pair's"
    ) -> None:
        self.one, self.rounds, self.label = one, rounds, label

    def log_delta(self, epsilon: float) -> float:
        inner = self.one.log_delta(_down(epsilon / self.rounds))
        # log R and the sum err by a few ulps of numbers below ~750: 1e-12 absolute covers them
        return min(0.0, inner + math.log(self.rounds) + 1e-12)

    def delta(self, epsilon: float) -> float:
        return min(1.0, _up(self.one.delta(_down(epsilon / self.rounds)) * self.rounds))

    def epsilon(self, delta: float) -> float:
        share = _down(delta / self.rounds)  # R·share <= δ: the quotient's half ulp taken back
        if share <= 0.0:
            return math.inf
        # (1 + 1e-15) then two ulps: R ε1 rounded up, with room for the δ query's quotient
        # ε/R, rounded down, to stay at or above ε1 (the round trip of section 17)
        return _up(self.one.epsilon(share) * self.rounds * (1.0 + 1e-15))

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"basic composition of {self.rounds} rounds, each by {self.label} "
                "single-round certificate",)  # fmt: skip


def rounds_apart_curve(eps0: float, n: int, rounds: int) -> RoundsApartCurve | None:
    """The curve of ``rounds`` rounds apart (n users each round, ``substitute``: the caller
    asks only then), or None where the FMT21 pair does not apply."""
    from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY, ShuffleParams

    params = ShuffleParams(eps0=eps0, n=n)
    bound = SHUFFLE_REGISTRY["feldman2021"]
    if rounds < 2 or bound.applies(params) is not None:
        return None
    return RoundsApartCurve(bound.curve(params), rounds)


def rounds_apart(
    eps0: float,
    n: int,
    rounds: int,
    query: dict[str, float],
    composed: PrivacyStatement | None,
) -> PrivacyStatement | None:
    """The smaller of the two members at ``query`` — :func:`rounds_apart_curve`'s statement
    and :func:`~._own_round.own_rounds`' — or None where neither applies or each certainly
    does not beat ``composed`` (None: no composed answer to beat)."""
    from crowdhide.accounting.shuffle._advanced_rounds import advanced_rounds
    from crowdhide.accounting.shuffle._own_round import own_rounds

    key = "delta" if "epsilon" in query else "epsilon"
    curve = rounds_apart_curve(eps0, n, rounds)  # made once: both FMT21 members read it
    found = [_fmt21_rounds(eps0, n, rounds, query, composed, curve)]

    def beaten() -> float:
        known = [s for s in (composed, *found) if s is not None and s.is_certificate]
        return min((getattr(s, key) for s in known), default=math.inf)

    found.append(own_rounds(eps0, n, rounds, query, beaten()))
    if curve is not None:
        basic = found[0] if "delta" in query else None
        found.append(advanced_rounds(curve.one, eps0, n, rounds, query, beaten(), basic))
    answers = [s for s in found if s is not None]
    return min(answers, key=lambda s: getattr(s, key)) if answers else None


def _fmt21_rounds(
    eps0: float,
    n: int,
    rounds: int,
    query: dict[str, float],
    composed: PrivacyStatement | None,
    curve: RoundsApartCurve | None,
) -> PrivacyStatement | None:
    """The statement of ``curve`` (:func:`rounds_apart_curve`, None where it does not
    apply) at ``query``, or None where it does not apply or, at an ε query, certainly does
    not beat ``composed`` (None: no composed answer to beat). That is told first by a
    rigorous lower bound on every certificate's δ (binary and 3-RR's exact δ, bounded below,
    under a few ms: :func:`~._own_round.lower_bound_epsilon_above`), then by one evaluation
    of the single-round curve (1-30 ms at n >= 1e4; the lower bound told it in 58 of the 60 cells
    of R = 10^4 in issue 32's table, docs/proofs/profile-pair.md §22)."""
    from crowdhide.accounting.shuffle._best import epsilon_above
    from crowdhide.accounting.shuffle._own_round import lower_bound_epsilon_above

    if curve is None:
        return None
    if "epsilon" in query:
        epsilon = query["epsilon"]
        return _statement(epsilon, curve.delta(epsilon), curve)
    delta = query["delta"]
    share = _down(delta / rounds)
    if share <= 0.0:
        return None
    beaten = math.inf if composed is None or not composed.is_certificate else composed.epsilon
    if math.isfinite(beaten) and (
        lower_bound_epsilon_above(eps0, n, share, beaten / rounds)
        or epsilon_above(curve.one, share, beaten / rounds)
    ):
        return None  # its ε is above the composed answer's: cannot win
    return _statement(curve.epsilon(delta), delta, curve)


def _statement(epsilon: float, delta: float, curve: RoundsApartCurve) -> PrivacyStatement:
    return PrivacyStatement(epsilon=epsilon, delta=delta, source=SOURCE, notes=curve.notes)
