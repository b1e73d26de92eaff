"""R composed rounds of a PLD with one far atom: a mixture over the number of its draws.

The profile pair's top atom (the hull's chord to ``ε0 + h``) has a tiny P-mass ``a``
(1e-28 … 1e-16) at a loss ``L`` far beyond a bulk near 0. Where ``R a`` is far above δ
(δ = 1e-300) it cannot be left out (:func:`~._tilted_pld.split_top`), and composed with
the rest under one tilt (:mod:`._tilted_pld`) it lays its multiples ``K L`` out on one
grid: millions of FFT points (0.3–3 s a query) whose ℓ1 error bound, relative to δ, is what
decides the answer. Here the count K of its draws is taken out instead. With
``ω = ν + a·1_L`` (``ν`` the rest, a sub-probability), the R-fold convolution is exactly

    ω^{*R} = Σ_K C(R, K) a^K · (ν^{*(R−K)} shifted by K L),

so ``δ(ε) = Σ_K C(R, K) a^K δ_ν^{(R−K)}(ε − K L)`` with ``δ_ν^{(m)}(x) = Σ_l ν^{*m}(l)
(1 − e^{x − l})_+`` (``x`` may be negative). Each ``ν^{*m}`` is short; those for
``m = R − J … R`` are one repeated squaring to ``R − J`` and ``J`` single convolutions,
all under one tilt λ (:func:`~._tilted_pld.tilted_composition`'s error model, each term
its own ℓ1 bound). Their error terms sum to at most ``E M_ω(λ)^R e^{−λ ε}``: the same
relative size as the long composition's, from FFTs thousands of points long. The terms
``K > J`` are charged in full: ``δ_ν^{(m)} <= ν(ℝ)^m`` and, for ``R a <= 1/2``,
``Σ_{K > J} C(R, K) a^K <= 2 C(R, J + 1) a^{J + 1}`` (each ratio of consecutive terms is
``a (R − K)/(K + 1) <= R a``). Far *negative* atoms (the top's mirror, P-mass
``a e^{−L}``) are moved up to the bulk's lowest loss first (raising a loss raises every
composed δ). Proof and error margins: docs/proofs/profile-pair.md §13; tests:
``tests/accounting/test_far_mixture.py``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from crowdhide.accounting._fft_spectra import spectrum_kept
from crowdhide.accounting.composition import repeated_squaring
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.pld_pmf import Pmf, to_dense
from crowdhide.accounting.shuffle._tilted_pld import (
    TiltedPld,
    _convolved,
    _tilted_pmf,
    log_moments,
    probed_root,
)

__all__ = [
    "FarMixture",
    "far_mixture",
    "far_split",
    "mixture_depth",
    "mixture_lambda",
    "spread_ratio",
]

#: The terms of more than J draws are charged in full; J is the least that keeps their
#: bound within this share of δ (it moves ε by about that share over d log δ/dε).
TAIL_SHARE = 1e-6
#: Most draws composed apart (each one convolution of the bulk); beyond, no mixture.
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class FarMixture:
    """``δ(ε) = Σ_{K <= J} C(R, K) a^K δ_ν^{(R−K)}(ε − K L) + tail`` (module docstring),
    every part an upper bound, in log space."""

    far_loss: float  #: L, the far atom's loss (its grid index times the step)
    log_coef: tuple[float, ...]  #: ``log C(R, K) a^K`` rounded up, K = 0 … J
    terms: tuple[TiltedPld, ...]  #: ``ν^{*(R−K)}`` under the tilt, K = 0 … J
    log_tail: float  #: log of the bound on the terms ``K > J``

    def _at(self, epsilon: float, draws: int) -> float:
        """``ε − K L`` lowered by its rounding (``L``, ``K L`` and the difference: a relative
        u each), so the losses above the true threshold are all read."""
        shift = draws * self.far_loss
        slack = 4.0 * MACHINE_EPSILON * (abs(epsilon) + 2.0 * shift + 1.0)
        return (epsilon - shift) - slack

    def log_delta(self, epsilon: float) -> float:
        """An upper bound on ``log δ(ε)`` of the exact R-fold composition of ``ν + a·1_L``."""
        parts = [
            coef + term.log_delta(self._at(epsilon, draws))
            for draws, (coef, term) in enumerate(zip(self.log_coef, self.terms, strict=True))
        ]
        return _log_sum_up([*parts, self.log_tail])

    def log_error(self, epsilon: float) -> float:
        """``log`` of the error terms' share of :meth:`log_delta` (to tell a settled tilt)."""
        parts = [
            coef + term.log_error(self._at(epsilon, draws))
            for draws, (coef, term) in enumerate(zip(self.log_coef, self.terms, strict=True))
        ]
        return float(functools.reduce(np.logaddexp, parts, -math.inf))

    def epsilon(self, delta: float, cap: float, *, near: bool = False) -> float:
        """The smallest ε in ``[0, cap]`` whose :meth:`log_delta` meets ``delta``, from the
        safe side; ``cap`` when none below it does (as :meth:`TiltedPld.epsilon`)."""
        guess = None if near else self.chernoff_epsilon(delta)
        slope = self.terms[0].lam if self.terms else None
        target = math.log(delta)
        return probed_root(self.log_delta, target, cap, guess=guess, slope=slope, near=near)

    def chernoff_epsilon(self, delta: float) -> float | None:
        """A start for the search (never an answer): the least ε at which every term's
        Chernoff bound ``C(R, K) a^K M^{R−K} e^{−λ (ε − K L)}``, or its ceiling where that
        is lower, is within ``δ/(J + 2)``, and the tail too; None where the tail is not."""
        share = math.log(delta) - math.log(len(self.terms) + 1.0)
        if self.log_tail > share:
            return None
        start = 0.0
        for draws, (coef, term) in enumerate(zip(self.log_coef, self.terms, strict=True)):
            if coef + term.ceiling > share and term.lam > 0.0:
                reach = (coef + term.log_scale - share) / term.lam + draws * self.far_loss
                start = max(start, reach)
        return start if start > 0.0 else None


def _log_sum_up(parts: list[float]) -> float:
    """``log Σ e^{p}`` rounded up: each exponent ``p − top`` one rounding, each ``exp`` and
    the n additions a relative u, the ``log`` and the final addition one more."""
    top = max(parts)
    if top == -math.inf:
        return -math.inf
    total = math.fsum(math.exp(p - top) for p in parts)
    value = top + math.log(total)
    spread = max(abs(p) for p in parts if p > -math.inf)
    return value + 8.0 * MACHINE_EPSILON * (spread + len(parts) + 4.0)


def far_split(masses: dict[int, float]) -> tuple[dict[int, float], int, float]:
    """``(ν, top, a)``: the PLD without its top atom (index ``top``, mass ``a``), its atoms
    below ``−top/2`` (the top's mirror) moved up to the lowest loss at or above it, their
    mass sums rounded up."""
    top = max(masses)
    rest = {j: m for j, m in masses.items() if j != top}
    floor = -(top // 2)
    low = min((j for j in rest if j >= floor), default=0)
    for j in [j for j in rest if j < floor]:
        rest[low] = (rest.get(low, 0.0) + rest.pop(j)) * (1.0 + 2.0 * MACHINE_EPSILON)
    return rest, top, masses[top]


def _log_mass_per_round(rest: dict[int, float]) -> float:
    """``max(0, log ν(ℝ))`` rounded up: ``δ_ν^{(m)} <= ν(ℝ)^m`` (the rounded-up masses may
    sum to a few ulps above 1)."""
    total = math.fsum(rest.values()) * (1.0 + 2.0 * MACHINE_EPSILON)
    return math.log(total) * (1.0 + 4.0 * MACHINE_EPSILON) if total > 1.0 else 0.0


def _log_coefficient(rounds: int, draws: int, log_a: float) -> float:
    """``log C(R, K) + K log a`` rounded up: ``C`` is an exact integer, its ``log`` off by a
    few ulps (the conversion and the ``log``), ``K log a`` by a few more."""
    log_comb = math.log(math.comb(rounds, draws))
    value = log_comb + draws * log_a
    return value + 8.0 * MACHINE_EPSILON * (abs(log_comb) + draws * abs(log_a) + 2.0)


def _log_binomial_tail(rounds: int, depth: int, log_b: float) -> float:
    """``log`` of a bound on ``Σ_{K > J} C(R, K) b^K``: ``2 C(R, J + 1) b^{J + 1}`` where
    every ratio of consecutive terms, at most ``(R − J − 1) b / (J + 2)``, is at most 1/2
    (checked with room for its roundings), else inf; −inf where ``J >= R`` leaves none."""
    if depth >= rounds:
        return -math.inf
    log_ratio = (
        math.log(rounds - depth - 1) + log_b - math.log(depth + 2)
        if depth + 1 < rounds
        else -math.inf
    )
    if log_ratio > math.log(0.5) - 1e-9:
        return math.inf
    value = math.log(2.0) + _log_coefficient(rounds, depth + 1, log_b)
    return value + 4.0 * MACHINE_EPSILON * (abs(value) + 1.0)


def _log_tail(rounds: int, depth: int, log_a: float, per_round: float) -> float:
    """``log`` of the bound on the terms ``K > J``, charged in full (``δ_ν^{(m)} <= ν(ℝ)^m
    <= ν(ℝ)^R`` with ``ν(ℝ) >= 1``, else 1)."""
    tail = _log_binomial_tail(rounds, depth, log_a)
    return tail + rounds * per_round * (1.0 + 2.0 * MACHINE_EPSILON)


def spread_ratio(
    masses: dict[int, float], rest: dict[int, float], step: float, lam: float
) -> float:
    """How many times wider the tilted PLD's spread (standard deviation under ``e^{λ l}``) is
    with the far atom than without: about how much longer its composition is (for choosing
    the mixture only)."""

    def variance(atoms: dict[int, float]) -> float:
        loss = np.fromiter(atoms, dtype=np.float64, count=len(atoms)) * step
        x = np.log(np.fromiter(atoms.values(), dtype=np.float64, count=len(atoms))) + lam * loss
        weight = np.exp(x - x.max())
        weight /= weight.sum()
        mean = float(weight @ loss)
        return float(weight @ (loss - mean) ** 2)

    bulk = variance(rest)
    return math.sqrt(variance(masses) / bulk) if bulk > 0.0 else math.inf


def _term_bounds(
    rest: dict[int, float], a: float, step: float, rounds: int, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(λ grid, log M(λ), log C(R, K) a^K)``: the pieces of the terms' Chernoff bounds
    ``C(R, K) a^K M(λ)^{R−K} e^{−λ (ε − K L)}`` on :func:`~._tilted_pld.chernoff_lambda`'s
    grid (for choosing λ only)."""
    grid, moments = log_moments(rest, step)
    coef = np.array([_log_coefficient(rounds, k, math.log(a)) for k in range(depth + 1)])
    return grid, moments, coef


def _chernoff_terms(
    pieces: tuple[np.ndarray, np.ndarray, np.ndarray], far_loss: float, rounds: int, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each term's least Chernoff bound at ε and its λ (rows: K = 0 … J)."""
    grid, moments, coef = pieces
    draws = np.arange(coef.size)
    scores = (
        coef[:, None]
        + (rounds - draws)[:, None] * moments[None, :]
        - grid[None, :] * (epsilon - draws * far_loss)[:, None]
    )
    at = np.argmin(scores, axis=1)
    return scores[draws, at], grid[at]


def mixture_lambda(
    rest: dict[int, float], a: float, step: float, far: int, rounds: int, depth: int, epsilon: float
) -> float:
    """A tilt for the mixture at ε (any λ >= 0 is valid; this only puts the error terms
    where they are read): the bulk's Chernoff saddle of the term ``K <= J`` with the largest
    Chernoff bound at ε. The whole pair's saddle serves the far draws' count, which the
    mixture takes out exactly, and can leave the bulk untilted where one term decides."""
    pieces = _term_bounds(rest, a, step, rounds, depth)
    scores, lams = _chernoff_terms(pieces, far * step, rounds, epsilon)
    return float(lams[int(np.argmax(scores))])


def mixture_depth(rest: dict[int, float], a: float, rounds: int, delta: float) -> int | None:
    """The least J (``<= min(R − 1,`` :data:`MAX_DEPTH` ``)``) whose tail, charged in full,
    is within :data:`TAIL_SHARE` of δ; None where none is (or ``a`` is 0)."""
    if not a > 0.0:
        return None
    log_a, per_round = math.log(a), _log_mass_per_round(rest)
    goal = math.log(delta) + math.log(TAIL_SHARE)
    for depth in range(min(rounds - 1, MAX_DEPTH) + 1):
        if _log_tail(rounds, depth, log_a, per_round) <= goal:
            return depth
    return None


def far_mixture(
    rest: dict[int, float], top: int, a: float, step: float, rounds: int, lam: float, depth: int
) -> FarMixture:
    """The mixture of ``rounds`` compositions of ``rest + a·1_{top·step}`` with ``depth``
    draws of the far atom composed apart (module docstring), all under the tilt λ."""
    pmf, log_m, error = _tilted_pmf(rest, step, lam)
    base: tuple[Pmf, float] = (pmf, error)
    power = repeated_squaring(base, rounds - depth, _convolved)
    chain = [power]
    with spectrum_kept(pmf.probs):  # ν's transform once per FFT length
        for _ in range(depth):  # ν^{*(m+1)} = ν^{*m} * ν: one short convolution per draw
            power = _convolved(power, base)
            chain.append(power)
    per_round, log_a = _log_mass_per_round(rest), math.log(a)
    terms = []
    for draws in range(depth + 1):
        m = rounds - draws
        ceiling = m * per_round * (1.0 + 2.0 * MACHINE_EPSILON)
        terms.append(_untilted(chain[depth - draws], step, m * log_m, lam, ceiling))
    coef = tuple(_log_coefficient(rounds, k, log_a) for k in range(depth + 1))
    tail = _log_tail(rounds, depth, log_a, per_round)
    return FarMixture(top * step, coef, tuple(terms), tail)


def _untilted(
    composed: tuple[Pmf, float], step: float, log_scale: float, lam: float, ceiling: float
) -> TiltedPld:
    """A composed tilted PMF as a :class:`TiltedPld` keeping *every* loss (a shifted term
    reads negative ones), with :func:`~._tilted_pld.tilted_composition`'s untilt margin."""
    pmf, total = composed
    dense = to_dense(pmf)
    index = dense.lower + np.arange(dense.probs.size, dtype=np.int64)
    keep = dense.probs > 0.0
    log_mass = np.log(dense.probs[keep]) + log_scale - lam * (index[keep] * step)
    reach = float(max(abs(int(index[0])), abs(int(index[-1])))) * step
    margin = 8.0 * MACHINE_EPSILON * (abs(log_scale) + lam * reach + 750.0)  # |log ĉ| <= 745
    return TiltedPld(step, index[keep], log_mass, log_scale, lam, total, margin, 0.0, ceiling)
