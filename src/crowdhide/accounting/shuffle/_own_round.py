"""R shuffled rounds by basic composition of ``best``'s own single-round answer (internal).

Each round of a composed question (the same n users, no sampling, ``substitute``) is one
shuffle of n ε0-LDP reports, so the single-round ``best`` certificate for any ε0-LDP
randomizer (:func:`~crowdhide.accounting.shuffle.generic.shuffle_epsilon`) certifies it,
whatever the randomizer (k-RR and a mechanism included: their reports are ε0-LDP). Basic
composition then gives ``(R ε1(δ/R), δ)`` and ``(ε, R δ1(ε/R))``
(:class:`~._rounds_apart.RoundsApartCurve` rounds each quotient down, each product up).

Why beside the FMT21 member (issue 32, item 3): at δ = 1e-20 the single round's ``best``
(variation_ratio) is below FMT21's, by up to ×1.42 at 10 rounds (ε0 = 8, n = 1e9:
0.2986 → 0.2103); docs/proofs/profile-pair.md §20.

Cost: one single-round query is 35-700 ms, so it is asked only where it can win. Binary
randomized response is ε0-LDP, so the exact δ of its "others on x'" dataset
(:func:`~._krr_fast.binary_same_lower_log_delta`, a rigorous lower bound, O(1) at any n) is
at most the round's δ under any certificate; where that alone puts ``R ε1`` (or ``R δ1``)
above the best answer already found, the member cannot win and is not asked (under a
millisecond). Below :data:`OWN_ROUND_MIN_DELTA` per round it is not asked either (the
single-round floor of ``variation_ratio`` until s36-deep: its per-round searches cost 0.1-2 s
there), and ``best`` answers FMT21's certificate (the FMT21 member's) or a closed form's at ε0
(a cost choice: skipping a member never makes an answer unsound).
"""

from __future__ import annotations

import math

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.shuffle._krr_fast import (
    binary_same_lower_log_delta,
    krr_third_marginal_lower_log_delta,
)
from crowdhide.accounting.shuffle._rounds_apart import RoundsApartCurve, _down, _up
from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["OWN_SOURCE", "OwnRoundCurve", "own_rounds"]

#: The statement's source: basic composition of the single-round ``best`` certificate.
OWN_SOURCE = "basic_composition:best"
#: Per-round δ below which the member is not asked (module docstring): a cost choice, kept at
#: the former single-round floor of ``variation_ratio`` when that floor was removed (s36-deep).
OWN_ROUND_MIN_DELTA = 1e-280


class OwnRoundCurve(PrivacyCurve):
    """One round's ``best`` certificate for any ε0-LDP randomizer, as a curve: each call is
    one single-round query (``lower=False``), its statement's number if a certificate."""

    def __init__(self, eps0: float, n: int) -> None:
        self.eps0, self.n = eps0, n

    def epsilon(self, delta: float) -> float:
        from crowdhide.accounting.shuffle import generic

        st = generic.shuffle_epsilon(eps0=self.eps0, n=self.n, delta=delta, lower=False)
        return st.epsilon if st.is_certificate else math.inf

    def delta(self, epsilon: float) -> float:
        from crowdhide.accounting.shuffle import generic

        st = generic.shuffle_delta(eps0=self.eps0, n=self.n, epsilon=epsilon, lower=False)
        return st.delta if st.is_certificate else 1.0

    def log_delta(self, epsilon: float) -> float:
        d = self.delta(epsilon)
        return _up(math.log(d)) if d > 0.0 else -math.inf  # math.log errs by under an ulp


def own_rounds(
    eps0: float, n: int, rounds: int, query: dict[str, float], beaten: float
) -> PrivacyStatement | None:
    """The member's statement at ``query``, or None where ``rounds < 2`` or it certainly
    does not beat ``beaten`` (the smallest certificate's ε, at an ε query's δ, or δ at a δ
    query's ε, found so far; ``inf``: none) or is not asked (module docstring)."""
    if rounds < 2:
        return None
    curve = RoundsApartCurve(OwnRoundCurve(eps0, n), rounds, "best's own (any eps0-LDP)")
    if "epsilon" in query:
        epsilon = query["epsilon"]
        per_round = _down(epsilon / rounds)
        if beaten < rounds * OWN_ROUND_MIN_DELTA or _delta_above(
            eps0, n, per_round, beaten, rounds
        ):
            return None
        return _statement(epsilon, curve.delta(epsilon), curve)
    delta = query["delta"]
    share = _down(delta / rounds)
    if share < OWN_ROUND_MIN_DELTA:
        return None
    if math.isfinite(beaten) and lower_bound_epsilon_above(eps0, n, share, beaten / rounds):
        return None
    return _statement(curve.epsilon(delta), delta, curve)


def lower_bound_epsilon_above(eps0: float, n: int, share: float, per_round: float) -> bool:
    """Whether every certificate's ε at ``share`` is above ``per_round`` (a quotient, so
    moved up two ulps first): binary RR's exact δ there, bounded below, is above ``share``,
    so its ε at ``share`` — at most any certificate's — is above that point.

    Told by the lower bounds alone, for any ε0-LDP certificate; its near-namesake
    :func:`~._best.epsilon_above` tells it for one given certificate curve, by one
    evaluation of that curve."""
    point = _up(per_round)
    if not point < eps0:
        return False
    return _lower_log_delta_above(n, eps0, point, _up(math.log(share), 4))


def _delta_above(eps0: float, n: int, per_round: float, beaten: float, rounds: int) -> bool:
    """Whether ``rounds`` times every certificate's δ at ``per_round`` is above ``beaten``:
    binary RR's exact δ there, bounded below, times ``rounds`` is."""
    if not 0.0 < beaten <= 1.0:
        return False
    limit = math.log(beaten) - math.log(rounds)
    return _lower_log_delta_above(n, eps0, per_round, limit + 1e-12 * (1.0 + abs(limit)))


def _lower_log_delta_above(n: int, eps0: float, epsilon: float, limit: float) -> bool:
    """Whether a rigorous lower bound on the log δ at ``epsilon`` of some ε0-LDP randomizer
    shuffled (binary RR, others on x', O(1); then 3-RR, others on a third value, 1-4 ms:
    ``ldp_lower``'s two members) is above ``limit``. Binary RR's alone is 17-30 % looser in
    ε at δ = 1e-20 (ε0 = 1-8), enough where the member loses by √R; 3-RR's is within
    0.1 % of the member at ε0 = 8, n = 1e9."""
    if binary_same_lower_log_delta(n, eps0, epsilon) > limit:
        return True
    return krr_third_marginal_lower_log_delta(n, 3, eps0, epsilon) > limit


def _statement(epsilon: float, delta: float, curve: RoundsApartCurve) -> PrivacyStatement:
    return PrivacyStatement(epsilon=epsilon, delta=delta, source=OWN_SOURCE, notes=curve.notes)
