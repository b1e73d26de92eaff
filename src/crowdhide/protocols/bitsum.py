"""Shuffled bit sum of Cheu, Smith, Ullman, Zeber, Zhilyaev (EUROCRYPT 2019), Algorithm 1.

Each of n users holds a bit x. With probability λ/n it sends a fresh uniform bit, otherwise its
own bit (so it *flips* with probability λ/(2n)); the shuffler permutes the n one-bit
messages, and the analyzer outputs the unbiased estimate ``n/(n − λ) · (Σ y − λ/2)``.
The randomizer is binary randomized response with ``ε0 = ln((2n − λ)/λ)``.

Parameter choice (the paper's formulas, reconstructed from its proofs; natural logs,
``L = ln(4/δ)``):

* the paper's **Lemma 4.8**: ``λ = 64 L/ε²`` if ``ε >= √(192 L/n)``, else
  ``λ = n − ε n^{3/2}/√(432 L)``, valid for ``√3456 · L/n < ε <= 1`` (so n > 58.8 L);
* the paper's **Corollary 4.7**: at a given λ ∈ [14 L, n] the protocol is (ε, δ)-DP with
  ``ε = √(64 L/λ) · (1 − (λ − √(2λ ln(2/δ)))/n)``;
* **exact calibration**: the smallest λ for which the shared shuffle accountant certifies
  (ε, δ) for shuffled binary RR (its tightest valid upper bound). The exact curve of the
  worst canonical dataset allows λ ≈ 67 at n = 10^4, ε = 1, δ = 1e-6, where the paper's
  λ is 972.9 (~14×, i.e. ~3.8× the error).

The shuffled view is a uniformly random arrangement of the multiset of bits, so its privacy is
exactly that of the count Σ y (Cheu et al. Claim 4.3); crowdhide certifies every run with the
shared accountant's best valid bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_bool, check_int, check_probability, check_real
from crowdhide.accounting import PrivacyStatement
from crowdhide.errors import InvalidParameterError
from crowdhide.mechanisms import BinaryRandomizedResponse
from crowdhide.mechanisms.arrays import as_category_array
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.results import SumRun, central_sum_baseline
from crowdhide.protocols.shuffler import Shuffler

__all__ = [
    "BitSumRandomizer",
    "bitsum_error_bound",
    "bitsum_estimate",
    "bitsum_variance",
    "calibrate_bit_sum",
    "corollary47_epsilon",
    "eps0_from_lambda",
    "lambda_from_eps0",
    "lemma48_lambda",
    "run_bit_sum",
]

#: Constants of Cheu et al.'s Lemma 4.8 / Corollary 4.7 (reconstructed from the proofs).
PAPER_CONSTANTS = {
    "lambda": 64.0,
    "regime": 192.0,
    "regime2": 432.0,
    "eps_min": 3456.0,
    "n_min": 14.0,
}


def _log_four_over(delta: float) -> float:
    return math.log(4.0) - math.log(delta)


def lemma48_lambda(*, n: int, epsilon: float, delta: float) -> float:
    """λ of the paper's Lemma 4.8 (both regimes); raises outside its hypotheses.

    Parameters
    ----------
    n
        The number of users.
    epsilon, delta
        The target guarantee.

    Returns
    -------
    float
        λ of Lemma 4.8.

    Raises
    ------
    crowdhide.errors.InvalidParameterError
        ``epsilon`` outside the lemma's range ``(ε_min, 1]`` (ε_min grows as n shrinks).

    See Also
    --------
    corollary47_epsilon : ε for a given λ.
    calibrate_bit_sum : The smallest λ the accountant certifies.

    Examples
    --------
    >>> round(lemma48_lambda(n=10_000, epsilon=1.0, delta=1e-6), 3)
    972.916
    >>> round(lemma48_lambda(n=10_000, epsilon=0.5, delta=1e-6), 3)
    3830.066
    """
    nn = check_int("n", n, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    big_l = _log_four_over(d)
    eps_min = math.sqrt(PAPER_CONSTANTS["eps_min"]) * big_l / nn
    if not (eps_min < eps <= 1.0):
        raise InvalidParameterError(
            f"epsilon must be in ({eps_min:.6g}, 1] for the paper's Lemma 4.8 at n={nn}, "
            f"delta={d:g}, got {eps!r}; use exact calibration"
        )
    if eps >= math.sqrt(PAPER_CONSTANTS["regime"] * big_l / nn):
        return PAPER_CONSTANTS["lambda"] * big_l / eps**2
    return float(nn - eps * nn**1.5 / math.sqrt(PAPER_CONSTANTS["regime2"] * big_l))


def corollary47_epsilon(*, n: int, lam: float, delta: float) -> float:
    """ε of the paper's Corollary 4.7 for a given λ ∈ [14 ln(4/δ), n].

    Parameters
    ----------
    n
        The number of users.
    lam
        λ of Algorithm 1, in ``[14 ln(4/δ), n]``.
    delta
        The target δ, ``0 < delta < 1``.

    Returns
    -------
    float
        ε of Corollary 4.7 (the paper's bound, not the accountant's tighter one).

    See Also
    --------
    lemma48_lambda : The inverse direction, λ for a target ε.

    Examples
    --------
    >>> round(corollary47_epsilon(n=10_000, lam=972.916, delta=1e-6), 4)
    0.9195
    """
    nn = check_int("n", n, low=1)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    big_l = _log_four_over(d)
    lo = PAPER_CONSTANTS["n_min"] * big_l
    lam_f = check_real("lam", lam, low=0.0, low_open=True)
    if nn < lo or not (lo <= lam_f <= nn):
        raise InvalidParameterError(
            f"lam must be in [14 ln(4/delta), n] = [{lo:.6g}, {nn}] with n >= {lo:.6g} for "
            f"Corollary 4.7, got lam={lam_f!r}, n={nn}"
        )
    ell0 = lam_f - math.sqrt(2.0 * lam_f * math.log(2.0 / d))
    return math.sqrt(PAPER_CONSTANTS["lambda"] * big_l / lam_f) * (1.0 - ell0 / nn)


def eps0_from_lambda(*, n: int, lam: float) -> float:
    """Local level of the bit randomizer: ``ε0 = ln((2n − λ)/λ)`` (needs 0 < λ < n)."""
    nn = check_int("n", n, low=1)
    lam_f = check_real("lam", lam, low=0.0, low_open=True, high=float(nn), high_open=True)
    return math.log(2.0 * nn / lam_f - 1.0)


def lambda_from_eps0(*, n: int, eps0: float) -> float:
    """Inverse of :func:`eps0_from_lambda`: ``λ = 2n/(1 + e^{ε0})``."""
    nn = check_int("n", n, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True, allow_inf=True)
    return 2.0 * nn * math.exp(-np.logaddexp(0.0, e0))


@dataclass(frozen=True, kw_only=True)
class BitSumRandomizer:
    """The randomizer R⁰_λ of Algorithm 1 for n users (binary RR, ε0 = ln((2n − λ)/λ)).

    Parameters
    ----------
    n
        The number of users.
    lam
        λ of Algorithm 1, ``0 < lam < n``: each user sends a uniform bit with probability λ/n.

    See Also
    --------
    lemma48_lambda : The paper's λ for a target (ε, δ).
    run_bit_sum : The protocol end to end.

    Examples
    --------
    >>> r = BitSumRandomizer(n=1000, lam=100.0)
    >>> r.replace_probability, r.flip_probability, round(r.eps0, 6)
    (0.1, 0.05, 2.944439)
    """

    n: int
    lam: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, low=2))
        object.__setattr__(
            self,
            "lam",
            check_real("lam", self.lam, low=0.0, low_open=True, high=self.n, high_open=True),
        )

    @property
    def replace_probability(self) -> float:
        """λ/n: probability of sending a fresh uniform bit."""
        return self.lam / self.n

    @property
    def flip_probability(self) -> float:
        """λ/(2n): probability that the sent bit differs from the true one."""
        return self.lam / (2.0 * self.n)

    @property
    def eps0(self) -> float:
        """Local privacy level ``ln((2n − λ)/λ)``."""
        return eps0_from_lambda(n=self.n, lam=self.lam)

    def randomize(self, bits: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """One message per bit: the bit, flipped with probability λ/(2n)."""
        vals = as_category_array("bits", bits, k=2)
        flips = as_rng(rng).random(vals.shape) < self.flip_probability
        return (vals.astype(np.uint8) ^ flips.astype(np.uint8)).astype(np.uint8)

    def as_binary_rr(self) -> BinaryRandomizedResponse:
        """The same randomizer as a :class:`BinaryRandomizedResponse`."""
        return BinaryRandomizedResponse(eps0=self.eps0)


def bitsum_estimate(*, ones: float, messages: int, n: int, lam: float) -> float:
    """Unbiased analyzer ``(Σ y − p N/2)/(1 − p)`` with ``p = λ/n`` and N messages.

    With N = n this is the paper's ``n/(n − λ) · (Σ y − λ/2)``; N ≠ n handles dropouts (the
    randomizer's p stays λ/n; the privacy then holds only for the honest count).

    Parameters
    ----------
    ones
        Σ y, the number of ones among the shuffled messages.
    messages
        N, the number of messages received.
    n
        The number of users the randomizer was set up for (p = λ/n).
    lam
        λ of Algorithm 1.

    Returns
    -------
    float
        The unbiased estimate of the sum of the users' bits.

    See Also
    --------
    bitsum_variance : Its exact variance.
    BitSumRandomizer : The users' side.
    """
    nn = check_int("n", n, low=1)
    m = check_int("messages", messages, low=1)
    lam_f = check_real("lam", lam, low=0.0, high=float(nn), high_open=True)
    p = lam_f / nn
    return (float(ones) - p * m / 2.0) / (1.0 - p)


def bitsum_variance(*, n: int, lam: float, messages: int | None = None) -> float:
    """Exact variance of :func:`bitsum_estimate`: ``N (p/2)(1 − p/2)/(1 − p)²``.

    For N = n it is ``λ n (2n − λ)/(4 (n − λ)²)`` (Claim B.2), whatever the data.

    Parameters
    ----------
    n
        The number of users.
    lam
        λ of Algorithm 1.
    messages
        N, the number of messages received (default n).

    Returns
    -------
    float
        The variance of :func:`bitsum_estimate`, exact for every input.

    See Also
    --------
    bitsum_error_bound : A tail bound on the error.
    """
    nn = check_int("n", n, low=1)
    m = nn if messages is None else check_int("messages", messages, low=1)
    lam_f = check_real("lam", lam, low=0.0, high=float(nn), high_open=True)
    p = lam_f / nn
    return m * (p / 2.0) * (1.0 - p / 2.0) / (1.0 - p) ** 2


def bitsum_error_bound(*, n: int, lam: float, beta: float) -> float:
    """Bernstein tail bound: ``P[|estimate − Σx| > α] <= β`` (Theorem 4.11, closed form).

    ``t = ln(2/β)/3 + √(ln²(2/β)/9 + 2σ² ln(2/β))`` with ``σ² = (λ/2)(1 − λ/(2n))`` and
    ``α = t · n/(n − λ)``; valid for every λ ∈ (0, n) (no "λ large enough" condition).

    Parameters
    ----------
    n
        The number of users.
    lam
        λ of Algorithm 1, ``0 < lam < n``.
    beta
        Failure probability, ``0 < beta < 1``.

    Returns
    -------
    float
        α: the estimate is within α of the true sum with probability at least 1 − β.

    See Also
    --------
    bitsum_variance : The exact variance of the estimate.
    """
    nn = check_int("n", n, low=1)
    lam_f = check_real("lam", lam, low=0.0, high=float(nn), high_open=True)
    b = check_probability("beta", beta, allow_zero=False, allow_one=False)
    log_term = math.log(2.0 / b)
    var = (lam_f / 2.0) * (1.0 - lam_f / (2.0 * nn))
    t = log_term / 3.0 + math.sqrt(log_term**2 / 9.0 + 2.0 * var * log_term)
    return t * nn / (nn - lam_f)


def calibrate_bit_sum(
    *, n: int, epsilon: float, delta: float, calibration: str = "exact"
) -> tuple[float, PrivacyStatement]:
    """Choose λ for (ε, δ) and certify it: ``(λ, privacy statement with the target ε)``.

    ``calibration="exact"``: smallest λ whose shuffled binary RR is certified (ε, δ)-DP by the
    shared accountant (its tightest valid upper bound). ``"paper"``: Lemma 4.8's λ. In both
    cases the certificate is the accountant's best valid bound at that λ.

    Parameters
    ----------
    n
        The number of users.
    epsilon, delta
        The target guarantee of the shuffled messages.
    calibration
        ``"exact"`` (the shared accountant) or ``"paper"`` (Lemma 4.8).

    Returns
    -------
    tuple of (float, PrivacyStatement)
        λ and the certificate at λ, its target recorded.

    See Also
    --------
    lemma48_lambda : The paper's λ.
    run_bit_sum : Calibrates with this, then runs the protocol.
    """
    nn = check_int("n", n, low=2)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if calibration == "exact":
        eps0 = krr_accounting.calibrate_krr_eps0(epsilon=eps, delta=d, n=nn, k=2)
        lam = lambda_from_eps0(n=nn, eps0=eps0)
    elif calibration == "paper":
        lam = lemma48_lambda(n=nn, epsilon=eps, delta=d)
    else:
        raise InvalidParameterError(f"calibration must be 'exact' or 'paper', got {calibration!r}")
    eps0 = eps0_from_lambda(n=nn, lam=lam)
    return lam, krr_accounting.krr_privacy(eps0=eps0, n=nn, k=2, delta=d, target_epsilon=eps)


def run_bit_sum(
    bits: npt.ArrayLike,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    rng: Any = None,
    engine: bool = False,
) -> SumRun:
    """Run the shuffled bit-sum protocol end to end on one bit per user.

    The randomizers use ``rng``; the shuffler always uses the OS CSPRNG (the estimate does
    not depend on the permutation, so runs stay reproducible). With ``engine=True`` the
    protocol runs as the plan users → shuffler → analyzer on the engine
    (:func:`crowdhide.protocols.engine_plan.run_on_engine`), the analyzer's program computes
    the estimate, and the run carries the per-hop ``traffic``; the reports and the estimate
    are the same as on the direct path for the same ``rng``.

    Parameters
    ----------
    bits
        One bit (0 or 1) per user.
    epsilon, delta
        The target guarantee of the shuffled messages.
    calibration
        ``"exact"`` (the smallest λ the shared accountant certifies) or ``"paper"``
        (Lemma 4.8's λ).
    rng
        Randomness of the users' randomizers and of the central baseline's noise.
    engine
        Run as a plan on the engine (see above).

    Returns
    -------
    SumRun
        The estimate, the exact sum, the standard error, the certificate (``privacy``) and the
        central Laplace baseline.

    See Also
    --------
    run_real_sum : Sums of bounded real values.
    run_histogram : Histograms of categories.
    """
    vals = as_category_array("bits", bits, k=2).ravel()
    n = check_int("number of users", vals.size, low=2)
    gen = as_rng(rng)
    lam, privacy = calibrate_bit_sum(n=n, epsilon=epsilon, delta=delta, calibration=calibration)
    randomizer = BitSumRandomizer(n=n, lam=lam)
    traffic: dict[str, Any] | None = None
    if check_bool("engine", engine):
        from crowdhide.protocols.engine_plan import run_on_engine

        def analyze(reports: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
            received = int(reports.shape[0])
            ones = float(np.count_nonzero(reports))
            value = bitsum_estimate(ones=ones, messages=received, n=n, lam=lam)
            return {"estimate": np.array([value]), "messages": np.array([received])}

        run = run_on_engine(
            {"bit": vals},
            randomize=lambda users: randomizer.randomize(users["bit"], rng=gen),
            analyze=analyze,
        )
        estimate = float(run.result["estimate"][0])
        messages = run.users_to_shuffler
        traffic = run.traffic()
    else:
        shuffler = Shuffler()
        shuffler.submit(randomizer.randomize(vals, rng=gen))
        batch = shuffler.release()
        ones = float(np.count_nonzero(batch.messages))
        estimate = bitsum_estimate(ones=ones, messages=batch.count, n=n, lam=lam)
        messages = batch.count
    exact = float(vals.sum())
    central = central_sum_baseline(
        exact=exact, sensitivity=1.0, epsilon=epsilon, delta=delta, rng=gen
    )
    notes = []
    if privacy.epsilon < 0.5 * float(epsilon):
        notes.append(
            f"certified epsilon {privacy.epsilon:.4g} is far below the target: the "
            f"{calibration} calibration adds more noise than needed"
        )
    return SumRun(
        protocol="bits",
        n=n,
        estimate=estimate,
        exact=exact,
        std_error=math.sqrt(bitsum_variance(n=n, lam=lam)),
        privacy=privacy,
        messages=messages,
        central=central,
        parameters={
            "calibration": calibration,
            "lambda": lam,
            "flip_probability": randomizer.flip_probability,
            "error_bound_95": bitsum_error_bound(n=n, lam=lam, beta=0.05),
        },
        notes=tuple(notes),
        traffic=traffic,
    )
