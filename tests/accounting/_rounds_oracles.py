"""Exact references for composed shuffled rounds, shared by the composition tests: the R-fold
product of a privacy-loss distribution; for the rounds-apart members (basic composition of
FMT21's or ``best``'s round, advanced composition), binary randomized response's worst pair,
its R-fold product outcome by outcome, and rounding a rational down to a float."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def round_down(x: Fraction) -> float:
    """The largest float at most ``x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, 0.0)


def binary_pair(n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """Binary randomized response, n - 1 others on 0: the count of ones with the target on
    1 (P) and on 0 (Q), exact to float rounding (the worst dataset pair for k = 2)."""
    from scipy.stats import binom

    p1 = math.exp(eps0) / (math.exp(eps0) + 1.0)
    others = binom.pmf(np.arange(n), n - 1, 1.0 - p1)
    p, q = np.zeros(n + 1), np.zeros(n + 1)
    p[1:] += others * p1
    p[:-1] += others * (1.0 - p1)
    q[1:] += others * (1.0 - p1)
    q[:-1] += others * p1
    return p, q


def composed_delta(p: np.ndarray, q: np.ndarray, rounds: int, eps: float) -> float:
    """δ(ε) of the R-fold product of (p, q), outcome by outcome."""
    jp, jq = p, q
    for _ in range(rounds - 1):
        jp, jq = np.outer(jp, p).ravel(), np.outer(jq, q).ravel()
    return float(np.maximum(jp - math.exp(eps) * jq, 0.0).sum())


def product_loss_delta(
    loss: np.ndarray, prob: np.ndarray, rounds: int, eps: np.ndarray
) -> np.ndarray:
    """Exact δ(ε) at each ``eps`` of the ``rounds``-fold product of a privacy-loss
    distribution (losses ``loss`` with probabilities ``prob``; losses added, probabilities
    multiplied; an infinite loss counts in full)."""
    tot_l, tot_p = np.zeros(1), np.ones(1)
    for _ in range(rounds):
        tot_l = (tot_l[:, None] + loss[None, :]).ravel()
        tot_p = (tot_p[:, None] * prob[None, :]).ravel()
    inf = np.isinf(tot_l)
    gap = np.minimum(eps[:, None] - tot_l[None, ~inf], 0.0)
    finite = np.sum(np.where(gap < 0.0, tot_p[None, ~inf] * -np.expm1(gap), 0.0), axis=1)
    return np.asarray(finite + tot_p[inf].sum())


def each_round_meets_its_share(
    eps0: float, n: int, rounds: int, epsilon: float, delta: float, **bound: str
) -> bool:
    """The premise of basic composition in exact rationals: R times the single-round
    certificate's δ (``best``'s, or the ``bound`` named) at ε/R rounded down is at most δ."""
    from crowdhide.accounting.shuffle import generic

    share = round_down(Fraction(epsilon) / rounds)
    one = generic.shuffle_delta(eps0=eps0, n=n, epsilon=share, lower=False, **bound)
    return one.is_certificate and rounds * Fraction(one.delta) <= Fraction(delta)


def third_value_pair(n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """3-RR, the n - 1 others on a third value z: the probabilities of the counts (a, b) of
    reports x and x' with the target on x (P) and on x' (Q), outcome by outcome (flattened),
    from the others' multinomial and the target's three reports."""
    from scipy.stats import multinomial

    e = math.exp(eps0)
    q, keep = 1.0 / (e + 2.0), e / (e + 2.0)
    pairs = [(a, b) for a in range(n + 1) for b in range(n + 1 - a)]
    others = {
        (a, b): float(multinomial.pmf([a, b, n - 1 - a - b], n - 1, [q, q, keep]))
        for a in range(n) for b in range(n - a)
    }  # fmt: skip

    def m(a: int, b: int) -> float:
        return others.get((a, b), 0.0)

    p = np.array([keep * m(a - 1, b) + q * m(a, b - 1) + q * m(a, b) for a, b in pairs])
    r = np.array([q * m(a - 1, b) + keep * m(a, b - 1) + q * m(a, b) for a, b in pairs])
    return p, r


def two_round_delta(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """δ(ε) of the two-fold product of (p, q) (q > 0 wherever p > 0), by sorted suffix sums
    of one round's losses: ``Σ_o p(o) h(ε − L(o))`` with ``h(t) = Σ_{L > t} p (1 − e^{t − L})``."""
    live = p > 0.0
    loss, mass = np.log(p[live]) - np.log(q[live]), p[live]
    order = np.argsort(loss)
    loss, mass = loss[order], mass[order]
    upper = np.append(np.cumsum(mass[::-1])[::-1], 0.0)
    tilted = np.append(np.cumsum((mass * np.exp(-loss))[::-1])[::-1], 0.0)
    t = eps - loss
    index = np.searchsorted(loss, t, side="right")
    h = np.maximum(upper[index] - np.exp(t) * tilted[index], 0.0)
    return float(np.dot(mass, h))
