"""k-ary and binary randomized response (Warner 1965; Kairouz, Oh, Viswanath 2014).

k-ary randomized response (k-RR, also "generalised randomized response") reports the true
category ``v ∈ {0, …, k−1}`` with probability ``p = e^ε0 / (e^ε0 + k − 1)`` and each other
category with probability ``q = 1 / (e^ε0 + k − 1)``. The likelihood ratio of any output
under two inputs is at most ``p / q = e^ε0``, so k-RR is ε0-LDP, and this is tight.

Equivalently (the "privacy blanket" view of Balle et al., CRYPTO 2019): with probability
``γ = k / (e^ε0 + k − 1)`` the report is a fresh uniform category, otherwise it is the true
value. :meth:`KaryRandomizedResponse.randomize` samples it this way, which needs one uniform
draw per user plus one category draw per blanket user.

All probabilities are computed from ``e^{−ε0}`` so that ε0 up to the float range neither
overflows nor loses the tiny ``q``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int, check_real
from crowdhide.errors import InvalidParameterError
from crowdhide.mechanisms.arrays import as_category_array, as_count_vector

__all__ = ["BinaryRandomizedResponse", "KaryRandomizedResponse"]


@dataclass(frozen=True, kw_only=True)
class KaryRandomizedResponse:
    """k-ary randomized response, an ε0-LDP randomizer on ``{0, …, k−1}``.

    Parameters
    ----------
    k
        Number of categories, ``k >= 2``.
    eps0
        Local privacy level ε0 > 0 (finite).

    See Also
    --------
    BinaryRandomizedResponse : The k = 2 case.
    crowdhide.shuffle_epsilon : The privacy of n shuffled reports (``k=k``).

    Examples
    --------
    >>> rr = KaryRandomizedResponse(k=4, eps0=float(np.log(3.0)))
    >>> round(rr.keep_probability, 12), round(rr.other_probability, 12)
    (0.5, 0.166666666667)
    >>> rr.randomize([0, 1, 2, 3], rng=1).shape
    (4,)
    >>> rr.estimate_frequencies([45, 25, 20, 10]).round(3)
    array([ 0.85,  0.25,  0.1 , -0.2 ])
    >>> KaryRandomizedResponse(k=1, eps0=1.0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: k must be >= 2, got 1
    """

    k: int
    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int("k", self.k, low=2))
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True))

    # -- probabilities --------------------------------------------------------------------
    @property
    def _log_denominator(self) -> float:
        """``log(1 + (k − 1) e^{−ε0})`` = ``log((e^ε0 + k − 1) / e^ε0)``."""
        return math.log1p((self.k - 1) * math.exp(-self.eps0))

    @property
    def keep_probability(self) -> float:
        """``p = e^ε0 / (e^ε0 + k − 1)``: probability of reporting the true value."""
        return math.exp(-self._log_denominator)

    @property
    def other_probability(self) -> float:
        """``q = 1 / (e^ε0 + k − 1)``: probability of reporting one given other value."""
        return math.exp(-self.eps0 - self._log_denominator)

    @property
    def blanket_probability(self) -> float:
        """``γ = k / (e^ε0 + k − 1)``: probability that the report is a fresh uniform draw."""
        return self.k * self.other_probability

    @property
    def log_keep_probability(self) -> float:
        """``log p``."""
        return -self._log_denominator

    @property
    def log_other_probability(self) -> float:
        """``log q`` (accurate even when q underflows)."""
        return -self.eps0 - self._log_denominator

    @property
    def _p_minus_q(self) -> float:
        # p − q = (1 − e^{−ε0}) / (1 + (k − 1) e^{−ε0}); expm1 keeps small ε0 accurate.
        return -math.expm1(-self.eps0) * self.keep_probability

    # -- output distribution --------------------------------------------------------------
    def channel(self) -> npt.NDArray[np.float64]:
        """The k×k row-stochastic channel ``C[v, o] = P[output o | input v]``.

        Uses O(k²) memory; prefer :meth:`log_output_probabilities` for large k.
        """
        mat = np.full((self.k, self.k), self.other_probability)
        np.fill_diagonal(mat, self.keep_probability)
        return mat

    def log_output_probabilities(self, value: int) -> npt.NDArray[np.float64]:
        """Log-probabilities of every output ``0 … k−1`` when the input is ``value``.

        Examples
        --------
        >>> rr = KaryRandomizedResponse(k=3, eps0=1.0)
        >>> bool(np.isclose(np.exp(rr.log_output_probabilities(2)).sum(), 1.0))
        True
        """
        v = check_int("value", value, low=0, high=self.k - 1)
        out = np.full(self.k, self.log_other_probability)
        out[v] = self.log_keep_probability
        return out

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Apply k-RR independently to every entry of ``values`` (categories ``0 … k−1``).

        Parameters
        ----------
        values
            Array of integer categories (any shape).
        rng
            ``numpy.random.Generator``, integer seed or ``None``.

        Returns
        -------
        numpy.ndarray
            Reports, int64, same shape as ``values``.
        """
        vals = as_category_array("values", values, k=self.k)
        gen = as_rng(rng)
        out = vals.copy()
        flat = out.reshape(-1)
        blanket = gen.random(flat.size) < self.blanket_probability
        flat[blanket] = gen.integers(0, self.k, size=int(blanket.sum()))
        return out

    # -- estimation -----------------------------------------------------------------------
    def estimate_frequencies(self, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Unbiased estimate of the true category frequencies from the report histogram.

        ``f̂_j = (c_j / n − q) / (p − q)`` with ``n = Σ c_j`` (Wang et al., USENIX Security
        2017, "direct encoding"). The estimate sums to 1 but can be negative; project it
        with :func:`crowdhide.mechanisms.project_to_simplex` if a distribution is needed.

        Parameters
        ----------
        counts
            Histogram of the reports, length k, non-negative with a positive total.
        """
        c = as_count_vector("counts", counts, length=self.k)
        n = float(c.sum())
        # Same estimator written as 1/k + (c/n − 1/k)/(p − q), using 1/k − q = (p − q)/k: it
        # avoids subtracting the nearly equal c/n and q when ε0 is tiny.
        return 1.0 / self.k + (c / n - 1.0 / self.k) / self._p_minus_q

    def estimate_counts(self, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Unbiased estimate of the true category counts: ``n f̂``."""
        c = as_count_vector("counts", counts, length=self.k)
        return self.estimate_frequencies(c) * float(c.sum())

    def frequency_variance(self, *, n: int, frequencies: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Exact variance of :meth:`estimate_frequencies` for n users with true frequencies.

        With the inputs fixed, ``c_j`` is a sum of independent Bernoullis with mean p (the
        ``n f_j`` users holding j) or q (the others), so
        ``Var f̂_j = [f_j p(1−p) + (1−f_j) q(1−q)] / (n (p − q)²)``.
        """
        n_users = check_int("n", n, low=1)
        f = np.asarray(frequencies, dtype=np.float64)
        if f.shape != (self.k,) or not np.isfinite(f).all() or (f < 0).any() or (f > 1).any():
            raise InvalidParameterError(
                f"frequencies must be {self.k} values in [0, 1], got shape {f.shape}"
            )
        p, q = self.keep_probability, self.other_probability
        return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n_users * self._p_minus_q**2)


@dataclass(frozen=True, kw_only=True)
class BinaryRandomizedResponse:
    """Binary randomized response (Warner 1965): keep a bit with probability
    ``p = e^ε0 / (1 + e^ε0)``, flip it otherwise. ε0-LDP, tight.

    Parameters
    ----------
    eps0
        Local privacy level ε0 > 0 (finite).

    See Also
    --------
    KaryRandomizedResponse : The k-ary generalisation.
    crowdhide.shuffle_epsilon : The privacy of n shuffled reports (``k=2``).

    Examples
    --------
    >>> rr = BinaryRandomizedResponse(eps0=float(np.log(3.0)))
    >>> round(rr.keep_probability, 12)
    0.75
    >>> rr.estimate_sum([1, 1, 0, 1])  # (3 − 4·¼) / (¾ − ¼)
    4.0
    """

    eps0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True))

    @property
    def _kary(self) -> KaryRandomizedResponse:
        return KaryRandomizedResponse(k=2, eps0=self.eps0)

    @property
    def k(self) -> int:
        """Number of categories (always 2)."""
        return 2

    @property
    def keep_probability(self) -> float:
        """``p = e^ε0 / (1 + e^ε0)``."""
        return self._kary.keep_probability

    @property
    def flip_probability(self) -> float:
        """``q = 1 / (1 + e^ε0)``."""
        return self._kary.other_probability

    @property
    def other_probability(self) -> float:
        """Alias of :attr:`flip_probability` (the k-RR name)."""
        return self.flip_probability

    @property
    def blanket_probability(self) -> float:
        """``γ = 2 / (1 + e^ε0)``: probability that the report is a fresh fair coin."""
        return self._kary.blanket_probability

    def channel(self) -> npt.NDArray[np.float64]:
        """The 2×2 row-stochastic channel."""
        return self._kary.channel()

    def log_output_probabilities(self, value: int) -> npt.NDArray[np.float64]:
        """Log-probabilities of outputs ``(0, 1)`` for input bit ``value``."""
        return self._kary.log_output_probabilities(value)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Randomize an array of bits (0/1 or booleans); returns int64 bits."""
        vals = as_category_array("values", values, k=2)
        gen = as_rng(rng)
        flip = gen.random(vals.shape) < self.flip_probability
        return np.bitwise_xor(vals, flip.astype(np.int64))

    def estimate_frequencies(self, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Unbiased estimate of the frequencies of 0 and 1 from the counts ``(c_0, c_1)``."""
        return self._kary.estimate_frequencies(counts)

    def estimate_sum(self, reports: npt.ArrayLike) -> float:
        """Unbiased estimate of the number of ones: ``(Σ y − n q) / (p − q)``.

        Parameters
        ----------
        reports
            The randomized bits (non-empty).
        """
        bits = as_category_array("reports", reports, k=2)
        if bits.size == 0:
            raise InvalidParameterError("reports must not be empty, got an empty array")
        ones = float(bits.sum())
        return float(self._kary.estimate_counts(np.array([bits.size - ones, ones]))[1])

    def sum_variance(self, *, n: int) -> float:
        """Exact variance of :meth:`estimate_sum` for n users: ``n p q / (p − q)²``.

        It does not depend on the true sum because ``p(1 − p) = q(1 − q)`` when ``p = 1 − q``.
        """
        n_users = check_int("n", n, low=1)
        p, q = self.keep_probability, self.flip_probability
        return n_users * p * q / self._kary._p_minus_q**2
