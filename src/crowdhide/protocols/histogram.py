"""Shuffled k-RR histograms (Biswas, Jung, Palamidessi) against the central Gaussian.

Each user reports its category through k-RR with the largest ε0 for which the shared shuffle
accountant certifies the shuffled reports (ε, δ)-DP (its tightest valid upper bound); the shuffler
permutes the n reports; the analyzer counts them and estimates the distribution with

* ``"debias"`` — the unbiased k-RR estimator (can be negative), or
* ``"inversion"`` — matrix inversion projected onto the probability simplex (Biswas et
  al.'s "shuffle+INV").

The central baseline adds analytic-Gaussian noise (Balle & Wang 2018) to every bin of the
true count histogram at the same (ε, δ), with L2 sensitivity √2 (replacement neighbours: one
user moves from one bin to another), and reports ``H/n`` as Biswas et al. do (and its simplex
projection). Utility: total-variation distance to the true distribution and the paper's
per-value measure ``|π̂_x − π_x|`` (Biswas et al. §V-A, on the probability scale).

A TVD is a distance between distributions (at most 1): the unbiased and the raw central
estimates are signed vectors, so their TVD is taken after the simplex projection (the
distribution a user would publish); half their L1 error is reported beside it under its own
name (``half_l1_error``: unbounded, the paper's "TVD" of raw vectors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import (
    as_rng,
    check_bool,
    check_int,
    check_probability,
    check_real,
)
from crowdhide.accounting import PrivacyStatement
from crowdhide.errors import InvalidParameterError, ResourceLimitError
from crowdhide.mechanisms import (
    GaussianMechanism,
    KaryRandomizedResponse,
    project_to_simplex,
    total_variation_distance,
)
from crowdhide.mechanisms.arrays import as_category_array
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.results import privacy_record, traffic_record
from crowdhide.protocols.shuffler import Shuffler

__all__ = [
    "ESTIMATORS",
    "HistogramEstimates",
    "HistogramRun",
    "central_gaussian_histogram",
    "krr_histogram_estimate",
    "run_histogram",
    "simulate_histogram",
]

ESTIMATORS = ("debias", "inversion")
#: L2 sensitivity of a count histogram under replacement of one user.
HISTOGRAM_L2_SENSITIVITY = math.sqrt(2.0)


def krr_histogram_estimate(
    counts: npt.ArrayLike, krr: KaryRandomizedResponse, *, estimator: str
) -> npt.NDArray[np.float64]:
    """Estimate the category distribution from k-RR report counts.

    ``"inversion"`` uses the closed-form k-RR inverse (identical to
    :func:`crowdhide.mechanisms.inversion_histogram_estimate` with ``krr.channel()``, but
    O(k) instead of O(k³)) followed by the simplex projection.
    """
    if estimator not in ESTIMATORS:
        raise InvalidParameterError(
            f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        raw = krr.estimate_frequencies(counts)
    if not np.all(np.isfinite(raw)):
        # Debiasing divides by p - q ≈ ε0/k; for a vanishing ε0 the reports carry no usable
        # information and the estimate leaves the floating-point range.
        raise ResourceLimitError(
            f"the local privacy level eps0 = {krr.eps0:.3g} is too small for a finite "
            f"estimate of {krr.k} frequencies (reports indistinguishable from noise); "
            "choose a larger epsilon"
        )
    return project_to_simplex(raw) if estimator == "inversion" else raw


@dataclass(frozen=True)
class CentralHistogram:
    """Central Gaussian baseline on the count histogram."""

    sigma: float
    raw: npt.NDArray[np.float64]
    projected: npt.NDArray[np.float64]


def central_gaussian_histogram(
    counts: npt.ArrayLike, *, epsilon: float, delta: float, rng: Any = None
) -> CentralHistogram:
    """Analytic-Gaussian noise on every bin at (ε, δ), Δ₂ = √2; returns ``H/n`` and its
    projection onto the simplex."""
    c = np.asarray(counts, dtype=np.float64)
    n = float(c.sum())
    mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=HISTOGRAM_L2_SENSITIVITY)
    noisy = mech.randomize(c, rng=rng) / n
    return CentralHistogram(sigma=mech.sigma, raw=noisy, projected=project_to_simplex(noisy))


@dataclass(frozen=True)
class HistogramRun:
    """One run of the shuffled k-RR histogram protocol with its central baseline.

    Parameters
    ----------
    n, k
        The number of users and the domain size.
    estimator
        ``"inversion"`` or ``"debias"``.
    estimate
        The estimated distribution over the k categories.
    truth
        The true distribution (for evaluation; a deployment never sees it).
    privacy
        The certificate of the shuffled reports, with the target recorded.
    messages
        The number of messages shuffled (one per user).
    central
        The central Gaussian baseline at the same (ε, δ).
    traffic
        Per-hop traffic when run on the engine, else ``None``.

    See Also
    --------
    run_histogram : Produces it.
    """

    n: int
    k: int
    estimator: str
    estimate: npt.NDArray[np.float64]
    truth: npt.NDArray[np.float64]
    privacy: PrivacyStatement
    messages: int
    central: CentralHistogram
    traffic: dict[str, Any] | None = None

    @property
    def tvd(self) -> float:
        """Total-variation distance (≤ 1) of the shuffle estimate, as a distribution (the
        ``debias`` estimate projected onto the simplex), to the true distribution."""
        return total_variation_distance(project_to_simplex(self.estimate), self.truth)

    @property
    def half_l1_error(self) -> float:
        """``½ Σ |π̂ − π|`` of the estimate as computed (signed for ``debias``: unbounded)."""
        return total_variation_distance(self.estimate, self.truth)

    @property
    def central_tvd(self) -> float:
        """TVD (≤ 1) of the central estimate projected onto the simplex."""
        return total_variation_distance(self.central.projected, self.truth)

    @property
    def central_half_l1_error(self) -> float:
        """``½ Σ |H/n − π|`` of the raw central ``H/n`` + noise (Biswas et al.'s "TVD"; it
        exceeds 1 when the noise is large: not a TVD)."""
        return total_variation_distance(self.central.raw, self.truth)

    @property
    def per_value_error(self) -> npt.NDArray[np.float64]:
        """Biswas et al.'s individual utility ``|π̂_x − π_x|`` for every value x."""
        return np.abs(self.estimate - self.truth)

    def as_record(self) -> dict[str, Any]:
        """Flat JSON-able summary (stable keys; vectors included)."""
        per_value = self.per_value_error
        central_per_value = np.abs(self.central.raw - self.truth)
        return {
            "protocol": "histogram",
            "n": self.n,
            "k": self.k,
            "estimator": self.estimator,
            "tvd": self.tvd,
            "half_l1_error": self.half_l1_error,
            "max_value_error": float(per_value.max()),
            "mean_value_error": float(per_value.mean()),
            **privacy_record(self.privacy),
            "messages": self.messages,
            "messages_per_user": self.messages / self.n,
            "central_mechanism": "Gaussian (analytic), per bin, L2 sensitivity sqrt(2)",
            "central_sigma": self.central.sigma,
            "central_tvd": self.central_tvd,
            "central_half_l1_error": self.central_half_l1_error,
            "central_max_value_error": float(central_per_value.max()),
            **traffic_record(self.traffic),
            "estimate": self.estimate,
            "truth": self.truth,
        }


def run_histogram(
    categories: npt.ArrayLike,
    *,
    k: int,
    epsilon: float,
    delta: float,
    estimator: str = "inversion",
    eps0: float | None = None,
    rng: Any = None,
    engine: bool = False,
) -> HistogramRun:
    """Shuffled k-RR histogram, end to end, with the central Gaussian at the same (ε, δ).

    Parameters
    ----------
    categories
        One category in ``0 … k−1`` per user.
    k
        Domain size.
    epsilon, delta
        Target guarantee of the shuffled reports.
    estimator
        ``"inversion"`` (projected, a distribution) or ``"debias"`` (unbiased).
    eps0
        Local level to use instead of calibrating (e.g. when the caller calibrated once for
        many runs); the certificate is then computed for it.
    rng
        Randomness of the users' randomizers and of the central noise (the shuffler uses the
        OS CSPRNG).
    engine
        Run users → shuffler → analyzer as a plan on the engine
        (:func:`crowdhide.protocols.engine_plan.run_on_engine`): the estimator runs in the
        analyzer's program on the shuffler's output and the run carries the per-hop
        ``traffic``. Same reports and estimate as the direct path for the same ``rng``.

    Returns
    -------
    HistogramRun
        The estimate, the truth, the certificate and the central baseline.

    See Also
    --------
    simulate_histogram : All estimators on the same reports, for comparisons.
    run_bit_sum : The sum of one bit per user.
    """
    kk = check_int("k", k, low=2)
    values = as_category_array("categories", categories, k=kk).ravel()
    n = check_int("number of users", values.size, low=2)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if estimator not in ESTIMATORS:
        raise InvalidParameterError(
            f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}"
        )
    gen = as_rng(rng)
    if eps0 is None:
        local = krr_accounting.calibrate_krr_eps0(epsilon=eps, delta=d, n=n, k=kk)
    else:
        local = check_real("eps0", eps0, low=0.0, low_open=True)
    privacy = krr_accounting.krr_privacy(eps0=local, n=n, k=kk, delta=d, target_epsilon=eps)
    krr = KaryRandomizedResponse(k=kk, eps0=local)
    if check_bool("engine", engine):
        estimate, messages, traffic = _engine_histogram(values, krr, estimator=estimator, rng=gen)
    else:
        shuffler = Shuffler()
        shuffler.submit(krr.randomize(values, rng=gen))
        batch = shuffler.release()
        counts = np.bincount(batch.messages, minlength=kk)
        estimate = krr_histogram_estimate(counts, krr, estimator=estimator)
        messages, traffic = batch.count, None
    true_counts = np.bincount(values, minlength=kk)
    central = central_gaussian_histogram(true_counts, epsilon=eps, delta=d, rng=gen)
    return HistogramRun(
        n=n,
        k=kk,
        estimator=estimator,
        estimate=estimate,
        truth=true_counts / n,
        privacy=privacy,
        messages=messages,
        central=central,
        traffic=traffic,
    )


def _engine_histogram(
    values: npt.NDArray[np.int64],
    krr: KaryRandomizedResponse,
    *,
    estimator: str,
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.float64], int, dict[str, Any]]:
    """The shuffled k-RR histogram as users → shuffler → analyzer on the engine:
    ``(estimate, messages, traffic)``."""
    from crowdhide.protocols.engine_plan import run_on_engine

    def analyze(reports: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        counts = np.bincount(reports, minlength=krr.k)
        return {"estimate": krr_histogram_estimate(counts, krr, estimator=estimator)}

    run = run_on_engine(
        {"category": values},
        randomize=lambda users: krr.randomize(users["category"], rng=rng),
        analyze=analyze,
    )
    estimate = np.asarray(run.result["estimate"], dtype=np.float64)
    return estimate, run.users_to_shuffler, run.traffic()


@dataclass(frozen=True)
class HistogramEstimates:
    """Every estimate of one simulated run (for utility studies)."""

    truth: npt.NDArray[np.float64]
    shuffle_raw: npt.NDArray[np.float64]
    shuffle_debiased: npt.NDArray[np.float64]
    shuffle_inversion: npt.NDArray[np.float64]
    central_raw: npt.NDArray[np.float64]
    central_projected: npt.NDArray[np.float64]

    def tvds(self) -> dict[str, float]:
        """TVD of every estimate to the truth."""
        return {
            name: total_variation_distance(getattr(self, name), self.truth)
            for name in (
                "shuffle_raw",
                "shuffle_debiased",
                "shuffle_inversion",
                "central_raw",
                "central_projected",
            )
        }


def simulate_histogram(
    categories: npt.ArrayLike,
    *,
    k: int,
    eps0: float,
    epsilon: float,
    delta: float,
    rng: Any = None,
) -> HistogramEstimates:
    """One run of the shuffled k-RR pipeline at a given ε0 and of the central Gaussian at
    (ε, δ), returning every estimate (no calibration, no certificate: the caller has them)."""
    kk = check_int("k", k, low=2)
    values = as_category_array("categories", categories, k=kk).ravel()
    gen = as_rng(rng)
    krr = KaryRandomizedResponse(k=kk, eps0=eps0)
    shuffler = Shuffler()
    shuffler.submit(krr.randomize(values, rng=gen))
    counts = np.bincount(shuffler.release().messages, minlength=kk)
    true_counts = np.bincount(values, minlength=kk)
    central = central_gaussian_histogram(true_counts, epsilon=epsilon, delta=delta, rng=gen)
    debiased = krr.estimate_frequencies(counts)
    return HistogramEstimates(
        truth=true_counts / values.size,
        shuffle_raw=counts / values.size,
        shuffle_debiased=debiased,
        shuffle_inversion=project_to_simplex(debiased),
        central_raw=central.raw,
        central_projected=central.projected,
    )
