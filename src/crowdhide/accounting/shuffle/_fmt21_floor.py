"""A proven *lower* bound on the composed FMT21 clone pair's δ, so that ``composed_shuffle``
(best, no k) can skip FMT21's composition where it cannot win (docs/proofs/profile-pair.md,
"Skipping FMT21").

The FMT21 pair (module docstring of :mod:`crowdhide.accounting.shuffle.composition`) reveals
the clone count ``C ~ Bin(n − 1, e^{−ε0})``; given ``C = c`` and ``M = c + 1`` the outcome is
``a ∈ 0..M`` with

    P_c(a) = B_M(a) (2/M) (α a + (1 − α)(M − a)),   Q_c(a) = the same with α and 1 − α swapped,

``B_M = Bin(·; M, 1/2)``. Adding a fresh clone is a post-processing (the pair with c clones
dominates the pair with c + 1), and so is forgetting an outcome; hence the pair ``T`` that
maps every ``C`` of a block ``(c_{j−1}, c_j]`` to the block's *largest* count ``c_j`` and
leaves out everything else (a sub-measure: outcomes dropped from P) is dominated by FMT21:
``H_t(T^{⊗R}) <= H_t(FMT21^{⊗R})`` for every R (a post-processing applied round by round).

For product measures ``H_{e^ε}(P^{⊗R} ‖ Q^{⊗R}) = E_{P^{⊗R}}[(1 − e^{ε − Σ L_i})_+]``, L the
loss ``log P/Q``; the integrand is non-decreasing in every loss and non-negative, so losses
rounded *down* (to a grid) and masses rounded *down* (or dropped) give a lower bound. R > 1
convolves the grid masses by FFT; the ℓ1 error of every convolution is bounded as in
:func:`~crowdhide.accounting.composition.convolution_error` and subtracted.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from crowdhide.accounting._pmf_lower import binomial_pmf_lower
from crowdhide.accounting.composition import fft_relative_error, repeated_squaring
from crowdhide.accounting.logmath import MACHINE_EPSILON

__all__ = [
    "COARSE",
    "FINE",
    "FLOOR_STEPS",
    "MAX_FLOOR_POINTS",
    "Resolution",
    "fmt21_delta_lower",
    "hockey_lower",
    "loss_atoms",
    "worth_trying",
]

FloatArray = npt.NDArray[np.float64]
_U = MACHINE_EPSILON / 2.0
#: Grid steps per unit of the asked ε and per round (R > 1): rounding every loss down
#: costs at most R steps, ε/FLOOR_STEPS of the answer (0.25 %).
FLOOR_STEPS = 400
#: Clone-count blocks per standard deviation of C (the block's largest count is used: a
#: block of width σ/4 lowers the pair's ε by about 1/(8 √(nβ)) relative).
_BLOCKS_PER_SD = 4
#: Runs per standard deviation of C on which its masses are bounded (size times the least
#: end value: at most about e^{z/64} below the truth z standard deviations out).
_MASS_RUNS_PER_SD = 64
#: Outcome blocks per standard deviation of A (a block takes its least loss).
_OUTCOMES_PER_SD = 64
#: Most grid points of the composed floor (a longer one proves nothing: 0 is returned).
MAX_FLOOR_POINTS = 2**21
#: Clone counts above the mean by more than this many standard deviations are left out.
_UPPER_SD = 7.0


class Resolution(NamedTuple):
    """How finely the pair T is laid out. Every choice gives a valid lower bound (the proof
    holds for any block widths and grid step); finer ones are tighter and slower."""

    floor_steps: int
    blocks_per_sd: int
    mass_runs_per_sd: int
    outcomes_per_sd: int


#: The bound of s25-comp (docs/proofs/profile-pair.md §7).
FINE = Resolution(FLOOR_STEPS, _BLOCKS_PER_SD, _MASS_RUNS_PER_SD, _OUTCOMES_PER_SD)
#: Tried first (docs/proofs/profile-pair.md §15): 3-6x cheaper, and on the R = 10 row
#: still 1.8-4.5e5 times the δ asked wherever FINE proves a skip, but for one cell
#: (ε0 = 0.5, n = 1e6, δ = 1e-6: 0.86, where FINE follows).
COARSE = Resolution(200, 1, 8, 16)


def _depth(delta: float) -> float:
    """Standard deviations a window must reach for tails of mass ``delta`` (Gaussian
    scale, with room: the window only decides tightness, never validity)."""
    return math.sqrt(2.0 * max(-math.log(delta), 1.0)) + 6.0


def _blocked(lo: int, hi: int, width: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """First and last integers of consecutive blocks of ``width`` covering ``lo..hi``."""
    starts = np.arange(lo, hi + 1, width, dtype=np.int64)
    return starts, np.minimum(starts + width - 1, hi)


def _levels(n: int, eps0: float, depth: float, res: Resolution) -> tuple[FloatArray, FloatArray]:
    """Block ends ``c_j`` and lower bounds on ``P(c_{j−1} < C <= c_j)`` (the first block
    from the window's start), ``C ~ Bin(n − 1, e^{−ε0})``: a block's mass is at least its
    size times the smaller of its end points' (the binomial pmf is log-concave, so its least
    value on a run of integers is at one end)."""
    beta = math.exp(-eps0)
    mean = (n - 1) * beta
    sd = math.sqrt(max(mean * (1.0 - beta), 0.0))
    lo = max(0, math.floor(mean - depth * sd))
    hi = min(n - 1, math.ceil(mean + _UPPER_SD * sd) + 1)
    # masses on fine runs (a run's least end value is close to its every value), summed
    # into the coarser levels
    run = max(1, int(sd / res.mass_runs_per_sd))
    starts, ends = _blocked(lo, hi, run)
    least = np.minimum(
        binomial_pmf_lower(float(n - 1), beta, starts.astype(np.float64)),
        binomial_pmf_lower(float(n - 1), beta, ends.astype(np.float64)),
    )
    runs = least * (ends - starts + 1)
    per_level = max(1, int(sd / res.blocks_per_sd) // run)
    first = np.arange(0, runs.size, per_level)
    last = np.minimum(first + per_level, runs.size) - 1
    # sums of non-negative floats: relative rounding below (terms + 2) u, taken off
    weights = np.add.reduceat(runs, first) * (1.0 - 2.0 * (per_level + 2) * _U)
    return ends[last].astype(np.float64), weights


def _outcome_masses(m: float, a: FloatArray, alpha: float, other: float) -> FloatArray:
    """Lower bounds on ``P_c(a) = B_M(a) (2/M) (α a + (1 − α)(M − a))``, ``M = m``."""
    num = alpha * a + other * (m - a)
    # α, num, 2/m and the products round by < 16 u relative
    return binomial_pmf_lower(m, 0.5, a) * (2.0 / m) * num * (1.0 - 32.0 * _U)


def _loss_atoms(
    n: int, eps0: float, depth: float, res: Resolution
) -> tuple[FloatArray, FloatArray]:
    """(losses rounded down, lower masses) of the pair T under P. Outcomes ``a`` are taken
    in blocks of about σ_A / ``res.outcomes_per_sd``: the loss rises with ``a`` (α > 1/2),
    so a block's least loss is its first one's, and ``P_c`` is log-concave in ``a`` (a
    binomial times a positive linear factor), so a block's mass is at least its size times
    the smaller end value."""
    # 1 − α from its own formula: a subtraction would lose ~u/(1 − α) relative at large ε0
    alpha, other = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))
    losses: list[FloatArray] = []
    masses: list[FloatArray] = []
    for c, weight in zip(*_levels(n, eps0, depth, res), strict=True):
        m = c + 1.0
        half = depth * math.sqrt(m) / 2.0
        lo, hi = max(0, math.floor(m / 2 - half)), min(int(m), math.ceil(m / 2 + half))
        width = max(1, int(math.sqrt(m) / 2.0 / res.outcomes_per_sd))
        starts, ends = (x.astype(np.float64) for x in _blocked(lo, hi, width))
        num = alpha * starts + other * (m - starts)
        den = other * starts + alpha * (m - starts)
        # α, 1 − α (3 u each), num, den (4 u more), the ratio and the log: the loss is
        # within 12 u + u |loss| of the exact one (|loss| <= ε0); taken off with room
        losses.append(np.log(num / den) - 16.0 * _U * (eps0 + 2.0))
        least = np.minimum(
            _outcome_masses(m, starts, alpha, other), _outcome_masses(m, ends, alpha, other)
        )
        masses.append(weight * least * (ends - starts + 1.0) * (1.0 - 4.0 * _U))
    return np.concatenate(losses), np.concatenate(masses)


def loss_atoms(n: int, eps0: float, delta: float, res: Resolution) -> tuple[FloatArray, FloatArray]:
    """One round's (losses rounded down, lower masses) of the pair T at ``res``, its windows
    deep enough for tails of ``delta`` (any depth is valid)."""
    return _loss_atoms(n, eps0, _depth(delta), res)


def hockey_lower(loss: FloatArray, mass: FloatArray, epsilon: float) -> float:
    """One round's lower bound on the FMT21 pair's δ at ε from :func:`loss_atoms` (0 where
    nothing is proven, ε <= 0 included)."""
    return max(_hockey(loss, mass, epsilon), 0.0) if epsilon > 0.0 else 0.0


def _hockey(loss: FloatArray, mass: FloatArray, epsilon: float) -> float:
    """A lower bound on ``Σ mass (1 − e^{ε − loss})_+`` (terms of a few u relative error)."""
    gain = -np.expm1(np.minimum(epsilon - loss, 0.0)) * (1.0 - 4.0 * _U)
    return float(np.sum(mass * gain)) * (1.0 - 2.0 * (loss.size + 4) * _U)


#: The least δ the floor is tried at: one round (deeper windows cost ~depth² outcomes, and
#: at δ = 1e-300 the exact FMT21 pair can beat the profile pair while its reported value is
#: capped by its window tails, which this bound does not see), more rounds (the FFT error,
#: ~1e-12, leaves nothing to prove below).
_LEAST_DELTA = {True: 1e-100, False: 1e-11}
#: FMT21's pair fails at once (ResourceLimitError) when its rows are wider than this
#: (``_clone_counts._MAX_ROW_WIDTH``): the floor would only cost time there.
_ROW_WIDTH = 20_001


def worth_trying(*, eps0: float, n: int, rounds: int, delta: float, log_tail: float) -> bool:
    """Whether the floor is worth computing (a speed choice only: without it FMT21 is
    composed as before, so the answer is the same either way)."""
    if delta < _LEAST_DELTA[rounds == 1]:
        return False
    big_l, mean = -log_tail, (n - 1) * math.exp(-eps0)
    half = big_l / 3.0 + math.sqrt(big_l**2 / 9.0 + 0.5 * (mean + 1.0) * big_l) + 2.0
    return 2.0 * half + 1.0 <= _ROW_WIDTH


def fmt21_delta_lower(
    *, eps0: float, n: int, rounds: int, epsilon: float, delta: float, res: Resolution = FINE
) -> float:
    """A lower bound on ``H_{e^ε}`` of ``rounds`` composed FMT21 clone pairs (module
    docstring), laid out at ``res``; ``delta`` (the δ the caller compares with) only sets
    how deep the windows reach. 0 when nothing is proven (ε <= 0)."""
    if not epsilon > 0.0:
        return 0.0
    depth = _depth(delta / max(rounds, 1))
    if rounds == 1:
        loss, mass = _loss_atoms(n, eps0, depth, res)
        return max(_hockey(loss, mass, epsilon), 0.0)
    step = epsilon / (res.floor_steps * rounds)
    reach = 2.0 * epsilon
    loss, mass = _loss_atoms(n, eps0, depth, res)
    keep = loss >= -reach  # dropping P-mass: a sub-measure, δ only lower
    index = np.floor(np.minimum(loss[keep], reach) / step).astype(np.int64)
    if not index.size:
        return 0.0
    low = int(index.min())
    grid = np.bincount(index - low, weights=mass[keep]).astype(np.float64)
    grid *= 1.0 - 2.0 * (index.size + 4) * _U  # bincount's sums of non-negative floats
    if grid.size * rounds > MAX_FLOOR_POINTS:
        return 0.0  # nothing proven: the caller composes FMT21 as before
    composed, offset, error = _power(grid, low, rounds)
    values = (np.arange(composed.size) + offset) * step  # below the exact index · step sums
    values = values - 4.0 * _U * np.abs(values)
    return max(_hockey(values, composed, epsilon) - error, 0.0)


def _power(grid: FloatArray, low: int, rounds: int) -> tuple[FloatArray, int, float]:
    """``rounds``-fold convolution by repeated squaring: (masses, index offset, ℓ1 error)."""
    return repeated_squaring((grid, low, 0.0), rounds, _convolve)


def _convolve(
    x: tuple[FloatArray, int, float], y: tuple[FloatArray, int, float]
) -> tuple[FloatArray, int, float]:
    """FFT convolution with the ℓ1 bound of ``convolution_error`` (inherited errors plus
    ``1.01 √L (2 ε_F + 4u)(‖a‖₂‖b‖₁ + ‖a‖₁‖b‖₂)``); negative values are set to 0, which
    moves every entry towards the (non-negative) exact one."""
    from scipy import fft

    from crowdhide.accounting.pld_pmf import _fft_convolve

    a, off_a, err_a = x
    b, off_b, err_b = y
    length = a.size + b.size - 1
    eps_f = fft_relative_error(fft.next_fast_len(length, True))
    l1_a, l1_b = float(np.sum(np.abs(a))), float(np.sum(np.abs(b)))
    l2_a, l2_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    spread = l2_a * l1_b + l1_a * l2_b
    rounding = 1.01 * math.sqrt(length) * (2.0 * eps_f + 4.0 * _U) * spread
    error = err_a * l1_b + err_b * (l1_a + err_a) + rounding * (1.0 + 1e-6)
    out = np.maximum(_fft_convolve(a, b), 0.0)  # fftconvolve's floats, no scipy.signal
    return out, off_a + off_b, error
