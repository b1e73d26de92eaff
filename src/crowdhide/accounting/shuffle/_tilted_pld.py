"""A composed PLD whose FFT error is relative at small δ: composition under an exponential tilt.

``dp_accounting``'s FFT composition of a privacy-loss distribution (PLD) carries an
*absolute* ℓ1 error (:func:`crowdhide.accounting.composition.convolution_error`), which
:class:`~crowdhide.accounting.composition.PldCurve` adds to every δ. It doubles with each
squaring: composing the profile pair 100 times at ε0 = 1, n = 1e4 gives an allowance of
4.5e-10, so no δ below that is certified, and ``composed_shuffle`` fell back to the FMT21
pair (up to 37 s at 10^4 rounds) for δ = 1e-10.

**The tilt.** For ``λ >= 0`` and a PLD ``ω`` (masses ``ω_i`` at losses ``l_i = i h``) let
``ω̃_i = ω_i e^{λ l_i} / M`` for any constant ``M > 0`` (here the float ``Σ ω_i e^{λ l_i}``,
rounded as it is). Convolution commutes with the tilt: ``(ω^{*R})_i = (ω̃^{*R})_i M^R
e^{−λ l_i}``. The tilted vector is composed by the same FFT, with the same ℓ1 error bound
``E`` (plus the tail mass each convolution truncates, ``<= 1e-15``, counted here as error:
in the tilted domain moving mass is not the safe side). Untilting an entry error ``e_i``
gives ``e_i M^R e^{−λ l_i}``, and only entries with ``l_i > ε`` enter δ(ε) (weights
``(1 − e^{ε − l_i})_+ <= 1``), so

    |δ̂(ε) − δ(ε)| <= M^R e^{−λ ε} E     (λ >= 0),

which for λ near the Chernoff saddle of ε is about ``E`` *times δ(ε)*: a relative error.

**Far atoms.** One tilt cannot serve a PLD with a far, tiny atom (the profile pair's chord
to ``ε0``: at ε0 = 4, n = 1e9 a mass 4.7e-17 at loss 4 beside a bulk below 0.003): any λ
that lowers the error at ε ≈ 0.02 blows the atom up by ``e^{4λ}``. So atoms of the highest
losses whose P-mass sums to ``a`` may be left out (:func:`split_top`): with A the event that
some round's loss is one of them, ``δ(ε) = E[(1 − e^{ε−L})_+] <= E[(1 − e^{ε−L})_+; not A]
+ P(A)``, the first term is the composition of the remaining sub-probability PLD (composed
here as is), and ``P(A) <= R a`` (union bound), added to δ.
Negative FFT noise is dropped (``max(ĉ, 0)`` is nearer every non-negative entry), masses
are summed in log space, and the rounding of the tilt, the untilt and the sum is bounded
and added as a relative margin (:meth:`TiltedPld.log_delta`). Tests:
``tests/accounting/test_tilted_pld.py`` (against an exact composition of a small pair).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.composition import (
    _TAIL_MASS_TRUNCATION,
    _compose_pmf,
    repeated_squaring,
)
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.pld_pmf import DensePmf, Pmf, to_dense
from crowdhide.accounting.roots import safe_root
from crowdhide.errors import InvalidParameterError

__all__ = [
    "TiltedPld",
    "chernoff_lambda",
    "log_moments",
    "split_top",
    "tilted_composition",
    "without_top",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Tilts are taken from this geometric grid (λ = 2^{k/8}): a query snaps its λ to it, so
#: nearby δ share one composition (the bound holds for every λ >= 0).
LAMBDA_STEPS_PER_OCTAVE = 8
#: Largest tilt considered (an exponent λ·loss beyond ~1e5 gains nothing a float can hold).
LAMBDA_MAX = 2.0**20


@dataclass(frozen=True, slots=True)
class TiltedPld:
    """``rounds`` compositions of a PLD, computed under the tilt ``e^{λ l}`` (module
    docstring). Holds the composed masses at positive losses in log space (untilted)."""

    step: float  #: the loss grid h
    index: IntArray  #: grid indices of the positive masses (loss ``index · step`` > 0 unless a
    #: negative ε is read, :mod:`._far_mixture`)
    log_mass: FloatArray  #: log of the untilted composed masses there
    log_scale: float  #: ``R log M``
    lam: float  #: the tilt λ
    error: float  #: ℓ1 bound on the tilted composition's error
    margin: float  #: relative rounding allowance of the masses (tilt, untilt, log sum)
    dropped: float = 0.0  #: ``R a`` (rounded up): the far atoms left out (module docstring)
    #: the most :meth:`log_delta` returns: ``log`` of the composed PLD's total mass, rounded
    #: up (0 for a probability; a sub-probability's own in :mod:`._far_mixture`)
    ceiling: float = 0.0
    #: ``index · step``, once: an ε search reads it ~15 times (up to 10^7 entries)
    loss: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # increasing indices make the losses above any ε a suffix (log_delta slices it)
        if self.index.size > 1 and not bool(np.all(np.diff(self.index) > 0)):
            raise InvalidParameterError(
                "TiltedPld.index must be increasing", parameter="index", value=self.index.size
            )
        object.__setattr__(self, "loss", self.index * self.step)

    def log_error(self, epsilon: float) -> float:
        """``log(M^R e^{−λ ε} E)``: the composition error's share of δ(ε)."""
        if self.error <= 0.0:
            return -math.inf
        return self.log_scale - self.lam * epsilon + math.log(self.error)

    def log_delta(self, epsilon: float) -> float:
        """An upper bound on ``log δ(ε)`` of the exact composed PLD: the composed masses'
        hockey-stick sum plus :meth:`log_error`, each raised by its rounding allowance, at
        most :attr:`ceiling`; the losses are read at ``ε − 4 (1 + |ε|) u`` (a loss within
        ulps of ε counts). A negative ε (:mod:`._far_mixture`) needs the masses at losses
        ``<= 0`` in :attr:`index` too; for ``ε >= 0`` the losses are read from 0 up."""
        at = epsilon - 4.0 * (1.0 + abs(epsilon)) * MACHINE_EPSILON
        if epsilon >= 0.0:  # (the same floats as before negative ε were read)
            at = max(at, 0.0)
        # the losses above ``at``: a suffix (increasing losses), the same entries in the
        # same order as a mask would select, so the same floats, without two full passes
        first = int(np.searchsorted(self.loss, at, side="right"))
        terms = _suffix_terms(self.log_mass[first:], self.loss[first:], at)
        parts = [self.log_error(at), math.log(self.dropped) if self.dropped > 0.0 else -math.inf]
        if terms.size:
            top, bottom = float(terms.max()), float(terms.min())
            sum_rounding = (terms.size + 4.0) * MACHINE_EPSILON
            # each term's exponent is a few sums of magnitudes up to |terms| + the untilt
            # (max |x| is max(max x, −min x), exactly)
            spread = 8.0 * MACHINE_EPSILON * (max(top, -bottom) + 40.0)
            relative = math.log1p(self.margin + sum_rounding + spread)
            np.subtract(terms, top, out=terms)  # the exponents, then their exp, in place
            parts.append(top + math.log(float(np.exp(terms, out=terms).sum())) + 2.0 * relative)
        value = functools.reduce(np.logaddexp, parts, -math.inf)
        return float(min(value + 4.0 * MACHINE_EPSILON * (abs(value) + 1.0), self.ceiling))

    def epsilon(self, delta: float, cap: float, *, near: bool = False) -> float:
        """The smallest ε in ``[0, cap]`` whose :meth:`log_delta` meets ``delta``, from the
        safe side; ``cap`` when none below it does. ``near``: the root is expected just
        below ``cap`` (an earlier pass's answer); else the search starts from the Chernoff
        estimate :meth:`chernoff_epsilon` (:func:`probed_root`)."""
        guess = None if near else self.chernoff_epsilon(delta)
        target = math.log(delta)
        return probed_root(self.log_delta, target, cap, guess=guess, slope=self.lam, near=near)

    def chernoff_epsilon(self, delta: float) -> float | None:
        """Where the Chernoff bound ``M^R e^{−λ ε}`` of the tilted composition meets δ (the
        composed tilted mass is about 1): about where :meth:`log_delta` meets it, a little
        above the root (only a start for the search, never an answer)."""
        if not self.lam > 0.0:
            return None
        return (self.log_scale - math.log(delta)) / self.lam


#: Shares of the passing end a search probes below it, in turn, for a failing end
#: (:func:`probed_root`): from a Chernoff estimate (a few to 60 % above the root at 10^4
#: rounds) and from an earlier pass's answer (0-1.1 % above the second pass's root).
GUESS_SHARES = (2.0**-3, 2.0**-1)
NEAR_SHARES = (2.0**-8, 2.0**-5, 2.0**-2)


def probed_root(
    log_delta: Callable[[float], float],
    target: float,
    cap: float,
    *,
    guess: float | None = None,
    slope: float | None = None,
    near: bool = False,
) -> float:
    """The smallest ε in ``[0, cap]`` with ``log_delta(ε) <= target``, from the safe side,
    ``cap`` when ``log_delta(cap)`` is above (``cap`` is an answer already: R·ε0 or an
    earlier pass's). The bracket ``[0, cap]`` is first narrowed: a ``guess`` that passes
    becomes its passing end (one that fails, its failing end); a secant step from the
    passing end along ``slope`` (``−d log δ/dε``, about the tilt λ); then points a share
    :data:`GUESS_SHARES` (``near``: :data:`NEAR_SHARES`) below the passing end, in turn,
    until one fails. :func:`~crowdhide.accounting.roots.safe_root` then searches the bracket
    to ``1e-9`` of its failing end (else of ``max(1, its passing end)``: at most the former
    ``1e-9 max(1, cap)``). Every end is an evaluated point (or ``cap``), so the answer
    passes by its own evaluation wherever the search ends (docs/proofs/profile-pair.md
    §16); each point is evaluated once."""
    known: dict[float, float] = {}

    def value(x: float) -> float:
        if x not in known:
            known[x] = log_delta(x)
        return known[x]

    lo, hi = 0.0, cap
    if guess is not None and 0.0 < guess < cap:
        if value(guess) <= target:
            hi = guess
        else:
            lo = guess
    if hi == cap and value(cap) > target:
        return cap
    if lo == 0.0 and slope is not None and slope > 0.0:
        # a secant from the guess along the tilt's slope (log δ falls about λ per unit ε)
        probe = hi - (target - value(hi)) / slope
        if 0.0 < probe < hi:
            if value(probe) > target:
                lo = probe
            else:
                hi = probe
    if lo == 0.0:
        for share in NEAR_SHARES if near else GUESS_SHARES:
            probe = hi * (1.0 - share)
            if value(probe) > target:
                lo = probe
                break
            hi = probe
    # to 1e-9 of the root (relative to its failing end where one was found, else as before
    # but of the passing end: at most the former 1e-9 max(1, cap))
    return safe_root(value, target, lo, hi, xtol=1e-9 * (lo if lo > 0.0 else max(hi, 1.0)))


def _suffix_terms(log_mass: FloatArray, loss: FloatArray, at: float) -> FloatArray:
    """The finite ``log_mass + log(1 − e^{at − loss})`` in order, a fresh array: the same
    elementwise floats as that expression, computed in one buffer (an ε search evaluates
    it ~15 times on up to 10^7 entries; the temporaries were half its time)."""
    terms = np.subtract(at, loss)
    np.expm1(terms, out=terms)
    np.negative(terms, out=terms)
    with np.errstate(divide="ignore"):
        np.log(terms, out=terms)
    np.add(log_mass, terms, out=terms)
    finite = np.isfinite(terms)
    return terms if bool(finite.all()) else terms[finite]


def split_top(
    masses: dict[int, float], rounds: int, budget: float
) -> tuple[dict[int, float], float]:
    """``masses`` without its atoms of the highest positive losses, as many as keep ``R a``
    (``a`` their P-mass) at most ``budget``, and ``R a`` rounded up (module docstring, *Far
    atoms*)."""
    far = sorted((j for j in masses if j > 0), reverse=True)
    cut = 0
    while cut < len(far) and without_top(masses, rounds, cut + 1)[1] <= budget:
        cut += 1
    return without_top(masses, rounds, cut)


def without_top(masses: dict[int, float], rounds: int, cut: int) -> tuple[dict[int, float], float]:
    """``masses`` without its ``cut`` atoms of the highest positive losses, and ``R a``
    (``a`` their P-mass) rounded up: the union bound on drawing one in some round."""
    far = set(sorted((j for j in masses if j > 0), reverse=True)[:cut])
    total = sum(masses[j] for j in far)
    kept = {j: m for j, m in masses.items() if j not in far}
    return kept, rounds * total * (1.0 + 4.0 * MACHINE_EPSILON * (len(masses) + 2))


def _log_moment(index: IntArray, log_p: FloatArray, step: float, lam: float) -> float:
    """``log Σ p_i e^{λ l_i}`` (for choosing λ only)."""
    x = log_p + lam * index * step
    top = float(x.max())
    return top + math.log(float(np.exp(x - top).sum()))


def log_moments(masses: dict[int, float], step: float) -> tuple[FloatArray, FloatArray]:
    """``(λ grid, log M(λ))``: the tilts :func:`chernoff_lambda` chooses from (``2^{k/8}``,
    ``2^-4 … 2^20``) and the log moment generating function of ``masses`` at each."""
    index = np.fromiter(masses, dtype=np.int64, count=len(masses))
    log_p = np.log(np.fromiter(masses.values(), dtype=np.float64, count=len(masses)))
    grid = 2.0 ** (
        np.arange(-4 * LAMBDA_STEPS_PER_OCTAVE, 20 * LAMBDA_STEPS_PER_OCTAVE + 1)
        / LAMBDA_STEPS_PER_OCTAVE
    )
    moments = np.array([_log_moment(index, log_p, step, float(lam)) for lam in grid])
    return grid, moments


def chernoff_lambda(
    masses: dict[int, float],
    step: float,
    rounds: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
) -> float:
    """A tilt from :data:`LAMBDA_STEPS_PER_OCTAVE`'s grid: for an ε query the Chernoff
    saddle ``argmin R log M(λ) − λ ε``; for a δ query the λ of the Rényi conversion
    ``argmin (R log M(λ) + log 1/δ) / λ``. Any λ >= 0 is valid; this only makes the
    error term small where it is read."""
    grid, moments = log_moments(masses, step)
    if epsilon is not None:
        score = rounds * moments - grid * epsilon
    else:
        assert delta is not None
        score = (rounds * moments - math.log(delta)) / grid
    return float(grid[int(np.argmin(score))])


def _tilted_pmf(masses: dict[int, float], step: float, lam: float) -> tuple[DensePmf, float, float]:
    """The tilted single-round PMF (dense), ``log M`` and the ℓ1 bound on
    its rounding: each mass is ``exp`` of a rounded sum of three terms, off by a relative
    ``4 u (|log p| + λ |l| + |log M| + 1)``."""
    index = np.fromiter(masses, dtype=np.int64, count=len(masses))
    log_p = np.log(np.fromiter(masses.values(), dtype=np.float64, count=len(masses)))
    log_m = _log_moment(index, log_p, step, lam)
    tilt = lam * (index * step)
    x = log_p + tilt - log_m
    probs = np.exp(x)
    rel = 4.0 * MACHINE_EPSILON * (np.abs(log_p) + np.abs(tilt) + abs(log_m) + 1.0)
    error = float((probs * rel).sum()) * 1.01
    lo = int(index.min())
    dense = np.zeros(int(index.max()) - lo + 1)
    dense[index - lo] = probs
    pmf = DensePmf(step, lo, dense, 0.0, True)
    return pmf, log_m, error


def tilted_composition(
    masses: dict[int, float], step: float, rounds: int, lam: float, dropped: float = 0.0
) -> TiltedPld:
    """``rounds`` compositions of the PLD ``masses`` (grid index → mass, no mass at +inf)
    under the tilt λ (module docstring): repeated squaring, each convolution's error bound
    (:func:`~crowdhide.accounting.composition.convolution_error`) plus its truncated tail
    mass, propagated as :func:`~crowdhide.accounting.composition._self_compose_pld` does.
    ``dropped``: ``R a`` of atoms :func:`split_top` left out of ``masses``, added to δ."""
    pmf, log_m, error = _tilted_pmf(masses, step, lam)
    base: tuple[Pmf, float] = (pmf, error)
    composed, total = repeated_squaring(base, rounds, _convolved)
    dense = to_dense(composed)
    index = dense.lower + np.arange(dense.probs.size, dtype=np.int64)
    keep = (index > 0) & (dense.probs > 0.0)
    log_scale = rounds * log_m
    log_mass = np.log(dense.probs[keep]) + log_scale - lam * (index[keep] * step)
    # the untilt's own rounding: an exponent of magnitude up to |log_scale| + λ l
    top = float(index.max()) * step
    margin = 8.0 * MACHINE_EPSILON * (abs(log_scale) + lam * top + 750.0)  # |log ĉ| <= 745
    return TiltedPld(step, index[keep], log_mass, log_scale, lam, total, margin, dropped)


def _convolved(a: tuple[Pmf, float], b: tuple[Pmf, float]) -> tuple[Pmf, float]:
    """One convolution with its error: the FFT's bound and, in the tilted domain, the tail
    mass the truncation moves (at most ``1e-15``, each moved unit counted twice)."""
    pmf, bound = _compose_pmf(a[0], b[0], a[1], b[1])
    return pmf, bound + 2.0 * _TAIL_MASS_TRUNCATION
