"""Privacy-loss distributions (PLDs) on a loss grid, held and queried by crowdhide itself.

Issue 32 (s35-pmf): a composed-rounds query only needs a container for a PLD's masses, its
composition and its two queries δ(ε) and ε(δ); importing ``dp_accounting`` for them cost
1.2 s of a 2.3-2.7 s process (its package imports scipy.signal, scipy.stats and
scipy.optimize). This module holds:

* :class:`DensePmf` (masses at the grid points ``lower, lower + 1, …`` times ``step``) and
  :class:`SparsePmf` (grid index → mass, at most :data:`MAX_SPARSE_SIZE` entries), each with
  its mass at +inf and its rounding direction (pessimistic or not);
* :class:`LossDistribution`, the remove PMF and, when the pair is not symmetric, the add PMF;
* :func:`compose_pmfs` (a direct product of two small sparse PMFs, else an FFT convolution)
  with the tail truncation, :func:`to_dense`, :func:`create_pmf` and
  :func:`from_privacy_parameters`.

Every step follows ``dp_accounting``'s algorithm (version 0.4/0.5) operation for operation,
in the same float order, so each result is the same float it would give: the conversions
:func:`to_dp_accounting` and :func:`from_dp_accounting` at the interop boundary change no
answer (``tests/accounting/test_pld_pmf.py`` compares every operation on random PMFs;
docs/proofs/profile-pair.md §21). The FFT convolution is ``scipy.signal.fftconvolve``'s
steps done with ``scipy.fft`` (about 45 ms to import, against about a second for
scipy.signal under SciPy 1.17).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "MAX_SPARSE_SIZE",
    "TAIL_MASS_TRUNCATION",
    "DensePmf",
    "LossDistribution",
    "Pmf",
    "SparsePmf",
    "compose_pmfs",
    "create_pmf",
    "from_dp_accounting",
    "from_privacy_parameters",
    "to_dense",
    "to_dp_accounting",
    "with_infinity_added",
]

FloatArray = npt.NDArray[np.float64]

#: Tail mass each composition may move to the safe side (dp_accounting's default).
TAIL_MASS_TRUNCATION = 1e-15
#: A PMF of at most this many grid points is held sparse (dp_accounting's threshold), and two
#: sparse PMFs whose sizes multiply to at most this are composed directly.
MAX_SPARSE_SIZE = 1000


@dataclass(frozen=True, slots=True, eq=False)
class DensePmf:
    """Masses ``probs[i]`` at the losses ``(lower + i) · step``, and ``infinity_mass`` at +inf.

    ``pessimistic``: the losses were rounded up (δ(ε) read from it is an upper bound) rather
    than down. The array is never modified after construction."""

    step: float
    lower: int
    probs: FloatArray
    infinity_mass: float
    pessimistic: bool = True

    @property
    def size(self) -> int:
        """Number of grid points held (zeros inside the range included)."""
        return int(self.probs.size)


@dataclass(frozen=True, slots=True, eq=False)
class SparsePmf:
    """Masses ``masses[i]`` at the losses ``i · step`` and ``infinity_mass`` at +inf.

    The mapping's order is kept: a direct composition sums its products in that order, as
    dp_accounting does, so the order is part of the floats it gives."""

    step: float
    masses: dict[int, float]
    infinity_mass: float
    pessimistic: bool = True

    @property
    def size(self) -> int:
        """Number of grid points held."""
        return len(self.masses)


Pmf = DensePmf | SparsePmf


def _check_composable(first: Pmf, second: Pmf) -> None:
    """The two PMFs share a grid step and a rounding direction (else a composition means
    nothing): dp_accounting's check, raised as a ValueError."""
    if first.step != second.step:
        raise InvalidParameterError(
            f"discretization intervals differ: {first.step} != {second.step}"
        )
    if first.pessimistic != second.pessimistic:
        raise InvalidParameterError(
            f"estimation types differ: {first.pessimistic} != {second.pessimistic}"
        )


def create_pmf(
    masses: Mapping[int, float], step: float, infinity_mass: float, pessimistic: bool = True
) -> Pmf:
    """A PMF from grid index → mass: sparse up to :data:`MAX_SPARSE_SIZE` entries, else dense
    over the indices' range (zeros where no mass is given), as dp_accounting's
    ``create_pmf``."""
    if len(masses) <= MAX_SPARSE_SIZE:
        return SparsePmf(step, dict(masses), infinity_mass, pessimistic)
    return to_dense(SparsePmf(step, dict(masses), infinity_mass, pessimistic))


def to_dense(pmf: Pmf) -> DensePmf:
    """The PMF on its whole index range: a sparse PMF's masses placed by index (the floats
    dp_accounting's ``to_dense_pmf`` gives, without its Python loop over every index:
    0.18 s of FMT21's 10 rounds at ε0 = 8, n = 1e3)."""
    if isinstance(pmf, DensePmf):
        return pmf
    if not pmf.masses:  # dp_accounting cannot make one either (min of an empty mapping)
        raise InvalidParameterError("a PMF without finite masses has no dense form")
    count = len(pmf.masses)
    keys = np.fromiter(pmf.masses.keys(), dtype=np.int64, count=count)
    low = int(keys.min())
    probs = np.zeros(int(keys.max()) - low + 1)
    probs[keys - low] = np.fromiter(pmf.masses.values(), dtype=np.float64, count=count)
    return DensePmf(pmf.step, low, probs, pmf.infinity_mass, pmf.pessimistic)


def from_privacy_parameters(epsilon: float, delta: float, step: float) -> LossDistribution:
    """The pessimistic PLD of the worst (ε, δ)-DP pair (dp_accounting's
    ``from_privacy_parameters``): δ at +inf, ``(1 − δ)/(1 + e^{−ε})`` at ε and
    ``(1 − δ)/(1 + e^{ε})`` at −ε, each loss rounded up to the grid."""
    masses: dict[int, float] = {}
    masses[math.ceil(epsilon / step)] = (1 - delta) / (1 + math.exp(-epsilon))
    low = math.ceil(-epsilon / step)
    masses[low] = masses.get(low, 0) + (1 - delta) / (1 + math.exp(epsilon))
    return LossDistribution(create_pmf(masses, step, delta, True))


@dataclass(frozen=True, slots=True, eq=False)
class LossDistribution:
    """A PLD: the PMF of the remove adjacency and, for a pair that is not symmetric, that of
    the add adjacency (``add=None``: the same as ``remove``). δ(ε) is the larger of the two,
    ε(δ) too."""

    remove: Pmf
    add: Pmf | None = None

    @property
    def symmetric(self) -> bool:
        """Whether one PMF serves both adjacencies."""
        return self.add is None

    @property
    def pmfs(self) -> tuple[Pmf, ...]:
        """The PMFs held: one when symmetric, else remove and add."""
        return (self.remove,) if self.add is None else (self.remove, self.add)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """δ(ε) = ``inf mass + Σ_{l_i > ε} −expm1(ε − l_i) p_i`` (larger of the two)."""
        remove = _delta_for_epsilon(self.remove, epsilon)
        if self.add is None:
            return remove
        return float(np.maximum(remove, _delta_for_epsilon(self.add, epsilon)))

    def deltas_for_epsilons(self, epsilons: npt.ArrayLike) -> FloatArray:
        """δ at each of the ascending ``epsilons`` (one sweep down the losses per PMF)."""
        values = np.asarray(epsilons, dtype=np.float64)
        remove = _deltas_for_epsilons(self.remove, values)
        if self.add is None:
            return remove
        return np.maximum(remove, _deltas_for_epsilons(self.add, values))

    def epsilon_for_delta(self, delta: float) -> float:
        """Smallest ε >= 0 with δ(ε) <= ``delta`` (``inf`` when none is finite)."""
        remove = _epsilon_for_delta(self.remove, delta)
        if self.add is None:
            return remove
        return max(remove, _epsilon_for_delta(self.add, delta))


def _losses_and_masses(pmf: Pmf) -> tuple[FloatArray, FloatArray]:
    """Ascending losses and their masses: a dense PMF's whole range (zeros included), a
    sparse PMF's entries in the order of their indices. A loss is ``float(index) · step``."""
    if isinstance(pmf, DensePmf):
        grid = np.asarray((np.arange(pmf.size) + pmf.lower) * pmf.step, dtype=np.float64)
        return grid, pmf.probs
    keys = sorted(pmf.masses)
    losses = np.asarray([key * pmf.step for key in keys], dtype=np.float64)
    return losses, np.asarray([pmf.masses[key] for key in keys], dtype=np.float64)


def _delta_for_epsilon(pmf: Pmf, epsilon: float) -> float:
    """One PMF's δ(ε): the losses above ε, one dot product (dp_accounting's order)."""
    losses, probs = _losses_and_masses(pmf)
    above = losses > epsilon
    return float(pmf.infinity_mass + np.dot(-np.expm1(epsilon - losses[above]), probs[above]))


def _deltas_for_epsilons(pmf: Pmf, epsilons: FloatArray) -> FloatArray:
    """One PMF's δ at ascending ε's: from the top loss down, the running sums ``Σ p_i`` and
    ``Σ p_i e^{−l_i}`` of the losses above each ε, then ``upper − e^ε lower`` (dp_accounting's
    sweep, the same additions in the same order)."""
    if not bool(np.all(np.diff(epsilons) >= 0)):
        raise InvalidParameterError("epsilons must be sorted in ascending order")
    losses, probs = _losses_and_masses(pmf)
    deltas = np.zeros_like(epsilons, dtype=np.float64)
    upper, lower = float(pmf.infinity_mass), 0.0  # 0.0 + x is x, as dp_accounting's 0 + x
    i, j = len(probs) - 1, len(epsilons) - 1
    while j >= 0:
        if np.isposinf(epsilons[j]):
            deltas[j] = pmf.infinity_mass
            j -= 1
        elif i < 0 or losses[i] <= epsilons[j]:
            deltas[j] = upper - np.exp(epsilons[j]) * lower
            j -= 1
        else:
            upper += probs[i]
            lower += probs[i] * np.exp(-losses[i])
            i -= 1
    return deltas


def _descending_losses(pmf: Pmf) -> tuple[Iterable[float], list[float]]:
    """The losses from the top down and their masses. A dense PMF's losses are counted down
    from the top one by repeated subtraction of the step (as dp_accounting reads them in its
    ε search: not ``index · step``, and the floats differ by an ulp here and there)."""
    if isinstance(pmf, DensePmf):
        top = (pmf.lower + pmf.size - 1) * pmf.step
        return itertools.count(top, -pmf.step), pmf.probs[::-1].tolist()
    keys = sorted(pmf.masses, reverse=True)
    return [key * pmf.step for key in keys], [float(pmf.masses[key]) for key in keys]


def _epsilon_for_delta(pmf: Pmf, delta: float) -> float:
    """One PMF's ε(δ): down from the top loss, the masses ``upper = Σ p_i`` (+inf mass
    included) and ``lower = Σ p_i e^{−l_i}`` of the losses passed, until ``ln((upper − δ) /
    lower)`` reaches the next loss (dp_accounting's search, its additions in its order)."""
    if pmf.infinity_mass > delta:
        return math.inf
    upper, lower = float(pmf.infinity_mass), 0.0
    losses, probs = _descending_losses(pmf)
    for loss, prob in zip(losses, probs, strict=False):
        if upper > delta and lower > 0 and math.log((upper - delta) / lower) >= loss:
            break  # ε is at least this loss: the closed form below holds
        upper += prob
        lower += math.exp(-loss) * prob
        if upper >= delta and lower == 0:
            return float(max(0, loss))  # e^{−loss} underflowed: a loss this large is ε
    if upper <= lower + delta:
        return 0.0
    return math.log((upper - delta) / lower)


def compose_pmfs(first: Pmf, second: Pmf) -> Pmf:
    """The composition (convolution) of two PMFs with tails of up to
    :data:`TAIL_MASS_TRUNCATION` moved to the safe side: the direct product of two sparse
    PMFs whose sizes multiply to at most :data:`MAX_SPARSE_SIZE`, else an FFT convolution of
    their dense forms (dp_accounting's ``compose_pmfs``, float for float)."""
    _check_composable(first, second)
    small = first.size * second.size <= MAX_SPARSE_SIZE
    if small and isinstance(first, SparsePmf) and isinstance(second, SparsePmf):
        return _sparse_compose(first, second)
    dense = to_dense(first)
    # a squaring (repeated squaring's base with itself) converts once: the same object twice
    # lets _dense_compose transform it once
    return _dense_compose(dense, dense if second is first else to_dense(second))


def _composed_infinity(first: Pmf, second: Pmf) -> float:
    """Mass at +inf of a composition: ``x + y − x y`` (either round's loss infinite)."""
    x, y = first.infinity_mass, second.infinity_mass
    return x + y - x * y


def _sparse_compose(first: SparsePmf, second: SparsePmf) -> SparsePmf:
    """Every pair of entries multiplied, the products summed per index in the order of the two
    mappings (dp_accounting's quadratic loop), then the tails truncated."""
    products: dict[int, float] = {}
    for key_a, mass_a in first.masses.items():
        for key_b, mass_b in second.masses.items():
            key = key_a + key_b
            products[key] = products.get(key, 0.0) + mass_a * mass_b
    keys = sorted(products)
    probs = np.asarray([products[key] for key in keys], dtype=np.float64)
    left, kept, moved = _truncate_tails(probs, first.pessimistic)
    masses = dict(zip(keys[left : left + kept.size], kept.tolist(), strict=True))
    infinity = _composed_infinity(first, second) + moved
    return SparsePmf(first.step, masses, infinity, first.pessimistic)


def _dense_compose(first: DensePmf, second: DensePmf) -> DensePmf:
    """dp_accounting's ``DensePLDPmf.compose`` with :data:`TAIL_MASS_TRUNCATION`, step for
    step, its tail search vectorized (:func:`_prefix_to_truncate`: the same index)."""
    probs = _fft_convolve(first.probs, second.probs)
    left, kept, moved = _truncate_tails(probs, first.pessimistic)
    infinity = _composed_infinity(first, second) + moved
    return DensePmf(
        first.step, first.lower + second.lower + left, kept, infinity, first.pessimistic
    )


def _truncate_tails(probs: FloatArray, pessimistic: bool) -> tuple[int, FloatArray, float]:
    """(first index kept, kept masses, mass moved to +inf): the longest prefix and suffix each
    of mass at most half :data:`TAIL_MASS_TRUNCATION` are cut (one mass at least is kept);
    rounded up (pessimistic), the prefix goes to the first kept point and the suffix to +inf,
    else the suffix goes to the last kept point and the prefix is dropped. ``probs`` is
    modified (it is the caller's fresh convolution)."""
    half = TAIL_MASS_TRUNCATION / 2
    left = _prefix_to_truncate(probs, half)
    right = len(probs) - _prefix_to_truncate(np.flip(probs), half)
    right = max(right, left + 1)
    left_mass, right_mass = np.sum(probs[:left]), np.sum(probs[right:])
    kept = probs[left:right]
    if pessimistic:
        kept[0] += left_mass
        return left, kept, right_mass
    kept[-1] += right_mass
    return left, kept, 0


def _fft_convolve(a: FloatArray, b: FloatArray) -> FloatArray:
    """``scipy.signal.fftconvolve(a, b)`` (full, 1-D float64), float for float, through
    ``scipy.fft`` (scipy.signal's import costs about a second): fftconvolve multiplies
    directly when either input has one element, else transforms each input with ``rfftn``
    at ``next_fast_len(len a + len b − 1, real)``, multiplies, inverts and copies the first
    ``len a + len b − 1``. The transform is deterministic, so a square (``a`` is ``b``) is
    transformed once and a chain's kept base (:mod:`._fft_spectra`) once per length: the
    same floats (a squaring is two thirds of the transforms of repeated squaring)."""
    from scipy import fft

    from crowdhide.accounting import _fft_spectra

    if a.ndim != 1 or b.ndim != 1 or a.dtype != np.float64 or b.dtype != np.float64:
        from scipy import signal  # not reached by crowdhide's own PMFs

        result: FloatArray = signal.fftconvolve(a, b)
        return result
    if a.size == 0 or b.size == 0:
        return np.asarray([], dtype=np.float64)
    spectrum_held = a is not b and _fft_spectra.held(b)
    if a is not b and not spectrum_held and (a.size == 1 or b.size == 1):
        return (a * b).copy()  # fftconvolve's broadcast product, no transform
    # (a square or a kept base is transformed even at one element, as before s35-pmf)
    length = a.size + b.size - 1
    size = fft.next_fast_len(length, True)
    first = fft.rfftn(a, [size], axes=[0])
    if b is a:
        second = first
    elif spectrum_held:
        second = _fft_spectra.spectrum(b, size)
    else:
        second = fft.rfftn(b, [size], axes=[0])
    convolved: FloatArray = fft.irfftn(first * second, [size], axes=[0])[:length].copy()
    return convolved


#: First chunk of :func:`_prefix_to_truncate`'s running sum (doubled per chunk).
_PREFIX_CHUNK = 1 << 12


def _prefix_to_truncate(probs: FloatArray, threshold: float, chunk: int = _PREFIX_CHUNK) -> int:
    """The longest prefix whose running sum stays at most ``threshold`` (dp_accounting's
    ``_find_prefix_to_truncate``): ``np.cumsum`` adds in the same order as its loop, so the
    running sums, and the index (the first sum above, or the length), are the same. The
    sum runs over chunks of doubling size, stopping at the first sum above (the tails cut
    are 5e-16: usually within the first chunk of a 10^6-point composition, where a whole
    cumsum was ~9 % of it); a chunk continues the running sum exactly, its first element
    taken as ``previous sum + element``, the loop's own next addition."""
    start, running = 0, None
    while start < probs.size:
        part = probs[start : start + chunk]
        if running is not None:
            part = part.copy()
            part[0] += running
        sums = np.cumsum(part)
        above = sums > threshold
        if bool(above.any()):
            return start + int(np.argmax(above))
        running, start, chunk = sums[-1], start + part.size, 2 * chunk
    return int(probs.size)


def to_dp_accounting(pld: LossDistribution) -> Any:
    """The same PLD as a ``dp_accounting`` ``PrivacyLossDistribution`` (imported here only:
    the export boundary), its PMFs of the same kind with the same masses."""
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution

    def export(pmf: Pmf) -> Any:
        if isinstance(pmf, SparsePmf):
            masses = dict(pmf.masses)
            return pld_pmf.SparsePLDPmf(masses, pmf.step, pmf.infinity_mass, pmf.pessimistic)
        return pld_pmf.DensePLDPmf(
            pmf.step, pmf.lower, pmf.probs.copy(), pmf.infinity_mass, pmf.pessimistic
        )

    add = None if pld.add is None else export(pld.add)
    return privacy_loss_distribution.PrivacyLossDistribution(export(pld.remove), add)


def from_dp_accounting(pld: Any) -> LossDistribution:
    """A ``dp_accounting`` ``PrivacyLossDistribution`` as a :class:`LossDistribution`, read
    from its PMFs' fields (dp_accounting has no public accessor for them): a sparse PMF stays
    sparse (its mapping in its order), any other becomes its dense form."""
    from dp_accounting.pld import pld_pmf

    def read(pmf: Any) -> Pmf:
        if isinstance(pmf, pld_pmf.SparsePLDPmf):
            masses = dict(pmf._loss_probs)
            return SparsePmf(
                pmf._discretization, masses, pmf._infinity_mass, pmf._pessimistic_estimate
            )
        dense = pmf.to_dense_pmf()
        probs = np.array(dense._probs, dtype=np.float64)
        return DensePmf(
            dense._discretization,
            int(dense._lower_loss),
            probs,
            dense._infinity_mass,
            dense._pessimistic_estimate,
        )

    remove = read(pld._pmf_remove)
    if pld._symmetric:
        return LossDistribution(remove)
    return LossDistribution(remove, read(pld._pmf_add))


def with_infinity_added(pld: LossDistribution, mass: float) -> LossDistribution:
    """Each PMF with ``mass`` more at +inf (capped at 1): it adds ``mass`` to every δ."""

    def raised(pmf: Pmf) -> Pmf:
        return replace(pmf, infinity_mass=min(1.0, float(pmf.infinity_mass) + mass))

    return LossDistribution(raised(pld.remove), None if pld.add is None else raised(pld.add))
