"""Composition of privacy guarantees and privacy curves.

Three tools, from loosest to tightest:

* :func:`basic_composition` — ε and δ add up (Dwork et al. 2006);
* :func:`advanced_composition` (homogeneous, Dwork, Rothblum, Vadhan 2010) and
  :func:`heterogeneous_advanced_composition` (Kairouz, Oh, Viswanath 2015, Thm 3.5) — these
  closed forms live in :mod:`crowdhide.accounting.composition_theorems`, re-exported here;
* :func:`compose_curves` — numerical composition of privacy-loss distributions (PLDs) through
  ``dp_accounting``'s algorithms (FFT on a loss grid, rounded pessimistically so the result
  is an upper bound on the true curve), done by crowdhide's own :mod:`.pld_pmf` float for
  float (issue 32: no dp_accounting import; :class:`PldCurve` exports to it).

References
----------
.. [DRV10] C. Dwork, G. Rothblum, S. Vadhan. Boosting and differential privacy. FOCS 2010.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
   privacy. ICML 2015.
.. [MDKS20] S. Meiser et al. / Google DP team. Privacy loss distributions (dp_accounting).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting import pld_pmf
from crowdhide.accounting.composition_theorems import (
    advanced_composition,
    advanced_epsilon,
    basic_composition,
    heterogeneous_advanced_composition,
)
from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.pld_pmf import (
    MAX_SPARSE_SIZE,
    TAIL_MASS_TRUNCATION,
    LossDistribution,
    Pmf,
    SparsePmf,
    compose_pmfs,
    create_pmf,
)
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "LEAST_COMPOSITION_ERROR",
    "PldCurve",
    "advanced_composition",
    "advanced_epsilon",
    "basic_composition",
    "compose_curves",
    "heterogeneous_advanced_composition",
    "to_pld",
]


#: Unit roundoff of float64 (half of ``MACHINE_EPSILON``).
_UNIT_ROUNDOFF = 2.0**-53
#: Relative ℓ2 error of one pocketfft pass, in units of u (see :func:`fft_relative_error`).
_FFT_PASS_CONSTANT = 16.0
#: Tail mass each composition may move to the safe side (dp_accounting's default).
_TAIL_MASS_TRUNCATION = TAIL_MASS_TRUNCATION
#: No composed :class:`PldCurve` certifies a δ at or below this: its ε is ``inf`` there.
#: Proof: a composed curve's allowance is the last :func:`convolution_error`, a float sum of
#: non-negative terms, one of them ``(length + 2) * u * 1e-15`` with ``length >= 1``, so
#: (float rounding is monotone) it is at least ``(1 + 2) * u * 1e-15`` evaluated the same
#: way (about 3.3e-31; ``_compose_pld`` keeps the larger of two such bounds). For
#: ``δ <= error``, :meth:`PldCurve.epsilon`'s ``raw_target = (δ − r e)/(1 + r) − e`` is ``<= 0``
#: in floats (each step is monotone and ``δ − r e <= e``), so it returns ``inf``.
LEAST_COMPOSITION_ERROR = (1 + 2) * _UNIT_ROUNDOFF * _TAIL_MASS_TRUNCATION


def fft_relative_error(length: int) -> float:
    """A bound on ``‖fl(F x) − F x‖₂ / ‖F x‖₂`` for scipy's (pocketfft) real FFT of a
    5-smooth ``length`` N, forward or inverse: ``16 u (⌈log₂ N⌉ + 1)``.

    Higham (Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm 24.2) bounds a
    radix-2 Cooley-Tukey FFT by ``log₂N · η / (1 − log₂N · η)`` with
    ``η = μ + γ₄(√2 + μ) ≈ 5.7 u + μ`` per level (μ: twiddle-factor error, a few u in
    pocketfft). pocketfft's passes are radix 2, 3, 4 and 5, each a short DFT whose output is
    a sum of at most 5 rounded products: at most ``γ₈ ≈ 8 u`` relative per pass, and a radix
    r pass counts as ``log₂ r`` levels. 16 u per level, one extra level for the real
    transform's pre/post-processing pass, covers all of these with a factor 2 to spare (a
    factor √2 of which may go to the real transform's half spectrum). Higham's theorem is
    for radix 2; for pocketfft's other passes this per-pass figure is a model, checked
    (``tests/accounting/test_fft_composition_error.py``) against exact integer convolutions
    on radix 2/3/5 lengths, where the measured error is about 1/600 of the bound it implies.
    """
    levels = math.ceil(math.log2(max(length, 2))) + 1
    return _FFT_PASS_CONSTANT * _UNIT_ROUNDOFF * levels


def _pmf_stats(pmf: Pmf) -> tuple[float, float, int]:
    """(‖p‖₁, ‖p‖₂, dense length) of a PMF's finite masses."""
    if isinstance(pmf, SparsePmf):  # {grid index: mass}
        keys = list(pmf.masses)
        values = np.fromiter(pmf.masses.values(), dtype=np.float64, count=len(keys))
        length = int(max(keys)) - int(min(keys)) + 1 if keys else 1
    else:
        values = np.asarray(pmf.probs, dtype=np.float64)
        length = max(values.size, 1)
    return float(np.abs(values).sum()), float(np.sqrt(np.sum(values * values))), length


def convolution_error(pmf_a: Pmf, pmf_b: Pmf, error_a: float, error_b: float) -> float:
    """A bound on the ℓ1 distance (finite masses and the mass at +inf) between
    the composition (:func:`~.pld_pmf.compose_pmfs`) of two computed PMFs â, b̂ and the
    exact composition of the PMFs a, b they approximate (``‖â − a‖₁ <= error_a``,
    ``‖b̂ − b‖₁ <= error_b``).

    * Inherited error: ``â * b̂ − a * b = (â − a) * b̂ + a * (b̂ − b)``, and
      ``‖x * y‖₁ <= ‖x‖₁ ‖y‖₁``: ``error_a ‖b̂‖₁ + error_b (‖â‖₁ + error_a)``.
    * FFT rounding (dense PMFs: ``scipy.signal.fftconvolve``, rfft of a 5-smooth length N >=
      L = len â + len b̂ − 1, so no wrap-around): with ``ε_F`` of
      :func:`fft_relative_error`, ``‖F x‖₂ = √N ‖x‖₂`` and ``‖F x‖_∞ <= ‖x‖₁``, the two
      forward transforms, the complex products (``√2 γ₂ < 3 u``), the inverse transform and
      its 1/N scaling (a square, ``â = b̂``, is transformed once and that transform used
      twice: the same bound per transform, so the same sum) give
      ``‖ĉ − â * b̂‖₂ <= (2 ε_F + 4 u)(‖â‖₂ ‖b̂‖₁ + ‖â‖₁ ‖b̂‖₂)`` up to second-order terms
      (``ε_F² √N``, covered by the factor 1.01 while ``ε_F √N < 1e-3``);
      then ``‖·‖₁ <= √L ‖·‖₂``. This error is absolute: it does not shrink with a small
      tail mass, which is why it is added to δ rather than folded into a relative margin.
    * Sparse PMFs (products summed directly): ``γ_{m+1} ‖â‖₁ ‖b̂‖₁``, m the smaller support.
    * The +inf mass ``x + y − x y`` (4 u of it) and the tail truncation (mass moved up to the
      first kept point or to +inf is the safe side; its sums and the addition round by at
      most ``(L + 2) u`` of the truncated ``1e-15`` and ``2 u`` of the total).
    """
    l1_a, l2_a, len_a = _pmf_stats(pmf_a)
    l1_b, l2_b, len_b = _pmf_stats(pmf_b)
    inherited = error_a * l1_b + error_b * (l1_a + error_a)
    length = len_a + len_b - 1
    if pmf_a.size * pmf_b.size <= MAX_SPARSE_SIZE and all(
        isinstance(p, SparsePmf) for p in (pmf_a, pmf_b)
    ):
        terms = int(min(pmf_a.size, pmf_b.size)) + 1
        rounding = 1.01 * terms * _UNIT_ROUNDOFF * l1_a * l1_b
    else:
        from scipy import fft

        size = fft.next_fast_len(length, True)
        eps_f = fft_relative_error(size)
        if eps_f * math.sqrt(size) >= 1e-3:  # unreachable below N ~ 1e19 (memory first)
            raise InvalidParameterError(f"composition of {size} grid points is too long")
        spread = l2_a * l1_b + l1_a * l2_b
        rounding = 1.01 * math.sqrt(length) * (2.0 * eps_f + 4.0 * _UNIT_ROUNDOFF) * spread
    infinite = 4.0 * _UNIT_ROUNDOFF * float(pmf_a.infinity_mass + pmf_b.infinity_mass)
    truncation = (length + 2) * _UNIT_ROUNDOFF * _TAIL_MASS_TRUNCATION
    truncation += 2.0 * _UNIT_ROUNDOFF * l1_a * l1_b
    return inherited + rounding + infinite + truncation


def _compose_pmf(pmf_a: Pmf, pmf_b: Pmf, error_a: float, error_b: float) -> tuple[Pmf, float]:
    """The composition of two PMFs (:func:`~.pld_pmf.compose_pmfs`) with its ℓ1 error
    bound."""
    return compose_pmfs(pmf_a, pmf_b), convolution_error(pmf_a, pmf_b, error_a, error_b)


def _compose_pld(
    first: LossDistribution, second: LossDistribution, error_a: float, error_b: float
) -> tuple[LossDistribution, float]:
    """Both adjacencies of two PLDs composed (one PMF when both are symmetric)."""
    remove, bound = _compose_pmf(first.remove, second.remove, error_a, error_b)
    if first.symmetric and second.symmetric:
        return LossDistribution(remove), bound
    add_a = first.remove if first.add is None else first.add
    add_b = second.remove if second.add is None else second.add
    add, bound_add = _compose_pmf(add_a, add_b, error_a, error_b)
    return LossDistribution(remove, add), max(bound, bound_add)


def _self_compose_pld(
    pld: LossDistribution, error: float, count: int
) -> tuple[LossDistribution, float]:
    """``count``-fold composition by repeated squaring (2 ⌊log₂ count⌋ convolutions at
    most), each a plain FFT convolution with a tail truncation whose error
    :func:`convolution_error` bounds. dp_accounting's own ``self_compose`` raises one FFT to
    the power ``count`` and cuts the window with a Chernoff bound computed on the rounded
    masses; neither step has an error bound as simple, so it is not used."""
    return repeated_squaring((pld, error), count, lambda x, y: _compose_pld(*_pair(x, y)))


_Term = TypeVar("_Term")


def repeated_squaring(base: _Term, count: int, combine: Callable[[_Term, _Term], _Term]) -> _Term:
    """``base`` combined with itself ``count >= 1`` times by repeated squaring: at most
    2 ⌊log₂ count⌋ calls of ``combine``, always as ``combine(running, power)`` and
    ``combine(power, power)`` (the one order every composition here uses, so its floats do
    not depend on the caller). Each caller's ``combine`` carries its own error bound along.

    >>> repeated_squaring(3, 5, lambda x, y: x * y)
    243
    """
    result: _Term | None = None
    while True:
        if count & 1:
            result = base if result is None else combine(result, base)
        count >>= 1
        if not count:
            break
        base = combine(base, base)
    assert result is not None
    return result


_Held = tuple[LossDistribution, float]


def _pair(x: _Held, y: _Held) -> tuple[LossDistribution, LossDistribution, float, float]:
    return x[0], y[0], x[1], y[1]


class PldCurve(PrivacyCurve):
    """A privacy curve held as a privacy-loss distribution (PLD) on a loss grid.

    Built by :func:`to_pld` / :func:`compose_curves`; the PLD is rounded pessimistically, so
    δ(ε) here is an upper bound on the true curve. Compositions made through this class
    (:meth:`compose`, :meth:`self_compose`, :func:`compose_curves`) carry a bound on the
    ℓ1 error of their FFT convolutions (:func:`convolution_error`), which :meth:`delta` adds
    to every δ: a δ below it cannot be certified by the composed curve (:meth:`epsilon`
    returns ``inf`` there, and :attr:`notes` says so).

    Parameters
    ----------
    pld
        The PLD: crowdhide's own :class:`~crowdhide.accounting.pld_pmf.LossDistribution`,
        or a ``dp_accounting.pld.PrivacyLossDistribution`` (read into one: its δ and ε are
        the same floats as dp_accounting's).
    error
        A bound on the ℓ1 distance between the PLD's masses and those of the exactly
        computed pessimistic PLD (0 for a PLD built directly from a pair or a certificate).

    See Also
    --------
    to_pld : Builds one from a curve or a certificate.
    compose_curves : Composes curves into one.
    """

    def __init__(self, pld: LossDistribution | object, error: float = 0.0) -> None:
        # a dp_accounting PLD given is also kept as the one .pld returns
        self._exported = None if isinstance(pld, LossDistribution) else pld
        own = pld if isinstance(pld, LossDistribution) else pld_pmf.from_dp_accounting(pld)
        self._loss = own
        self._error = check_real("error", error, low=0.0)

    @property
    def loss_distribution(self) -> LossDistribution:
        """The PLD crowdhide composes and reads (δ(ε), ε(δ) below)."""
        return self._loss

    @property
    def pld(self) -> object:
        """The PLD as a ``dp_accounting.pld.PrivacyLossDistribution`` (without
        :attr:`composition_error`: :meth:`to_dp_accounting` adds it). Made on first use
        (the only place, with :meth:`to_dp_accounting`, where dp_accounting is imported)."""
        if self._exported is None:
            self._exported = pld_pmf.to_dp_accounting(self._loss)
        return self._exported

    def to_dp_accounting(self) -> object:
        """The PLD for use in ``dp_accounting`` itself: :attr:`composition_error` is added to
        each PMF's mass at +inf (weight 1 in every δ), so the exported PLD's δ(ε) stays an
        upper bound after the composition's rounding; the PLD as is when nothing was
        composed."""
        if self._error <= 0.0:
            return self.pld
        raised = pld_pmf.with_infinity_added(self._loss, self._error)
        return pld_pmf.to_dp_accounting(raised)

    @property
    def composition_error(self) -> float:
        """The absolute allowance added to every δ for the FFT compositions' rounding."""
        return self._error

    @property
    def notes(self) -> tuple[str, ...]:
        if self._error <= 0.0:
            return ()
        return (
            f"delta includes {self._error:.2g} for the rounding error of the FFT composition "
            "(absolute, not relative): no smaller delta can be certified from this composed "
            "PLD",
        )

    def _relative_allowance(self) -> float:
        """Relative error bound of the PLD's δ(ε) = ``Σ −expm1(ε − L_i) p_i`` (one
        dot product over N support points, losses ``L_i = i h``): ``(N + 4)`` roundings
        (relative to ``Σ |w_i p_i|``, which masses made negative by FFT noise raise by at
        most twice the composition error). A loss near ε is also off by a few ulps of ε,
        which no relative margin covers when ``L_i − ε`` is tiny (issue 28): :meth:`delta`
        reads the curve at ``ε − 4 (1 + ε)`` ulps, as
        :class:`~crowdhide.accounting.curves.RoundedCurve` does."""
        size = max(pmf.size for pmf in self._loss.pmfs)
        return (size + 4.0) * MACHINE_EPSILON

    def _raw_delta(self, epsilon: float) -> float:
        return self._loss.delta_for_epsilon(epsilon)

    def delta(self, epsilon: float) -> float:
        eps = check_real("epsilon", epsilon, low=0.0)
        relative = self._relative_allowance()
        at = max(eps - 4.0 * (1.0 + eps) * MACHINE_EPSILON, 0.0)
        raw = max(self._raw_delta(at), 0.0)
        return min((raw + self._error) * (1.0 + relative) + relative * self._error, 1.0)

    def log_delta(self, epsilon: float) -> float:
        value = self.delta(epsilon)
        return math.log(value) if value > 0.0 else -math.inf

    def epsilon(self, delta: float) -> float:
        """Smallest ε whose safe-side δ (:meth:`delta`) meets ``delta``: the PLD's
        ε at a target lowered by the allowances, checked against :meth:`delta` and raised
        (a few steps) where its own rounding left it a hair too small; ``inf`` when
        ``delta`` is below the composition's error allowance."""
        target = check_probability("delta", delta, allow_zero=False, allow_one=False)
        relative = self._relative_allowance()
        raw_target = (target - relative * self._error) / (1.0 + relative) - self._error
        if raw_target <= 0.0:
            return math.inf
        eps = max(0.0, self._loss.epsilon_for_delta(raw_target / (1.0 + relative)))
        step = 8.0 * (1.0 + eps) * MACHINE_EPSILON
        for _ in range(64):  # bounded: each step doubles
            if not math.isfinite(eps) or self.delta(eps) <= target:
                return eps
            eps, step = eps + step, 2.0 * step
        return super().epsilon(delta)

    def compose(self, other: PldCurve, count: int = 1) -> PldCurve:
        """This curve composed with ``count`` copies of ``other``."""
        k = check_int("count", count, low=1)
        block = other.self_compose(k) if k > 1 else other
        return PldCurve(*_compose_pld(self._loss, block._loss, self._error, block._error))

    def self_compose(self, count: int) -> PldCurve:
        """``count``-fold composition of this curve with itself."""
        k = check_int("count", count, low=1)
        return PldCurve(*_self_compose_pld(self._loss, self._error, k))


def _rounded_loss_pmf(
    log_p: np.ndarray,
    log_q: np.ndarray,
    interval: float,
    log_error: float = 0.0,
    loss_error: np.ndarray | float = 0.0,
) -> tuple[dict[int, float], float]:
    """Pessimistic (rounded-up) loss PMF of P against Q, plus the mass at +inf; masses are
    raised by ``log_error`` and losses by ``loss_error``, so the PMF dominates every pair
    within those distances of the given one.

    Every finite loss ``L`` lands on the grid index ``i`` with ``i · interval >= L`` as
    evaluated in floating point (the way δ(ε) reads the grid back): no rounding
    slack is forgiven. The quotient ``L / interval`` can round below an integer it exceeds,
    so the ceiling is checked by multiplying back and bumped once where it falls short."""
    loss = _loss_rounded_up(log_p, log_q, loss_error)
    live = log_p > -np.inf
    infinite = live & (loss == np.inf)
    finite = live & ~infinite
    losses = np.asarray(loss[finite], dtype=np.float64)
    index = np.ceil(losses / interval)
    index = index + (index * interval < losses)
    probs = np.exp(log_p[finite] + log_error)
    if index.size:
        steps = index.astype(np.int64)
        offset = int(steps.min())
        mass = np.bincount(steps - offset, weights=probs)
        nonzero = np.nonzero(mass)[0]
        pmf = {int(i + offset): float(mass[i]) for i in nonzero}
    else:
        pmf = {}
    return pmf, float(np.exp(log_p[infinite]).sum())


def _loss_rounded_up(
    log_p: np.ndarray, log_q: np.ndarray, loss_error: np.ndarray | float
) -> np.ndarray:
    """``log_p − log_q + loss_error`` rounded up, not to nearest: the subtraction's rounding
    error is found exactly (TwoSum) and the result moved up an ulp where it was rounded down;
    after adding a positive ``loss_error`` the result is moved up an ulp unconditionally."""
    with np.errstate(invalid="ignore"):
        diff = log_p - log_q
        back = diff - log_p
        residual = (log_p - (diff - back)) + (-log_q - back)  # exact: log_p − log_q − diff
        loss = np.where(residual > 0.0, np.nextafter(diff, np.inf), diff)
        shift = np.asarray(loss_error, dtype=np.float64)
        shifted = np.nextafter(loss + shift, np.inf)
        result: np.ndarray = np.where(shift > 0.0, shifted, loss)
        return result


def to_pld(
    source: DiscretePairCurve | PrivacyStatement | PldCurve,
    *,
    value_discretization_interval: float = 1e-4,
    log_error: float = 0.0,
    loss_error: npt.ArrayLike | None = None,
) -> PldCurve:
    """Convert a curve or guarantee to a :class:`PldCurve`.

    A :class:`DiscretePairCurve` becomes the PLD of its pair (losses rounded up to the grid,
    so the PLD dominates the pair); a certificate
    (:class:`~crowdhide.accounting.statement.PrivacyStatement`) becomes the PLD of the worst
    (ε, δ)-DP pair (as ``dp_accounting.from_privacy_parameters``).

    ``log_error`` (pairs only): a bound on the absolute error of every log-probability of
    the pair as computed. Masses are raised by it and losses by ``loss_error`` (a bound on
    the error of each outcome's computed loss, in the order of
    :meth:`~DiscretePairCurve.support_log_probabilities`; default twice ``log_error``
    everywhere), so the PLD dominates the exact pair: ``H_{e^ε}(P‖Q) <= e^{e}
    H_{e^{ε − 2e}}(P̂‖Q̂)`` whenever ``|ln P − ln P̂|, |ln Q − ln Q̂| <= e``. The masses then
    sum to slightly more than one, which only adds to δ, also under composition. An outcome
    whose computed loss is exact (0 where P = Q by symmetry) may have loss error 0: it then
    stays on its grid point.

    Parameters
    ----------
    source
        A pair curve, a certificate or a :class:`PldCurve` (returned as is).
    value_discretization_interval
        Loss-grid step of the PLD.
    log_error, loss_error
        Error bounds of the pair's computed log-probabilities and losses (see above).

    Returns
    -------
    PldCurve
        A PLD that dominates ``source``.

    See Also
    --------
    compose_curves : Composes several such PLDs.
    crowdhide.interop.to_dp_accounting : The same conversion, to a dp_accounting object.
    """
    interval = check_real(
        "value_discretization_interval", value_discretization_interval, low=0.0, low_open=True
    )
    if isinstance(source, PldCurve):
        return source
    if isinstance(source, PrivacyStatement):
        if not source.is_certificate:
            raise InvalidParameterError(
                f"only a certificate (finite epsilon, delta < 1, kind upper or exact, conditions "
                f"met) can be composed, got {source.kind} statement from {source.source!r} with "
                f"epsilon={source.epsilon!r}, delta={source.delta!r}"
            )
        return PldCurve(pld_pmf.from_privacy_parameters(source.epsilon, source.delta, interval))
    if not isinstance(source, DiscretePairCurve):
        raise ParameterTypeError(
            "source must be a DiscretePairCurve, PrivacyStatement or PldCurve, "
            f"got {type(source).__name__}"
        )
    error = check_real("log_error", log_error, low=0.0)
    log_p, log_q = source.support_log_probabilities()
    shift = np.asarray(2.0 * error if loss_error is None else loss_error, dtype=np.float64)
    if shift.ndim and shift.shape != log_p.shape:
        raise InvalidParameterError(
            f"loss_error must be a number or one value per outcome ({log_p.size}), "
            f"got shape {shift.shape}"
        )
    if np.isnan(shift).any() or (shift < 0).any():
        raise InvalidParameterError("loss_error must be >= 0 (no NaN)")
    remove, inf_remove = _rounded_loss_pmf(log_p, log_q, interval, error, shift)
    pmf_remove = create_pmf(remove, interval, inf_remove, pessimistic=True)
    pmf_add = None
    if source.symmetric:
        add, inf_add = _rounded_loss_pmf(log_q, log_p, interval, error, shift)
        pmf_add = create_pmf(add, interval, inf_add, pessimistic=True)
    return PldCurve(LossDistribution(pmf_remove, pmf_add))


def compose_curves(
    parts: Sequence[tuple[DiscretePairCurve | PrivacyStatement | PldCurve, int]],
    *,
    value_discretization_interval: float = 1e-4,
) -> PldCurve:
    """Heterogeneous composition: ``parts`` is a list of ``(curve, count)``.

    Parameters
    ----------
    parts
        ``(curve, count)`` pairs: a :class:`DiscretePairCurve`, a certificate or a
        :class:`PldCurve`, composed ``count`` times.
    value_discretization_interval
        Loss-grid step of the PLD (losses are rounded to the safe side).

    Returns
    -------
    PldCurve
        An upper bound on the curve of the composition.

    See Also
    --------
    to_pld : The conversion applied to every part.
    crowdhide.compose : Composition of (ε, δ) statements to one statement.

    Examples
    --------
    Two-fold composition of binary randomized response (ε0 = ln 3):

    >>> import numpy as np
    >>> rr = DiscretePairCurve(np.log([0.75, 0.25]), np.log([0.25, 0.75]))
    >>> both = compose_curves([(rr, 2)])
    >>> round(both.delta(0.0), 3)  # exact value: 0.5 (TV of the product pair)
    0.5
    """
    if not parts:
        raise InvalidParameterError("parts must not be empty, got []")
    result: PldCurve | None = None
    for source, count in parts:
        k = check_int("count", count, low=1)
        pld = to_pld(source, value_discretization_interval=value_discretization_interval)
        block = pld.self_compose(k) if k > 1 else pld
        result = block if result is None else result.compose(block)
    assert result is not None
    return result
