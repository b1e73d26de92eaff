"""R shuffled rounds certified one round at a time (internal): basic composition of the
single-round FMT21 certificate, a member of ``best`` for composed rounds.

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
from typing import Any

from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["SOURCE", "rounds_apart"]

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


def rounds_apart(
    eps0: float,
    n: int,
    rounds: int,
    query: dict[str, float],
    composed: PrivacyStatement | None,
) -> PrivacyStatement | None:
    """The basic composition of ``rounds`` FMT21 single-round certificates (n users in
    every round, ``substitute``: the caller asks only then), or None where FMT21 does not
    apply or, at an ε query, certainly does not beat ``composed`` (one evaluation tells;
    None: no composed answer to beat)."""
    from crowdhide.accounting.shuffle import generic
    from crowdhide.accounting.shuffle._best import epsilon_above
    from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY, ShuffleParams

    if rounds < 2:
        return None
    shuffle_params = ShuffleParams(eps0=eps0, n=n)
    bound = SHUFFLE_REGISTRY["feldman2021"]
    if bound.applies(shuffle_params) is not None:
        return None
    kw: dict[str, Any] = {"eps0": eps0, "n": n, "bound": "feldman2021"}
    if "delta" in query:
        delta = query["delta"]
        # R δ1 <= δ: the quotient's rounding (at most half an ulp) taken back twice over
        delta1 = _down(delta / rounds)
        if delta1 <= 0.0:
            return None
        known = composed is not None and composed.is_certificate and math.isfinite(composed.epsilon)
        if known and epsilon_above(bound.curve(shuffle_params), delta1, composed.epsilon / rounds):  # type: ignore[union-attr]
            return None  # its ε is above the composed answer's: cannot win
        one = generic.shuffle_epsilon(**kw, delta=delta1, lower=False)
        # (1 + 1e-15) then two ulps: R ε1 rounded up, with room for the δ query's quotient
        # ε/R, rounded down, to stay at or above ε1 (the round trip of section 17)
        return _statement(_up(one.epsilon * rounds * (1.0 + 1e-15)), delta, rounds, one)
    epsilon = query["epsilon"]
    one = generic.shuffle_delta(**kw, epsilon=_down(epsilon / rounds), lower=False)
    return _statement(epsilon, min(1.0, _up(one.delta * rounds)), rounds, one)


def _statement(
    epsilon: float, delta: float, rounds: int, one: PrivacyStatement
) -> PrivacyStatement:
    return PrivacyStatement(
        epsilon=epsilon,
        delta=delta,
        source=SOURCE,
        notes=(
            f"basic composition of {rounds} rounds, each (epsilon={one.epsilon:.6g}, "
            f"delta={one.delta:.3g}) by the FMT21 clone pair's single-round certificate",
        ),
    )
