"""A lower bound on the composed profile pair's ε at a tiny δ, so that ``best`` can leave the
pair out where a rounds-apart member is certainly below it (internal; issue 32, s35-r4).

At δ at or below :data:`~crowdhide.accounting.composition.LEAST_COMPOSITION_ERROR` the
composed part of ``best`` (``composition._best_of_pairs``) answers with the profile pair
alone, whose tilted passes cost 20-150 ms at 100 and 10^4 rounds — where the rounds-apart
members (basic or advanced composition of one round's certificate) answer 1.4-3.3 times
below it (n = 1e6-1e9, δ = 1e-300). Every answer of the pair is a point ``y`` where an upper
bound on ``D(y) = Σ_l ω^{*R}(l) (1 − e^{y − l})_+`` is at most δ (or its cap ``R ε0``),
``ω`` the pair's loss masses on its composition grid (:func:`~.profile_pair._composed_grid`:
every pass bounds the R-fold composition of exactly these masses). So where ``D(x) > δ``
every answer is above ``x`` (D is non-increasing). Proof: docs/proofs/profile-pair.md §22.

**The bound.** With ``a = ω(top)`` the top atom (loss ``L``) and ``ν = ω − a·1_L``,
``ω^{*R} >= C(R, K) a^K ν^{*(R−K)}`` shifted by ``K L``, and every loss of that term at or
above ``K L`` where ``ν``'s draws sum to at least 0, so for ``K L > x``::

    D(x) >= C(R, K) a^K (1 − e^{x − K L}) ν^{*(R−K)}([0, ∞)).

``ν`` is at least (up to the grid sums' rounding) the push-forward, losses rounded up, of the
fine pair's masses without those that land on the top atom; of those, each outcome ``j > 0``
(P-mass ``p_j = q_j e^{j h} >= q_j``) with its mirror ``−j`` (P-mass ``q_j``) and the loss-0
outcome form a measure ``μ`` whose normalized law is stochastically above a symmetric one
(move ``p_j − q_j`` of ``+j``'s mass to 0), so m draws of it sum to at least 0 with
probability at least 1/2: ``ν^{*m}([0, ∞)) >= μ(ℝ)^m (1 − ρ)^m / 2`` (ρ the sums' rounding).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.statement import PrivacyStatement

if TYPE_CHECKING:
    from crowdhide.accounting.shuffle.composition import ComposedShuffleParams

__all__ = ["log_binomial_floor", "log_delta_floor", "profile_floor", "rounds_apart_first"]

#: Draw counts of the top atom tried above the least that clears ε (any subset gives a valid
#: bound; the terms fall by ``R a (R − K)/(K + 1)`` per draw, so the first few are the largest).
_EXTRA_DRAWS = 3


def _pieces(eps0: float, n: int, rounds: int) -> tuple[float, float, float] | None:
    """``(log a, L, log of the bulk's per-draw factor (1 − ρ) μ(ℝ) rounded down)``, or
    None where the pair has no positive top atom."""
    from crowdhide.accounting.shuffle import profile_pair as pp

    fine = rounds < pp.FINE_BELOW_ROUNDS
    masses = pp._pair_masses(eps0, n, fine)
    if masses is None:
        return None
    coarse = pp._coarse_factor(masses, rounds)
    grid, step = pp._composed_grid(eps0, n, rounds)
    top = max(grid)
    if top <= 0 or not grid[top] > 0.0:
        return None
    # μ: the fine outcomes j > 0 not landing on the top atom, their mirrors, the loss-0 one
    paired = [j for j in masses if j > 0 and -((-j) // coarse) != top]
    terms = [masses[j] + masses.get(-j, 0.0) for j in paired] + [masses.get(0, 0.0)]
    count = len(masses) + len(terms) + 4  # roundings: the grid's sums and this one
    total = math.fsum(terms) * (1.0 - 4.0 * count * MACHINE_EPSILON)
    if not total > 0.0:
        return None
    bulk = math.log(total) - 4.0 * MACHINE_EPSILON * (abs(math.log(total)) + 1.0)
    return math.log(grid[top]), top * step, bulk


def log_binomial_floor(total: int, chosen: int) -> float:
    """A lower bound on ``log C(total, chosen)`` in O(1): ``C(n, k) >= (n / (8 k (n − k)))^½
    e^{n h(k/n)}``, ``h`` the entropy in nats (MacWilliams and Sloane, *The Theory of
    Error-Correcting Codes*, ch. 10, lemma 7), lowered by a relative 1e-12 for its roundings
    (``math.comb`` of R = 10^4 takes 5 ms at k = R/2).

    >>> import math
    >>> exact, floor = math.log(math.comb(100, 30)), log_binomial_floor(100, 30)
    >>> floor <= exact < floor + 2
    True
    """
    if chosen in (0, total):
        return 0.0
    rest = total - chosen
    entropy = chosen * math.log(total / chosen) + rest * math.log1p(chosen / rest)
    value = entropy + 0.5 * math.log(total / (8.0 * chosen * rest))
    return value - 1e-12 * (entropy + abs(value) + 1.0)


def log_delta_floor(eps0: float, n: int, rounds: int, epsilon: float) -> float:
    """A lower bound on ``log D(epsilon)`` of the composed profile pair's masses (module
    docstring; ``-inf`` where none is found)."""
    pieces = _pieces(eps0, n, rounds)
    return -math.inf if pieces is None else _floor_at(pieces, rounds, epsilon)


def _floor_at(pieces: tuple[float, float, float], rounds: int, epsilon: float) -> float:
    """:func:`log_delta_floor` from :func:`_pieces`."""
    if not epsilon >= 0.0:
        return -math.inf
    log_a, loss, bulk = pieces
    least = math.floor(epsilon / loss) + 1
    best = -math.inf
    for draws in range(least, min(least + _EXTRA_DRAWS, rounds) + 1):
        # K L (1 − 4u) − ε (1 + 4u): below the exact gap (three roundings, relative u each)
        gap = draws * loss * (1.0 - 4.0 * MACHINE_EPSILON) - epsilon * (1.0 + 4.0 * MACHINE_EPSILON)
        if not gap > 0.0:
            continue
        log_comb = log_binomial_floor(rounds, draws)
        value = log_comb + draws * log_a + (rounds - draws) * bulk - math.log(2.0)
        value += math.log(-math.expm1(-gap))
        # a few ulps of each term's float error, far below the margins this is used with
        value -= 1e-12 * (abs(log_comb) + draws * abs(log_a) + rounds * abs(bulk) + 10.0)
        best = max(best, value)
    return best


def profile_floor(eps0: float, n: int, rounds: int, delta: float) -> float | None:
    """A float ``x`` below the cap ``R ε0`` with :func:`log_delta_floor` above ``log δ``
    there, so every answer of the composed profile pair at δ is above ``x`` (module
    docstring), or None where none is found. A bisection on the bound (it need not be
    monotone: only the point returned is relied on, and it passed its own evaluation)."""
    target, pieces = math.log(delta), _pieces(eps0, n, rounds)
    if pieces is None:
        return None

    def above(x: float) -> bool:
        return _floor_at(pieces, rounds, x) > target

    cap = math.nextafter(rounds * eps0 * (1.0 - 1e-15), 0.0)  # below product_up(R, ε0)
    if not above(0.0):
        return None
    if above(cap):
        return cap
    lo, hi = 0.0, cap
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if not lo < mid < hi:
            break
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return lo


def rounds_apart_first(
    params: ComposedShuffleParams, query: dict[str, float]
) -> PrivacyStatement | None:
    """``best``'s answer for a δ query at or below the composition allowance's floor
    (generic randomizer, n users every round, ``substitute``: the caller asks only then),
    where the composed part is the profile pair alone: the rounds-apart members, screened
    against :func:`profile_floor` instead of the pair's answer, where their least is at or
    below that floor (the pair's answer is then above it: it can neither win nor tie); else
    None (the pair first, as before). The members' values do not depend on what they are
    screened against, and one skipped against the floor is at or above it, so the least is
    the same float as after the pair."""
    from crowdhide.accounting.composition import LEAST_COMPOSITION_ERROR
    from crowdhide.accounting.shuffle._rounds_apart import rounds_apart

    delta = query.get("delta")
    if delta is None or params.rounds < 2 or not delta <= LEAST_COMPOSITION_ERROR:
        return None
    eps0, n, rounds = params.eps0, params.n, params.rounds
    floor = profile_floor(eps0, n, rounds, delta)
    if floor is None or not floor > 0.0:
        return None
    stand_in = PrivacyStatement(epsilon=floor, delta=delta, source="profile_pair floor")
    apart = rounds_apart(eps0, n, rounds, query, stand_in)
    if apart is None or not apart.is_certificate or not apart.epsilon <= floor:
        return None
    return apart.with_notes(
        f"profile_pair not composed: its epsilon at this delta is above {floor:.6g} "
        "(a lower bound on its composed masses' delta, _profile_floor.py), the answer's "
        "is not"
    )
