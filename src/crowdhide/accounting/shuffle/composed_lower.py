"""A lower bound on the ε of R composed shuffles, from explicit datasets (issue 32).

A composed certificate (:func:`~crowdhide.accounting.shuffle.composition.composed_shuffle`)
says how private R rounds are *at most*; this module says how private they are *at least*
for two ε0-LDP randomizers on explicit pairs of neighbouring datasets
(:mod:`._lower_round_pmfs`: ``ldp_lower``'s 3-RR and binary datasets), so the gap between the
two can be read at R > 1 as :func:`~crowdhide.accounting.shuffle.query.shuffle_epsilon`'s
``lower`` reads it for one round. Each round draws afresh, so R rounds reveal at least the
R rounds' counts: a product pair whose privacy-loss distribution is the R-fold convolution
of one round's.

**Rounded down, everywhere.** For a product pair ``δ_R(ε) = E_{P^R}[(1 − e^{ε − Σ L_i})_+]``
(L the loss ``log P/Q`` of one round) is non-negative and non-decreasing in every ``L_i``;
so masses lowered and losses rounded down to a grid only lower it. One round's PMFs are built
that way; each composition (:func:`~crowdhide.accounting.pld_pmf.compose_pmfs`, optimistic:
tails dropped or moved down) carries :func:`~crowdhide.accounting.composition.convolution_error`,
a bound on its ℓ1 distance from the exact convolution of its operands, and a coarser grid
(step doubled, mass moved down, the sums' rounding added to the error) is taken whenever a
composed PMF outgrows :data:`MAX_GRID`. Reading δ at ε: the weights ``(1 − e^{ε − l})_+``
lie in [0, 1], so an ℓ1 error ``e`` moves δ by at most ``e``, and the dot product's rounding
by a relative γ of ``Σ |w p|``, which is at most ``δ̂ + 2e``: ``δ_R(ε) >= (δ̂ − 2γe)/(1 + γ)
− e``, read at ε raised by the float losses' rounding. Where that is above the δ asked at x,
the true ε(δ) is at least x (δ is non-increasing). Both directions (x against x' and back)
and both datasets are composed; the largest is read.

**Also at least one round's.** The first round alone is a post-processing of R rounds, so
``ldp_lower``'s single-round bound is one too, and the larger is returned. Where the
composed PMFs' error ``e`` (it grows with R: about 1e-8 at R = 10^4) or their tail
truncation leaves nothing above δ — at δ = 1e-300, at 1e-10 from about 10^4 rounds — only
that one is left.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.pld_pmf import DensePmf, compose_pmfs, to_dense
from crowdhide.accounting.shuffle._lower_round_pmfs import DATASETS, Held, round_pmfs
from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["MAX_GRID", "SOURCE", "composed_log_delta_lower", "composed_lower_epsilon"]

FloatArray = npt.NDArray[np.float64]

SOURCE = "composed_ldp_lower"
#: Grid points a composed PMF may hold before its step is doubled: 2^19 (at 2^21 the bound
#: at 10^4 rounds, ε0 = 1 and 8, moves by under 3e-5 relative, at 4x the time).
MAX_GRID = 1 << 19
#: Grid points of one round's PMF (its losses spread over them).
_FIRST_GRID = 1 << 18
_U = MACHINE_EPSILON / 2.0


def _coarsened(held: Held, factor: int) -> Held:
    """The PMF on the grid of step ``factor · step`` (a power of two: the step stays exact),
    each mass moved down to the point at or below it."""
    pmf, error = held
    if factor == 1:
        return held
    index = np.arange(pmf.size, dtype=np.int64) + pmf.lower
    coarse = np.floor_divide(index, factor)
    low = int(coarse[0])
    probs = np.bincount(coarse - low, weights=pmf.probs).astype(np.float64)
    error += 2.0 * _U * factor * float(np.sum(np.abs(pmf.probs)))
    return DensePmf(pmf.step * factor, low, probs, pmf.infinity_mass, pessimistic=False), error


def _composed(first: Held, second: Held) -> Held:
    """Two held PMFs composed on the coarser of their grids, the result coarsened (step
    doubled) until it holds at most :data:`MAX_GRID` points."""
    from crowdhide.accounting.composition import convolution_error

    step = max(first[0].step, second[0].step)
    first = _coarsened(first, round(step / first[0].step))
    second = _coarsened(second, round(step / second[0].step))
    pmf = to_dense(compose_pmfs(first[0], second[0]))  # dense operands: dense already
    factor = 1
    while pmf.size > MAX_GRID * factor:
        factor *= 2
    return _coarsened((pmf, convolution_error(first[0], second[0], first[1], second[1])), factor)


@functools.lru_cache(maxsize=16)
def _rounds_pmfs(eps0: float, n: int, rounds: int, dataset: str) -> tuple[Held, Held]:
    """Both directions' PMFs of ``rounds`` rounds of ``dataset`` (repeated squaring), cached
    per ``(ε0, n, R)``: the three δ of a table row read the same ones."""
    from crowdhide.accounting.composition import repeated_squaring

    forward, backward = round_pmfs(eps0, n, _FIRST_GRID, dataset)
    return (
        repeated_squaring(forward, rounds, _composed),
        repeated_squaring(backward, rounds, _composed),
    )


def _losses(pmf: DensePmf) -> FloatArray:
    """The grid losses ``(lower + i) · step`` as floats (each within ``u`` relative)."""
    return (np.arange(pmf.size, dtype=np.float64) + pmf.lower) * pmf.step


def _read_lower(held: Held, epsilon: float) -> float:
    """A proven lower bound on the exact composition's δ at ``epsilon`` (module docstring):
    read at ``epsilon`` raised by the float losses' rounding, so that every weight used is at
    most the exact one."""
    pmf, error = held
    losses = _losses(pmf)
    reach = float(np.max(np.abs(losses))) if losses.size else 0.0
    at = epsilon + 4.0 * _U * (1.0 + reach + epsilon)
    above = losses > at
    weights = -np.expm1(at - losses[above])
    raw = float(np.dot(weights, pmf.probs[above]))
    gamma = (pmf.size + 8.0) * MACHINE_EPSILON
    return (raw - 2.0 * gamma * error) / (1.0 + gamma) - error


def _rough_epsilon(pmf: DensePmf, delta: float) -> float:
    """Where the PMF's δ, as floats read it, falls to ``delta`` (0.0 if it is already
    there at 0): suffix sums ``U = Σ p``, ``V = Σ p e^{−l}`` over the losses above each
    grid point, then ``log((U − δ)/V)`` in the step where ``U − e^l V`` crosses ``delta``.
    Only a place to look: :func:`_epsilon_lower` checks it."""
    losses = _losses(pmf)
    positive = losses > 0.0
    grid, probs = losses[positive], pmf.probs[positive]
    if grid.size == 0:
        return 0.0
    mass = np.cumsum(probs[::-1])[::-1]  # U at index i: Σ_{j >= i}
    tilted = np.cumsum((probs * np.exp(-grid))[::-1])[::-1]
    upper = np.append(mass[1:], 0.0)  # the losses strictly above grid[i]
    lower = np.append(tilted[1:], 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        at_points = upper - np.exp(grid + np.log(lower))  # δ at each grid loss (nan: not)
    passing = np.nonzero(at_points > delta)[0]
    if passing.size == 0:
        return 0.0
    i = int(passing[-1])
    if not (upper[i] > delta and lower[i] > 0.0):
        return float(grid[i])
    return max(float(grid[i]), math.log((upper[i] - delta) / lower[i]))


def _epsilon_lower(held: Held, delta: float) -> float:
    """A point x where :func:`_read_lower` is above ``delta`` (so the true ε(δ) >= x),
    searched down from :func:`_rough_epsilon` (at most 40 checks), or 0.0."""
    guess = _rough_epsilon(held[0], delta)
    for k in range(40):
        x = guess * (1.0 - 1e-9 * 2.0**k) if k < 39 else 0.0
        if x <= 0.0:
            return 0.0
        if _read_lower(held, x) > delta:
            return x
    return 0.0


def composed_log_delta_lower(*, eps0: float, n: int, rounds: int, epsilon: float) -> float:
    """A proven lower bound on ``log δ(ε)`` of ``rounds`` composed shuffles of n ε0-LDP
    reports (module docstring), ``-inf`` where none is found.

    Examples
    --------
    >>> round(composed_log_delta_lower(eps0=1.0, n=1000, rounds=4, epsilon=0.2), 2)
    -9.82
    """
    value = max(
        _read_lower(held, epsilon)
        for dataset in DATASETS
        for held in _rounds_pmfs(float(eps0), int(n), int(rounds), dataset)
    )
    return math.log(value) if value > 0.0 else -math.inf


def composed_lower_epsilon(*, eps0: float, n: int, rounds: int, delta: float) -> PrivacyStatement:
    """A proven lower bound (``kind="lower"``) on the ε at ``delta`` of ``rounds`` composed
    shuffles of n ε0-LDP reports: the largest of the composed datasets' (module docstring)
    and one round's ``ldp_lower``. Its time is mostly the compositions, cached per
    (ε0, n, R): 0.1-3 s.

    Examples
    --------
    >>> s = composed_lower_epsilon(eps0=1.0, n=10_000, rounds=10, delta=1e-6)
    >>> s.kind, round(s.epsilon, 4)
    ('lower', 0.1307)
    """
    from crowdhide.accounting.shuffle.query import shuffle_epsilon

    e0 = check_real("eps0", eps0, low=0.0, high=50.0)
    users = check_int("n", n, low=2, high=10**9)
    count = check_int("rounds", rounds, low=1, high=10**6)
    target = check_probability("delta", delta, allow_zero=False, allow_one=False)
    one = shuffle_epsilon(eps0=e0, n=users, delta=target, bound="ldp_lower").epsilon
    found = {
        dataset: max(
            _epsilon_lower(held, target) for held in _rounds_pmfs(e0, users, count, dataset)
        )
        for dataset in DATASETS
    }
    each = ", ".join(f"{name} {value:.6g}" for name, value in found.items())
    notes = (
        f"{count} rounds composed (optimistic PLDs, their error carried): {each}; one round "
        f"alone (ldp_lower) {one:.6g}",
    )
    inputs = {"eps0": e0, "n": users, "rounds": count, "delta": target}
    return PrivacyStatement(
        epsilon=max(*found.values(), one),
        delta=target,
        kind="lower",
        source=SOURCE,
        notes=notes,
        inputs=inputs,
    )
