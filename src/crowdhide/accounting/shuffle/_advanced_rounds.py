"""R shuffled rounds by advanced composition of the FMT21 single-round certificate
(internal): a member of ``best`` for many composed rounds.

R adaptive rounds, each ``(ε1, δ1)``-DP, are ``(ε̃, 1 − (1 − δ̃)(1 − δ1)^R)``-DP for every
``δ̃ in (0, 1]`` with ``ε̃ = min(R ε1, d + ε1 √(2R ln(e + √R ε1/δ̃)), d + ε1 √(2R ln(1/δ̃)))``,
``d = R ε1 tanh(ε1/2)`` (Kairouz, Oh and Viswanath 2015, Theorem 3.5 with equal rounds; the
library's ``heterogeneous_advanced_composition``), and ``1 − (1 − δ̃)(1 − δ1)^R <= δ̃ + R δ1``.
This member sets ``δ1 = t`` and ``δ̃ = R t`` (rounded down), so its δ is at most ``2 R t``;
``t`` runs over the grid ``2^(j/64)``. Both queries use the same grid: the ε query takes the
largest ``t`` with ``2 R t <= δ``; the δ query the smallest ``t`` at which the round's
certificate ``δ1(x_t) <= t``, ``x_t`` the largest per-round ε whose ε̃ is at most the ε asked,
by bisection over the grid (the test is monotone in ``t``). At the ε query's answer its grid
point passes (the single round's δ at its own ε answer is at most its δ, §17), so the δ query
returns at most the δ asked.

Why (issue 32, item 3): at 10^4 rounds and δ = 1e-300 the composed pair and the rounds
apart answer about ``√R`` times worse than this at n = 1e9 (ε0 = 1: 17.97 against 6.69),
and at δ = 1e-20 three times (1.024 against 0.335); docs/proofs/profile-pair.md §20.
Where it cannot win, a rigorous lower bound on the round's δ (``_own_round``'s screen) skips
it in about a millisecond.
"""

from __future__ import annotations

import math

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.shuffle._own_round import _lower_log_delta_above
from crowdhide.accounting.shuffle._rounds_apart import _down, _up
from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["ADVANCED_SOURCE", "AdvancedRoundsCurve", "advanced_rounds", "kov_epsilon"]

#: The statement's source: which composition and which single-round certificate.
ADVANCED_SOURCE = "advanced_composition:feldman2021"
#: Grid points per factor 2 of the per-round δ (the ε query loses at most 1.1 % of δ).
_STEPS = 64
#: The smallest grid index: ``2^-1020``, a normal float.
_J_MIN = -1020 * _STEPS
#: Grid points tried one by one from the estimate before bisecting (most answers: 1-3).
_SCAN = 6


def _grid(j: int) -> float:
    """The grid point ``2^(j/64)``, the same float in both queries."""
    return math.ldexp(2.0 ** ((j % _STEPS) / _STEPS), j // _STEPS)


def kov_epsilon(eps1: float, rounds: int, slack: float) -> float:
    """ε̃ of the module docstring for ``rounds`` rounds of ``eps1`` and ``δ̃ = slack``, each
    candidate moved up by 1e-12 relative (a few ulps of float error each) and two ulps.

    >>> round(kov_epsilon(0.1, 100, 1e-6), 4)
    5.7561
    """
    total = rounds * eps1
    drift = total * math.tanh(eps1 / 2.0)
    spread = eps1 * math.sqrt(2.0 * rounds)
    wide = math.sqrt(rounds) * eps1 / slack
    near = drift + spread * math.sqrt(math.log(math.e + wide)) if math.isfinite(wide) else total
    far = drift + spread * math.sqrt(-math.log(slack))
    return _up(min(total, near, far) * (1.0 + 1e-12))


def _per_round_limit(epsilon: float, rounds: int, slack: float) -> float:
    """The largest per-round ε whose :func:`kov_epsilon` is at most ``epsilon`` (0: none
    found), by bisection to adjacent floats: the next float's is above ``epsilon``."""
    # kov(x) <= R x (1 + 1e-12) and two ulps, below ε here; kov(x) >= x (R >= 1, δ̃ < 1/e)
    lo, hi = _down(epsilon / (rounds * (1.0 + 1e-11))), _up(epsilon)
    if kov_epsilon(lo, rounds, slack) > epsilon:
        return 0.0
    while True:
        mid = (lo + hi) / 2.0
        if not lo < mid < hi:
            return lo
        lo, hi = (mid, hi) if kov_epsilon(mid, rounds, slack) <= epsilon else (lo, mid)


def _slack(rounds: int, t: float) -> float:
    return _down(rounds * t)


def _total(rounds: int, t: float) -> float:
    return _up(2.0 * rounds * t)


def advanced_rounds(
    one: PrivacyCurve,
    eps0: float,
    n: int,
    rounds: int,
    query: dict[str, float],
    beaten: float,
    basic: PrivacyStatement | None = None,
) -> PrivacyStatement | None:
    """The member's statement at ``query`` (``one``: the FMT21 single-round curve), or None
    where it certainly does not beat ``beaten`` (ε at a δ query, δ at an ε query; ``inf``:
    nothing to beat) or certifies nothing. ``basic``: the FMT21 member's statement at the
    same δ query, if made (its per-round ε at δ/R is at most the round's ε here, t < δ/R)."""
    if "epsilon" in query:
        return _delta_query(one, eps0, n, rounds, query["epsilon"], beaten)
    delta = query["delta"]
    j = _largest_index_within(rounds, delta)
    if j is None:
        return None
    t = _grid(j)
    if math.isfinite(beaten) and _cannot_win(one, eps0, n, rounds, t, beaten, basic):
        return None
    eps1 = one.epsilon(t)
    if not math.isfinite(eps1):
        return None
    return _statement(kov_epsilon(eps1, rounds, _slack(rounds, t)), delta, rounds)


def _cannot_win(
    one: PrivacyCurve,
    eps0: float,
    n: int,
    rounds: int,
    t: float,
    beaten: float,
    basic: PrivacyStatement | None,
) -> bool:
    """Whether the ε query's answer at grid point ``t`` is not below ``beaten``: the largest
    per-round ε whose ε̃ is at most ``beaten`` is below the round's ε at ``t``, told by the
    FMT21 member's per-round ε (free; ``one``'s ε is non-increasing in δ), a rigorous lower
    bound on the round's δ (about a millisecond), or one evaluation of ``one``."""
    from crowdhide.accounting.shuffle._best import epsilon_above

    slack = _slack(rounds, t)
    if basic is not None and math.isfinite(basic.epsilon):
        floor = _down(basic.epsilon / (rounds * (1.0 + 1e-14)))  # its ε1 at δ/R, or less
        if kov_epsilon(floor, rounds, slack) >= beaten:
            return True
    x = _per_round_limit(beaten, rounds, slack)
    point = _up(x)  # a round's ε at or above it: ε̃ above beaten (x's next float's is)
    if not (x > 0.0 and point < eps0):
        return False
    if _lower_log_delta_above(n, eps0, point, _up(math.log(t), 4)):
        return True
    return epsilon_above(one, t, point)


def _largest_index_within(rounds: int, delta: float) -> int | None:
    """The largest grid index j with ``2 R t_j`` (rounded up) at most ``delta``."""
    if delta / (2.0 * rounds) < _grid(_J_MIN):
        return None
    j = math.floor(_STEPS * math.log2(delta / (2.0 * rounds))) + 2
    while j >= _J_MIN and _total(rounds, _grid(j)) > delta:
        j -= 1
    return j if j >= _J_MIN else None


def _index_at_or_above(delta: float) -> int:
    """The smallest grid index j (at least ``_J_MIN``) with ``t_j >= delta``."""
    if not delta > _grid(_J_MIN):
        return _J_MIN
    j = math.floor(_STEPS * math.log2(delta)) - 2
    while _grid(j) < delta:
        j += 1
    return j


def _delta_query(
    one: PrivacyCurve, eps0: float, n: int, rounds: int, epsilon: float, beaten: float
) -> PrivacyStatement | None:
    """The smallest grid point ``t`` whose round passes at ``epsilon`` (module docstring)."""

    def passes(j: int) -> bool:
        t = _grid(j)
        x = _per_round_limit(epsilon, rounds, _slack(rounds, t))
        return x > 0.0 and one.delta(x) <= t

    hi = _largest_index_within(rounds, min(beaten, 1.0))
    if hi is None or (hi := hi - (_total(rounds, _grid(hi)) >= beaten)) < _J_MIN:
        return None  # beaten < 2 R t everywhere on the grid: nothing can win
    t = _grid(hi)
    x = _per_round_limit(epsilon, rounds, _slack(rounds, t))
    if x <= 0.0 or (x < eps0 and _lower_log_delta_above(n, eps0, x, _up(math.log(t), 4))):
        return None  # below hi every round's δ at its x exceeds its t (x, t grow with j)
    # The answer is near where t meets the round's δ at x_hi (x_t moves only through ln δ̃):
    # from the smallest t at or above it, no passing t lies below (x_t <= x_hi there)
    lo = _index_at_or_above(one.delta(x)) - 1
    for _ in range(_SCAN):
        if lo + 1 >= hi:
            break
        if passes(lo + 1):
            return _statement(epsilon, _total(rounds, _grid(lo + 1)), rounds)
        lo += 1
    if not passes(hi):
        return None
    while hi - lo > 1:  # invariant: hi passes, lo fails (or no t at or below lo can)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return _statement(epsilon, _total(rounds, _grid(hi)), rounds)


def _statement(epsilon: float, delta: float, rounds: int) -> PrivacyStatement:
    note = (
        f"advanced composition (KOV15 Theorem 3.5) of {rounds} rounds, each by the FMT21 "
        "clone pair's single-round certificate at delta/(2 rounds), slack delta/2"
    )
    return PrivacyStatement(epsilon=epsilon, delta=delta, source=ADVANCED_SOURCE, notes=(note,))


class AdvancedRoundsCurve(PrivacyCurve):
    """The member as a curve (``shuffle_curve`` of composed rounds): ``δ(ε)`` is its δ query
    and ``ε(δ)`` its ε query, with nothing to beat, so the curve and ``best`` agree wherever
    this member answers; δ = 1 (ε = inf) where it certifies nothing."""

    def __init__(self, one: PrivacyCurve, eps0: float, n: int, rounds: int) -> None:
        self.one, self.eps0, self.n, self.rounds = one, eps0, n, rounds

    def log_delta(self, epsilon: float) -> float:
        answer = _delta_query(self.one, self.eps0, self.n, self.rounds, epsilon, math.inf)
        return 0.0 if answer is None else math.log(answer.delta)

    def epsilon(self, delta: float) -> float:
        query = {"delta": delta}
        answer = advanced_rounds(self.one, self.eps0, self.n, self.rounds, query, math.inf)
        return math.inf if answer is None else answer.epsilon

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"advanced composition (KOV15 Theorem 3.5) of {self.rounds} rounds, each by "
                "the FMT21 clone pair's single-round certificate",)  # fmt: skip
